"""Headless subcommands of `rocmdesk`: one module per command (see rocmdesk.cli)."""
