"""Temporary host roots for the root helper: /sys from the LACT dumps, a small /etc, fake tools.

Shared by the in-process helper tests and the end-to-end test (which bind-mounts these trees over
/sys, /etc and /var/lib/rocmdesk inside a private mount namespace).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from pathlib import Path

from tests.support.sysfs_tree import GpuSpec, build_root

REPO = Path(__file__).resolve().parents[3]
HELPER_FILE = REPO / "helper" / "rocmdesk-helper"
POLICY_FILE = REPO / "packaging" / "polkit" / "org.rocmdesk.helper.policy"

GPU_PCI = "0000:03:00.0"  # rx7900xtx: cap 290 W, range 261-333 W, default 290 W
OTHER_PCI = "0000:0a:00.0"  # hd7870 on the radeon driver
CALLER_UID = 1000

BLACKLIST_TEXT = (b"# keep the old card quiet\nblacklist amdgpu\noptions amdgpu si_support=1\n"
                  b"install amdgpu /bin/false\n")
XORG_TEXT = b'Section "Device"\n  Identifier "gpu"\n  Driver "nvidia"\nEndSection\n'
PASSWD = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/home/alice:/bin/bash\n"
GROUP = "root:x:0:\nvideo:x:44:\nrender:x:105:bob\nalice:x:1000:\n"


def load_helper():
    """The helper file as a module (it has no .py suffix and never imports rocmdesk)."""
    name = "rocmdesk_helper_under_test"
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.SourceFileLoader(name, str(HELPER_FILE))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def _write(path: Path, data: bytes | str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o755)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    os.chmod(path, mode)
    return path


def _tool(root: Path, host_path: str, body: str = "") -> None:
    """A fake program that records its argv in /var/lib/rocmdesk-fake-calls (used by the e2e test)."""
    script = (
        "#!/bin/sh\n"
        f'printf "%s\\n" "{host_path} $*" >> /var/lib/rocmdesk/fake-calls.log\n'
        f"{body}exit 0\n"
    )
    _write(root / host_path.lstrip("/"), script, 0o755)


def build_host(root: Path, generator: str = "initramfs-tools", with_other_gpu: bool = True) -> Path:
    """A host root with an amdgpu GPU, a blacklist file, an NVIDIA xorg.conf and one initramfs generator."""
    gpus = [GpuSpec("rx7900xtx", pci=GPU_PCI)]
    if with_other_gpu:
        gpus.append(GpuSpec("hd7870", pci=OTHER_PCI))
    build_root(root, gpus)
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    os.chmod(etc, 0o755)
    _write(etc / "modprobe.d" / "blacklist-amdgpu.conf", BLACKLIST_TEXT)
    _write(etc / "modprobe.d" / "alsa-base.conf", b"options snd-hda-intel model=auto\n")
    _write(etc / "X11" / "xorg.conf", XORG_TEXT)
    _write(etc / "X11" / "xorg.conf.d" / "20-radeon.conf", b'Section "Device"\n Driver "radeon"\nEndSection\n')
    _write(etc / "passwd", PASSWD)
    _write(etc / "group", GROUP)
    if generator == "initramfs-tools":
        _write(etc / "initramfs-tools" / "modules", b"# List of modules\n# raid1\n")
        _tool(root, "/usr/sbin/update-initramfs")
        _tool(root, "/usr/sbin/mkinitramfs")
    elif generator == "dracut":
        (etc / "dracut.conf.d").mkdir(mode=0o755)
        _tool(root, "/usr/bin/dracut")
    elif generator == "mkinitcpio":
        _write(etc / "mkinitcpio.conf", b"# vim:set ft=sh\nMODULES=(btrfs)\nBINARIES=()\nHOOKS=(base udev)\n")
        _tool(root, "/usr/bin/mkinitcpio")
    _tool(root, "/usr/sbin/usermod")
    _tool(root, "/usr/bin/gpasswd")
    # The dumps pad some attributes with NULs to 4096 bytes; the kernel shows just the value, which is
    # also what a write leaves behind, so byte-for-byte comparisons need the unpadded form.
    for name in ("power_dpm_force_performance_level", "power1_cap", "pp_power_profile_mode"):
        for attr in root.glob(f"sys/devices/**/{name}"):
            attr.write_bytes(attr.read_bytes().rstrip(b"\x00"))
    kernel = root / "kernel-state"
    kernel.mkdir(exist_ok=True)
    for table in root.glob("sys/devices/*/*/*/pp_power_profile_mode"):
        (kernel / (table.parent.name + ".pp_power_profile_mode")).write_bytes(table.read_bytes())
    return root


_HEADER_RE = re.compile(rb"^(\s*)([0-9]+)(\s+[A-Z0-9_]+)\s*\*?(\s*:)", re.MULTILINE)


def settle_sysfs(root: Path) -> None:
    """Do what the kernel does after a write to pp_power_profile_mode: show the table, mark the new profile.

    A plain file cannot act like the sysfs attribute, so tests call this after each helper run.
    """
    for saved in (root / "kernel-state").glob("*.pp_power_profile_mode"):
        pci = saved.name.split(".pp_")[0]
        live = next(root.glob(f"sys/devices/*/*/{pci}/pp_power_profile_mode"))
        written = live.read_bytes().strip()
        if not re.fullmatch(rb"[0-9]+", written):
            continue

        def mark(match: re.Match, written: bytes = written) -> bytes:
            star = b"*" if match.group(2) == written else b" "
            return match.group(1) + match.group(2) + match.group(3) + star + match.group(4).lstrip()

        live.write_bytes(_HEADER_RE.sub(mark, saved.read_bytes()))


def snapshot(root: Path, *subdirs: str) -> dict[str, tuple[str, int]]:
    """sha256 and mode of every regular file (and target of every link) under the given folders."""
    out = {}
    for sub in subdirs:
        base = root / sub
        for dirpath, dirnames, filenames in os.walk(base):
            for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if os.path.islink(path):
                    out[rel] = ("link:" + os.readlink(path), 0)
                else:
                    st = os.stat(path)
                    with open(path, "rb") as fh:
                        out[rel] = (hashlib.sha256(fh.read()).hexdigest(), st.st_mode)
    return out


class RecordingRunner:
    """Stands in for real commands in-process: records argv, returns a chosen exit status."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv, timeout):
        helper = load_helper()
        self.calls.append(list(argv))
        if self.fail and self.fail in argv[0]:
            return helper.CommandResult(1, "E: simulated failure\n")
        return helper.CommandResult(0, "")
