# Shared by scripts/run.sh and scripts/test.sh (sourced from the checkout's top folder; bash only).

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Qt's runtime libraries (PySide6 wheels do not carry them): offscreen, Xvfb and a desktop session.
QT_RUNTIME=(libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libxcb-cursor0
  libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-render-util0 libxcb-image0)

# apt_install PKG...: install the Debian packages that are not installed yet (no apt-get when none is missing).
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
