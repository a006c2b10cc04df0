"""Support bundles (capture, redaction, safe open) and HTML/Markdown reports. Qt-free."""
