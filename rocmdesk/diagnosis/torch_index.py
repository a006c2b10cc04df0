"""Which download.pytorch.org ROCm index (``whl/rocmX.Y``) to reinstall torch from.

A one-click fix that names a missing index fails, and one that names an index whose wheels lack code for
the user's GPU "works" and then crashes (``hipErrorNoBinaryForGpu``, rocBLAS "Cannot read
TensileLibrary.dat ... for GPU arch"). So every index and every per-GPU bound below carries a source
(looked up with the search tool, 2026-11-30; keep in step with pytorch.org when adding rows).

Indexes (stable, Linux):
- pytorch.org/get-started/previous-versions (upstream ``_get_started/previous-versions.md``, read in the
  PyTorchKR/pytorch.kr mirror that copies it): 2.3.x -> rocm6.0; 2.4.x -> rocm6.1; 2.5.x -> rocm6.1 and
  rocm6.2; 2.6.0 -> rocm6.1 and rocm6.2.4; 2.7.x -> rocm6.3; 2.8.0, 2.9.0, 2.9.1 -> rocm6.4;
  2.10.0 -> rocm7.1; 2.11.0, 2.12.0, 2.12.1 -> rocm7.2 (2.12 commands no longer list torchaudio).
- rocm7.0: PyTorch dev-discuss "Wheel variants for PyTorch release 2.10 published" (2.10.0: "ROCm 7.0
  and 7.1"); pytorch/test-infra PR #7430 (ROCm 7.0/7.1 build matrix).
- 2.13.0 -> rocm7.2 and 2.14.0 (2026-09-02) -> rocm7.14: upstream published_versions.json as mirrored in
  PyTorchKR/pytorch.kr PRs #102 and #119 (releases.json drops ROCm 7.1/7.2 and adds 7.14 for 2.14);
  pytorch/test-infra PR #8451 (ROCm 7.1,7.2 -> 7.2,7.14). The rocm7.14 wheels are built on TheRock's
  ``rocm`` wheels instead of bundling ROCm (pytorch/pytorch RFC #191688; ``.ci/docker/manywheel/build.sh``).
- torchaudio's last release is 2.11.0 (PyTorchKR PRs #102/#119; the 2.12+ commands above omit it).
- Older indexes (rocm4.0.1, 4.1, 4.2, 5.1.1, 5.2, 5.3, 5.4, 5.4.2, 5.5, 5.6, 5.7): astral-sh/uv
  ``crates/uv-torch/src/backend.rs`` (TorchBackend, one variant per download.pytorch.org ROCm index). rocmdesk
  never installs from them; a rollback may put back a version that came from one.
- ComfyUI's README (Comfy-Org/ComfyUI, late 2026) installs Linux AMD torch from ``whl/rocm7.2``; always
  ``--index-url``, never ``--extra-index-url`` (comfy-cli PR #379: with both, pip picks PyPI's CUDA torch).

GPU targets (``PYTORCH_ROCM_ARCH`` of the manywheel builds, plus the ROCm libraries bundled in the wheel):
- gfx1101 joined in pytorch/pytorch PR #141667 (Dec 2024), gfx1102 in PR #147761 (Feb 2025);
  ``torch.cuda.get_arch_list()`` of 2.5.1+rocm6.2 lacks both, of 2.7.1+rocm6.2.4 and 2.7.1+rocm6.3 has
  both (astral-sh/uv issue #14086).
- gfx1200/gfx1201: PR #148562 (Mar 2025, nightly). 2.7.1 on rocm6.2.4/rocm6.3 compiles them (uv #14086),
  but only ROCm 6.4's rocBLAS is confirmed to ship their kernels (ROCm/legacy-rocm-build #4625 lists
  them), so rocm6.4 stays the floor.
- gfx950, gfx1150, gfx1151: added for ROCm >= 7.0 builds (PR #167299 removed that version check);
  2.11+rocm7.2 lists them (astral-sh/uv PR #18730). gfx1150/gfx1151 start at rocm7.1: the rocm7.0 wheel
  was reported not to enumerate a gfx1151 (mudler/LocalAI PR #10997).
- gfx1103 (Radeon 780M): missing from the wheel arch list up to release/2.12 (pytorch/pytorch PR #179653,
  unslothai/unsloth PR #9829); the rocm7.2 wheel's bundled rocBLAS has no gfx1103 library (pytorch#179865
  lists them); main's build.sh builds it for every ROCm, so only rocm7.14 (torch 2.14) carries it.
- gfx900/gfx906 dropped: ROCm 6.4's rocBLAS ships no Tensile library for gfx906 ("rocm 6.3 worked fine",
  ROCm/legacy-rocm-build #4625); 2.12+rocm7.2 aborts on gfx900 for the same reason (pytorch/pytorch
  #179865); build.sh builds gfx900/gfx906 only on the pre-7.14 images. So rocm6.3 is their ceiling.
"""

from __future__ import annotations

import re

from packaging.utils import canonicalize_name

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.kernel_driver import DriverLimit

BASE_URL = "https://download.pytorch.org/whl/"

# Stable ROCm indexes on download.pytorch.org that rocmdesk may install from (sources above); oldest first.
KNOWN_INDEXES: tuple[str, ...] = ("rocm6.0", "rocm6.1", "rocm6.2", "rocm6.2.4", "rocm6.3", "rocm6.4",
                                  "rocm7.0", "rocm7.1", "rocm7.2", "rocm7.14")
# Indexes that exist but that rocmdesk does not install from (a rollback can still need them); oldest first.
OLDER_INDEXES: tuple[str, ...] = ("rocm4.0.1", "rocm4.1", "rocm4.2", "rocm5.1.1", "rocm5.2", "rocm5.3", "rocm5.4",
                                  "rocm5.4.2", "rocm5.5", "rocm5.6", "rocm5.7")
# The index ComfyUI's README installs from: newest with the bundled ROCm runtime and with torchaudio, which
# the one-click fix installs (rocm7.14 has torch 2.14 only, and torchaudio stopped at 2.11).
DEFAULT_INDEX = "rocm7.2"

# gfx target -> oldest / newest index whose wheels carry code for it: the per-target rows of the one support table
# (rocmdesk.diagnosis.rocm_support, sources above); targets not listed: any index.
MIN_INDEX_FOR_GFX: dict[str, str] = rocm_support.torch_min_index()
MAX_INDEX_FOR_GFX: dict[str, str] = rocm_support.torch_max_index()
# Targets no index rocmdesk installs from has code for (gfx803, RDNA1, gfx90c): a reinstall cannot help them.
NO_WHEELS_FOR_GFX: frozenset[str] = rocm_support.targets_without_wheels()

# CPython versions each index has torch wheels for: the union over the torch releases it carries (index -> releases
# above) of the "Python" column of pytorch/pytorch RELEASE.md's Release Compatibility Matrix (2.3: >=3.8, <=3.11,
# 3.12 experimental; 2.4: 3.8-3.12; 2.5: 3.9-3.12, 3.13 experimental; 2.6-2.8: 3.9-3.13; 2.9-2.12: 3.10-3.14;
# 2.13, 2.14: 3.10-3.15). Experimental minor versions had wheels; free-threaded (3.13t...) builds are not counted.
PYTHON_FOR_INDEX: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "rocm6.0": ((3, 8), (3, 12)),  # torch 2.3, 2.4
    "rocm6.1": ((3, 8), (3, 13)),  # 2.4, 2.5, 2.6
    "rocm6.2": ((3, 9), (3, 13)),  # 2.5
    "rocm6.2.4": ((3, 9), (3, 13)),  # 2.6, 2.7.1
    "rocm6.3": ((3, 9), (3, 13)),  # 2.7
    "rocm6.4": ((3, 9), (3, 14)),  # 2.8, 2.9
    "rocm7.0": ((3, 10), (3, 14)),  # 2.10
    "rocm7.1": ((3, 10), (3, 14)),  # 2.10
    "rocm7.2": ((3, 10), (3, 15)),  # 2.11, 2.12, 2.13
    "rocm7.14": ((3, 10), (3, 15)),  # 2.14
}


def parse_python_version(text: str | None) -> tuple[int, int] | None:
    """(3, 11) for "3.11", "3.11.9" or "python3.11"; None otherwise."""
    match = re.search(r"(\d{1,9})\.(\d{1,9})", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def python_ok(index: str, python: tuple[int, int] | None) -> bool:
    """Whether ``index`` has torch wheels for this CPython (an unknown Python, or index, is not ruled out)."""
    if python is None or index not in PYTHON_FOR_INDEX:
        return True
    low, high = PYTHON_FOR_INDEX[index]
    return low <= python <= high


def python_range_text(index: str) -> str:
    low, high = PYTHON_FOR_INDEX[index]
    return f"Python {low[0]}.{low[1]} to {high[0]}.{high[1]}"


class NoWheelForPython(ValueError):
    """No index that carries the GPUs' code has a torch wheel for the environment's Python: pip can only fail."""

    def __init__(self, python: tuple[int, int], index: str, candidates) -> None:
        self.python, self.index, self.candidates = python, index, tuple(candidates)
        need = python_range_text(index)
        super().__init__(f"no PyTorch ROCm index rocmdesk installs from has a torch wheel for Python "
                         f"{python[0]}.{python[1]} and this machine's GPUs; {index} needs {need}")


# torchaudio's last release (2.11.0) is on rocm7.2; newer indexes have no torchaudio wheel (sources above).
LAST_TORCHAUDIO_INDEX = "rocm7.2"
COMPANIONS = ("torchvision", "torchaudio")


class NoSuitableIndex(ValueError):
    """The machine's GPUs need index ranges that do not overlap: no single torch install serves them all.

    ``old`` need an index up to ``ceiling``, ``new`` one from ``floor`` on (the caller's steps name both)."""

    def __init__(self, old, ceiling: str, new, floor: str) -> None:
        self.old, self.ceiling, self.new, self.floor = tuple(old), ceiling, tuple(new), floor
        super().__init__(f"no PyTorch ROCm index carries code for both {', '.join(self.old)} (up to {ceiling}) "
                         f"and {', '.join(self.new)} (from {floor}); use one Python environment per GPU")


class DriverTooOld(ValueError):
    """The running amdgpu-dkms is too old for every index that would serve: what rocmdesk installs would run ROCm user
    space newer than AMD supports on that driver (rocmdesk.diagnosis.kernel_driver). ``need`` is the oldest index the
    GPUs (or the fix) need, None when the driver is older than every index rocmdesk installs from."""

    def __init__(self, limit: DriverLimit, need: str | None, what) -> None:
        self.limit, self.need, self.what = limit, need, tuple(what)
        newest = f"ROCm {limit.newest_text}" if limit.newest_text else "no release rocmdesk installs wheels for"
        verb = "needs" if len(self.what) == 1 else "need"
        wanted = f"; {', '.join(self.what)} {verb} {need} or newer" if need else ""
        super().__init__(f"the kernel driver amdgpu-dkms {limit.version} (ROCm {limit.rocm_text}) supports user space "
                         f"up to {newest}{wanted}")


def driver_cap(limit: DriverLimit | None) -> str | None:
    """Newest index whose ROCm release the driver supports; None without a limit or when no index fits (see
    DriverTooOld)."""
    if limit is None or limit.newest is None:
        return None
    fitting = [i for i in KNOWN_INDEXES if _key(i)[:2] <= limit.newest]
    return fitting[-1] if fitting else None


def _key(index: str) -> tuple[int, ...]:
    return tuple(int(x) for x in index[len("rocm"):].split("."))


def index_url(index: str) -> str:
    return BASE_URL + index


def _bounds(gfx_targets) -> tuple[str | None, str | None, list[str], list[str]]:
    """(floor, ceiling, targets that set the floor, targets that set the ceiling)."""
    floor = max((MIN_INDEX_FOR_GFX[g] for g in gfx_targets if g in MIN_INDEX_FOR_GFX), key=_key, default=None)
    ceiling = min((MAX_INDEX_FOR_GFX[g] for g in gfx_targets if g in MAX_INDEX_FOR_GFX), key=_key, default=None)
    new = sorted({g for g in gfx_targets if floor is not None and MIN_INDEX_FOR_GFX.get(g) == floor})
    old = sorted({g for g in gfx_targets if ceiling is not None and MAX_INDEX_FOR_GFX.get(g) == ceiling})
    if floor is not None and ceiling is not None and _key(floor) > _key(ceiling):
        raise NoSuitableIndex(old, ceiling, new, floor)
    return floor, ceiling, new, old


def _previous_index(previous_rocm: str | None) -> tuple[str | None, str | None]:
    """(ROCm release as written, the known index it maps to or None)."""
    if not previous_rocm:
        return None, None
    match = re.match(r"(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?", previous_rocm)
    if not match:
        return previous_rocm, None
    for candidate in (f"rocm{match.group(0)}", f"rocm{match.group(1)}.{match.group(2)}"):
        if candidate in KNOWN_INDEXES:
            return previous_rocm, candidate
    return previous_rocm, None


def choose_index(previous_rocm: str | None, gfx_targets: list[str] | tuple[str, ...] = (),
                 minimum: tuple[str, str] | None = None, python: tuple[int, int] | None = None,
                 driver: DriverLimit | None = None) -> tuple[str, str]:
    """(index name, why): keep the ROCm release the env had when that index exists and carries the GPUs'
    targets; otherwise the default index, raised to the GPUs' floor or lowered to their ceiling.

    ``minimum`` is (oldest index, what only it and newer ones have), e.g. a torch release with a fix: the choice
    is raised to it, never above the GPUs' ceiling. Raises NoSuitableIndex when the GPUs (or the GPUs and
    ``minimum``) need ranges that do not overlap. ``python`` is the environment's CPython: an index without a torch
    wheel for it is never chosen (pip would fail), and NoWheelForPython says so when no allowed index has one.
    ``driver`` is the running amdgpu-dkms's limit: no index newer than the user space it supports is chosen, and
    DriverTooOld says so when the GPUs (or ``minimum``) need a newer one."""
    index, why = _choose(previous_rocm, gfx_targets)
    if minimum is not None and _key(index) < _key(minimum[0]):
        need, what = minimum
        _floor, ceiling, _new, old = _bounds(gfx_targets)
        if ceiling is not None and _key(need) > _key(ceiling):
            raise NoSuitableIndex(old, ceiling, [what], need)
        index, why = need, f"{index} has no {what}; {need} is the first index that does"
    cap = driver_cap(driver)
    if driver is not None and (driver.newest is None or cap is None):
        raise DriverTooOld(driver, None, ())
    if driver is not None and cap is not None and _key(index) > _key(cap):
        floor, _ceiling, new, _old = _bounds(gfx_targets)
        if floor is not None and _key(floor) > _key(cap):
            raise DriverTooOld(driver, floor, new)
        if minimum is not None and _key(minimum[0]) > _key(cap):
            raise DriverTooOld(driver, minimum[0], [minimum[1]])
        index, why = cap, (f"the kernel driver, amdgpu-dkms {driver.version} of ROCm {driver.rocm_text}, supports ROCm "
                           f"user space up to {driver.newest_text} (AMD's user/kernel-space support matrix: +/- 2 "
                           f"releases); {cap} is the newest index within that")
    if python_ok(index, python):
        return index, why
    assert python is not None
    floor, ceiling, _new, _old = _bounds(gfx_targets)
    low = max((k for k in (floor, minimum[0] if minimum else None) if k), key=_key, default=None)
    allowed = [i for i in KNOWN_INDEXES if (low is None or _key(i) >= _key(low))
               and (ceiling is None or _key(i) <= _key(ceiling)) and (cap is None or _key(i) <= _key(cap))
               and python_ok(i, python)]
    if not allowed:
        raise NoWheelForPython(python, index, [i for i in KNOWN_INDEXES if python_ok(i, python)])
    # the allowed index nearest to the one chosen: the newest below it, else the oldest above it
    below = [i for i in allowed if _key(i) < _key(index)]
    other = below[-1] if below else allowed[0]
    return other, (f"{index} has no torch wheel for Python {python[0]}.{python[1]} ({python_range_text(index)}); "
                   f"{other} is the nearest index that has one")


def _choose(previous_rocm: str | None, gfx_targets) -> tuple[str, str]:
    floor, ceiling, new, old = _bounds(gfx_targets)
    previous, known = _previous_index(previous_rocm)
    if known is not None:
        if floor is not None and _key(known) < _key(floor):
            return floor, (f"PyTorch's ROCm {previous} wheels are not known to support {', '.join(new)}; "
                           f"{floor} is the first index that does")
        if ceiling is not None and _key(known) > _key(ceiling):
            return ceiling, (f"PyTorch's ROCm {previous} wheels lack kernels for {', '.join(old)}; "
                             f"{ceiling} is the newest index that has them")
        return known, f"keeps ROCm {previous}, which this environment had before"
    lead = f"ROCm {previous} is not among the PyTorch indexes rocmdesk installs from, so " if previous else ""
    if floor is not None and _key(floor) > _key(DEFAULT_INDEX):
        return floor, f"{lead}the first index known to support {', '.join(new)}"
    if ceiling is not None and _key(ceiling) < _key(DEFAULT_INDEX):
        return ceiling, f"{lead}the newest index whose wheels still have kernels for {', '.join(old)}"
    return DEFAULT_INDEX, f"{lead}the stable index ComfyUI's install guide uses"


def _index_key(index: str) -> tuple[int, ...] | None:
    """Version key of ``rocm7.2`` or ``nightly/rocm7.2``; None when the name is not a ROCm index name."""
    match = re.fullmatch(r"(?:nightly/)?rocm(\d+(?:\.\d+)*)/?", index)
    return tuple(int(x) for x in match.group(1).split(".")) if match else None


def reinstall_packages(installed, index: str) -> tuple[tuple[str, ...], str | None]:
    """(packages to reinstall, note on one left out): torch, plus torchvision and torchaudio only when the
    environment already has them (``installed``: its distribution names). torchaudio stopped at 2.11: on rocm7.2
    pip settles on torch 2.11 for it, and newer indexes have no torchaudio at all, so there it is left out
    (pip would fail) and the note says what that means."""
    have = {canonicalize_name(str(name)) for name in installed}
    out = ["torch"]
    note = None
    key = _index_key(index)
    for name in COMPANIONS:
        if name not in have:
            continue
        if name == "torchaudio" and key is not None and key > _key(LAST_TORCHAUDIO_INDEX):
            note = (f"torchaudio is left out: its last release (2.11) has no wheel on {index}. The torchaudio "
                    "installed now was built for another torch and will fail to import; if nothing in this "
                    "environment needs audio, uninstall it (`pip uninstall -y torchaudio`)")
            continue
        out.append(name)
    return tuple(out), note


def index_for_rocm_tag(tag: str) -> str | None:
    """The download.pytorch.org index of a wheel's local tag (``rocm6.2`` -> rocm6.2, ``rocm7.14.0`` -> rocm7.14);
    None when no such index exists (AMD's own builds carry tags like ``rocm6.2.3`` that no PyTorch index has)."""
    every = (*OLDER_INDEXES, *KNOWN_INDEXES)
    if tag in every:
        return tag
    if tag.endswith(".0") and tag[:-2] in every:
        return tag[:-2]
    return None
