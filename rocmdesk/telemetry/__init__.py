"""GPU telemetry: readings model, backends, sampling and history (Qt-free)."""
