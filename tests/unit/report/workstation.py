"""A realistic single-user workstation root for bundle tests: identifying strings on purpose.

The hostname, user name and home folder are distinctive (``ws-zorana-7``, ``zorana``,
``/home/zorana``) so the redaction test can grep the bundle's bytes for them without false hits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rocmdesk.host import device_placeholder_json
from tests.support.python_envs import CRYSTOOLS_REQUIREMENTS, make_comfyui, write
from tests.support.sysfs_tree import GpuSpec, build_root

HOSTNAME = "ws-zorana-7"
USER = "zorana"
HOME = f"/home/{USER}"
UID = 1000
SECRETS = (HOSTNAME, USER, HOME)
SERIAL = "0x8f1e2d3c4b5a6978"


def _char_placeholder(major: int, minor: int, mode: int, gid: int) -> str:
    st = os.stat_result((0o020000 | mode, 0, 0, 1, 0, gid, 0, 0, 0, 0), {"st_rdev": os.makedev(major, minor)})
    return json.dumps(device_placeholder_json(st, "root", "render" if gid == 110 else "video"))


def make_workstation(root: Path, *, gpus: list[GpuSpec] | None = None, render_member: bool = True,
                     comfy_torch: str = "rocm", env_extra: str = "") -> Path:
    build_root(root, gpus if gpus is not None else [GpuSpec("rx7900xtx")])
    for card in sorted((root / "sys/class/drm").glob("card[0-9]")):
        device = card.resolve() / "device"
        (device / "unique_id").write_text("8f1e2d3c4b5a6978\n")
        (device / "serial_number").write_text("SN-ZX81-99231\n")
        if not (device / "class").exists():
            (device / "class").write_text("0x030000\n")  # real sysfs has it; the LACT dumps do not
    write(root / "etc/hostname", HOSTNAME + "\n")
    write(root / "proc/sys/kernel/hostname", HOSTNAME + "\n")
    write(root / "proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    write(root / "proc/version", f"Linux version 6.8.0-45-generic (buildd@lcy02) #45-Ubuntu SMP on {HOSTNAME}\n")
    write(root / "proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=3f1c2a9e-5b7d-4c2e-9a1f-0e8d7c6b5a49 "
                                 "ro quiet splash\n")
    write(root / "proc/modules", "amdgpu 12345678 12 - Live 0x0000000000000000\n"
                                 "drm_buddy 20480 1 amdgpu, Live 0x0000000000000000\n")
    groups = "27 44 110 1000" if render_member else "27 44 1000"
    write(root / "proc/self/status", f"Name:\tpython3\nUmask:\t0002\nState:\tR (running)\nPid:\t4242\n"
                                     f"Uid:\t{UID}\t{UID}\t{UID}\t{UID}\nGid:\t{UID}\t{UID}\t{UID}\t{UID}\n"
                                     f"Groups:\t{groups}\nVmRSS:\t  1234 kB\n")
    env = (f"HOME={HOME}\0USER={USER}\0LOGNAME={USER}\0PATH=/usr/bin:{HOME}/.local/bin\0"
           f"SSH_AUTH_SOCK=/run/user/{UID}/keyring/ssh\0AWS_SECRET_ACCESS_KEY=hunter2hunter2\0"
           f"HOSTNAME={HOSTNAME}\0LD_LIBRARY_PATH=/opt/rocm/lib:{HOME}/lib\0HIP_VISIBLE_DEVICES=0\0{env_extra}")
    write(root / "proc/self/environ", env.encode())
    write(root / "etc/os-release", 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
                                   'ID=ubuntu\nID_LIKE=debian\n')
    write(root / "etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"
                               "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                               f"{USER}:x:{UID}:{UID}:Zorana Example,,,:{HOME}:/bin/bash\n"
                               "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    render_line = f"render:x:110:{USER}\n" if render_member else "render:x:110:\n"
    write(root / "etc/group", f"root:x:0:\nadm:x:4:syslog,{USER}\nsudo:x:27:{USER}\nvideo:x:44:{USER}\n"
                              f"{render_line}plugdev:x:46:{USER}\n{USER}:x:{UID}:\n")
    write(root / "etc/shadow", f"{USER}:$6$secret$hash:19000:0:99999:7:::\n")
    write(root / "etc/modprobe.d/alsa-base.conf", "options snd-hda-intel model=auto\n")
    write(root / "etc/X11/xorg.conf.d/20-amdgpu.conf",
          'Section "OutputClass"\n  Identifier "AMDgpu"\n  MatchDriver "amdgpu"\n  Driver "amdgpu"\nEndSection\n')
    write(root / "var/log/Xorg.0.log", f"[    10.123] Current Operating System: Linux {HOSTNAME} 6.8.0-45-generic\n"
                                       f"[    10.200] (II) AMDGPU(0): Creating default Display subsection\n"
                                       f"[    10.300] (II) Using config directory: \"{HOME}/.config/xorg\"\n")
    write(root / "var/lib/dpkg/status", "Package: bash\nStatus: install ok installed\nVersion: 5.2\n\n"
                                        "Package: rocm-smi\nStatus: install ok installed\nVersion: 5.2.3-3\n\n"
                                        "Package: linux-image-6.8.0-45-generic\nStatus: install ok installed\n"
                                        "Version: 6.8.0-45.45\n\nPackage: firefox\nStatus: install ok installed\n"
                                        "Version: 130.0\n")
    write(root / "opt/rocm/.info/version", "6.2.4-120\n")
    write(root / "dev/kfd", _char_placeholder(238, 0, 0o660, 110))
    write(root / "dev/dri/renderD128", _char_placeholder(226, 128, 0o660, 110))
    write(root / "dev/dri/card0", _char_placeholder(226, 0, 0o660, 44))
    # the person's home: a ComfyUI install (the interesting part) and things that must never leave
    make_comfyui(root, f"home/{USER}/ComfyUI", torch=comfy_torch,
                 nodes={"ComfyUI-Crystools": {"requirements.txt": CRYSTOOLS_REQUIREMENTS}})
    write(root / f"home/{USER}/.bash_history", "export OPENAI_API_KEY=sk-secret\nssh zorana@example.org\n")
    write(root / f"home/{USER}/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    write(root / f"home/{USER}/.bashrc", "alias ll='ls -l'\nexport HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
                                         "export GITHUB_TOKEN=ghp_secret\n")
    write(root / f"home/{USER}/notes.txt", "my bank pin is 1234\n")
    write(root / f"home/{USER}/Documents/todo", "call mum\n")
    return root
