"""Capture -> open -> diagnose gives the same result as on the source root, for every scenario.

Every scenario runs on the clean workstation *with its ComfyUI running on the GPU* (pid 5120), so
the "found as running GPU process" evidence of the Python-environment discovery, read from
``/proc/<pid>/exe`` and ``/proc/<pid>/cmdline``, must survive the capture too.
"""

from __future__ import annotations

import gzip
import json
import os

import pytest

from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.python_envs import discover
from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from tests.support import scenarios as sc
from tests.support.python_envs import CRYSTOOLS_REQUIREMENTS, add_gpu_process, make_comfyui, make_venv

KMSG = "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_pfp.bin failed with error -2"
CONDA_PID = 6200


def _conda_env_found_only_by_exe(root):
    """A conda env outside every home folder, running a CUDA torch on the GPU; started as plain
    ``python3`` with no CONDA_PREFIX, so only /proc/<pid>/exe names the environment."""
    prefix = make_venv(root, "opt/envs/sd", torch="cuda", conda=True)
    os.unlink(prefix / "bin" / "python")
    (prefix / "bin" / "python3.11").write_bytes(b"#!interpreter\n")
    add_gpu_process(root, CONDA_PID, "/opt/envs/sd/bin/python3.11", ["python3", "serve.py", "--api-key",
                                                                      "sk-live-123456"])


SCENARIOS = {
    "clean": lambda r: None,
    "comfyui-activated-venv": lambda r: None,  # argv[0] is "python": only VIRTUAL_ENV names the venv
    "conda-env-found-by-exe": _conda_env_found_only_by_exe,
    "amdgpu-not-loaded": sc.unload_amdgpu,
    "gpu-unbound": sc.unbind_gpu,
    "amdgpu-blacklisted": sc.blacklist_amdgpu,
    "nomodeset": lambda r: sc.add_cmdline(r, "nomodeset"),
    "secure-boot-blocks-dkms": lambda r: (sc.install_dkms_amdgpu(r), sc.set_secure_boot(r, True),
                                          sc.unload_amdgpu(r)),
    "amdgpu-pro-leftover": sc.install_amdgpu_pro,
    "kfd-missing": sc.remove_kfd,
    "firmware-load-failure": lambda r: sc.kernel_log(r, KMSG),
    "overdrive-enabled": lambda r: sc.set_ppfeaturemask(r, "0xffffffff"),
    "user-not-in-render-group": lambda r: sc.remove_user_from_group(r, "render"),
    "group-not-active-in-session": lambda r: sc.session_groups(r, [1000]),
    "hsa-override-session": lambda r: sc.session_env(r, HSA_OVERRIDE_GFX_VERSION="10.3.0"),
    "hsa-override-profile": lambda r: sc.export_in_profile(r, "HSA_OVERRIDE_GFX_VERSION", "9.0.0"),
    "visible-devices-unit": lambda r: sc.unit_environment(r, "ROCR_VISIBLE_DEVICES", "5"),
    "visible-devices-process": lambda r: sc.gpu_process(r, 4321, "python3", {"HIP_VISIBLE_DEVICES": "-1"}),
    "two-gpus": sc.add_second_gpu,
    "wsl": sc.make_wsl,
    "xorg-nvidia": lambda r: sc.xorg_conf(r, "/etc/X11/xorg.conf", "nvidia"),
    "torch-cuda-wheel": lambda r: make_comfyui(r, "home/alice/ComfyUI", torch="cuda"),
    "torch-pinned-by-node": lambda r: make_comfyui(
        r, "home/alice/ComfyUI", nodes={"bad-node": {"requirements.txt": "torch==2.3.1\n"}}),
    "pynvml": lambda r: make_comfyui(r, "home/alice/ComfyUI", torch="rocm-old",
                                     nodes={"ComfyUI-Crystools": {"requirements.txt": CRYSTOOLS_REQUIREMENTS}},
                                     packages={"pynvml": "11.5.0"}),
}


def _normalized(data) -> dict:
    text = json.dumps(data, sort_keys=True)
    return json.loads(text.replace("/home/alice", "/home/user1").replace("alice", "user1"))


def _diagnosis(report) -> dict:
    data = report.to_json()
    return _normalized({"checks": data["checks"], "findings": data["findings"]})


def _environments(root: HostRoot, explicit=()) -> dict:
    """What the Python-environment discovery finds: every environment, how, and its torch."""
    found = discover(root, explicit)
    return _normalized({
        "envs": sorted([e.path, e.kind, e.found_by, e.torch.version if e.torch else None, e.torch.build
                        if e.torch else None, e.comfyui] for e in found.envs),
        "comfyui": sorted([c.path, c.env.path if c.env else None, c.custom_nodes] for c in found.comfyui),
        "notes": found.notes,
        "gpu_processes": HostFacts(root).gpu_processes,
    })


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_diagnosis_after_a_round_trip(tmp_path, name):
    root = sc.clean_workstation(tmp_path / "root")
    sc.comfyui_process(root, activated=name == "comfyui-activated-venv")
    SCENARIOS[name](root)
    source_report = diagnose(HostRoot(root))
    source_envs = _environments(HostRoot(root))
    plan = prepare_bundle(HostRoot(root))
    source = _normalized(plan.redact_json(_diagnosis(source_report)))  # the host name in logs, say
    bundle = tmp_path / "b.tar.gz"
    plan.save(bundle)
    raw = gzip.decompress(bundle.read_bytes())
    assert b"alice" not in raw
    with open_bundle(bundle) as opened:
        again = _diagnosis(diagnose(opened.root, python_envs=opened.python_envs))
        again_envs = _environments(opened.root, opened.python_envs)
    assert [(c["id"], c["status"], c.get("reason")) for c in again["checks"]] == \
        [(c["id"], c["status"], c.get("reason")) for c in source["checks"]]
    assert again["findings"] == source["findings"]  # evidence (text, file, line) included
    assert again_envs == source_envs
    # the running ComfyUI's environment is known as a running process, before and after
    assert [sc.COMFYUI_PID, "python"] in source_envs["gpu_processes"]  # facts.gpu_processes, same after
    found_by = [how for env in source_envs["envs"] for how in env[2]]
    if name != "wsl":
        assert any(f"running GPU process {sc.COMFYUI_PID}" in how for how in found_by), found_by


def test_the_environment_only_a_process_names_is_evidence_after_the_round_trip(tmp_path):
    """The CUDA torch of a conda env outside the home folders is found only through
    /proc/<pid>/exe; its finding cites the process, and says so again from the bundle."""
    root = sc.clean_workstation(tmp_path / "root")
    _conda_env_found_only_by_exe(root)
    plan = prepare_bundle(HostRoot(root))
    plan.save(tmp_path / "b.tar.gz")
    names = {m.name: m for m in plan.members}
    exe = names[f"proc/{CONDA_PID}/exe"]
    assert exe.kind == "link" and exe.target == "../../opt/envs/sd/bin/python3.11"
    assert "opt/envs/sd/bin/python3.11" not in names  # the interpreter itself is not copied
    argv = names[f"proc/{CONDA_PID}/cmdline"].data.split(b"\0")
    assert argv[:4] == [b"python3", b"serve.py", b"--api-key", b"<redacted>"]
    with open_bundle(tmp_path / "b.tar.gz") as opened:
        report = diagnose(opened.root)
    evidence = [e.text for f in report.findings if f.id == "torch-wheel-mismatch" for e in f.evidence]
    assert f"found as running GPU process {CONDA_PID} (/opt/envs/sd/bin/python3.11)" in evidence, evidence


def test_a_nul_padded_gpu_keeps_its_sysfs_files_and_gpu_metrics(tmp_path):
    """The real RX 6900 XT dump pads every read with NULs to a page, vendor and class included: the
    capture must still see an AMD GPU there and keep its live files and its binary gpu_metrics table."""
    root = sc.clean_workstation(tmp_path / "root")
    sc.add_second_gpu(root)  # the rx6900xt dump
    plan = prepare_bundle(HostRoot(root))
    names = {m.name for m in plan.members}
    device = "sys/devices/pci0000:00/0000:00:0a.0/0000:0a:00.0"
    for name in ("vendor", "gpu_busy_percent", "current_link_width", "max_link_width", "gpu_metrics"):
        assert f"{device}/{name}" in names, name


def test_a_gpu_service_account_survives_the_capture_and_people_do_not(tmp_path):
    from rocmdesk.report.redact import Redactor
    from rocmdesk.report.reduce import _passwd_lines

    text = ("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
            "ollama:x:998:998:Ollama,,,:/usr/share/ollama:/bin/false\n"
            "zorana:x:1000:1000:Zorana Example:/home/zorana:/bin/bash\n")
    kept = _passwd_lines(text, Redactor()).splitlines()
    assert kept[2] == "ollama:x:998:998::/usr/share/ollama:/bin/false"  # its groups decide gpu-service-cannot-open-gpu
    assert kept[1] == "" and "Zorana" not in "".join(kept)
