"""Per-process GPU use from fake proc trees."""

from __future__ import annotations

import errno
import os

import pytest

from rocmdesk import host
from rocmdesk.host import HostRoot
from rocmdesk.telemetry import fdinfo
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.fdinfo import FdinfoScanner, parse_fdinfo, parse_memory

KIB = 1024


def fdinfo_text(pdev="0000:03:00.0", client=7, vram="1024 KiB", gtt="2048 KiB", gfx_ns=0, driver="amdgpu"):
    return (f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\ndrm-driver:\t{driver}\ndrm-client-id:\t{client}\n"
            f"drm-pdev:\t{pdev}\npasid:\t32786\ndrm-memory-vram:\t{vram}\ndrm-memory-gtt: \t{gtt}\n"
            f"drm-memory-cpu: \t0 KiB\ndrm-engine-gfx:\t{gfx_ns} ns\ndrm-engine-compute:\t0 ns\n")


class Proc:
    def __init__(self, root):
        self.root = root

    def add(self, pid, comm, cmdline, fds):
        base = self.root / "proc" / str(pid)
        (base / "fdinfo").mkdir(parents=True)
        (base / "fd").mkdir()
        (base / "comm").write_text(comm + "\n")
        (base / "cmdline").write_bytes(b"\x00".join(a.encode() for a in cmdline) + b"\x00")
        for fd, (target, text) in fds.items():
            (base / "fdinfo" / str(fd)).write_text(text)
            if target:
                os.symlink(target, base / "fd" / str(fd))
        return base


class Clock:
    def __init__(self):
        self.now = 1_000_000_000

    def __call__(self):
        return self.now


@pytest.fixture
def proc(tmp_path):
    return Proc(tmp_path)


def test_parse_memory_units():
    assert parse_memory("1024 KiB") == 1024 * KIB
    assert parse_memory("3 MiB") == 3 << 20
    assert parse_memory("4096") == 4096
    for bad in ("", "12 kb", "-1 KiB", "1.5 MiB"):
        with pytest.raises(ValueError):
            parse_memory(bad)


def test_parse_fdinfo():
    client = parse_fdinfo(fdinfo_text(gfx_ns=123))
    assert (client.pdev, client.client_id, client.vram_bytes, client.gtt_bytes, client.gfx_ns) == (
        "0000:03:00.0", "7", 1024 * KIB, 2048 * KIB, 123)
    assert parse_fdinfo(fdinfo_text(driver="i915")) is None
    assert parse_fdinfo("pos:\t0\nflags:\t0100002\n") is None
    assert parse_fdinfo(fdinfo_text(pdev="nonsense")) is None
    newer = "drm-driver:\tamdgpu\ndrm-client-id:\t9\ndrm-pdev:\t0000:c1:00.0\ndrm-resident-vram:\t5 MiB\n"
    assert parse_fdinfo(newer).vram_bytes == 5 << 20
    assert parse_fdinfo(fdinfo_text(vram="lots")).vram_bytes is None


def test_scan_groups_dedupes_and_names(proc, tmp_path):
    dri = "/dev/dri/renderD128"
    proc.add(100, "python3", ["python3", "main.py", "--listen"], {
        3: (dri, fdinfo_text(client=7, vram="1024 KiB")),
        4: (dri, fdinfo_text(client=7, vram="1024 KiB")),  # dup of fd 3: same client
        5: (dri, fdinfo_text(client=8, vram="512 KiB", gtt="0 KiB")),
        6: ("/dev/null", fdinfo_text(client=99, vram="9 MiB")),  # not a DRM file: never read
        7: ("/dev/dri/renderD129", fdinfo_text(pdev="0000:0a:00.0", client=3, vram="4 MiB")),
    })
    proc.add(200, "python3", ["python3", "worker"], {3: (dri, fdinfo_text(client=7))})  # forked: shares 7
    proc.add(300, "Xorg", ["/usr/lib/xorg/Xorg"], {9: (None, fdinfo_text(client=1, vram="8 MiB"))})
    proc.add(400, "bash", ["bash"], {0: ("/dev/pts/0", "pos:\t0\n")})
    uses = FdinfoScanner(HostRoot(tmp_path)).scan()
    got = {(u.pid, u.pci): u for u in uses}
    assert sorted(got) == [(100, "0000:03:00.0"), (100, "0000:0a:00.0"), (300, "0000:03:00.0")]
    first = got[(100, "0000:03:00.0")]
    assert first.name == "python3" and first.cmdline == "python3 main.py --listen"
    assert first.vram_bytes == (1024 + 512) * KIB and first.gtt_bytes == 2048 * KIB
    assert first.gpu_percent is None  # one scan is not a rate
    assert got[(100, "0000:0a:00.0")].vram_bytes == 4 << 20
    assert got[(300, "0000:03:00.0")].vram_bytes == 8 << 20


def test_gpu_percent_between_two_scans(proc, tmp_path):
    base = proc.add(100, "ollama", ["ollama", "serve"], {3: ("/dev/dri/renderD128", fdinfo_text(gfx_ns=1_000))})
    clock = Clock()
    scanner = FdinfoScanner(HostRoot(tmp_path), clock=clock)
    assert scanner.scan()[0].gpu_percent is None
    clock.now += 2_000_000_000
    (base / "fdinfo" / "3").write_text(fdinfo_text(gfx_ns=1_000 + 500_000_000))
    assert scanner.scan()[0].gpu_percent == 25.0
    clock.now += 1_000_000_000
    assert scanner.scan()[0].gpu_percent == 0.0
    # A counter that goes backwards (client id reused by a new file) restarts the baseline.
    clock.now += 1_000_000_000
    (base / "fdinfo" / "3").write_text(fdinfo_text(gfx_ns=10))
    assert scanner.scan()[0].gpu_percent is None


def test_vanishing_and_unreadable(proc, tmp_path, monkeypatch):
    dri = "/dev/dri/renderD128"
    proc.add(100, "alive", ["alive"], {3: (dri, fdinfo_text(client=1))})
    gone = proc.add(200, "gone", ["gone"], {3: (dri, fdinfo_text(client=2))})
    proc.add(300, "secret", ["secret"], {3: (dri, fdinfo_text(client=3))})
    proc.add(400, "closing", ["closing"], {3: (dri, fdinfo_text(client=4)), 4: (dri, fdinfo_text(client=5))})
    (tmp_path / "proc" / "500").mkdir()  # a process whose fdinfo folder is already gone
    real = host.read_fd_text

    def flaky(path, max_bytes=host.DEFAULT_MAX_BYTES):
        if "/300/fdinfo/" in path:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        if path.endswith("/400/fdinfo/4"):
            raise FileNotFoundError(errno.ENOENT, "No such file", path)  # fd closed mid-scan
        if path.endswith("/200/comm"):
            for name in os.listdir(gone / "fdinfo"):
                os.unlink(gone / "fdinfo" / name)
            raise FileNotFoundError(errno.ENOENT, "No such file", path)  # exited mid-scan
        return real(path, max_bytes)

    monkeypatch.setattr(host, "read_fd_text", flaky)
    scanner = FdinfoScanner(HostRoot(tmp_path))
    uses = scanner.scan()
    assert [(u.pid, u.name) for u in uses] == [(100, "alive"), (400, "closing")]
    assert uses[1].vram_bytes == 1024 * KIB  # only the fd that could be read
    assert scanner.skipped_unreadable == 1


def test_no_proc_folder(tmp_path):
    assert FdinfoScanner(HostRoot(tmp_path)).scan() == []


def test_backend_processes(proc, tmp_path):
    proc.add(42, "comfyui", ["python", "main.py"], {3: ("/dev/dri/renderD128", fdinfo_text(vram="2 MiB"))})
    uses = SysfsBackend(HostRoot(tmp_path)).processes()
    assert [(u.pid, u.name, u.vram_bytes) for u in uses] == [(42, "comfyui", 2 << 20)]
    assert fdinfo.parse_cmdline("a\x00b c\x00\x00") == "a b c"
