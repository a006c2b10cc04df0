"""Telemetry sources behind one interface (see base.Backend)."""
