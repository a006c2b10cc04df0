"""One table of which gfx targets each ROCm release supports on Linux, and which PyTorch ROCm wheels carry code.

Every check that asks "is this GPU supported?" and the torch index choice (rocmdesk.diagnosis.torch_index) read
this table, so they can never disagree. Two different questions are answered per target:

- official support: is the target on the ROCm Linux support list of a release (AMD supports it), with the release
  that added, deprecated and dropped it;
- shipped code: which download.pytorch.org ROCm indexes have wheels whose kernels include the target (a target
  can be unsupported and still have code, gfx1102 in the rocm6.2.4+ wheels; or supported and missing, gfx1103).

Sources (looked up 2026-12-02; keep in step when adding rows):
- [M6] ROCm/ROCm docs/compatibility/compatibility-matrix-historical-6.0.csv, "GPU / LLVM target" rows for 6.0.0 up to
  6.3.1: gfx1100, gfx1030, gfx942, gfx90a, gfx908.
- [M64] ROCm/ROCm docs/compatibility/compatibility-matrix.rst for 6.4.0 / 6.4.2 / 6.4.3 / 7.0 / 7.1.0 / 7.1.1 /
  7.2.x: 6.4.0 lists the 6.3 set; 6.4.2 and later add gfx1101, gfx1200, gfx1201 (footnote #RDNA-OS: RX 9070 XT,
  RX 9060 XT, PRO W7700, RX 7800 XT; the 6.4.1 system-requirements page is the first to list the RX 9000 series,
  as cited by ggml-org/llama.cpp PR #15994); 7.0 and later add gfx950 (CDNA4).
- [SR] ROCm/rocm-install-on-linux docs/reference/system-requirements.rst (6.0-6.3 era): MI50 / Radeon VII / PRO VII
  gfx906 "⚠️" (deprecated), MI25 gfx900 "❌" (not supported).
- [RN56] ROCm 5.6.0 release notes: gfx906 enters maintenance mode with ROCm 5.7, end of maintenance Q2 2024.
- [R2] RadeonOpenCompute/ROCm roc-2.0.0 README: GFX8 (Fiji, Polaris) and GFX9 (Vega 10) officially supported.
- [I1471] ROCm/legacy-rocm-build#1471 (ROCm 4.0, 2021): "we are NOT officially supporting gfx8 devices with ROCm
  anymore".
- [I4625] ROCm/legacy-rocm-build#4625: ROCm 6.4's rocBLAS ships no Tensile library for gfx906 ("rocm 6.3 worked").
- [I3059] ROCm/ROCm#3059: "gfx1103 is not supported in ROCm 6.1.0" (AMD), rocBLAS has no gfx1103 library.
- [P132570] pytorch/pytorch#132570: ``roc-obj-ls libtorch_hip.so`` of the rocm6.1/6.2 wheels lists gfx1030, gfx1100,
  gfx900, gfx906, gfx908, gfx90a, gfx942 and no gfx1010 (RX 5700 XT: "HIP error: invalid device function").
- [TI] the per-target wheel bounds documented in rocmdesk/diagnosis/torch_index.py (PyTorch PRs #141667, #147761,
  #148562, #167299, #179653; astral-sh/uv #14086; pytorch #179865).
- [V4557] ROCm/legacy-rocm-build#4557 (780M, ComfyUI), AMD (schung-amd): gfx1102 and gfx1103 have fewer VGPRs than
  gfx1100/gfx1101, so with HSA_OVERRIDE_GFX_VERSION=11.0.0 "some workloads may invoke a kernel which requires more
  VGPRs than are available"; the reporter's runs hung. ROCm/TheRock#1184 (780M, TheRock rocm+torch wheels): with
  11.0.0 "using pytorch ... hangs the system"; ROCm/rocm-libraries#6320: 11.0.0 "causes GPU page faults and hard
  hangs on gfx1103 hardware".
- [R5954] ROCm/TheRock#5954 (ScottTodd, AMD): TheRock's multi-arch wheels, ``pip install --index-url
  https://rocm.nightlies.amd.com/whl-multi-arch/ "torch[device-gfx1103]" "torchvision[device-gfx1103]"``;
  ROCm/legacy-rocm-build#5815 (AMD): "we have gfx1103 (780M) support via TheRock"; ROCm/TheRock#1939: llama.cpp built
  against TheRock's gfx110X-all ROCm runs on a Ryzen 7940HS (780M).
- [ROCT104] ROCm/ROCT-Thunk-Interface PR #104 "Allow overriding gfx version per-node" (HSA_OVERRIDE_GFX_VERSION_<node>)
  and kentrussell in ROCm/legacy-rocm-build#5069: "This feature got merged back in ROCm 6.2".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# ROCm releases the table covers, oldest first ("6.4.1" is listed apart from "6.4.0": RDNA4 and gfx1101 start there).
# Releases before 5.7 are not tabulated; a release newer than the last row is judged by the last row.
RELEASES: tuple[str, ...] = ("5.7", "6.0", "6.1", "6.2", "6.3", "6.4.0", "6.4.1", "7.0", "7.1", "7.2")
LATEST = RELEASES[-1]
# The first ROCm release whose runtime reads HSA_OVERRIDE_GFX_VERSION_<KFD node id> [ROCT104].
PER_NODE_OVERRIDE_SINCE = "6.2"


def release_key(version: str) -> tuple[int, ...] | None:
    """(6, 4, 1) for "6.4.1", "6.4.1-120" or "6.4.60401"; None when it does not start with two numbers."""
    match = re.match(r"(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?", version.strip())
    if not match:
        return None
    major, minor, patch = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if patch >= 10000:  # a HIP-style build number (6.4.43484) is no patch level
        patch = 0
    return major, minor, patch


@dataclass(frozen=True, slots=True)
class TargetRow:
    """What is known about one gfx target. Releases are RELEASES names; indexes are download.pytorch.org names."""

    target: str
    family: str
    products: str
    added: str | None = None  # first release on the Linux support list ("5.7" = on it at the table's start)
    deprecated: str | None = None  # first release that marks it deprecated (still listed)
    dropped: str | None = None  # first release no longer supporting it
    torch_first: str | None = None  # oldest PyTorch index with code for it ("" = every index rocmdesk knows)
    torch_last: str | None = None  # newest PyTorch index with code for it (None = no ceiling)
    override: str | None = None  # same-family HSA_OVERRIDE_GFX_VERSION people use when it is unsupported
    # overrides that run another target's code and are reported to hang or fault this one (never to be proposed),
    # with why, in words
    unsafe_overrides: tuple[str, ...] = ()
    unsafe_why: str = ""
    what_works: str = ""  # for an unsupported target: what does work, in words
    sources: tuple[str, ...] = field(default=())

    @property
    def has_torch_wheels(self) -> bool:
        return self.torch_first is not None

    def supported_in(self, release: str | None) -> bool:
        """On the official Linux support list of ``release`` (None: the newest release in the table)."""
        if self.added is None:
            return False
        key = _table_key(release)
        if key < _table_key(self.added):
            return False
        return self.dropped is None or key < _table_key(self.dropped)

    def status_in(self, release: str | None) -> str:
        """"supported", "deprecated", "not yet" (added later), "dropped" or "never"."""
        if self.added is None:
            return "never"
        key = _table_key(release)
        if key < _table_key(self.added):
            return "not yet"
        if self.dropped is not None and key >= _table_key(self.dropped):
            return "dropped"
        if self.deprecated is not None and key >= _table_key(self.deprecated):
            return "deprecated"
        return "supported"


def _table_key(release: str | None) -> tuple[int, ...]:
    key = release_key(release or LATEST)
    return key if key is not None else release_key(LATEST)  # type: ignore[return-value]


_OLD = "an older ROCm release that still supported it"
_COMMUNITY = ("a community build: distribution ROCm packages (Debian, Fedora, Arch) build more targets, and "
              "projects such as lamikr/rocm_sdk_builder compile ROCm and PyTorch for it")

TABLE: tuple[TargetRow, ...] = (
    # -- Instinct / CDNA ----------------------------------------------------------------------------------------
    TargetRow("gfx950", "CDNA4", "Instinct MI350X / MI355X", added="7.0", torch_first="rocm7.0",
              sources=("M64", "TI")),
    TargetRow("gfx942", "CDNA3", "Instinct MI300X / MI300A / MI325X", added="6.0", torch_first="",
              sources=("M6", "M64")),
    TargetRow("gfx90a", "CDNA2", "Instinct MI250X / MI250 / MI210", added="5.7", torch_first="",
              sources=("M6", "M64")),
    TargetRow("gfx908", "CDNA", "Instinct MI100", added="5.7", torch_first="", sources=("M6", "M64")),
    TargetRow("gfx906", "GCN5.1 (Vega 20)", "Instinct MI50 / MI60, Radeon VII, Radeon PRO VII", added="5.7",
              deprecated="5.7", dropped="6.4.0", torch_first="", torch_last="rocm6.3",
              what_works=f"ROCm 6.3 and the rocm6.3 PyTorch wheels (the last with gfx906 kernels), or {_COMMUNITY}",
              sources=("SR", "RN56", "I4625", "TI")),
    TargetRow("gfx900", "GCN5 (Vega 10)", "Instinct MI25, Radeon RX Vega 56 / 64", torch_first="", torch_last="rocm6.3",
              what_works=("not supported since ROCm 6.0 at the latest (MI25 is marked unsupported); the rocm6.3 "
                          f"PyTorch wheels are the last with gfx900 kernels, or {_COMMUNITY}"),
              sources=("SR", "R2", "P132570", "TI")),
    TargetRow("gfx803", "GCN3/4 (Fiji, Polaris)", "Radeon RX 470 / 480 / 570 / 580 / 590, R9 Fury",
              what_works=("no current ROCm or PyTorch wheel: AMD ended gfx8 support with ROCm 4; community "
                          "gfx803 builds (ROCm and PyTorch compiled for it) exist, or use Vulkan (llama.cpp)"),
              sources=("R2", "I1471")),
    # -- Radeon RDNA1 -------------------------------------------------------------------------------------------
    TargetRow("gfx1010", "RDNA1", "Radeon RX 5700 XT / 5700 / 5600 XT",
              what_works=("no ROCm release supports RDNA1 and no PyTorch wheel has gfx1010 kernels; the 10.3.0 "
                          f"override crosses families and crashes. What works: {_COMMUNITY}, or Vulkan (llama.cpp)"),
              sources=("P132570",)),
    TargetRow("gfx1012", "RDNA1", "Radeon RX 5500 XT / 5500 / 5300",
              what_works=("no ROCm release supports RDNA1 and no PyTorch wheel has gfx1012 kernels. What works: "
                          f"{_COMMUNITY}, or Vulkan (llama.cpp)"),
              sources=("P132570",)),
    # -- Radeon RDNA2 -------------------------------------------------------------------------------------------
    TargetRow("gfx1030", "RDNA2", "Radeon RX 6800 / 6800 XT / 6900 XT / 6950 XT, PRO W6800, PRO V620", added="5.7",
              torch_first="", sources=("M6", "M64")),
    *(TargetRow(t, "RDNA2", p, override="10.3.0",
                what_works="the same-family override HSA_OVERRIDE_GFX_VERSION=10.3.0 (runs the gfx1030 code)",
                sources=("M64",))
      for t, p in (("gfx1031", "Radeon RX 6700 XT / 6750 XT / 6700, RX 6800M / 6700M"),
                   ("gfx1032", "Radeon RX 6600 / 6600 XT / 6650 XT, PRO W6600, RX 6600M"),
                   ("gfx1033", "Van Gogh APU (Steam Deck)"), ("gfx1034", "Radeon RX 6500 XT / 6400"),
                   ("gfx1035", "Radeon 680M / 660M (Rembrandt APU)"), ("gfx1036", "Radeon Graphics (Raphael APU)"))),
    # -- Radeon RDNA3 / 3.5 -------------------------------------------------------------------------------------
    TargetRow("gfx1100", "RDNA3", "Radeon RX 7900 XTX / XT / GRE, PRO W7900 / W7800", added="5.7", torch_first="",
              sources=("M6", "M64")),
    TargetRow("gfx1101", "RDNA3", "Radeon RX 7800 XT / 7700 XT, PRO W7700", added="6.4.1", torch_first="rocm6.2.4",
              override="11.0.0", what_works="ROCm 6.4.1 or newer; before it, HSA_OVERRIDE_GFX_VERSION=11.0.0",
              sources=("M64", "TI")),
    TargetRow("gfx1102", "RDNA3", "Radeon RX 7600 / 7600 XT, RX 7700S / 7600S, PRO W7600", torch_first="rocm6.2.4",
              override="11.0.0",
              what_works=("PyTorch's rocm6.2.4 and newer wheels carry gfx1102 kernels; elsewhere the same-family "
                          "override HSA_OVERRIDE_GFX_VERSION=11.0.0"),
              sources=("TI",)),
    # no override: 11.0.0 runs gfx1100 kernels that can need more registers than gfx1103 has, and hung the reporters'
    # machines [V4557]; what worked is software built with gfx1103 code [R5954][TI]
    TargetRow("gfx1103", "RDNA3", "Radeon 780M / 760M / 740M (Phoenix APU)", torch_first="rocm7.14",
              unsafe_overrides=("11.0.0", "11.0.1"),
              unsafe_why=("gfx1100/gfx1101 kernels can need more vector registers than gfx1103 has (AMD, "
                          "ROCm/legacy-rocm-build#4557); with it PyTorch hung the 780M and the whole system "
                          "(ROCm/TheRock#1184, ROCm/rocm-libraries#6320)"),
              what_works=("software built with gfx1103 code: PyTorch's rocm7.14 wheels (torch 2.14), or TheRock's "
                          "wheels (`pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ "
                          "\"torch[device-gfx1103]\" \"torchvision[device-gfx1103]\"`); llama.cpp built for gfx1103, "
                          "or its Vulkan backend. Not HSA_OVERRIDE_GFX_VERSION=11.0.0 for PyTorch: it hangs this GPU"),
              sources=("I3059", "TI", "V4557", "R5954")),
    TargetRow("gfx1150", "RDNA3.5", "Radeon 890M / 880M (Strix Point APU)", torch_first="rocm7.1",
              what_works="PyTorch's rocm7.1 and newer wheels, built with ROCm 7 for this target",
              sources=("TI",)),
    TargetRow("gfx1151", "RDNA3.5", "Radeon 8060S / 8050S (Strix Halo APU)", torch_first="rocm7.1",
              what_works="PyTorch's rocm7.1 and newer wheels, built with ROCm 7 for this target",
              sources=("TI",)),
    # -- Radeon RDNA4 -------------------------------------------------------------------------------------------
    TargetRow("gfx1200", "RDNA4", "Radeon RX 9060 XT / 9060", added="6.4.1", torch_first="rocm6.4",
              what_works="ROCm 6.4.1 or newer", sources=("M64", "TI")),
    TargetRow("gfx1201", "RDNA4", "Radeon RX 9070 XT / 9070 / 9070 GRE, AI PRO R9700", added="6.4.1",
              torch_first="rocm6.4", what_works="ROCm 6.4.1 or newer", sources=("M64", "TI")),
    # -- APUs of older families -----------------------------------------------------------------------------------
    TargetRow("gfx90c", "GCN5 (Vega iGPU)", "Radeon Vega iGPU (Renoir, Cezanne, Lucienne APUs)",
              what_works=("nothing official: no ROCm release or PyTorch wheel has gfx90c code, and no override of "
                          "another family works; use the discrete GPU (hide this one) or Vulkan"),
              sources=("M64",)),
)

BY_TARGET: dict[str, TargetRow] = {row.target: row for row in TABLE}

# Targets that exist only as integrated GPUs (APUs): llvm/docs/AMDGPUUsage.rst, "AMDGPU Processors" table, Type
# "APU" (gfx902/909/90c Raven/Renoir, gfx1033 Van Gogh, gfx1035 Rembrandt, gfx1036 Raphael, gfx1103 Phoenix, gfx115x
# Strix). Beside a discrete GPU such an iGPU crashes the LLM runtimes that split work over every visible GPU
# (ollama/ollama#2054, fixed in ollama PR #2195 by hiding it with ROCR_VISIBLE_DEVICES; lemonade-sdk/llamacpp-rocm#96;
# ggml-org/llama.cpp#8618)
APU_TARGETS = frozenset({"gfx902", "gfx909", "gfx90c", "gfx1033", "gfx1035", "gfx1036", "gfx1103", "gfx1150",
                         "gfx1151", "gfx1152"})


def row_of(target: str) -> TargetRow | None:
    return BY_TARGET.get(target)


def supported_targets(release: str | None = None) -> frozenset[str]:
    """Targets on the official Linux support list of ``release`` (None: the newest release in the table)."""
    return frozenset(r.target for r in TABLE if r.supported_in(release))


def is_supported(target: str, release: str | None = None) -> bool:
    row = BY_TARGET.get(target)
    return row is not None and row.supported_in(release)


def same_family_override(target: str) -> str | None:
    row = BY_TARGET.get(target)
    return row.override if row else None


def unsafe_override(target: str, value: str) -> str | None:
    """Why ``value`` must not be used as HSA_OVERRIDE_GFX_VERSION on ``target``, or None when it is not known to
    hang or fault it."""
    row = BY_TARGET.get(target)
    return row.unsafe_why if row and value in row.unsafe_overrides else None


def products(target: str) -> str | None:
    row = BY_TARGET.get(target)
    return row.products if row else None


def release_row_for(version: str | None) -> str | None:
    """The table release that describes an installed ROCm version ("6.4.3-120" -> "6.4.1", "6.2.4" -> "6.2",
    "7.2.1" -> "7.2", "8.0" -> "7.2"); None when the version is unreadable or older than the table."""
    key = release_key(version or "")
    if key is None:
        return None
    chosen = None
    for name in RELEASES:
        if _table_key(name) <= key:
            chosen = name
    return chosen


def torch_min_index() -> dict[str, str]:
    """gfx target -> oldest PyTorch index known to carry code for it (targets every index carries are left out)."""
    return {r.target: r.torch_first for r in TABLE if r.torch_first}


def torch_max_index() -> dict[str, str]:
    """gfx target -> newest PyTorch index that still carries code for it."""
    return {r.target: r.torch_last for r in TABLE if r.torch_last}


def targets_without_wheels() -> frozenset[str]:
    """Targets for which no PyTorch ROCm index rocmdesk installs from has code (known, not guessed)."""
    return frozenset(r.target for r in TABLE if r.torch_first is None)
