"""Prometheus exporter: the window's sampler and the diagnosis engine, served as ``/metrics``."""
