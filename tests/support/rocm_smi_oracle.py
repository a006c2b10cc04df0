"""The real rocm-smi as an oracle: run it on a built tree bind-mounted over /sys inside a private
mount namespace (`unshare --mount --propagation private`), never touching the host's mounts."""

from __future__ import annotations

import os
import shlex

import pytest

from rocmdesk.host import CommandResult, CommandRunner

ROCM_SMI = "/usr/bin/rocm-smi"
UNSHARE = "/usr/bin/unshare"
BASH = "/bin/bash"


def run_rocm_smi_on(tree, args: str, timeout: float = 30) -> CommandResult:
    """``rocm-smi ARGS`` seeing ``tree/sys`` as /sys (and a private /dev/shm for its lock files)."""
    script = (f"mount --bind {shlex.quote(str(tree / 'sys'))} /sys && "
              "mount -t tmpfs -o size=4m,mode=1777 none /dev/shm && "
              f"exec {ROCM_SMI} {args}")
    return CommandRunner(default_timeout=timeout).run([UNSHARE, "--mount", "--propagation", "private", "--",
                                                       BASH, "-c", script])


def require_private_mounts(tmp_path_factory, *tools: str) -> None:
    """Skip unless rocm-smi (and ``tools``) are installed and a bind mount works in a private namespace."""
    for tool in (ROCM_SMI, UNSHARE, BASH, *tools):
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{tool} is not installed (the README's test command installs rocm-smi)")
    if os.geteuid() != 0:
        pytest.skip("mounting in a private namespace needs root")
    probe = tmp_path_factory.mktemp("probe")
    (probe / "sys").mkdir()
    result = CommandRunner(default_timeout=10).run(
        [UNSHARE, "--mount", "--propagation", "private", "--", BASH, "-c",
         f"mount --bind {shlex.quote(str(probe / 'sys'))} /sys && echo mounted"])
    if "mounted" not in result.stdout:
        pytest.skip(f"cannot mount in a private namespace here: {result.stderr.strip() or result.error}")
