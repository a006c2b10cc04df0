"""secure-boot-blocks-dkms asks mokutil whether the DKMS signing key is enrolled (live machine, or the outputs a
snapshot recorded) and says what to do for each answer; it never runs mokutil --import."""

from __future__ import annotations

import json
import stat
import time

import pytest

from rocmdesk.diagnosis import secure_boot as secure_boot_mod
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.diagnosis.secure_boot import parse_mokutil_sb_state, parse_mokutil_test_key
from rocmdesk.host import CommandRunner, HostRoot, RecordedRunner
from tests.support import scenarios as sc
from tests.support.scenarios import only_finding

MOKUTIL = "/usr/bin/mokutil"
UBUNTU_KEY = "/var/lib/shim-signed/mok/MOK.der"
DKMS_KEY = "/var/lib/dkms/mok.pub"
REJECTED = "modprobe: ERROR: could not insert 'amdgpu': Key was rejected by service"


@pytest.fixture
def root(tmp_path):
    """DKMS amdgpu with Secure Boot on, not loaded; Ubuntu's MOK certificate exists."""
    root = sc.clean_workstation(tmp_path / "root")
    sc.install_dkms_amdgpu(root)
    sc.set_secure_boot(root, True)
    sc.unload_amdgpu(root)
    return root


def mok_runner(test_key: str | None = None, key: str = UBUNTU_KEY, sb_state: str = "SecureBoot enabled\n",
               **kwargs) -> RecordedRunner:
    runner = RecordedRunner()
    runner.add([MOKUTIL, "--sb-state"], stdout=sb_state)
    if test_key is not None:
        runner.add([MOKUTIL, "--test-key", key], stdout=test_key, **kwargs)
    return runner


def assert_read_only(runner):
    for result in runner.history:
        assert result.argv[1] in ("--sb-state", "--test-key"), result.argv


# -- the three answers -----------------------------------------------------------------------------------------


def test_key_not_enrolled_gives_enrol_steps(root):
    runner = mok_runner(f"{UBUNTU_KEY} is not enrolled\n", returncode=1)
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms", runner=runner))
    assert finding.severity is Severity.ERROR
    assert "confirms" in finding.explanation and "not enrolled" in finding.explanation
    assert finding.fix.steps[0].startswith(f"Enrol the DKMS signing key: `sudo mokutil --import {UBUNTU_KEY}`")
    assert "MokManager" in finding.fix.steps[1] and f"mokutil --test-key {UBUNTU_KEY}" in finding.fix.steps[2]
    assert finding.fix.action is None  # the user's own step, never a button
    ev = {e.path: e.text for e in finding.evidence}
    assert ev[f"{MOKUTIL} --test-key {UBUNTU_KEY} (output)"] == f"{UBUNTU_KEY} is not enrolled"
    assert ev[UBUNTU_KEY] == "DKMS signing certificate (public key)"
    assert_read_only(runner)


def test_key_enrolled_says_look_elsewhere(root):
    runner = mok_runner(f"{UBUNTU_KEY} is already enrolled\n")
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms", runner=runner))
    assert finding.severity is Severity.WARNING
    assert "is enrolled" in finding.title and "enrolled" in finding.explanation
    assert "amdgpu-not-loaded" in finding.explanation
    assert not any("--import" in step for step in finding.fix.steps)
    assert_read_only(runner)


def test_key_enrolled_but_log_shows_rejection_means_another_key(root):
    sc.kernel_log(root, REJECTED)
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms",
                                        runner=mok_runner(f"{UBUNTU_KEY} is already enrolled\n")))
    assert "another key" in finding.explanation
    assert "reinstall" in finding.fix.steps[0] and "amdgpu-dkms" in finding.fix.steps[0]
    assert any("Key was rejected" in e.text for e in finding.evidence)


def test_key_waiting_in_the_enrollment_request(root):
    runner = mok_runner(f"{UBUNTU_KEY} is already in the enrollment request\n")
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms", runner=runner))
    assert "Reboot" in finding.fix.steps[0] and "Enroll MOK" in finding.fix.steps[0]
    assert not any("--import" in step and "sudo" in step for step in finding.fix.steps)


def test_no_key_means_dkms_never_signed(root):
    (root / UBUNTU_KEY.lstrip("/")).unlink()
    runner = mok_runner()
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms", runner=runner))
    assert "never signed" in finding.explanation
    assert "reinstall" in finding.fix.steps[0]
    assert any(f"sudo mokutil --import {UBUNTU_KEY}" in s for s in finding.fix.steps)  # Ubuntu: shim-signed MOK
    missing = [e.path for e in finding.evidence if e.text == "does not exist"]
    assert missing == [UBUNTU_KEY, DKMS_KEY]
    assert [r.argv for r in runner.history] == [[MOKUTIL, "--sb-state"]]  # no key: nothing to test


def test_dkms3_default_key_and_configured_key(root):
    (root / UBUNTU_KEY.lstrip("/")).unlink()
    sc.write(root, DKMS_KEY, b"0\x82\x02")
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms",
                                        runner=mok_runner(f"{DKMS_KEY} is not enrolled\n", key=DKMS_KEY)))
    assert f"sudo mokutil --import {DKMS_KEY}" in finding.fix.steps[0]
    # a framework.conf.d setting wins over both defaults (the last assignment counts)
    sc.write(root, "/etc/dkms/framework.conf", 'mok_certificate="/etc/pki/dkms/old.der"\n')
    sc.write(root, "/etc/dkms/framework.conf.d/signing.conf",
             '# ours\nmok_certificate="/etc/pki/dkms/signing.der"  # comment\n')
    sc.write(root, "/etc/pki/dkms/signing.der", b"0\x82\x01")
    facts = HostFacts(HostRoot(root), RecordedRunner())
    assert facts.dkms_mok_certificate == "/etc/pki/dkms/signing.der"
    assert facts.dkms_mok_certificate_setting.line == 2


def test_no_key_on_other_distros_names_the_dkms_default(root):
    (root / UBUNTU_KEY.lstrip("/")).unlink()
    sc.write(root, "/etc/os-release", 'ID=fedora\nNAME="Fedora Linux"\n')
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms", runner=mok_runner()))
    assert any(f"sudo mokutil --import {DKMS_KEY}" in s for s in finding.fix.steps)


# -- mokutil missing, hanging, garbage ---------------------------------------------------------------------------


@pytest.mark.parametrize("runner,why", [
    (RecordedRunner(), "mokutil output was not recorded in this snapshot"),
    (mok_runner("", returncode=None, timed_out=True, error="timed out after 5 s and was killed"),
     "mokutil --test-key timed out after 5 s"),
    (mok_runner("\x00\x17garbage ~~~\n", returncode=255), "output rocmdesk does not recognise"),
    (mok_runner("", stderr="Failed to read /var/lib/shim-signed/mok/MOK.der\n", returncode=255),
     "output rocmdesk does not recognise"),
])
def test_mokutil_unusable_keeps_the_finding_with_generic_steps(root, runner, why):
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms", runner=runner))
    assert finding.severity is Severity.ERROR
    assert "could not be checked" in finding.explanation and why in finding.explanation
    assert f"sudo mokutil --import {UBUNTU_KEY}" in finding.fix.steps[0]
    json.dumps(finding.to_json())


def test_mokutil_not_installed_on_the_live_machine():
    class NoTools(CommandRunner):
        def which(self, name, search=()):
            return None

    result, why = HostFacts(HostRoot("/"), NoTools()).mokutil("--test-key", UBUNTU_KEY)
    assert result is None and why == "mokutil is not installed"


def test_live_mokutil_hang_is_killed(tmp_path, monkeypatch):
    monkeypatch.setattr(secure_boot_mod, "MOKUTIL_TIMEOUT_S", 0.3)
    program = tmp_path / "mokutil"
    program.write_text("#!/bin/sh\nexec sleep 30\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)

    class Fake(CommandRunner):
        def which(self, name, search=()):
            return str(program)

    started = time.monotonic()
    result, why = HostFacts(HostRoot("/"), Fake()).mokutil("--sb-state")
    assert result is None and why.startswith("mokutil --sb-state timed out after 0.3 s")
    assert time.monotonic() - started < 5


def test_mokutil_only_read_only_queries():
    facts = HostFacts(HostRoot("/"), RecordedRunner())
    for args in (("--import", UBUNTU_KEY), ("--delete", UBUNTU_KEY), ("--disable-validation",)):
        with pytest.raises(ValueError):
            facts.mokutil(*args)


def test_other_root_never_asks_this_machines_mokutil(root):
    class Live(CommandRunner):
        def which(self, name, search=()):
            raise AssertionError("must not look for a live tool")

    result, why = HostFacts(HostRoot(root), Live()).mokutil("--test-key", UBUNTU_KEY)
    assert result is None and "not run for a root that is not this machine" in why


# -- Secure Boot state from mokutil ------------------------------------------------------------------------------


def test_shim_validation_off_passes(root):
    runner = mok_runner(sb_state="SecureBoot enabled\nSecureBoot validation is disabled in shim\n")
    result = sc.run_check(root, "secure-boot-blocks-dkms", runner=runner)
    assert result.status is Status.PASS and "validation is turned off" in result.reason


def test_efi_without_the_variable_is_off_without_asking_mokutil(root):
    (root / "sys/firmware/efi/efivars" / sc.SECURE_BOOT_NAME).unlink()
    runner = mok_runner(f"{UBUNTU_KEY} is not enrolled\n")
    # EFI without the variable reads as "off" from the file alone; mokutil is not needed then
    assert sc.run_check(root, "secure-boot-blocks-dkms", runner=runner).status is Status.PASS
    assert len(runner.history) == 0


def test_sb_state_from_mokutil_when_the_efivar_is_unreadable(root, monkeypatch):
    from rocmdesk.host import HostReadError, ReadFailure
    from tests.support.host_faults import deny_reads

    deny_reads(monkeypatch, "read_bytes", lambda path: "SecureBoot" in path,
               lambda path: HostReadError(ReadFailure.PERMISSION, path))
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms",
                                        runner=mok_runner(f"{UBUNTU_KEY} is not enrolled\n")))
    assert any(e.path == f"{MOKUTIL} --sb-state (output)" and e.text == "SecureBoot enabled"
               for e in finding.evidence)
    # and with mokutil saying nothing useful either, it stays unknown
    result = sc.run_check(root, "secure-boot-blocks-dkms", runner=mok_runner(sb_state="EFI variables are not "
                                                                               "supported on this system\n"))
    assert result.status is Status.SKIP and "permission denied" in result.reason


def test_parsers():
    assert parse_mokutil_test_key("/k is already enrolled\n", "") == "enrolled"
    assert parse_mokutil_test_key("", "/k is already in the built-in trusted keyring\n") == "enrolled"
    assert parse_mokutil_test_key("/k is already in the enrollment request\n", "") == "pending"
    assert parse_mokutil_test_key("/k is not enrolled\n", "") == "not-enrolled"
    assert parse_mokutil_test_key("", "") is None
    assert parse_mokutil_test_key("Not a valid x509 certificate\n", "") is None
    assert parse_mokutil_sb_state("SecureBoot disabled\nPlatform is in Setup Mode\n") == (False, False)
    assert parse_mokutil_sb_state("This system doesn't support Secure Boot\n") == (None, False)
    assert parse_mokutil_sb_state("") == (None, False)
