#!/usr/bin/env bash
# Install everything the tests need (Debian packages too) and run the whole suite.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# System packages: Qt's runtime libraries (offscreen and Xvfb), the real rocm-smi (the oracle test),
# compressors for the initramfs tests, D-Bus/polkit/validators for the packaging checks.
DEB_PACKAGES=(
  python3-venv python3-pip
  libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libxcb-cursor0
  libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-render-util0 libxcb-image0
  xvfb xauth rocm-smi util-linux cpio zstd lz4 xz-utils gzip
  desktop-file-utils appstream dbus polkitd pkexec dpkg-dev fakeroot chromium
)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

export QT_QPA_PLATFORM=offscreen
.venv/bin/ruff check rocmdesk tests benchmarks tools helper/rocmdesk-helper
.venv/bin/lint-imports
.venv/bin/python -m pytest "$@"
