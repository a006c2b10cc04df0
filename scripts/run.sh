#!/usr/bin/env bash
# Install rocmdesk and start it. With no AMD GPU it opens the demo data, under a banner.
#
# On Debian/Ubuntu this builds and installs the Debian package (menu entry, icons, the root helper
# and its polkit policy, so one-click fixes work), then starts /usr/bin/rocmdesk. Elsewhere, or with
# ROCMDESK_FROM_SOURCE=1, it runs from a private virtual environment in .venv/ (monitoring,
# diagnosis and reports; fixes then show their manual steps).
# Arguments are passed to rocmdesk: bash scripts/run.sh --demo ; bash scripts/run.sh diagnose
# It says what it does in a few lines; the tools' own output goes to a log, shown only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' rocmdesk/__init__.py)"
log="${TMPDIR:-/tmp}/rocmdesk-run.log"
: > "$log"

say() { echo "rocmdesk: $*"; }
# step WHAT CMD...: one line saying what, the command's output into the log; on failure the log's end.
step() {
  local what="$1"; shift
  say "$what"
  if ! "$@" >>"$log" 2>&1; then
    say "failed: $what (the last lines of $log follow)" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
}

# A subcommand (diagnose, sample, ...) needs no display; the window does.
wants_window=1
case "${1:-}" in ""|-*) ;; *) wants_window=0 ;; esac
if [ "$wants_window" = 1 ] && [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] \
   && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  # one line and exit 2 ("could not run"), before anything is installed; rocmdesk itself says the same
  # (rocmdesk/ui/display_check.py) instead of Qt's xcb abort
  say "no display (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open here;" \
      "use 'rocmdesk diagnose' or 'rocmdesk sample' (bash scripts/run.sh diagnose)"
  exit 2
fi

if [ "${ROCMDESK_FROM_SOURCE:-0}" != 1 ] && command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  installed="$(dpkg-query -W -f='${Version}' rocmdesk 2>/dev/null || true)"
  if [ "$installed" != "$version" ] || [ "${ROCMDESK_REBUILD:-0}" = 1 ]; then
    step "installing build tools and Qt's libraries (apt-get)" apt_install python3 python3-pip python3-venv "${QT_RUNTIME[@]}"
    say "building the Debian package of rocmdesk $version"
    if ! bash packaging/build-deb.sh >"$log.deb" 2>>"$log"; then
      say "failed: building the package (the last lines of $log follow)" >&2
      tail -n 25 "$log" >&2
      exit 1
    fi
    deb="$(tail -n 1 "$log.deb")"
    rm -f "$log.deb"
    step "installing $deb" env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$deb"
  else
    say "rocmdesk $version is installed"
  fi
  say "starting /usr/bin/rocmdesk $*"
  exec /usr/bin/rocmdesk "$@"
fi

if command -v apt-get >/dev/null; then
  step "installing Python's venv and Qt's libraries (apt-get)" apt_install python3-venv python3-pip "${QT_RUNTIME[@]}"
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then step "creating .venv" "$PY" -m venv .venv; fi
step "installing rocmdesk $version into .venv (pip)" .venv/bin/python -m pip install -q -e .
say "starting .venv/bin/rocmdesk $*"
exec .venv/bin/rocmdesk "$@"
