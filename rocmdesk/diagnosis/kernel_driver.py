"""Which ROCm user space the running amdgpu kernel driver supports: the limit on which PyTorch ROCm wheel to install.

PyTorch's ROCm wheels bundle their own ROCm user space (libamdhip64, rocBLAS, ...) but use the host's kernel driver
(amdgpu with KFD). AMD supports a kernel driver only with user space a few releases either side of it:

- "ROCm provides forward and backward compatibility between the AMD Kernel-mode GPU Driver (KMD) and its user space
  software for +/- 2 releases" (ROCm/rocm-install-on-linux docs/reference/user-kernel-space-compat-matrix.rst; the
  docs-6.3.0 table: KMD 5.7.x tested with user space 5.5.x-6.1.x, 6.0.x with 5.6.x-6.2.x, 6.1.x with 5.7.x-6.3.x).
- AMD's PyTorch maintainer on the bundled wheels: "if you have rocm 4.5.0 installed on your host and you pip install the
  rocm 4.3.1 wheel, you get rocm 4.3.1 libs inside the wheel. We strive to maintain 'N-2' backwards compatibility with
  the rocm kernel driver" (jeffdaily, ROCm/legacy-rocm-build#1572); "Since the wheels already contain the ROCm 6.0.0,
  you don't need to install ROCm 6.0.1 on your machine" (hongxiayang, pytorch/pytorch#118457).

So the ROCm under /opt/rocm says nothing about what a wheel needs; the kernel driver does. amdgpu-dkms writes its
version to /sys/module/amdgpu/version; the kernel's own (in-tree) amdgpu has no such file (ollama's "amdgpu version file
missing: /sys/module/amdgpu/version"), and AMD's matrix does not cover in-tree drivers, so no limit is set for them.

amdgpu-dkms versions and the ROCm release they ship with (the module's version is the package version without its
ROCm suffix): 6.2.4 is ROCm 5.7 (repo.radeon.com/amdgpu/5.7/ubuntu/pool/main/a/amdgpu-dkms/
amdgpu-dkms_6.2.4.50700-...deb, as pinned in public Nix expressions); 6.3.6 ROCm 6.0 (ollama#3304, "AMD Driver: 6.3.6"
with ROCm 6.0); 6.7.0 ROCm 6.1 (ROCm/legacy-rocm-build#4043, #3485 "ROCk module version 6.7.0" with ROCm 6.1); 6.8.5
ROCm 6.2 (repo.radeon.com/amdgpu/6.2); 6.10.5 ROCm 6.3; 6.12.12 ROCm 6.4; 6.14.14 ROCm 7.0 (`amdgpu-dkms
1:6.14.14.30100100` beside rocm-core 7.0.1 in public cluster notes).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

VERSION_FILE = "/sys/module/amdgpu/version"

# (amdgpu-dkms major.minor, ROCm release it ships with); sources in the module docstring
DKMS_ROCM: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = (
    ((6, 2), (5, 7)), ((6, 3), (6, 0)), ((6, 7), (6, 1)), ((6, 8), (6, 2)), ((6, 10), (6, 3)), ((6, 12), (6, 4)),
    ((6, 14), (7, 0)),
)
# "+/- 2 releases" (user/kernel-space support matrix)
COMPAT_RELEASES = 2
# ROCm releases in order (the unit the matrix counts in)
ROCM_RELEASES: tuple[tuple[int, int], ...] = ((5, 5), (5, 6), (5, 7), (6, 0), (6, 1), (6, 2), (6, 3), (6, 4), (7, 0),
                                              (7, 1), (7, 2))


def parse_version(text: str | None, parts: int = 2) -> tuple[int, ...] | None:
    match = re.match(r"^\s*(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?", text or "")
    if not match:
        return None
    numbers = tuple(int(g) for g in match.groups() if g is not None)
    return numbers[:parts] if len(numbers) >= parts else None


def dkms_rocm_release(driver: str) -> tuple[int, int] | None:
    """The ROCm release an amdgpu-dkms version came with; None when not in the table."""
    version = parse_version(driver)
    return next((rocm for dkms, rocm in DKMS_ROCM if version == dkms), None)


@dataclass(frozen=True, slots=True)
class DriverLimit:
    """The running amdgpu-dkms and the newest ROCm user space AMD supports on it.

    ``newest`` is None when the driver is older than every amdgpu-dkms in the table (older than ROCm 5.7's): then no
    release rocmdesk installs wheels for is known to be supported on it."""

    version: str  # as in /sys/module/amdgpu/version
    rocm: tuple[int, int] | None  # the ROCm release it ships with
    newest: tuple[int, int] | None  # newest supported user space release

    @property
    def rocm_text(self) -> str:
        return f"{self.rocm[0]}.{self.rocm[1]}" if self.rocm else "before 5.7"

    @property
    def newest_text(self) -> str | None:
        return f"{self.newest[0]}.{self.newest[1]}" if self.newest else None


def driver_limit(driver: str | None) -> DriverLimit | None:
    """The limit set by an amdgpu-dkms version (the text of /sys/module/amdgpu/version); None when there is no
    amdgpu-dkms, the version cannot be read, or it is newer than the table (no limit known to bite)."""
    text = (driver or "").strip()[:40]
    version = parse_version(text)
    if version is None:
        return None
    rocm = dkms_rocm_release(text)
    if rocm is None:
        if version < DKMS_ROCM[0][0]:
            return DriverLimit(text, None, None)
        if version > DKMS_ROCM[-1][0]:
            return None  # newer than every row: at least ROCm 7.0's driver, no known limit on the indexes
        log.debug("amdgpu-dkms %s is between the table's rows", text)
        return None
    at = ROCM_RELEASES.index(rocm)
    newest = ROCM_RELEASES[min(at + COMPAT_RELEASES, len(ROCM_RELEASES) - 1)]
    return DriverLimit(text, rocm, newest)
