"""Secrets planted where issue 11's attack found them leaking into support bundles.

:func:`plant_secrets` adds them to a :func:`tests.support.scenarios.clean_workstation` root (with its
ComfyUI process) and returns ``{label: value}``: no value may appear in the bundle's bytes. The values
are made up, shaped like the real thing (token prefixes and lengths of the issuers' formats).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import scenarios as sc

HOSTNAME = "workstation"  # an ordinary word: replaced only where it stands as the host name
OLD_HOSTNAME = "tulipwood"  # the machine's name before a rename, still in the previous boot's log lines
MACHINE_ID = "4c1f9e2a7b3d4e5f8a9b0c1d2e3f4a5b"
BOOT_ID = "9b2f7c1e-3a4d-4e5f-8a6b-7c8d9e0f1a2b"
HIVE_ID = "8734529912457613237"
FULL_NAME = "Marguerite Okonkwo"

SECRETS: dict[str, str] = {
    # requirements of the ComfyUI install and of a custom node (kept: a check reads them)
    "gitlab token in an index URL": "glpat-Zq8vK2mN4pR7sT1wX3yB",
    "index URL user": "__token__",
    "github token in a git URL": "ghp_4fT9kLmN2pQ7rS1vW8xY3zA5bC6dE0gH1jK2",
    "pip password in a node URL": "N0deDeployPa55",
    # an unrelated project under home (must not be collected at all)
    "openai key in another project main.py": "sk-proj-Uq3Rt7Wz1Lp9Xc5Vb2Nm8Kd4Fg6Hj0Ys",
    "password in another project requirements": "C0rpPypiSecret77",
    "another project pyproject token": "pypi-AgEIcHlwaS5vcmcCJGE3NDM1ZDE4LTk3YzgtNDEwMC1iYmU4LTA",
    "another project name": "acme-payroll-bot",
    # process arguments of the running ComfyUI
    "OPENAI_API_KEY= argument": "sk-Jw8Qe2Rt6Yu0Io4Pa9Sd3Fg7Hk1Lz5Xc",
    "-k argument": "sk-ant-api03-Mn7Bv2Cx9Zl4Kj8Hg3Fd6Sa1Qw5Er0Ty",
    "URL password argument": "Hunter2Pa55word",
    "URL user argument": "svcmodels",
    "AWS access key id argument": "AKIAQ3EXAMPLE7ZT4KLM",
    "AWS secret key argument": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "high-entropy token argument": "7Fq2Lx9PzR4mWv8Nk3Jt6Yb1Hc5Ds0GaUe",
    "listen address": "192.168.1.23",
    # shell profile: an alias and a comment beside a kept line
    "key in a .bashrc alias": "sk-Zx1Cv2Bn3Mm4Ll5Kk6Jj7Hh8Gg9Ff0Dd",
    "key in a comment beside a kept line": "hf_QwErTyUiOpAsDfGhJkLzXcVbNmQwErTy",
    # a token in a modprobe.d comment
    "token in a modprobe.d comment": "xoxb-2048-4096-Rk9Lm2Nb7Vc4Xz1Qw",
    # journal output recorded in the snapshot's commands
    "JWT in journal output": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImFkbWluIjp0cnVlfQ.c2lnbmF0dXJlLW5vdC1yZWFs",
    "e-mail in journal output": "marguerite.okonkwo@wonderland.example",
    "IPv4 in journal output": "203.0.113.77",
    # network addresses in kern.log
    "MAC address": "3c:7c:3f:1a:2b:4d",
    "IPv6 address": "2a02:8108:1a3f:7e00:3e7c:3fff:fe1a:2b4d",
    "IPv6 link-local": "fe80::3e7c:3fff:fe1a:2b4d",
    "LAN IPv4 in kern.log": "192.168.1.1",
    # machine and boot ids
    "machine-id": MACHINE_ID,
    "machine-id (dashed)": "4c1f9e2a-7b3d-4e5f-8a9b-0c1d2e3f4a5b",
    "boot id": BOOT_ID,
    "boot id (journal spelling)": BOOT_ID.replace("-", ""),
    # the person
    "full name (dpkg Maintainer:)": FULL_NAME,
    "e-mail (dpkg Maintainer:)": "m.okonkwo@wonderland.example",
    "full name (pyproject authors)": "Okonkwo, Marguerite",
    "e-mail (pyproject authors)": "marguerite@okonkwo.example",
    "full name (GECOS)": "Alice Liddell",
    # unique ids
    "KFD hive_id": HIVE_ID,
    # host names
    "host name in kern.log": f" {HOSTNAME} kernel:",
    "host name in Xorg.0.log": f"Linux {HOSTNAME} ",
    "host name in a prompt line": f"@{HOSTNAME}:",
    "old host name in kern.log": OLD_HOSTNAME,
    # environment of the session (a kept GPU-stack variable holding a token)
    "token in a kept environment variable": "hf_PoIuYtReWqLkJhGfDsAzXcVbNmPoIuYt",
    "AWS secret in the environment": "hunter2hunter2",
}


def plant_secrets(root: Path) -> dict[str, str]:
    """Plant :data:`SECRETS` in a clean workstation root that has its ComfyUI process."""
    s = SECRETS
    home = f"/home/{sc.USER}"
    comfy = sc.COMFYUI
    # host name, machine-id, boot id
    sc.write(root, "/etc/hostname", HOSTNAME + "\n")
    sc.write(root, "/proc/sys/kernel/hostname", HOSTNAME + "\n")
    sc.write(root, "/etc/machine-id", MACHINE_ID + "\n")
    sc.write(root, "/proc/sys/kernel/random/boot_id", BOOT_ID + "\n")
    cmdline = (root / "proc/cmdline").read_text().rstrip("\n")
    sc.write(root, "/proc/cmdline", f"initrd=\\{MACHINE_ID}\\{sc.KERNEL}\\initrd.img-{sc.KERNEL} {cmdline}\n")
    # the person's full name in passwd
    passwd = (root / "etc/passwd").read_text()
    sc.write(root, "/etc/passwd", passwd.replace(f":{sc.UID}:{sc.UID}:Alice,,,:", f":{sc.UID}:{sc.UID}:"
                                                 f"{s['full name (GECOS)']},,,:"))
    # kern.log: the host name as its prefix, an older name in the previous boot, addresses
    log = (root / "var/log/kern.log").read_text()
    previous, current = log[: len(sc.KERN_LOG_PREVIOUS_BOOT)], log[len(sc.KERN_LOG_PREVIOUS_BOOT):]
    previous = previous.replace(" ws kernel:", f" {OLD_HOSTNAME} kernel:")
    current = current.replace(" ws kernel:", f" {HOSTNAME} kernel:")
    current += (f"Nov 30 08:12:50 {HOSTNAME} kernel: [    9.100000] r8169 0000:05:00.0 eth0: RTL8125B, "
                f"{s['MAC address']}, XID 641, IRQ 140\n"
                f"Nov 30 08:12:52 {HOSTNAME} kernel: [   11.200000] IPv6: ADDRCONF(NETDEV_CHANGE): enp5s0: "
                f"link becomes ready {s['IPv6 address']} {s['IPv6 link-local']}\n"
                f"Nov 30 08:12:53 {HOSTNAME} kernel: [   12.300000] [UFW BLOCK] IN=enp5s0 OUT= "
                f"SRC={s['LAN IPv4 in kern.log']} DST=224.0.0.1 LEN=36\n")
    sc.write(root, "/var/log/kern.log", previous + current, mode=0o640)
    # Xorg.0.log header (system log) with the host name
    sc.write(root, "/var/log/Xorg.0.log", sc.XORG_LOG.replace(
        "[    45.124] X.Org X Server 1.21.1.11\n",
        "[    45.124] X.Org X Server 1.21.1.11\n"
        f"[    45.124] Current Operating System: Linux {HOSTNAME} {sc.KERNEL} #52-Ubuntu SMP PREEMPT_DYNAMIC "
        "x86_64\n"))
    # ComfyUI's own requirements and pyproject, a custom node's requirements
    reqs = (root / comfy.lstrip("/") / "requirements.txt").read_text()
    sc.write(root, f"{comfy}/requirements.txt",
             f"--extra-index-url https://{s['index URL user']}:{s['gitlab token in an index URL']}"
             "@gitlab.example.com/api/v4/projects/42/packages/pypi/simple\n" + reqs)
    sc.write(root, f"{comfy}/pyproject.toml",
             '[project]\nname = "ComfyUI"\nversion = "0.3.10"\n'
             f'authors = [{{name = "{s["full name (pyproject authors)"]}", '
             f'email = "{s["e-mail (pyproject authors)"]}"}}]\n'
             'dependencies = [\n    "torchsde",\n    "numpy>=1.25.0",\n]\n')
    sc.write(root, f"{comfy}/custom_nodes/private-node/requirements.txt",
             f"private-node @ git+https://{s['github token in a git URL']}@github.com/acme/private-node.git\n"
             f"helper @ https://deploy:{s['pip password in a node URL']}@pypi.acme.example/helper-1.0.tar.gz\n"
             "opencv-python\n")
    sc.write(root, f"{comfy}/custom_nodes/private-node/__init__.py", "NODE_CLASS_MAPPINGS = {}\n")
    # an unrelated project under home: never a ComfyUI install, nothing of it may go
    project = f"{home}/projects/{s['another project name']}"
    sc.write(root, f"{project}/main.py", f'OPENAI_API_KEY = "{s["openai key in another project main.py"]}"\n')
    sc.write(root, f"{project}/requirements.txt",
             f"--index-url https://bot:{s['password in another project requirements']}@pypi.corp.example/simple\n"
             "openai\n")
    sc.write(root, f"{project}/pyproject.toml",
             f'[project]\nname = "{s["another project name"]}"\n'
             f'[tool.poetry.source]\ntoken = "{s["another project pyproject token"]}"\n')
    # the ComfyUI process: secrets in its arguments
    argv = [f"{comfy}/venv/bin/python", f"{comfy}/main.py", "--listen", s["listen address"],
            f"OPENAI_API_KEY={s['OPENAI_API_KEY= argument']}", "-k", s["-k argument"],
            "--remote", f"https://{s['URL user argument']}:{s['URL password argument']}@models.example.net/v1",
            f"AWS_ACCESS_KEY_ID={s['AWS access key id argument']}", "--aws-secret", s["AWS secret key argument"],
            "--civitai", s["high-entropy token argument"]]
    sc.write(root, f"/proc/{sc.COMFYUI_PID}/cmdline", b"\0".join(a.encode() for a in argv) + b"\0")
    # shell profile: an alias with a key, a kept line with a commented key
    bashrc = (root / home.lstrip("/") / ".bashrc").read_text()
    sc.write(root, f"{home}/.bashrc", bashrc + f"alias gpt='openai -k {s['key in a .bashrc alias']}'\n"
             f"export ROCM_PATH=/opt/rocm  # HF token for the lab: {s['key in a comment beside a kept line']}\n")
    # modprobe.d comment
    # (a file that does not mention amdgpu: changing one that does would make the initramfs stale)
    sc.append(root, "/etc/modprobe.d/alsa-base.conf", f"# ops bot token {s['token in a modprobe.d comment']}\n")
    # dpkg Maintainer of a GPU package kept in the bundle
    status = (root / "var/lib/dpkg/status").read_text()
    status = status.replace("Package: rocminfo\n", "Package: rocminfo\nMaintainer: "
                            f"{FULL_NAME} <{s['e-mail (dpkg Maintainer:)']}>\n", 1)
    sc.write(root, "/var/lib/dpkg/status", status)
    # KFD hive_id of the GPU node
    for props in (root / "sys/class/kfd/kfd/topology/nodes").glob("*/properties"):
        text = props.read_text()
        if "simd_count 0\n" not in text:
            lines = [ln for ln in text.splitlines() if not ln.startswith("hive_id ")]
            props.write_text("\n".join([*lines, f"hive_id {HIVE_ID}"]) + "\n")
    # the session's environment: a kept GPU-stack variable holding a token, an AWS secret (not kept)
    env = (root / "proc/self/environ").read_bytes()
    sc.write(root, "/proc/self/environ", env + f"TORCH_HUB_TOKEN={s['token in a kept environment variable']}\0"
             f"AWS_SECRET_ACCESS_KEY={s['AWS secret in the environment']}\0".encode())
    # journal output recorded in the snapshot (a snapshot replays rocmdesk/commands.json)
    journal = (f"Nov 30 08:13:00 {HOSTNAME} sshd[1201]: Accepted publickey for {sc.USER} from "
               f"{s['IPv4 in journal output']} port 50522\n"
               f"Nov 30 08:13:01 {HOSTNAME} ollama[2345]: Authorization: Bearer {s['JWT in journal output']}\n"
               f"Nov 30 08:13:02 {HOSTNAME} postfix[88]: to=<{s['e-mail in journal output']}>, status=sent\n"
               f"_MACHINE_ID={MACHINE_ID} _BOOT_ID={BOOT_ID.replace('-', '')}\n"
               f"{sc.USER}@{HOSTNAME}:~$ rocminfo\n")
    recorded = {"/usr/bin/journalctl --no-pager -o short -n 200": {
        "argv": ["/usr/bin/journalctl", "--no-pager", "-o", "short", "-n", "200"], "returncode": 0,
        "stdout": journal, "stderr": ""}}
    sc.write(root, "/rocmdesk/commands.json", json.dumps(recorded))
    return dict(SECRETS)
