#!/usr/bin/env bash
# Install everything the tests need (Debian packages too) and run the whole suite.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh  # SUDO, QT_RUNTIME, apt_install

# System packages: Qt's runtime libraries (offscreen and Xvfb), the real rocm-smi (the oracle test), libdrm's amdgpu.ids (GPU names),
# compressors for the initramfs tests, D-Bus/polkit/validators for the packaging checks, Prometheus,
# promtool and node_exporter for the exporter's test against the real server.
DEB_PACKAGES=(
  python3-venv python3-pip
  "${QT_RUNTIME[@]}"
  xvfb xauth rocm-smi util-linux cpio zstd lz4 xz-utils gzip libdrm-common
  desktop-file-utils appstream dbus polkitd pkexec dpkg-dev fakeroot chromium
  prometheus prometheus-node-exporter libglib2.0-bin
)
apt_install "${DEB_PACKAGES[@]}"

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

export QT_QPA_PLATFORM=offscreen
.venv/bin/ruff check rocmdesk tests benchmarks tools helper/rocmdesk-helper
.venv/bin/lint-imports  # mypy runs inside the suite: tests/unit/test_types.py
.venv/bin/python -m pytest "$@"
