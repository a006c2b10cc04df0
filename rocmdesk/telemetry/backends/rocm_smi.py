"""Readings from the rocm-smi CLI (``--json``), for machines where sysfs is not readable.

rocm-smi's ``cardN`` keys are its own 0-based order, not DRM card numbers, so ``--showbus`` is
always requested and GPUs are matched by PCI address (measured with Debian 12's rocm-smi 5.2.3,
tests/integration/test_rocm_smi_oracle.py).
"""

from __future__ import annotations

import logging

from rocmdesk.host import CommandRunner, HostRoot
from rocmdesk.telemetry.backends.tool import DEFAULT_TIMEOUT_S, ToolBackend
from rocmdesk.telemetry.smi_parsers import ToolGpu, parse_rocm_smi

log = logging.getLogger(__name__)

# What the task needs, accepted by every rocm-smi since 2019 (checked on Debian's 5.2.3).
BASE_ARGS: tuple[str, ...] = ("--showtemp", "--showpower", "--showmeminfo", "vram", "--showuse", "--showbus",
                              "--json")
# Everything else rocmdesk shows; all accepted by Debian's 5.2.3 (`rocm-smi --help`).
FULL_ARGS: tuple[str, ...] = ("--showtemp", "--showpower", "--showmaxpower", "--showmeminfo", "vram", "gtt",
                              "--showuse", "--showmemuse", "--showclocks", "--showfan", "--showperflevel",
                              "--showvoltage", "--showbus", "--json")


class RocmSmiBackend(ToolBackend):
    """rocm-smi through the command runner; one run per reading."""

    tool = "rocm-smi"

    def __init__(self, root: HostRoot | None = None, runner: CommandRunner | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, path: str | None = None) -> None:
        super().__init__(root, runner, timeout_s, path)
        self.args: tuple[str, ...] = FULL_ARGS

    def read(self) -> list[ToolGpu]:
        result = self.run_tool(self.args)
        if self.args != BASE_ARGS and "unrecognized arguments" in result.stderr and not result.stdout.strip():
            # A release that dropped one of the extra flags: fall back to the basic set for good.
            log.info("rocm-smi rejected %s; using the basic flags", result.stderr.strip().splitlines()[-1:])
            self.args = BASE_ARGS
            result = self.run_tool(self.args)
        return self.parse_or_raise(parse_rocm_smi, result)
