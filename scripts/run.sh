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
. scripts/lib.sh

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
