"""What AMD supports under WSL 2, per ROCm release: the Windows driver, the PyTorch wheels and how to install them.

Under WSL the GPU is reached through /dev/dxg and the Windows driver; ROCm for WSL is its own release train
(``amdgpu-install --usecase=wsl,rocm --no-dkms``), not every Linux release has one, and pytorch.org's ROCm wheels
bundle an HSA runtime without WSL support. Each row cites where AMD (or the thread AMD answered in) said it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

WHEEL_BASE = "https://repo.radeon.com/rocm/manylinux/rocm-rel-{rocm}/"
GUIDE = "https://rocm.docs.amd.com/projects/radeon-ryzen/en/latest/docs/install/installrad/wsl/install-pytorch.html"
# The HSA runtime swap AMD's WSL PyTorch guide prescribes after installing the wheels (releases 6.1.3 to 6.4.x),
# for one site-packages folder
HSA_SWAP = "cd {lib} && rm libhsa-runtime64.so* && cp /opt/rocm/lib/libhsa-runtime64.so.1.2 libhsa-runtime64.so"


@dataclass(frozen=True, slots=True)
class WslRelease:
    rocm: str  # "6.3.4"
    driver: str  # the Windows driver AMD names for it
    torch: str  # the torch version of AMD's WSL wheels
    companions: str  # the torchvision / pytorch-triton-rocm pins published beside it
    pythons: tuple[str, ...]  # cpXY tags of those wheels seen in the sources
    gpus: str  # in words (AMD's WSL compatibility page for the release)
    source: str

    @property
    def wheels(self) -> str:
        return WHEEL_BASE.format(rocm=self.rocm)


WSL_RELEASES: tuple[WslRelease, ...] = (
    WslRelease("6.1.3", "Adrenalin 24.6.1 for WSL 2 (a special build from AMD's WSL guide; the regular 24.6.1 and "
               "later updates from inside Adrenalin do not work)", "2.1.2",
               "torchvision==0.16.1 pytorch-triton-rocm==2.1.0", ("cp310",),
               "Radeon RX 7900 XTX / XT / GRE, Radeon PRO W7900 / W7800 (gfx1100)",
               "ROCm/ROCm#3470 (AMD: PyTorch 2.1.2+rocm6.1.3 and the WSL build of Adrenalin 24.6.1); ROCm/ROCm#3571; "
               "radeon docs-6.1.3 wsl_compatibility"),
    WslRelease("6.2.3", "Adrenalin 24.10.1 or newer", "2.3.0", "torchvision==0.18.0 pytorch-triton-rocm==2.3.0",
               ("cp310",),
               "Radeon RX 7900 series and Radeon PRO W7900 / W7800 (gfx1100)",
               "ROCm/ROCm#3563 (6.2.0 had no WSL release; 6.2.3 with Adrenalin 24.10.1 works); ROCm/hip#3710 "
               "(torch-2.3.0+rocm6.2.3 from rocm-rel-6.2.3)"),
    WslRelease("6.3.4", "Adrenalin 25.3.1", "2.4.0", "torchvision==0.19.0 pytorch-triton-rocm==3.0.0",
               ("cp310", "cp312"),
               "Radeon RX 7000 series and Radeon PRO W7000 series (RDNA3)",
               "ROCm/ROCm#4749 (torch-2.4.0+rocm6.3.4 from rocm-rel-6.3.4); ROCm/ROCm#5461 (radeon-ryzen docs-6.3.4 "
               "wsl_compatibility: Adrenalin 25.3.1 for ROCm 6.3.4); ROCm/ROCm#4659"),
)
FIRST_WSL_RELEASE = "6.1.3"


def release(rocm: str | None) -> WslRelease | None:
    """The WSL row of a ROCm release ("6.3.4-42" and "6.3.4" both match)."""
    if not rocm:
        return None
    m = re.match(r"(\d+\.\d+\.\d+)", rocm)
    return next((r for r in WSL_RELEASES if m and r.rocm == m.group(1)), None)


def newest_for(rocm: str | None) -> WslRelease | None:
    """The newest WSL release of the same major.minor as ``rocm`` (6.3.0 -> 6.3.4), or None."""
    m = re.match(r"(\d{1,9})\.(\d{1,9})", rocm or "")
    if not m:
        return None
    same = [r for r in WSL_RELEASES if r.rocm.startswith(f"{m.group(1)}.{m.group(2)}.")]
    return same[-1] if same else None


def is_amd_wsl_wheel(version: str | None) -> WslRelease | None:
    """The row whose WSL wheel this torch version is (``2.4.0+rocm6.3.4.git7cecbf6d``), else None."""
    if not version or "+" not in version:
        return None
    public, tag = version.split("+", 1)
    m = re.match(r"rocm(\d+\.\d+\.\d+)", tag)
    row = release(m.group(1)) if m else None
    return row if row is not None and public == row.torch else None
