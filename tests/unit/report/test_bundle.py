"""Capture -> open round trips, redaction, and the privacy filter."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import tarfile

import pytest

from rocmdesk.host import HostRoot, runner_for
from rocmdesk.report.bundle import BundleError, open_bundle, prepare_bundle, recording_from_snapshots
from rocmdesk.report.collect import RecordingRoot, diagnosis_function
from rocmdesk.report.manifest import MANIFEST_NAME, Manifest
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from tests.unit.report.workstation import SECRETS, make_workstation


@pytest.fixture(scope="module")
def workstation(tmp_path_factory):
    base = tmp_path_factory.mktemp("ws")
    root = make_workstation(base / "root")
    plan = prepare_bundle(HostRoot(root))
    bundle = base / "bundle.tar.gz"
    plan.save(bundle)
    return root, plan, bundle


def _all_member_bytes(bundle):
    with tarfile.open(bundle, "r:gz") as tar:
        for member in tar.getmembers():
            data = tar.extractfile(member).read() if member.isreg() else b""
            yield member, data


def _findings(report):
    data = report.to_json() if hasattr(report, "to_json") else report
    return sorted(json.dumps(f, sort_keys=True) for f in data["findings"])


def test_round_trip_gives_the_same_findings_and_checks(workstation):
    root, _plan, bundle = workstation
    diagnose = diagnosis_function()
    source = diagnose(HostRoot(root), runner=runner_for(HostRoot(root)))
    with open_bundle(bundle) as opened:
        again = diagnose(opened.root, runner=opened.runner(), python_envs=opened.python_envs)
        folder = opened.folder
        assert os.path.isdir(folder)
    assert not os.path.exists(folder), "the private folder must be removed on close"
    src, dst = (r.to_json() if hasattr(r, "to_json") else r for r in (source, again))
    assert [(c["id"], c["status"]) for c in dst["checks"]] == [(c["id"], c["status"]) for c in src["checks"]]
    # evidence may mention a redacted path; compare with the same redaction applied
    assert len(dst["findings"]) == len(src["findings"])
    assert [f["id"] for f in dst["findings"]] == [f["id"] for f in src["findings"]]


def test_round_trip_sees_the_same_gpus(workstation):
    from rocmdesk.telemetry.backends.sysfs import SysfsBackend

    root, _plan, bundle = workstation
    before = SysfsBackend(HostRoot(root))
    before.discover()
    snap_before = before.sample().to_json()
    with open_bundle(bundle) as opened:
        after = SysfsBackend(opened.root)
        after.discover()
        snap_after = after.sample().to_json()
    for a, b in zip(snap_before["gpus"], snap_after["gpus"], strict=True):
        a.pop("unavailable"), b.pop("unavailable")
        assert a == b


def test_no_redacted_string_anywhere_in_the_bundle(workstation):
    _root, plan, bundle = workstation
    raw = gzip.decompress(bundle.read_bytes())
    for secret in SECRETS:
        assert secret.encode() not in raw, f"{secret!r} leaked into the tar stream"
    for member, data in _all_member_bytes(bundle):
        for secret in SECRETS:
            assert secret not in member.name and secret not in member.linkname
            assert secret.encode() not in data, f"{secret!r} in {member.name}"
        assert member.uname == "" and member.gname == ""
    names = {m.name for m, _ in _all_member_bytes(bundle)}
    assert "home/user1/.bashrc" in names
    assert "home/user1/.bash_history" not in names
    assert not any(".ssh" in n or "shadow" in n or n.endswith(("notes.txt", "todo")) for n in names)
    assert set(plan.secrets) >= set(SECRETS)


def test_identifiers_are_hashed_consistently(workstation):
    _root, _plan, bundle = workstation
    contents = {m.name: d for m, d in _all_member_bytes(bundle)}
    raw = b"".join(contents.values())
    assert b"8f1e2d3c4b5a6978" not in raw and b"SN-ZX81-99231" not in raw
    assert b"3f1c2a9e-5b7d-4c2e-9a1f-0e8d7c6b5a49" not in raw  # the root disk UUID in /proc/cmdline
    unique = [d for n, d in contents.items() if n.endswith("/unique_id")]
    assert unique and all(len(d.strip()) == 16 for d in unique)


def test_environment_is_reduced_to_gpu_variables(workstation):
    _root, _plan, bundle = workstation
    contents = {m.name: d for m, d in _all_member_bytes(bundle)}
    env = contents["proc/self/environ"].decode().split("\0")
    names = {e.split("=", 1)[0] for e in env if e}
    assert "HIP_VISIBLE_DEVICES" in names and "LD_LIBRARY_PATH" in names
    assert not names & {"SSH_AUTH_SOCK", "AWS_SECRET_ACCESS_KEY", "PATH", "HOSTNAME"}
    assert "LD_LIBRARY_PATH=/opt/rocm/lib:/home/user1/lib" in env
    bashrc = contents["home/user1/.bashrc"].decode()
    assert bashrc.splitlines()[1] == "export HSA_OVERRIDE_GFX_VERSION=11.0.0"  # same line number
    assert "ghp_secret" not in bashrc and "alias" not in bashrc
    dpkg = contents["var/lib/dpkg/status"].decode()
    assert "rocm-smi" in dpkg and "linux-image" in dpkg and "firefox" not in dpkg and "bash\n" not in dpkg
    passwd = contents["etc/passwd"].decode()
    assert "Zorana Example" not in passwd and "daemon" not in passwd


def test_manifest_lists_every_member_with_reason_hash_and_size(workstation):
    _root, plan, bundle = workstation
    members = list(_all_member_bytes(bundle))
    assert members[0][0].name == MANIFEST_NAME
    manifest = Manifest.loads(members[0][1])
    listed = manifest.by_path()
    for member, data in members[1:]:
        entry = listed.pop(member.name)
        assert entry.why
        if member.isreg():
            import hashlib

            assert entry.size == len(data) and entry.sha256 == hashlib.sha256(data).hexdigest()
    assert listed == {}
    preview = plan.preview(limit=3)
    assert preview[0].endswith("before compression.") and any("read by check" in line for line in preview)


def test_device_nodes_become_placeholders_with_mode_and_group(workstation):
    _root, _plan, bundle = workstation
    with open_bundle(bundle) as opened:
        st = opened.root.stat("/dev/kfd")
        assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == 110
        assert os.path.isfile(opened.root.join("/dev/kfd"))  # never a device file in the folder


def test_recording_root_notes_reads_and_reasons(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "a").write_text("x")
    rec = RecordingRoot(tmp_path)
    rec.read_text("/etc/a")
    rec.listdir("/etc")
    rec.exists("/etc/missing")
    rec.assign_pending("read by check demo")
    assert rec.accesses["/etc/a"][0] >= {"read"} and rec.accesses["/etc/a"][1] == ["read by check demo"]
    assert "list" in rec.accesses["/etc"][0] and "/etc/missing" in rec.accesses


def test_live_style_links_are_rewritten_relative_and_stay_inside(tmp_path):
    root = tmp_path / "root"
    (root / "sys/devices/x").mkdir(parents=True)
    (root / "sys/devices/x/vendor").write_text("0x1002\n")
    (root / "sys/class/drm").mkdir(parents=True)
    os.symlink("/sys/devices/x", root / "sys/class/drm/card0")  # absolute target, as a tool might write
    (root / "etc").mkdir()

    def diagnose(r, **_kw):
        r.read_text("/sys/class/drm/card0/vendor")
        return {"checks": [], "findings": []}

    plan = prepare_bundle(HostRoot(root), diagnose_fn=diagnose)
    link = next(m for m in plan.members if m.name == "sys/class/drm/card0")
    assert link.kind == "link" and link.target == "../../devices/x"
    out = tmp_path / "b.tar.gz"
    plan.save(out)
    with open_bundle(out) as opened:
        assert opened.root.read_text("/sys/class/drm/card0/vendor") == "0x1002\n"


def test_history_keeps_the_last_minutes(tmp_path):
    root = make_workstation(tmp_path / "root")
    info = GpuInfo(card="card0", pci="0000:03:00.0", name="Radeon RX 7900 XTX")
    snaps = [Snapshot("sysfs", 1000.0 + t, [GpuSample(info, 1000.0 + t, power_w=float(t))]) for t in range(0, 600)]
    recording = recording_from_snapshots(snaps)
    plan = prepare_bundle(HostRoot(root), history=recording, minutes=2)
    out = tmp_path / "b.tar.gz"
    plan.save(out)
    with open_bundle(out) as opened:
        history = opened.history
        assert history is not None and not history.demo
        assert len(history.frames) == 120 and history.frames[0].t == 0.0
        assert history.gpu_samples(-1, 0.0)[0].power_w == 599.0
        assert opened.manifest.history_minutes == 2.0


def test_open_missing_or_folder_is_a_clear_error(tmp_path):
    with pytest.raises(BundleError, match="no bundle"):
        open_bundle(tmp_path / "nope.tar.gz")
    with pytest.raises(BundleError, match="folder"):
        open_bundle(tmp_path)


def test_save_is_atomic_on_failure(tmp_path, workstation):
    _root, plan, _bundle = workstation
    target = tmp_path / "out.tar.gz"
    bad = type(plan)(plan.manifest, [*plan.members[:3], None])  # a broken member list
    with pytest.raises(AttributeError):
        bad.save(target)
    assert not target.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".rocmdesk")]


def test_bundle_is_a_plain_tar_gz(workstation):
    _root, _plan, bundle = workstation
    with tarfile.open(fileobj=io.BytesIO(bundle.read_bytes()), mode="r:gz") as tar:
        names = tar.getnames()
    assert "rocmdesk/commands.json" in names and "proc/cmdline" in names and "etc/os-release" in names
