"""Build a backend by its name (``rocmdesk sample --backend NAME``, settings, the UI)."""

from __future__ import annotations

import importlib

from rocmdesk.host import CommandRunner, HostRoot, runner_for
from rocmdesk.telemetry.backends.base import Backend, BackendError

BACKEND_NAMES: tuple[str, ...] = ("auto", "sysfs", "rocm-smi", "amd-smi", "amdsmi", "demo")


def _load(module: str, cls: str, what: str):
    try:
        return getattr(importlib.import_module(f"rocmdesk.telemetry.backends.{module}"), cls)
    except (ImportError, AttributeError) as exc:
        raise BackendError(f"the {what} backend is not available in this build ({exc})") from None


def make_backend(name: str, root: HostRoot, runner: CommandRunner | None = None) -> Backend:
    """The backend called ``name`` reading ``root``.

    For a root that is not "/", tool backends replay the root's recorded outputs
    (``rocmdesk/commands.json``), never the live tools.
    """
    key = name.strip().lower().replace("_", "-")
    if key not in BACKEND_NAMES:
        raise BackendError(f"unknown backend '{name}' (choose from {', '.join(BACKEND_NAMES)})")
    if runner is None:
        runner = runner_for(root)
    if key == "auto":
        from rocmdesk.telemetry.backends.auto import AutoBackend

        return AutoBackend(root, runner)
    if key == "sysfs":
        return _load("sysfs", "SysfsBackend", "sysfs")(root)
    if key == "rocm-smi":
        from rocmdesk.telemetry.backends.rocm_smi import RocmSmiBackend

        return RocmSmiBackend(root, runner)
    if key == "amd-smi":
        from rocmdesk.telemetry.backends.amd_smi import AmdSmiBackend

        return AmdSmiBackend(root, runner)
    if key == "amdsmi":
        from rocmdesk.telemetry.backends.amdsmi_lib import AmdsmiLibBackend

        return AmdsmiLibBackend(root)
    return _load("demo", "DemoBackend", "demo")()
