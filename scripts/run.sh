#!/usr/bin/env bash
# Install rocmdesk and start it. With no AMD GPU it opens the demo data, under a banner.
#
# On Debian/Ubuntu this builds and installs the Debian package (menu entry, icons, the root helper
# and its polkit policy, so one-click fixes work), then starts /usr/bin/rocmdesk. Elsewhere, or with
# ROCMDESK_FROM_SOURCE=1, it runs from a private virtual environment in .venv/ (monitoring,
# diagnosis and reports; fixes then show their manual steps).
# Arguments are passed to rocmdesk: bash scripts/run.sh --demo
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

QT_RUNTIME=(libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libxcb-cursor0
  libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-render-util0 libxcb-image0)

apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' rocmdesk/__init__.py)"

if [ "${ROCMDESK_FROM_SOURCE:-0}" != 1 ] && command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  installed="$(dpkg-query -W -f='${Version}' rocmdesk 2>/dev/null || true)"
  if [ "$installed" != "$version" ] || [ "${ROCMDESK_REBUILD:-0}" = 1 ]; then
    apt_install python3 python3-pip python3-venv "${QT_RUNTIME[@]}"
    deb="$(bash packaging/build-deb.sh | tail -n 1)"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$deb"
  fi
  exec /usr/bin/rocmdesk "$@"
fi

if command -v apt-get >/dev/null; then
  apt_install python3-venv python3-pip "${QT_RUNTIME[@]}"
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
exec .venv/bin/rocmdesk "$@"
