"""torch_index: which download.pytorch.org ROCm index the one-click torch reinstall uses."""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis import torch_index as ti
from rocmdesk.fixes import pip_fix


def test_table_is_consistent():
    keys = [ti._key(i) for i in ti.KNOWN_INDEXES]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert ti.DEFAULT_INDEX in ti.KNOWN_INDEXES
    bounds = {**ti.MIN_INDEX_FOR_GFX, **ti.MAX_INDEX_FOR_GFX}
    assert set(bounds.values()) <= set(ti.KNOWN_INDEXES)
    assert not set(ti.MIN_INDEX_FOR_GFX) & set(ti.MAX_INDEX_FOR_GFX)
    # rocm7.x is compared numerically: 7.14 is newer than 7.2, 6.2.4 newer than 6.2
    assert ti._key("rocm7.14") > ti._key("rocm7.2") > ti._key("rocm7.1") and ti._key("rocm6.2.4") > ti._key("rocm6.2")


def test_every_index_it_can_choose_is_accepted_by_the_pip_fix():
    for name in ti.KNOWN_INDEXES:
        url = ti.index_url(name)
        assert url == f"https://download.pytorch.org/whl/{name}"
        assert pip_fix.INDEX_URL_RE.fullmatch(url)


@pytest.mark.parametrize(("previous", "gfx", "index"), [
    # no ROCm build before: the default, which ComfyUI's README uses
    (None, [], "rocm7.2"), (None, ["gfx1100", "gfx942"], "rocm7.2"), ("", [], "rocm7.2"),
    # previous releases whose index exists are kept, including the new rocm6.3 and 7.x ones
    ("6.2", ["gfx1100"], "rocm6.2"), ("6.2.4", [], "rocm6.2.4"), ("6.3", ["gfx1030"], "rocm6.3"),
    ("7.0", [], "rocm7.0"), ("7.1", ["gfx942"], "rocm7.1"), ("7.2", [], "rocm7.2"), ("7.14", [], "rocm7.14"),
    # patch and build suffixes map to the minor index; 7.14.0 is rocm7.14, not rocm7.1
    ("6.2.41133", [], "rocm6.2"), ("7.2.1", [], "rocm7.2"), ("7.14.0", ["gfx90a"], "rocm7.14"),
    # previous index too old for the GPU: raised to the GPU's floor
    ("6.1", ["gfx1101"], "rocm6.2.4"), ("6.1", ["gfx1102"], "rocm6.2.4"), ("6.0", ["gfx1201"], "rocm6.4"),
    ("6.4", ["gfx950"], "rocm7.0"), ("7.0", ["gfx1151"], "rocm7.1"), ("6.4", ["gfx1150"], "rocm7.1"),
    ("7.2", ["gfx1103"], "rocm7.14"),
    # the newest requirement wins when several GPUs have floors
    (None, ["gfx1101", "gfx1201"], "rocm7.2"), ("6.2.4", ["gfx1101", "gfx1201"], "rocm6.4"),
    # GPU whose target newer wheels dropped: never above its ceiling, whatever the env had
    (None, ["gfx906"], "rocm6.3"), (None, ["gfx900"], "rocm6.3"), ("7.2", ["gfx906"], "rocm6.3"),
    ("7.14", ["gfx900"], "rocm6.3"), ("6.4", ["gfx906"], "rocm6.3"), ("6.1", ["gfx906"], "rocm6.1"),
    (None, ["gfx906", "gfx1030"], "rocm6.3"), ("6.2", ["gfx906", "gfx1101"], "rocm6.2.4"),
    # previous release with no index rocmdesk installs from (never existed, too old, or AMD's own repos)
    ("5.7", [], "rocm7.2"), ("6.5", [], "rocm7.2"), ("7.3", ["gfx1100"], "rocm7.2"), ("10.0.0", [], "rocm7.2"),
    ("7.13.0", [], "rocm7.2"), ("7.15", ["gfx1103"], "rocm7.14"), ("5.7", ["gfx906"], "rocm6.3"),
    ("garbage", [], "rocm7.2"), ("rocm6.2", [], "rocm7.2"),
])
def test_choose_index(previous, gfx, index):
    chosen, why = ti.choose_index(previous, gfx)
    assert chosen == index
    assert why and "None" not in why


def test_explanations_say_why():
    assert ti.choose_index("6.2", ["gfx1100"])[1] == "keeps ROCm 6.2, which this environment had before"
    assert ti.choose_index(None)[1] == "the stable index ComfyUI's install guide uses"
    why = ti.choose_index("6.0", ["gfx1201", "gfx1200"])[1]
    assert why == ("PyTorch's ROCm 6.0 wheels are not known to support gfx1200, gfx1201; "
                   "rocm6.4 is the first index that does")
    why = ti.choose_index("7.2", ["gfx906"])[1]
    assert why == "PyTorch's ROCm 7.2 wheels lack kernels for gfx906; rocm6.3 is the newest index that has them"
    assert ti.choose_index(None, ["gfx900"])[1] == "the newest index whose wheels still have kernels for gfx900"
    assert ti.choose_index(None, ["gfx1103"])[1] == "the first index known to support gfx1103"
    why = ti.choose_index("6.5", [])[1]
    assert why == ("ROCm 6.5 is not among the PyTorch indexes rocmdesk installs from, so "
                   "the stable index ComfyUI's install guide uses")
    assert ti.choose_index("5.7", ["gfx906"])[1].endswith(", so the newest index whose wheels still have kernels "
                                                          "for gfx906")


def test_gpus_without_a_common_index_are_refused():
    with pytest.raises(ti.NoSuitableIndex, match=r"gfx906 \(up to rocm6\.3\) and gfx1103 \(from rocm7\.14\)"):
        ti.choose_index(None, ["gfx906", "gfx1103"])
    with pytest.raises(ti.NoSuitableIndex):
        ti.choose_index("6.3", ["gfx1150", "gfx900"])
    # a refusal is a ValueError, so callers that guard bad input also guard this
    assert issubclass(ti.NoSuitableIndex, ValueError)


def test_a_refusal_names_both_sides():
    with pytest.raises(ti.NoSuitableIndex) as info:
        ti.choose_index("7.2", ["gfx1103", "gfx900", "gfx906"])
    assert (info.value.old, info.value.ceiling, info.value.new, info.value.floor) == (
        ("gfx900", "gfx906"), "rocm6.3", ("gfx1103",), "rocm7.14")


@pytest.mark.parametrize(("previous", "gfx", "index"), [
    ("6.0", [], "rocm6.1"), ("6.0", ["gfx906"], "rocm6.1"), ("6.1", ["gfx906"], "rocm6.1"),
    ("6.0", ["gfx1201"], "rocm6.4"), (None, [], "rocm7.2"), ("7.14", [], "rocm7.14"), ("5.7", ["gfx900"], "rocm6.3"),
])
def test_a_minimum_raises_the_choice_within_the_gpus_limits(previous, gfx, index):
    chosen, why = ti.choose_index(previous, gfx, minimum=("rocm6.1", "torch 2.5"))
    assert chosen == index and why


def test_a_minimum_says_why_and_is_refused_above_the_ceiling():
    assert ti.choose_index("6.0", [], minimum=("rocm6.1", "torch 2.5"))[1] == (
        "rocm6.0 has no torch 2.5; rocm6.1 is the first index that does")
    with pytest.raises(ti.NoSuitableIndex, match=r"gfx906 \(up to rocm6\.3\) and torch 2\.14 \(from rocm7\.14\)"):
        ti.choose_index("6.0", ["gfx906"], minimum=("rocm7.14", "torch 2.14"))


@pytest.mark.parametrize(("installed", "index", "packages", "dropped"), [
    ([], "rocm7.2", ("torch",), False),
    (["torch"], "rocm6.3", ("torch",), False),
    (["torch", "torchvision"], "rocm7.14", ("torch", "torchvision"), False),
    (["torch", "torchaudio", "torchvision"], "rocm7.2", ("torch", "torchvision", "torchaudio"), False),
    (["TorchAudio"], "rocm6.0", ("torch", "torchaudio"), False),
    (["torchaudio", "torchvision"], "rocm7.14", ("torch", "torchvision"), True),
    (["torchaudio"], "nightly/rocm7.14", ("torch",), True),
    (["torchaudio"], "not-an-index", ("torch", "torchaudio"), False),  # unknown: no rule to apply
    ({"torchaudio": ("2.5.1", "/x")}, "rocm7.14", ("torch",), True),  # env.packages is a mapping
])
def test_reinstall_packages(installed, index, packages, dropped):
    got, note = ti.reinstall_packages(installed, index)
    assert got == packages
    assert (note is not None) is dropped
    if dropped:
        assert "torchaudio is left out" in note and index in note


@pytest.mark.parametrize(("tag", "index"), [
    ("rocm6.2", "rocm6.2"), ("rocm6.2.4", "rocm6.2.4"), ("rocm7.14.0", "rocm7.14"), ("rocm7.2.0", "rocm7.2"),
    ("rocm5.4.2", "rocm5.4.2"), ("rocm4.0.1", "rocm4.0.1"), ("rocm6.0", "rocm6.0"),
    ("rocm6.2.3", None), ("rocm7.3", None), ("rocm6.2.41133", None), ("rocm5.0", None), ("rocm", None), ("", None),
])
def test_index_for_rocm_tag(tag, index):
    assert ti.index_for_rocm_tag(tag) == index


def test_unknown_targets_set_no_bound():
    assert ti.choose_index("6.0", ["gfx1030", "gfx90a", "gfx942", "gfx9999", ""])[0] == "rocm6.0"


# -- the chosen index as the torch-wheel-mismatch check offers it -------------------------------------


def _mismatch(tmp_path, gfx_versions):
    import rocmdesk.diagnosis.checks.python_torch  # noqa: F401  (registers the check)
    from rocmdesk.diagnosis import engine
    from rocmdesk.diagnosis.context import DiagnosisContext
    from rocmdesk.diagnosis.metadata import load_metadata
    from rocmdesk.host import HostRoot
    from tests.support.python_envs import make_venv, write

    write(tmp_path / "sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    write(tmp_path / "sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n")
    for node, packed in enumerate(gfx_versions, start=1):
        write(tmp_path / f"sys/class/kfd/kfd/topology/nodes/{node}/properties", f"gfx_target_version {packed}\n")
    make_venv(tmp_path, "home/alice/v", "cpu")
    ctx = DiagnosisContext(HostRoot(tmp_path))
    return engine.run_check(engine._REGISTRY["torch-wheel-mismatch"], ctx, load_metadata())


def _offered_urls(result):
    return [a for f in result.findings if f.fix is not None for a in (f.fix.action or ()) if "pytorch.org" in a]


def test_a_dropped_target_gets_its_last_index_in_the_fix(tmp_path):
    result = _mismatch(tmp_path, [90006])  # MI50 / Radeon VII
    assert _offered_urls(result) == ["https://download.pytorch.org/whl/rocm6.3"]
    assert "rocm6.3: the newest index whose wheels still have kernels for gfx906" in result.findings[0].explanation


def test_a_new_target_gets_its_first_index_in_the_fix(tmp_path):
    result = _mismatch(tmp_path, [110003])  # Radeon 780M
    assert _offered_urls(result) == ["https://download.pytorch.org/whl/rocm7.14"]


def test_gpus_without_a_common_index_get_no_one_click_index(tmp_path):
    result = _mismatch(tmp_path, [90006, 110003])
    assert result.status.value == "fail" and len(result.findings) == 1  # a finding, not an engine error
    assert _offered_urls(result) == []
    assert result.findings[0].fix.action is None and result.findings[0].fix.steps
