#!/usr/bin/env bash
# Build a Debian package of rocmdesk.
#
#   bash packaging/build-deb.sh [--python-version 3.11] [--out dist/]
#
# Python dependencies that Debian 12 and Ubuntu 24.04 ship are package dependencies, versioned with the
# floors of pyproject.toml (tests/unit/test_dependency_floors.py keeps the two equal); the rest
# (PySide6-Essentials, shiboken6, pyqtgraph, and numpy, which is too old in Debian 12 for pyqtgraph
# 0.14) are vendored into /usr/lib/rocmdesk/vendor for the target's Python version, never into the
# system Python. Build on (or for) the distribution you install on: the default Python version is
# the one of this machine's /usr/bin/python3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/.." && pwd)"
out="$top/dist"
pyver="$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) pyver="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$top/rocmdesk/__init__.py")"
arch="$(dpkg --print-architecture)"
case "$arch" in
  amd64) plat=x86_64 ;;
  arm64) plat=aarch64 ;;
  *) echo "unsupported architecture $arch" >&2; exit 2 ;;
esac
policy="$(ls "$here"/polkit/*.policy 2>/dev/null | head -n 1 || true)"
helper="$top/helper/rocmdesk-helper"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/rocmdesk_${version}_${arch}"
lib="$pkg/usr/lib/rocmdesk"
mkdir -p "$lib/vendor" "$pkg/usr/bin" "$pkg/usr/share/rocmdesk" "$pkg/usr/share/applications" \
  "$pkg/usr/share/metainfo" "$pkg/usr/share/doc/rocmdesk" "$pkg/DEBIAN"

# The application itself (no tests, no caches).
(cd "$top" && find rocmdesk -name '*.py' -print0 | xargs -0 -I{} install -D -m 0644 {} "$lib/{}")
cp -r "$top/resources" "$pkg/usr/share/rocmdesk/resources"
find "$pkg/usr/share/rocmdesk" -name '__pycache__' -prune -exec rm -rf {} +

# Vendored wheels for the target Python.
pyver_nodot="${pyver/./}"
pip_python="$top/.venv/bin/python"; [ -x "$pip_python" ] || pip_python=python3
"$pip_python" -m pip install --quiet --no-deps --only-binary=:all: --target "$lib/vendor" \
  --implementation cp --python-version "$pyver" --abi "cp${pyver_nodot}" --abi abi3 --abi none \
  --platform "manylinux_2_34_${plat}" --platform "manylinux_2_28_${plat}" \
  --platform "manylinux_2_17_${plat}" --platform "manylinux2014_${plat}" --platform any \
  "PySide6-Essentials==6.11.3" "shiboken6==6.11.3" "pyqtgraph==0.14.0" "numpy>=1.26,<3" "colorama"
rm -rf "$lib/vendor/bin"
find "$lib/vendor" -name '__pycache__' -prune -exec rm -rf {} +

cat > "$pkg/usr/bin/rocmdesk" <<'LAUNCH'
#!/bin/sh
# rocmdesk launcher: the system Python, isolated from user site-packages, with the private folder.
exec /usr/bin/python3 -I -c 'import sys; sys.path[:0] = ["/usr/lib/rocmdesk/vendor", "/usr/lib/rocmdesk"]; from rocmdesk.cli import main; sys.exit(main())' "$@"
LAUNCH
chmod 0755 "$pkg/usr/bin/rocmdesk"

if [ -f "$helper" ]; then
  install -D -m 0755 "$helper" "$pkg/usr/libexec/rocmdesk/rocmdesk-helper"
fi
if [ -n "$policy" ]; then
  install -D -m 0644 "$policy" "$pkg/usr/share/polkit-1/actions/$(basename "$policy")"
fi
install -m 0644 "$here/org.rocmdesk.RocmDesk.desktop" "$pkg/usr/share/applications/"
install -m 0644 "$here/org.rocmdesk.RocmDesk.metainfo.xml" "$pkg/usr/share/metainfo/"
install -D -m 0644 "$top/resources/icons/rocmdesk.svg" "$pkg/usr/share/icons/hicolor/scalable/apps/rocmdesk.svg"
# The Prometheus exporter's unit (installed disabled), alerting rules and Grafana dashboard.
install -D -m 0644 "$here/systemd/rocmdesk-exporter.service" "$pkg/lib/systemd/system/rocmdesk-exporter.service"
for f in "$here"/prometheus/*.yml "$here"/grafana/*.json; do
  install -D -m 0644 "$f" "$pkg/usr/share/rocmdesk/$(basename "$(dirname "$f")")/$(basename "$f")"
done
for png in "$top"/resources/icons/hicolor/*/apps/rocmdesk.png; do
  size="$(basename "$(dirname "$(dirname "$png")")")"
  install -D -m 0644 "$png" "$pkg/usr/share/icons/hicolor/$size/apps/rocmdesk.png"
done
cat > "$pkg/usr/share/doc/rocmdesk/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rocmdesk

Files: *
License: MIT

Files: usr/lib/rocmdesk/vendor/*
Comment: PySide6/shiboken6 (LGPL-3.0-only), pyqtgraph (MIT), numpy (BSD-3-Clause), colorama (BSD-3-Clause);
 their own license files are kept inside each *.dist-info folder.
COPY

size_kb="$(du -sk "$pkg" | cut -f1)"
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: rocmdesk
Version: ${version}
Section: utils
Priority: optional
Architecture: ${arch}
Maintainer: rocmdesk developers <rocmdesk@users.noreply.github.com>
Installed-Size: ${size_kb}
Depends: python3 (>= ${pyver}), python3 (<< ${pyver%.*}.$(( ${pyver#*.} + 1 ))), python3-psutil (>= 5.9), python3-pyudev (>= 0.24), python3-yaml (>= 6.0), python3-packaging (>= 23), python3-platformdirs (>= 2.6), python3-zstandard (>= 0.15), python3-lz4 (>= 4.0), python3-prometheus-client (>= 0.16), pkexec | policykit-1, libegl1, libgl1, libxkbcommon0, libxkbcommon-x11-0, libfontconfig1, libdbus-1-3, libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1, libxcb-shape0, libxcb-render-util0, libxcb-image0
Recommends: rocm-smi
Homepage: https://github.com/rocmdesk/rocmdesk
Description: AMD GPU monitor and ROCm setup doctor
 rocmdesk shows every AMD GPU live (temperatures, power, VRAM/HBM, load, clocks,
 fans, processes) with history graphs, explains what is wrong with a ROCm setup
 with the evidence, and applies safe fixes through polkit with preview and undo.
CONTROL
cat > "$pkg/DEBIAN/postinst" <<'POST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  # Byte-compile once as root (like py3compile); prerm removes the caches again.
  /usr/bin/python3 -m compileall -q -j 0 /usr/lib/rocmdesk >/dev/null 2>&1 || true
  # The app (as the user) reads the journal to list and undo changes; only backups stay private.
  install -d -m 0755 /var/lib/rocmdesk
  install -d -m 0700 /var/lib/rocmdesk/backups
  install -d -m 0750 /var/log/rocmdesk
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q /usr/share/icons/hicolor || true
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q || true
fi
exit 0
POST
cat > "$pkg/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
  # Backups let an administrator undo a fix by hand; keep them unless the package is purged.
  rm -rf /var/lib/rocmdesk /var/log/rocmdesk
fi
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q || true
exit 0
POSTRM
cat > "$pkg/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
find /usr/lib/rocmdesk -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
exit 0
PRERM
chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/postrm" "$pkg/DEBIAN/prerm"
find "$pkg" -type d -exec chmod 0755 {} +

mkdir -p "$out"
dpkg-deb --root-owner-group -Zgzip -z1 --build "$pkg" "$out/rocmdesk_${version}_${arch}.deb" >/dev/null
echo "$out/rocmdesk_${version}_${arch}.deb"
