"""Each shipped demo recording and its machine bundle are one machine (issue 10, item 5).

Processes/Overview play the recording; Diagnosis/Tuning/Report read the bundle. They must agree on the GPUs,
caps, limits and processes, and the diagnosis may only name processes the recording shows
(tests/support/demo_consistency.py says what is compared and why).
"""

from __future__ import annotations

import dataclasses

import pytest

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.report.bundle import open_bundle
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.recording import bundled_recordings, demo_machines, load_recording, machine_path
from tests.support import demo_consistency as dc


@pytest.fixture(scope="module", params=sorted(demo_machines()))
def demo(request):
    """(recording, opened machine bundle, one sysfs sample of it, its diagnosis JSON)."""
    name = request.param
    recording = load_recording(name)
    bundle = open_bundle(machine_path(name))
    backend = SysfsBackend(bundle.root)
    backend.discover()
    sample = backend.sample()
    backend.close()
    report = diagnose(bundle.root, runner=bundle.runner(), python_envs=bundle.python_envs)
    yield recording, bundle, sample, report.to_json()
    bundle.close()


def test_every_demo_machine_has_its_recording_and_both_demos_are_shipped():
    assert set(demo_machines()) == {"rx7900xtx-comfyui", "mi300x-node"}
    assert set(demo_machines()) <= set(bundled_recordings())


def test_recording_and_machine_are_one_machine(demo):
    recording, bundle, sample, diagnosis = demo
    assert dc.disagreements(recording, bundle.root, sample, diagnosis) == []


def test_the_recording_shows_every_gpu_process_of_the_machine_with_its_user(demo):
    """Not only "no disagreement": the processes exist on both sides, with a user from the machine's
    passwd (the capture's placeholder), and the recording's GPU count is the machine's."""
    recording, bundle, _sample, _diagnosis = demo
    assert recording.process_info and len(recording.gpus) == len(dc.discover_gpus(bundle.root))
    for pid, info in recording.process_info.items():
        assert bundle.root.try_read_text(f"/proc/{pid}/cmdline"), pid
        assert info["user"] == "user1", pid  # uid 1000 as the bundle names it


def test_the_comfyui_diagnosis_names_the_process_the_recording_shows():
    """The RX 7900 XTX's torch finding names ComfyUI's running process: the PID of the Processes tab."""
    bundle = open_bundle(machine_path("rx7900xtx-comfyui"))
    try:
        report = diagnose(bundle.root, runner=bundle.runner(), python_envs=bundle.python_envs)
    finally:
        bundle.close()
    recording = load_recording("rx7900xtx-comfyui")
    comfy = [pid for pid, info in recording.process_info.items() if "ComfyUI" in info["cmdline"]]
    torch = next(f for f in report.findings if f.id == "torch-wheel-mismatch")
    assert dc.pids_named([e.to_json() for e in torch.evidence]) == set(comfy) and len(comfy) == 1


# -- the comparison catches each kind of disagreement (so the test above can fail) ---------------


def _tampered_process(recording, pid, **changes):
    info = {**recording.process_info[pid], **changes}
    return dataclasses.replace(recording, process_info={**recording.process_info, pid: info})


def test_a_changed_pid_user_or_command_line_is_reported(demo):
    recording, bundle, _sample, _diagnosis = demo
    pid = min(recording.process_info)
    moved = dict(recording.process_info)
    moved[pid + 100000] = moved.pop(pid)
    problems = dc.process_disagreements(dataclasses.replace(recording, process_info=moved), bundle.root)
    assert any("GPU processes" in p and str(pid + 100000) in p for p in problems)
    for key, value in (("user", "demo"), ("cmdline", "/home/demo/x.py"), ("name", "other")):
        problems = dc.process_disagreements(_tampered_process(recording, pid, **{key: value}), bundle.root)
        assert problems == [f"process {pid} {key}: recording {value!r}, machine "
                            f"{recording.process_info[pid][key]!r}"]


def test_a_process_on_another_gpu_is_reported_when_it_holds_a_render_node(demo):
    recording, bundle, _sample, _diagnosis = demo
    holders = [pid for pid in recording.process_info if dc._render_nodes_held(bundle.root, pid)]
    assert holders  # desktop clients on the workstation, one rank per GPU on the node
    problems = dc.process_disagreements(_tampered_process(recording, holders[0], pci="0000:ff:00.0"), bundle.root)
    assert problems and "holds" in problems[0]


def test_a_changed_gpu_identity_cap_or_limit_is_reported(demo):
    recording, bundle, sample, _diagnosis = demo
    first = recording.gpus[0]
    renamed = dataclasses.replace(recording, gpus=[dataclasses.replace(first, card="card9"), *recording.gpus[1:]])
    assert dc.gpu_disagreements(renamed, bundle.root, sample) == [
        f"GPU {first.pci} card: recording 'card9', machine {first.card!r}"]
    kernel = dataclasses.replace(recording, gpus=[dataclasses.replace(g, driver_version="6.8.0-60-generic")
                                                  for g in recording.gpus])
    assert len(dc.gpu_disagreements(kernel, bundle.root, sample)) == len(recording.gpus)
    fewer = dataclasses.replace(recording, gpus=recording.gpus[1:], static=recording.static[1:])
    assert dc.gpu_disagreements(fewer, bundle.root, sample)[0].startswith("GPUs:")
    static = [{**recording.static[0], "power_cap_w": 303.0}, *recording.static[1:]]
    problems = dc.gpu_disagreements(dataclasses.replace(recording, static=static), bundle.root, sample)
    assert problems and "power_cap_w: recording 303.0" in problems[0]
    limits = [{**recording.static[0], "temperature_crit_c": {"junction": 1.0}}, *recording.static[1:]]
    assert dc.gpu_disagreements(dataclasses.replace(recording, static=limits), bundle.root, sample)


def test_a_diagnosis_naming_an_unknown_process_is_reported(demo):
    recording, _bundle, _sample, _diagnosis = demo
    evidence = [{"path": "/proc/5120/environ", "text": "the running ollama.service process 2345 has no X"},
                {"path": "/proc/self/status", "text": "Groups: 44"}]
    assert dc.pids_named(evidence) == {5120, 2345}
    assert dc.diagnosis_disagreements(recording, evidence) == [
        "the diagnosis names process 2345, which the recording does not show",
        "the diagnosis names process 5120, which the recording does not show"]
    known = min(recording.process_info)
    assert dc.diagnosis_disagreements(recording, [{"text": f"found as running GPU process {known} (python)"}]) == []


@pytest.mark.parametrize("name", sorted(demo_machines()))
def test_no_file_of_a_demo_machine_is_newer_than_its_capture(name):
    """The demo says "recorded 2025-12-01 21:42" (the bundle's capture time): a file of that machine modified
    later (the build day of tools/make_demo_machines.py) would contradict it in the Diagnosis evidence."""
    import tarfile

    bundle = open_bundle(machine_path(name))
    created = bundle.created
    bundle.close()
    with tarfile.open(machine_path(name)) as tar:
        late = [m.name for m in tar.getmembers() if m.mtime > created]
    assert late == []


def test_the_stale_initramfs_predates_the_dkms_module_it_lacks():
    """rx7900xtx-comfyui's story: amdgpu-dkms installed after the image was built, no update-initramfs since."""
    import tarfile

    with tarfile.open(machine_path("rx7900xtx-comfyui")) as tar:
        times = {m.name: m.mtime for m in tar.getmembers()}
    image = next(t for n, t in times.items() if "initrd.img" in n)
    dkms = next(t for n, t in times.items() if n.endswith("updates/dkms/amdgpu.ko.zst"))
    assert image < dkms
