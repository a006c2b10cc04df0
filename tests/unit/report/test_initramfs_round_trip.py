"""Initramfs checks give the same answer from a bundle as on the machine, also when the on-disk
amdgpu module is larger than a bundle keeps (real amdgpu.ko.zst files are 3-4 MiB, plain .ko 20+)."""

from __future__ import annotations

import json
import random

import pytest

from rocmdesk.diagnosis.initramfs_listing import MODULES_NAME
from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from rocmdesk.report.collect import CAPTURE_MAX_FILE_BYTES
from tests.support import scenarios as sc
from tests.support.initramfs_images import IN_TREE, fake_module, install_matching_initramfs, module_file, write

CHECKS = ("amdgpu-missing-from-initramfs", "initramfs-stale")
MODULE = f"usr/lib/modules/{sc.KERNEL}/{IN_TREE}/amdgpu.ko.zst"
LATER = 1_800_000_000


def big_module(srcversion: str, seed: int) -> bytes:
    """A module file bigger than a bundle keeps: incompressible padding after a real .modinfo."""
    ko = fake_module(vermagic=f"{sc.KERNEL} SMP preempt mod_unload modversions ", srcversion=srcversion)
    padding = random.Random(seed).randbytes(CAPTURE_MAX_FILE_BYTES + (256 << 10))
    return module_file(ko + padding, ".ko.zst")


def _root(tmp_path, stale: bool):
    root = sc.clean_workstation(tmp_path / "root")
    write(root, MODULE, big_module("AAAAAAAAAAAAAAAAAAAAAAA", 1), mtime=1_700_000_000)
    install_matching_initramfs(root, sc.KERNEL)  # the image holds this module, byte for byte
    if stale:  # a kernel-package update replaced the module; nobody rebuilt the image
        write(root, MODULE, big_module("BBBBBBBBBBBBBBBBBBBBBBB", 2), mtime=LATER)
    assert (root / MODULE).stat().st_size > CAPTURE_MAX_FILE_BYTES
    return root


def _results(report) -> dict:
    data = report.to_json()
    checks = {c["id"]: (c["status"], c.get("reason")) for c in data["checks"] if c["id"] in CHECKS}
    findings = [f for f in data["findings"] if f["id"] in CHECKS]
    return json.loads(json.dumps({"checks": checks, "findings": findings}).replace("alice", "user1"))


@pytest.mark.parametrize("stale", [False, True], ids=["fresh", "stale"])
def test_same_initramfs_answer_from_the_bundle(tmp_path, stale):
    root = _root(tmp_path, stale)
    source = _results(diagnose(HostRoot(root)))
    assert source["checks"]["initramfs-stale"][0] == ("fail" if stale else "pass")
    assert source["checks"]["amdgpu-missing-from-initramfs"][0] == "pass"
    plan = prepare_bundle(HostRoot(root))
    bundle = tmp_path / "b.tar.gz"
    size = plan.save(bundle)
    assert size < 1 << 20  # neither the image nor the module is copied
    names = {m.name: m for m in plan.members}
    assert f"rocmdesk/initramfs/initrd.img-{sc.KERNEL}.list" in names and MODULES_NAME in names
    assert len(names[MODULE].data) < 4096  # a stand-in naming the record, not the module
    with open_bundle(bundle) as opened:
        again = _results(diagnose(opened.root))
    assert again == source
    if stale:
        texts = [e["text"] for f in again["findings"] for e in f["evidence"]]
        assert any("srcversion AAAAAAAAAAAAAAAAAAAAAAA" in t for t in texts)
        assert any("srcversion BBBBBBBBBBBBBBBBBBBBBBB" in t for t in texts)


def _snapshot_with_record(tmp_path, text: str):
    write(tmp_path, MODULE, b"stand-in\n")
    write(tmp_path, MODULES_NAME, text)
    return HostRoot(tmp_path)


GOOD = {"format": "rocmdesk-module-records/1", "kernel": sc.KERNEL, "notes": [], "modules": {
    f"/{MODULE}": {"size": 3_000_000, "sha256": "ab" * 32, "modinfo": {"srcversion": "X" * 23}, "mtime": 1.0}}}


def test_recorded_module_is_read_and_damaged_records_are_ignored(tmp_path):
    from rocmdesk.diagnosis.initramfs_listing import recorded_module

    root = _snapshot_with_record(tmp_path, json.dumps(GOOD))
    fp = recorded_module(root, f"/{MODULE}")
    assert fp is not None and fp.size == 3_000_000 and fp.modinfo == {"srcversion": "X" * 23}
    assert recorded_module(root, f"/{MODULE}.other") is None  # no record of that file
    for bad in ("", "not json", "[]", json.dumps({**GOOD, "format": "other/1"}),
                json.dumps({**GOOD, "modules": {f"/{MODULE}": {"size": "big"}}}),
                json.dumps({**GOOD, "modules": {f"/{MODULE}": {**GOOD["modules"][f"/{MODULE}"], "modinfo": [1]}}})):
        write(tmp_path, MODULES_NAME, bad)
        assert recorded_module(root, f"/{MODULE}") is None, bad
    assert recorded_module(HostRoot("/"), f"/{MODULE}") is None  # the live machine reads its files


def test_modules_dep_keeps_the_gpu_lines_at_their_numbers():
    from rocmdesk.report.filters import reduced
    from rocmdesk.report.reduce import modules_dep_relevant

    text = ("kernel/fs/ext4/ext4.ko.zst: kernel/fs/jbd2/jbd2.ko.zst\n"
            f"{IN_TREE}/amdgpu.ko.zst: kernel/drivers/gpu/drm/drm_exec.ko.zst\n"
            "kernel/sound/core/snd.ko.zst:\n")
    out = modules_dep_relevant(text).split("\n")
    assert out[0] == "" and out[1].startswith(f"{IN_TREE}/amdgpu.ko.zst:") and out[2] == ""
    assert reduced(f"lib/modules/{sc.KERNEL}/modules.dep") and not reduced("lib/modules/x/modules.alias")
