"""rocmdesk: live AMD GPU telemetry plus a correct diagnosis of the ROCm setup, with safe fixes."""

__version__ = "0.1.0"
