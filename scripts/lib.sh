# Shared by scripts/run.sh and scripts/test.sh (sourced from the checkout's top folder; bash only).

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Qt's runtime libraries (PySide6 wheels do not carry them): offscreen, Xvfb and a desktop session.
QT_RUNTIME=(libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libxcb-cursor0
  libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-render-util0 libxcb-image0)

# dpkg_recover: finish an install that was interrupted earlier (a killed run leaves dpkg half-configured and
# every later apt-get refuses with "dpkg was interrupted"); waits for another apt to let go of its lock.
dpkg_recover() {
  if [ -n "$(ls -A "${DPKG_ADMINDIR:-/var/lib/dpkg}/updates" 2>/dev/null)" ] || [ -n "$(dpkg --audit 2>/dev/null)" ]; then
    echo "dpkg was left half-done by an earlier run; finishing it (dpkg --configure -a)" >&2
    DEBIAN_FRONTEND=noninteractive $SUDO dpkg --force-confold --configure -a
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -f -y -qq
  fi
}

# apt_install PKG...: install the Debian packages that are not installed yet (no apt-get when none is missing).
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    dpkg_recover
    $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
      --no-install-recommends "${missing[@]}"
  fi
}
