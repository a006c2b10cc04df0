"""Which old AMD chips the kernel's compute driver (KFD) leaves out, by PCI device id (pure data).

amdgpu can drive GCN 1 (Southern Islands, gfx6) and GCN 2 (Sea Islands, gfx7) cards when told to
(``amdgpu.si_support=1`` / ``amdgpu.cik_support=1`` with ``radeon.*=0``), but KFD, the part ROCm talks to, adds only
some chips to its topology (torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_device.c, ``kgd2kfd_probe``): no SI chip
and, of CIK, only Kaveri (with IOMMUv2) and Hawaii (only with ``amdgpu.exp_hw_support=1``: "KFD support on Hawaii is
experimental"). Every other chip gets "<ASIC> not supported in kfd" in the kernel log and no KFD node.

The device ids are amdgpu's own table (ROCm/amdgpu drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c, ``pciidlist``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LegacyAsic:
    name: str  # amdgpu's chip name, as the kernel log spells it ("OLAND")
    generation: str  # "GCN 1 (gfx6)"
    target: str  # LLVM target ("gfx601")


SI = "GCN 1 (Southern Islands, gfx6)"
CIK = "GCN 2 (Sea Islands, gfx7)"
VI = "GCN 3 (Volcanic Islands, gfx8)"

# (chip, generation, LLVM target, device ids) from amdgpu_drv.c pciidlist
_CHIPS: tuple[tuple[str, str, str, tuple[int, ...]], ...] = (
    ("TAHITI", SI, "gfx600", (0x6780, 0x6784, 0x6788, 0x678A, 0x6790, 0x6791, 0x6792, 0x6798, 0x6799, 0x679A,
                              0x679B, 0x679E, 0x679F)),
    ("PITCAIRN", SI, "gfx601", (0x6800, 0x6801, 0x6802, 0x6806, 0x6808, 0x6809, 0x6810, 0x6811, 0x6816, 0x6817,
                                0x6818, 0x6819)),
    ("OLAND", SI, "gfx602", (0x6600, 0x6601, 0x6602, 0x6603, 0x6604, 0x6605, 0x6606, 0x6607, 0x6608, 0x6610,
                             0x6611, 0x6613, 0x6617, 0x6620, 0x6621, 0x6623, 0x6631)),
    ("VERDE", SI, "gfx601", (0x6820, 0x6821, 0x6822, 0x6823, 0x6824, 0x6825, 0x6826, 0x6827, 0x6828, 0x6829,
                             0x682A, 0x682B, 0x682C, 0x682D, 0x682F, 0x6830, 0x6831, 0x6835, 0x6837, 0x6838,
                             0x6839, 0x683B, 0x683D, 0x683F)),
    ("HAINAN", SI, "gfx602", (0x6660, 0x6663, 0x6664, 0x6665, 0x6667, 0x666F)),
    ("KAVERI", CIK, "gfx700", (0x1304, 0x1305, 0x1306, 0x1307, 0x1309, 0x130A, 0x130B, 0x130C, 0x130D, 0x130E,
                               0x130F, 0x1310, 0x1311, 0x1312, 0x1313, 0x1315, 0x1316, 0x1317, 0x1318, 0x131B,
                               0x131C, 0x131D)),
    ("BONAIRE", CIK, "gfx704", (0x6640, 0x6641, 0x6646, 0x6647, 0x6649, 0x6650, 0x6651, 0x6658, 0x665C, 0x665D,
                                0x665F)),
    ("HAWAII", CIK, "gfx701", (0x67A0, 0x67A1, 0x67A2, 0x67A8, 0x67A9, 0x67AA, 0x67B0, 0x67B1, 0x67B8, 0x67B9,
                               0x67BA, 0x67BE)),
    ("KABINI", CIK, "gfx703", tuple(range(0x9830, 0x9840))),
    ("MULLINS", CIK, "gfx703", tuple(range(0x9850, 0x9860))),
    ("TOPAZ", VI, "gfx802", (0x6900, 0x6901, 0x6902, 0x6903, 0x6907)),
)

BY_DEVICE_ID: dict[int, LegacyAsic] = {dev: LegacyAsic(name, gen, target)
                                       for name, gen, target, ids in _CHIPS for dev in ids}
BY_NAME: dict[str, LegacyAsic] = {name: LegacyAsic(name, gen, target) for name, gen, target, _ids in _CHIPS}


def asic_of(device_id: int | None) -> LegacyAsic | None:
    """The old chip a PCI device id belongs to, or None for any other (newer, or not an amdgpu id)."""
    return BY_DEVICE_ID.get(device_id) if device_id is not None else None
