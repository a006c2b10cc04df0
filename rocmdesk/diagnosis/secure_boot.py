"""Secure Boot state and the DKMS module signing key (MOK): the SecureBoot efivar, DKMS's configured
certificate, and the read-only ``mokutil --sb-state`` / ``--test-key`` answers."""

from __future__ import annotations

import re

from rocmdesk.diagnosis.kernel_log import KERNEL_LOG_TOOL_DIRS
from rocmdesk.diagnosis.model import SourcedLine
from rocmdesk.host import CommandResult, CommandRunner, HostReadError, HostRoot, ReadFailure, RecordedRunner

SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# The DKMS module signing certificate (public half only). DKMS 3.x: "mok_certificate=/var/lib/dkms/mok.pub
# (default: /var/lib/dkms) ... If any of the files specified by mok_signing_key and mok_certificate are
# non-existent, dkms will re-create both files"; /etc/dkms/framework.conf and framework.conf.d/*.conf
# (dell/dkms dkms_framework.conf.in). Ubuntu's DKMS signs with update-secureboot-policy's MOK,
# /var/lib/shim-signed/mok/MOK.der (e.g. JacKeTUs/universal-pidff docs/SIGNING.md; dkms-project/dkms#347).
DKMS_FRAMEWORK_CONF = "/etc/dkms/framework.conf"
UBUNTU_MOK_CERT = "/var/lib/shim-signed/mok/MOK.der"
DKMS_MOK_CERT = "/var/lib/dkms/mok.pub"

_MOK_CERT_RE = re.compile(r"^\s*mok_certificate\s*=\s*(\S+)\s*(?:#.*)?$")
MOKUTIL_TIMEOUT_S = 5.0
MOKUTIL_MAX_BYTES = 64 << 10


def read_secure_boot(root: HostRoot) -> tuple[bool | None, str]:
    """(enabled, evidence text). The efivar holds 4 attribute bytes, then one data byte."""
    try:
        data = root.read_bytes(SECURE_BOOT_VAR, max_bytes=64)
    except HostReadError as exc:
        if exc.failure is ReadFailure.MISSING:
            if root.is_dir("/sys/firmware/efi"):
                return False, "EFI firmware without a SecureBoot variable"
            if root.is_dir("/sys/firmware"):
                return False, "legacy BIOS boot (no /sys/firmware/efi)"
            return None, "the root has no /sys/firmware"
        return None, f"{SECURE_BOOT_VAR}: {exc.failure.value}"
    if len(data) < 5:
        return None, f"{SECURE_BOOT_VAR}: {len(data)} bytes, expected 5"
    enabled = data[4] == 1
    return enabled, f"SecureBoot variable data byte = {data[4]} ({'enabled' if enabled else 'disabled'})"


def mok_certificate_setting(root: HostRoot) -> SourcedLine | None:
    """The last ``mok_certificate=`` of /etc/dkms/framework.conf and framework.conf.d/*.conf (DKMS reads
    them in that order; dkms_framework.conf.in), ``$kernelver`` left as it is."""
    files = [DKMS_FRAMEWORK_CONF] + [f"{DKMS_FRAMEWORK_CONF}.d/{n}" for n in
                                     root.listdir(f"{DKMS_FRAMEWORK_CONF}.d") if n.endswith(".conf")]
    found = None
    for path in files:
        for number, line in enumerate((root.try_read_text(path) or "").splitlines(), start=1):
            m = _MOK_CERT_RE.match(line)
            if m:
                found = SourcedLine(path, number, m.group(1).strip().strip("\"'"))
    return found if found is not None and found.text else None


def mok_candidates(setting: SourcedLine | None, kernel_release: str | None) -> list[str]:
    """Where DKMS keeps the public half of its signing key, most specific first: the configured path,
    Ubuntu's shim-signed MOK, then DKMS 3.x's default. Only public certificates: the private keys
    (MOK.priv, mok.key) are never touched, so they can never end up in a support bundle."""
    out = []
    # a private key named as the certificate (a misconfiguration) is never looked at: not even its name may
    # pull it into a support bundle
    if setting is not None and setting.text.startswith("/") and not setting.text.endswith((".key", ".priv")):
        kver = kernel_release or ""
        out.append(setting.text.replace("${kernelver}", kver).replace("$kernelver", kver))
    for path in (UBUNTU_MOK_CERT, DKMS_MOK_CERT):
        if path not in out:
            out.append(path)
    return out


def run_mokutil(root: HostRoot, runner: CommandRunner | None, *args: str) -> tuple[CommandResult | None, str]:
    """``mokutil <args>`` through the runner (live root) or its recording (snapshot): (result, "") or
    (None, why it could not be asked). Only the read-only --sb-state and --test-key are ever run here;
    enrolling a key (--import) is the user's own step."""
    if args[:1] not in (("--sb-state",), ("--test-key",)):
        raise ValueError(f"mokutil {' '.join(args)} is not a read-only query")
    if runner is None:
        return None, "mokutil: no command runner"
    if not root.is_live and not isinstance(runner, RecordedRunner):
        return None, "mokutil: not run for a root that is not this machine"
    program = runner.which("mokutil", KERNEL_LOG_TOOL_DIRS)
    if program is None:
        return None, ("mokutil is not installed" if root.is_live
                      else "mokutil output was not recorded in this snapshot")
    result = runner.run([program, *args], timeout=MOKUTIL_TIMEOUT_S, max_output_bytes=MOKUTIL_MAX_BYTES)
    if result.timed_out:
        return None, f"mokutil {args[0]} {result.error or 'timed out'}"
    if result.error:
        return None, ("mokutil output was not recorded in this snapshot" if "not recorded" in result.error
                      else f"mokutil {args[0]}: {result.error}")
    return result, ""


# mokutil's answers (lcp/mokutil src/mokutil.c test_key(), print_skip_message(), print_sb_state()). Its exit
# status for --test-key flipped between versions (0.3: 0 = not enrolled, 1 = enrolled; later: 1 = not enrolled,
# 0 = enrolled or pending), so only the text is read.
_MOK_ENROLLED_RE = re.compile(r" is already enrolled$| is already in db$|is already in the built-in trusted keyring$")
_MOK_PENDING_RE = re.compile(r" is already in the enrollment request$")
_MOK_NOT_ENROLLED_RE = re.compile(r" is not enrolled$")


def parse_mokutil_test_key(stdout: str, stderr: str) -> str | None:
    """"enrolled", "pending" (imported, waiting for MokManager at the next boot), "not-enrolled", or None
    when the output says none of these (a damaged key, an old or odd mokutil)."""
    for line in [*stdout.splitlines(), *stderr.splitlines()]:
        line = line.strip()
        if _MOK_PENDING_RE.search(line):
            return "pending"
        if _MOK_ENROLLED_RE.search(line):
            return "enrolled"
        if _MOK_NOT_ENROLLED_RE.search(line):
            return "not-enrolled"
    return None


def parse_mokutil_sb_state(stdout: str) -> tuple[bool | None, bool]:
    """(Secure Boot enabled, shim's validation turned off) from ``mokutil --sb-state``. "SecureBoot validation
    is disabled in shim" (``mokutil --disable-validation``) makes the kernel treat Secure Boot as off: the EFI
    stub honours MokSBState (linux drivers/firmware/efi/libstub/secureboot.c)."""
    enabled = None
    for line in stdout.splitlines():
        line = line.strip()
        if line == "SecureBoot enabled":
            enabled = True
        elif line == "SecureBoot disabled":
            enabled = False
    return enabled, "SecureBoot validation is disabled in shim" in stdout
