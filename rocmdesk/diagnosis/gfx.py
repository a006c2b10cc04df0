"""gfx targets, KFD ``gfx_target_version`` decoding and HSA_OVERRIDE_GFX_VERSION rules.

Everything here is pure. Sources: Linux drivers/gpu/drm/amd/amdkfd/kfd_device.c (gfx_target_version,
e.g. 90010 for gfx90a) for the packed KFD version; ROCm/rocm-install-on-linux
docs/reference/system-requirements.rst and the ROCm GPU specs page (rocm.docs.amd.com reference/gpu-arch-specs)
for the GPU table; ROCm/ROCT-Thunk-Interface src/topology.c (HSA_OVERRIDE_GFX_VERSION_%d per node, then the
global one; per-node added by PR #104) for how the override is parsed and which node it applies to; ollama/ollama
docs/gpu.md (gfx1034 -> 10.3.0) for the same-family overrides people use on unsupported cards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmdesk.diagnosis import rocm_support

# Official support and same-family overrides come from the one support table (rocmdesk.diagnosis.rocm_support);
# these names stay for the checks that import them.
SUPPORTED_TARGETS: frozenset[str] = rocm_support.supported_targets()
KNOWN_OVERRIDES: dict[str, str] = {r.target: r.override for r in rocm_support.TABLE
                                   if r.override and not r.supported_in(None)}
PRODUCTS: dict[str, str] = {r.target: r.products for r in rocm_support.TABLE}

MAX_MAJOR = 63
MAX_MINOR = 255
MAX_STEP = 255


@dataclass(frozen=True, slots=True)
class GfxVersion:
    major: int
    minor: int
    step: int

    @classmethod
    def from_packed(cls, value: int) -> GfxVersion | None:
        """KFD ``gfx_target_version`` (MMmmss in decimal: 110000, 90010); 0 (a CPU) gives None."""
        if value <= 0:
            return None
        return cls(value // 10000, (value // 100) % 100, value % 100)

    @classmethod
    def from_target(cls, target: str) -> GfxVersion | None:
        """"gfx1100" -> 11.0.0, "gfx90a" -> 9.0.10, "gfx942" -> 9.4.2; None if it is not a gfx name.

        The last two characters are minor and stepping as hex digits; the rest is the major.
        """
        m = re.fullmatch(r"gfx(\d{1,2})([0-9a-f])([0-9a-f])", target.strip().lower())
        if not m:
            return None
        return cls(int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16))

    @property
    def target(self) -> str:
        if self.minor > 15 or self.step > 15:
            return f"gfx{self.major}.{self.minor}.{self.step}"
        return f"gfx{self.major}{self.minor:x}{self.step:x}"

    @property
    def override_string(self) -> str:
        return f"{self.major}.{self.minor}.{self.step}"

    @property
    def family(self) -> str:
        return family_of(self)

    def __str__(self) -> str:
        return self.override_string


def family_of(v: GfxVersion) -> str:
    """The architecture family an override must stay inside (crossing families, or 10.3.0 on RDNA1,
    gives memory access faults or "invalid device function": ROCm/legacy-rocm-build#5238, an MI210 with a
    leftover gfx1030 override; ollama/ollama#8851, 11.0.0 where 10.3.0 was meant)."""
    if v.major == 9 and v.minor == 0:
        return {8: "CDNA", 10: "CDNA2"}.get(v.step, "GCN5 (Vega)")
    named = {(9, 4): "CDNA3", (9, 5): "CDNA4", (10, 1): "RDNA1", (10, 3): "RDNA2", (11, 0): "RDNA3",
             (11, 5): "RDNA3.5", (12, 0): "RDNA4", (8, 0): "GCN3/4"}
    return named.get((v.major, v.minor), f"gfx{v.major}.{v.minor}")


def target_of_packed(value: int) -> str | None:
    version = GfxVersion.from_packed(value)
    return version.target if version else None


_OVERRIDE_RE = re.compile(r"(\d{1,9})\.(\d{1,9})\.(\d{1,9})")


def parse_override(value: str) -> tuple[GfxVersion | None, str | None]:
    """Parse an HSA_OVERRIDE_GFX_VERSION value the way libhsakmt does: ``%u.%u.%u`` and nothing
    after it, major <= 63, minor and stepping <= 255 (ROCm/ROCT-Thunk-Interface src/topology.c, sscanf "%u.%u.%u%c").
    Returns (version, problem)."""
    text = value
    m = _OVERRIDE_RE.fullmatch(text)
    if not m:
        if text.strip().lower().startswith("gfx"):
            return None, (f"'{value}' is a gfx target name; the variable wants three numbers "
                          "such as 10.3.0")
        return None, f"'{value}' is not three numbers separated by dots (like 10.3.0) with nothing around them"
    major, minor, step = (int(g) for g in m.groups())
    if major > MAX_MAJOR:
        return None, f"major {major} is over {MAX_MAJOR}"
    if minor > MAX_MINOR or step > MAX_STEP:
        return None, f"minor or stepping over {MAX_MINOR}"
    return GfxVersion(major, minor, step), None


def suggested_override(target: str, release: str | None = None) -> str | None:
    """The same-family override people use for a target ``release`` does not support, or None."""
    if rocm_support.is_supported(target, release):
        return None
    return rocm_support.same_family_override(target)


def is_supported(target: str, release: str | None = None) -> bool:
    """On ROCm's Linux support list of ``release`` (None: the newest release the table knows)."""
    return rocm_support.is_supported(target, release)
