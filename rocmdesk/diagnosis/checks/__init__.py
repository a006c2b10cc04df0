"""Every check module; importing this package registers them all with the engine."""

from rocmdesk.diagnosis.checks import display, driver, environment, initramfs, permissions  # noqa: F401
