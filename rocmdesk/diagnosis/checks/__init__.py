"""Every check module; importing this package registers them all with the engine."""
