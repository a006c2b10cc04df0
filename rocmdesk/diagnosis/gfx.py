"""gfx targets, KFD ``gfx_target_version`` decoding and HSA_OVERRIDE_GFX_VERSION rules.

Everything here is pure. Sources (rocm-facts.md): 1a/[S22] for the packed KFD version, 4b/[S1][S2]
for the GPU table, [S23] (ROCT/libhsakmt topology.c) for how the override is parsed and which
node it applies to, [S38][S39] for the same-family overrides people use on unsupported cards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Targets on ROCm's Linux support list (facts 4b/4e, [S1][S2]). gfx1101 and RDNA4 were added by
# later releases; the list is a floor, not a per-release table.
SUPPORTED_TARGETS: frozenset[str] = frozenset(
    {"gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201"}
)

# Unsupported targets with a known same-family override (facts 4b: "RDNA2 non-gfx1030 parts ->
# 10.3.0; RDNA3 non-gfx1100 parts (gfx1102, gfx1103) -> 11.0.0" [S38][S39]; gfx1034 -> 10.3.0 is
# Ollama's documented example [S38]).
KNOWN_OVERRIDES: dict[str, str] = {
    "gfx1031": "10.3.0", "gfx1032": "10.3.0", "gfx1033": "10.3.0", "gfx1034": "10.3.0",
    "gfx1035": "10.3.0", "gfx1036": "10.3.0",
    "gfx1102": "11.0.0", "gfx1103": "11.0.0",
}

# Products for the words we show (facts 4b).
PRODUCTS: dict[str, str] = {
    "gfx942": "Instinct MI300X / MI300A / MI325X",
    "gfx90a": "Instinct MI250X / MI250 / MI210",
    "gfx908": "Instinct MI100",
    "gfx1100": "Radeon RX 7900 XTX / XT / GRE, PRO W7900 / W7800",
    "gfx1101": "Radeon RX 7800 XT / 7700 XT",
    "gfx1102": "Radeon RX 7600",
    "gfx1103": "Radeon 780M (iGPU)",
    "gfx1030": "Radeon RX 6800 / 6800 XT / 6900 XT / 6950 XT, PRO W6800, PRO V620",
    "gfx1031": "Radeon RX 6700 XT / 6750 XT / 6700",
    "gfx1032": "Radeon RX 6600 / 6600 XT, PRO W6600",
}

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
    """The architecture family an override must stay inside (facts 4b: crossing families, or
    10.3.0 on RDNA1, gives memory access faults or "invalid device function" [S39])."""
    if v.major == 9 and v.minor == 0:
        return {8: "CDNA", 10: "CDNA2"}.get(v.step, "GCN5 (Vega)")
    named = {(9, 4): "CDNA3", (9, 5): "CDNA4", (10, 1): "RDNA1", (10, 3): "RDNA2", (11, 0): "RDNA3",
             (11, 5): "RDNA3.5", (12, 0): "RDNA4", (8, 0): "GCN3/4"}
    return named.get((v.major, v.minor), f"gfx{v.major}.{v.minor}")


def target_of_packed(value: int) -> str | None:
    version = GfxVersion.from_packed(value)
    return version.target if version else None


_OVERRIDE_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_override(value: str) -> tuple[GfxVersion | None, str | None]:
    """Parse an HSA_OVERRIDE_GFX_VERSION value the way libhsakmt does: ``%u.%u.%u`` and nothing
    after it, major <= 63, minor and stepping <= 255 [S23]. Returns (version, problem)."""
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


def suggested_override(target: str) -> str | None:
    """The same-family override people use for an unsupported target, or None."""
    return KNOWN_OVERRIDES.get(target)


def is_supported(target: str) -> bool:
    return target in SUPPORTED_TARGETS
