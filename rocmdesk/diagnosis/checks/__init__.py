"""Every check module; importing this package registers them all with the engine."""

from rocmdesk.diagnosis.checks import (  # noqa: F401
    container,
    display,
    driver,
    environment,
    hardware,
    initramfs,
    permissions,
    python_torch,
)
