"""Every check module; importing this package registers them all with the engine."""

from rocmdesk.diagnosis.checks import (  # noqa: F401
    container,
    display,
    dkms,
    driver,
    driver_health,
    environment,
    gpu_programs,
    gpu_support,
    hardware,
    initramfs,
    kfd_listing,
    launchers,
    permissions,
    python_torch,
    torch_gpu_code,
    wsl,
)
