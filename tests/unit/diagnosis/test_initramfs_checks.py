"""amdgpu-missing-from-initramfs and initramfs-stale on roots built for all three generators."""

from __future__ import annotations

import os
import struct

import pytest

import rocmdesk.diagnosis.checks.initramfs  # noqa: F401  (registers the checks)
from rocmdesk.diagnosis import engine, initramfs_image
from rocmdesk.diagnosis import initramfs as ir
from rocmdesk.diagnosis.context import DiagnosisContext
from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.host import HostRoot
from tests.support.host_faults import deny_reads
from tests.support.initramfs_images import (
    DKMS,
    IN_TREE,
    KVER,
    MTIME,
    build_image,
    fake_module,
    image_path_for,
    install_amd_gpu,
    install_generator,
    install_kernel,
    main_entries,
    make_root,
    module_file,
    write,
)

MISSING = "amdgpu-missing-from-initramfs"
STALE = "initramfs-stale"
COMMANDS = {"initramfs-tools": f"sudo update-initramfs -u -k {KVER}", "dracut": f"sudo dracut -f --kver {KVER}",
            "mkinitcpio": "sudo mkinitcpio -P"}
CASES = [("initramfs-tools", "zstd"), ("initramfs-tools", "gzip"), ("initramfs-tools", "lz4"),
         ("dracut", "zstd"), ("dracut", "gzip"), ("dracut", "xz"),
         ("mkinitcpio", "zstd"), ("mkinitcpio", "gzip"), ("mkinitcpio", "xz"), ("mkinitcpio", "lz4")]


class WslContext(DiagnosisContext):
    is_wsl = True


def run(check_id, root, ctx_cls=DiagnosisContext):
    spec = engine._REGISTRY[check_id]
    return engine.run_check(spec, ctx_cls(HostRoot(root)), load_metadata())


@pytest.mark.parametrize(("generator", "compression"), CASES)
def test_amdgpu_in_image_passes_both(tmp_path, generator, compression):
    make_root(tmp_path, generator, compression=compression)
    missing, stale = run(MISSING, tmp_path), run(STALE, tmp_path)
    assert missing.status is Status.PASS, missing.reason
    assert "amdgpu.ko.zst" in missing.reason
    assert stale.status is Status.PASS, stale.reason


@pytest.mark.parametrize(("generator", "compression"), CASES)
def test_missing_fires_with_generator_specific_fix(tmp_path, generator, compression):
    image = make_root(tmp_path, generator, compression=compression, in_image=None)
    result = run(MISSING, tmp_path)
    assert result.status is Status.FAIL
    (finding,) = result.findings
    assert finding.severity is Severity.INFO
    assert "does not need" in finding.explanation  # ROCm compute does not need it there
    fix = finding.fix
    assert fix.id == "initramfs-add-amdgpu" and fix.privileged and fix.action == ("initramfs-add-amdgpu",)
    text = "\n".join(fix.steps)
    assert f"`{COMMANDS[generator]}`" in text
    assert sum(c in text for c in COMMANDS.values()) == 1  # the ONE regeneration command
    assert {"initramfs-tools": "/etc/initramfs-tools/modules", "dracut": '/etc/dracut.conf.d/amdgpu.conf',
            "mkinitcpio": "/etc/mkinitcpio.conf"}[generator] in text
    host_image = "/" + str(image.relative_to(tmp_path))
    assert finding.subject == host_image
    assert any(e.path == host_image for e in finding.evidence)
    assert any(generator in e.text for e in finding.evidence)
    assert run(STALE, tmp_path).status is Status.PASS


def test_dracut_fix_text_has_the_spaces(tmp_path):
    make_root(tmp_path, "dracut", in_image=None)
    steps = run(MISSING, tmp_path).findings[0].fix.steps
    assert 'force_drivers+=" amdgpu "' in steps[0]


def test_ubuntu_dracut_uses_initrd_img_name(tmp_path):
    install_generator(tmp_path, "dracut")
    install_kernel(tmp_path, module=fake_module())
    install_amd_gpu(tmp_path)
    write(tmp_path, f"boot/initrd.img-{KVER}", build_image(main_entries(), "zstd"))
    result = run(MISSING, tmp_path)
    assert result.status is Status.FAIL
    assert f"dracut -f --kver {KVER}" in "\n".join(result.findings[0].fix.steps)


# -- mkinitcpio: which image belongs to the running kernel ---------------------------------------


def _bzimage(version: str) -> bytes:
    head = bytearray(0x1000)
    head[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", head, 0x20E, 0x800)
    text = f"{version} (builder@arch) #1 SMP PREEMPT_DYNAMIC".encode() + b"\x00"
    head[0xA00:0xA00 + len(text)] = text
    return bytes(head)


def test_mkinitcpio_preset_chosen_by_kernel_image_version(tmp_path):
    kver = "6.6.52-1-lts"
    install_generator(tmp_path, "mkinitcpio", kver, preset="linux-lts")
    install_generator(tmp_path, "mkinitcpio", kver, preset="linux")
    os.remove(tmp_path / f"usr/lib/modules/{kver}/pkgbase")
    install_kernel(tmp_path, kver, module=fake_module())
    install_amd_gpu(tmp_path)
    write(tmp_path, "boot/vmlinuz-linux", _bzimage("6.11.1-arch1-1"))
    write(tmp_path, "boot/vmlinuz-linux-lts", _bzimage(kver))
    module = module_file(fake_module(), ".ko.zst")
    write(tmp_path, "boot/initramfs-linux.img", build_image(main_entries(kver), "zstd"))  # other kernel, no amdgpu
    write(tmp_path, "boot/initramfs-linux-lts.img", build_image(main_entries(kver, module=module), "zstd"))
    assert ir.kernel_image_version(HostRoot(tmp_path), "/boot/vmlinuz-linux-lts") == kver
    result = run(MISSING, tmp_path)
    assert result.status is Status.PASS and "/boot/initramfs-linux-lts.img" in result.reason


def test_mkinitcpio_ambiguous_images_skip(tmp_path):
    write(tmp_path, "etc/mkinitcpio.conf", "MODULES=()\n")
    install_kernel(tmp_path, module=fake_module())
    install_amd_gpu(tmp_path)
    for name in ("linux", "linux-zen"):
        write(tmp_path, f"boot/initramfs-{name}.img", build_image(main_entries(), "zstd"))
    result = run(MISSING, tmp_path)
    assert result.status is Status.SKIP and "cannot tell which" in result.reason


def test_mkinitcpio_single_image_without_preset(tmp_path):
    write(tmp_path, "etc/mkinitcpio.conf", "MODULES=()\n")
    install_kernel(tmp_path, module=fake_module())
    install_amd_gpu(tmp_path)
    write(tmp_path, "boot/initramfs-linux.img", build_image(main_entries(), "zstd"))
    write(tmp_path, "boot/initramfs-linux-fallback.img", build_image(main_entries(), "zstd"))
    result = run(MISSING, tmp_path)
    assert result.status is Status.FAIL and result.findings[0].subject == "/boot/initramfs-linux.img"
    assert "mkinitcpio -P" in "\n".join(result.findings[0].fix.steps)


def test_parse_preset():
    values = ir.parse_preset('ALL_kver="/boot/vmlinuz-linux"\ndefault_image=\'/boot/x.img\'\n#c=1\nPRESETS=(a b)\n')
    assert values["ALL_kver"] == "/boot/vmlinuz-linux" and values["default_image"] == "/boot/x.img"


# -- skips: bad images, no GPU, WSL, built-in driver -----------------------------------------------


def test_truncated_image_skips_with_reason(tmp_path):
    image = make_root(tmp_path, "initramfs-tools", in_image=None)
    data = image.read_bytes()
    image.write_bytes(data[: len(data) - 300])
    result = run(MISSING, tmp_path)
    assert result.status is Status.SKIP and "in part" in result.reason and "truncated" in result.reason


def test_truncated_image_that_already_showed_amdgpu_passes(tmp_path):
    image = make_root(tmp_path, "dracut", compression="none",  # dracut --no-compress
                      modprobe_live={"zz.conf": "# " + "x" * 4000 + "\n"})
    data = image.read_bytes()
    image.write_bytes(data[: len(data) - 40])
    assert run(MISSING, tmp_path).status is Status.PASS


@pytest.mark.parametrize(("content", "reason"), [(b"garbage!" * 10, "not an initramfs"), (b"", "empty")])
def test_garbage_image_skips(tmp_path, content, reason):
    image = make_root(tmp_path, "dracut")
    image.write_bytes(content)
    for check_id in (MISSING, STALE):
        result = run(check_id, tmp_path)
        assert result.status is Status.SKIP and reason in result.reason


def test_unreadable_image_skips(tmp_path, monkeypatch):
    make_root(tmp_path, "initramfs-tools")

    def deny(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ir, "open_regular", deny)  # the reader opens through host.open_regular (no FIFO)
    monkeypatch.setattr(initramfs_image, "open_regular", deny)
    result = run(MISSING, tmp_path)
    assert result.status is Status.SKIP and "permission denied" in result.reason


def test_no_image_no_generator_no_kernel(tmp_path):
    make_root(tmp_path, "initramfs-tools")
    os.remove(tmp_path / image_path_for("initramfs-tools"))
    result = run(MISSING, tmp_path)
    assert result.status is Status.SKIP and f"/boot/initrd.img-{KVER}" in result.reason
    os.remove(tmp_path / "proc/sys/kernel/osrelease")
    assert "release is unknown" in run(STALE, tmp_path).reason


def test_image_without_known_generator_still_reports_without_fix(tmp_path):
    install_kernel(tmp_path, module=fake_module())
    install_amd_gpu(tmp_path)
    write(tmp_path, f"boot/initrd.img-{KVER}", build_image(main_entries(), "gzip"))
    result = run(MISSING, tmp_path)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.fix.action is None  # the YAML's generic manual steps only
    assert "could not be told" in finding.explanation


def test_no_amd_gpu_and_wsl_and_builtin_skip(tmp_path):
    make_root(tmp_path, "initramfs-tools", in_image=None, gpu=False)
    write(tmp_path, "sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
    write(tmp_path, "sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n")
    assert "no AMD GPU" in run(MISSING, tmp_path).reason
    install_amd_gpu(tmp_path)
    assert run(MISSING, tmp_path, WslContext).reason.startswith("not applicable under WSL")
    assert run(STALE, tmp_path, WslContext).status is Status.SKIP
    write(tmp_path, f"usr/lib/modules/{KVER}/modules.builtin", f"{IN_TREE}/amdgpu.ko\n")
    assert "built into kernel" in run(MISSING, tmp_path).reason


def test_no_amdgpu_module_for_kernel_skips(tmp_path):
    make_root(tmp_path, "initramfs-tools", in_image=None)
    os.remove(tmp_path / f"usr/lib/modules/{KVER}/{IN_TREE}/amdgpu.ko.zst")
    write(tmp_path, f"usr/lib/modules/{KVER}/modules.dep", "")
    assert "no amdgpu module" in run(MISSING, tmp_path).reason


# -- initramfs-stale -------------------------------------------------------------------------------


def _stale(tmp_path):
    result = run(STALE, tmp_path)
    assert result.status is Status.FAIL, result.reason
    (finding,) = result.findings
    assert finding.severity is Severity.WARNING
    fix = finding.fix
    assert fix.id == "initramfs-regenerate" and fix.privileged and fix.action == ("initramfs-regenerate",)
    return finding


@pytest.mark.parametrize("generator", ["initramfs-tools", "dracut", "mkinitcpio"])
def test_dkms_installed_but_image_holds_in_tree(tmp_path, generator):
    dkms = fake_module(version="6.16.6", srcversion="DKMSDKMSDKMSDKMSDKMS123")
    make_root(tmp_path, generator, dkms_module=dkms, in_image="in-tree")
    finding = _stale(tmp_path)
    texts = " | ".join(e.text for e in finding.evidence)
    assert "in-tree module kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst" in texts
    assert f"DKMS module {DKMS}/amdgpu.ko.zst" in texts
    assert f"`{COMMANDS[generator]}`" in finding.fix.steps[0]
    assert run(MISSING, tmp_path).status is Status.PASS


def test_dkms_in_image_matches_dkms_live(tmp_path):
    dkms = fake_module(version="6.16.6", srcversion="DKMSDKMSDKMSDKMSDKMS123")
    make_root(tmp_path, "initramfs-tools", dkms_module=dkms, in_image="dkms")
    assert run(STALE, tmp_path).status is Status.PASS


def test_same_path_different_module(tmp_path):
    make_root(tmp_path, "initramfs-tools", image_module=fake_module(srcversion="OLDOLDOLDOLDOLDOLDOLD12"),
              live_module=fake_module(srcversion="NEWNEWNEWNEWNEWNEWNEW12"))
    finding = _stale(tmp_path)
    texts = " | ".join(e.text for e in finding.evidence)
    assert "srcversion OLDOLDOLDOLDOLDOLDOLD12" in texts and "srcversion NEWNEWNEWNEWNEWNEWNEW12" in texts


def test_recompressed_copy_of_the_same_module_is_not_stale(tmp_path):
    ko = fake_module()
    make_root(tmp_path, "mkinitcpio", live_module=ko)
    entries = main_entries(module=ko, module_rel=f"{IN_TREE}/amdgpu.ko")  # MODULES_DECOMPRESS=yes
    write(tmp_path, image_path_for("mkinitcpio"), build_image(entries, "zstd"), mtime=MTIME + 100)
    assert run(STALE, tmp_path).status is Status.PASS


BLACKLIST = "blacklist amdgpu\n"


def test_live_amdgpu_conf_newer_than_image_and_not_in_it(tmp_path):
    image = make_root(tmp_path, "initramfs-tools", modprobe_live={"amdgpu.conf": "options amdgpu dc=1\n"},
                      modprobe_image={})
    os.utime(image, (MTIME - 100, MTIME - 100))
    finding = _stale(tmp_path)
    ev = [e for e in finding.evidence if e.path == "/etc/modprobe.d/amdgpu.conf"]
    assert ev and "after the image was built" in ev[0].text


def test_live_conf_older_than_image_and_not_copied_is_fine(tmp_path):
    make_root(tmp_path, "mkinitcpio", modprobe_live={"amdgpu.conf": "options amdgpu dc=1\n"}, modprobe_image={})
    assert run(STALE, tmp_path).status is Status.PASS


def test_image_still_has_a_deleted_blacklist(tmp_path):
    make_root(tmp_path, "dracut", modprobe_live={}, modprobe_image={"blacklist-amdgpu.conf": BLACKLIST})
    finding = _stale(tmp_path)
    assert any("only the image still has /etc/modprobe.d/blacklist-amdgpu.conf" in e.text and "blacklist amdgpu"
               in e.text for e in finding.evidence)


def test_image_copy_differs_from_live(tmp_path):
    make_root(tmp_path, "initramfs-tools", modprobe_live={"amdgpu.conf": "options amdgpu ppfeaturemask=0xfff7bfff\n"},
              modprobe_image={"amdgpu.conf": "options amdgpu dc=0\n"})
    finding = _stale(tmp_path)
    lines = [e for e in finding.evidence if e.path == "/etc/modprobe.d/amdgpu.conf" and e.line == 1]
    assert lines and "ppfeaturemask" in lines[0].text


def test_identical_modprobe_and_unrelated_changes_pass(tmp_path):
    image = make_root(tmp_path, "initramfs-tools", modprobe_live={"amdgpu.conf": "options amdgpu dc=1\n",
                                                                  "alsa.conf": "options snd index=1\n"},
                      modprobe_image={"amdgpu.conf": "options amdgpu dc=1\n", "alsa.conf": "options snd index=0\n"})
    os.utime(image, (MTIME - 100, MTIME - 100))  # older than the files, but the copies match
    assert run(STALE, tmp_path).status is Status.PASS


def test_unreadable_live_module_is_not_a_crash(tmp_path, monkeypatch):
    make_root(tmp_path, "initramfs-tools")
    deny_reads(monkeypatch, "read_bytes", lambda path: "amdgpu.ko" in path,
               lambda _path: PermissionError(13, "Permission denied"))
    assert run(STALE, tmp_path).status is Status.PASS  # path matches; bytes unknown: nothing to claim


# -- the clean Ubuntu workstation (tests/support/scenarios.py) with a real image and ComfyUI ---------


def test_clean_workstation_nothing_of_ours_fires(tmp_path):
    from tests.support import scenarios

    # clean_workstation itself holds the matching image and the healthy ComfyUI venv, so these checks
    # run there (pass), not skip for lack of input
    root = scenarios.clean_workstation(tmp_path / "ws")
    for check_id in (MISSING, STALE, "torch-wheel-mismatch", "torch-pinned-by-custom-node",
                     "pynvml-breaks-rocm-torch"):
        result = scenarios.run_check(root, check_id)
        assert result.status is Status.PASS, (check_id, result.status, result.reason)
    # the same root with one thing broken: each fires
    scenarios.install_dkms_amdgpu(root)
    assert scenarios.run_check(root, STALE).status is Status.FAIL


# -- support snapshots: the bundle holds a listing of the image, not the image ------------------------


def _to_listing(root, image):
    from rocmdesk.diagnosis.initramfs_listing import list_image_lines

    host = "/" + str(image.relative_to(root))
    text = "\n".join(list_image_lines(str(image), host)) + "\n"
    write(root, f"rocmdesk/initramfs/{image.name}.list", text)
    mtime = image.stat().st_mtime
    image.unlink()
    return mtime


def test_listing_instead_of_image(tmp_path):
    dkms = fake_module(version="6.16.6", srcversion="DKMSDKMSDKMSDKMSDKMS123")
    image = make_root(tmp_path / "a", "initramfs-tools", dkms_module=dkms, in_image="in-tree")
    _to_listing(tmp_path / "a", image)
    assert run(MISSING, tmp_path / "a").status is Status.PASS
    assert run(STALE, tmp_path / "a").status is Status.FAIL
    image = make_root(tmp_path / "b", "dracut", in_image=None)
    _to_listing(tmp_path / "b", image)
    assert run(MISSING, tmp_path / "b").status is Status.FAIL


def test_listing_keeps_module_identity_and_modprobe_sizes(tmp_path):
    image = make_root(tmp_path, "initramfs-tools", image_module=fake_module(srcversion="OLDOLDOLDOLDOLDOLDOLD12"),
                      live_module=fake_module(srcversion="NEWNEWNEWNEWNEWNEWNEW12"),
                      modprobe_live={"amdgpu.conf": "options amdgpu dc=1\n"})
    _to_listing(tmp_path, image)
    finding = _stale(tmp_path)
    assert any("srcversion OLDOLDOLDOLDOLDOLDOLD12" in e.text for e in finding.evidence)
    assert not any(e.path == "/etc/modprobe.d/amdgpu.conf" for e in finding.evidence)  # same size and mtime
    write(tmp_path, "etc/modprobe.d/amdgpu.conf", "options amdgpu dc=0 gpu_recovery=1\n", mtime=MTIME)
    finding = _stale(tmp_path)
    assert any(e.path == "/etc/modprobe.d/amdgpu.conf" and "the image's copy" in e.text for e in finding.evidence)


def test_damaged_listing_skips(tmp_path):
    image = make_root(tmp_path, "initramfs-tools")
    _to_listing(tmp_path, image)
    write(tmp_path, f"rocmdesk/initramfs/{image.name}.list", "not json\n")
    result = run(MISSING, tmp_path)
    assert result.status is Status.SKIP and "listing" in result.reason


def test_listing_copy_stamped_at_build_time_is_not_stale(tmp_path):
    """mkinitcpio copies modprobe.d with `install` (new mtime); same size, older than the image: fine."""
    image = make_root(tmp_path, "mkinitcpio", modprobe_live={"amdgpu.conf": "options amdgpu dc=1\n"})
    os.utime(tmp_path / "etc/modprobe.d/amdgpu.conf", (MTIME - 5000, MTIME - 5000))  # edited long before the build
    _to_listing(tmp_path, image)
    assert run(STALE, tmp_path).status is Status.PASS
    # the same bytes changed after the build (same size) still count
    os.utime(tmp_path / "etc/modprobe.d/amdgpu.conf", (MTIME + 5000, MTIME + 5000))
    assert any(e.path == "/etc/modprobe.d/amdgpu.conf" for e in _stale(tmp_path).evidence)


# -- Secure Boot refusing the DKMS amdgpu: signing comes before any rebuild ----------------------------------


def _secure_boot_refuses_dkms(root):
    from tests.support import scenarios

    scenarios.install_dkms_amdgpu(root)
    scenarios.set_secure_boot(root, True)
    scenarios.unload_amdgpu(root)


def test_stale_image_while_secure_boot_refuses_dkms_says_sign_first(tmp_path):
    from tests.support import scenarios

    root = scenarios.clean_workstation(tmp_path / "ws")
    _secure_boot_refuses_dkms(root)
    result = scenarios.run_check(root, STALE)
    (finding,) = result.findings
    steps = finding.fix.steps
    assert steps[0].startswith("First make Secure Boot accept the DKMS amdgpu module")
    assert "sudo mokutil --import /var/lib/shim-signed/mok/MOK.der" in steps[0]
    assert "remove amdgpu-dkms" in steps[0]
    assert f"sudo update-initramfs -u -k {scenarios.KERNEL}" in steps[1]  # the rebuild comes after
    assert finding.fix.action is None  # no one-click rebuild that would copy the refused module in
    assert "fix the module signing first" in finding.explanation
    assert any((e.path or "").endswith("updates/dkms/amdgpu.ko.zst") and "Secure Boot is on" in e.text
               for e in finding.evidence)
    # the secure-boot check fires on the same root: the two findings agree
    assert scenarios.run_check(root, "secure-boot-blocks-dkms").status is Status.FAIL


def test_without_a_dkms_certificate_the_step_says_to_have_it_signed(tmp_path):
    from tests.support import scenarios

    root = scenarios.clean_workstation(tmp_path / "ws")
    _secure_boot_refuses_dkms(root)
    (root / "var/lib/shim-signed/mok/MOK.der").unlink()
    (finding,) = scenarios.run_check(root, STALE).findings
    assert "have DKMS sign it (there is no DKMS signing certificate yet)" in finding.fix.steps[0]


@pytest.mark.parametrize("change", ["secure-boot-off", "amdgpu-loaded", "shim-validation-off", "no-dkms"])
def test_the_ordinary_rebuild_when_secure_boot_refuses_nothing(tmp_path, change):
    from rocmdesk.host import RecordedRunner
    from tests.support import scenarios

    root = scenarios.clean_workstation(tmp_path / "ws")
    runner = RecordedRunner()
    if change == "no-dkms":
        # stale for another reason: a blacklist edited after the image was built
        scenarios.set_secure_boot(root, True)
        scenarios.unload_amdgpu(root)
        path = scenarios.blacklist_amdgpu(root)
        os.utime(path, (2_000_000_000, 2_000_000_000))
    else:
        scenarios.install_dkms_amdgpu(root)
        scenarios.set_secure_boot(root, change != "secure-boot-off")
        if change != "amdgpu-loaded":
            scenarios.unload_amdgpu(root)
        if change == "shim-validation-off":
            runner.add(["/usr/bin/mokutil", "--sb-state"],
                       stdout="SecureBoot enabled\nSecureBoot validation is disabled in shim\n")
    result = scenarios.run_check(root, STALE, runner=runner)
    assert result.status is Status.FAIL, result.reason
    (finding,) = result.findings
    assert finding.fix.action == ("initramfs-regenerate",)
    assert not any("Secure Boot" in s for s in finding.fix.steps)


def test_missing_from_image_while_secure_boot_refuses_dkms_says_sign_first(tmp_path):
    dkms = fake_module(version="6.16.6", srcversion="DKMSDKMSDKMSDKMSDKMS123")
    make_root(tmp_path, "initramfs-tools", dkms_module=dkms, in_image=None)
    write(tmp_path, "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
          bytes([6, 0, 0, 0, 1]))
    write(tmp_path, "proc/modules", "drm 1 0 - Live 0x0\n")
    result = run(MISSING, tmp_path)
    assert result.status is Status.FAIL, result.reason
    (finding,) = result.findings
    assert finding.fix.action is None and finding.fix.steps[0].startswith("First make Secure Boot accept")
    write(tmp_path, "proc/modules", "amdgpu 1 0 - Live 0x0\n")  # loaded: the key is trusted
    (finding,) = run(MISSING, tmp_path).findings
    assert finding.fix.action == ("initramfs-add-amdgpu",)
