"""A bundle carries the mokutil answers and the public DKMS certificate, so the snapshot's secure-boot finding
is the one the machine had; the private signing keys never go in."""

from __future__ import annotations

import tarfile

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot, RecordedRunner
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from tests.support import scenarios as sc

KEY = "/var/lib/shim-signed/mok/MOK.der"


def _finding(report, check_id):
    return next(f for f in report.findings if f.id == check_id)


def test_mokutil_answer_and_certificate_travel_private_keys_do_not(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.install_dkms_amdgpu(root)
    sc.set_secure_boot(root, True)
    sc.unload_amdgpu(root)
    sc.write(root, "/var/lib/shim-signed/mok/MOK.priv", "-----BEGIN PRIVATE KEY-----\nPRIVKEYMATERIAL42\n")
    sc.write(root, "/var/lib/dkms/mok.key", "-----BEGIN PRIVATE KEY-----\nPRIVKEYMATERIAL42\n")
    # a misconfigured certificate setting pointing at the private key: still never copied
    sc.write(root, "/etc/dkms/framework.conf", "mok_certificate=/var/lib/dkms/mok.key\n")
    runner = RecordedRunner()
    runner.add(["/usr/bin/mokutil", "--sb-state"], stdout="SecureBoot enabled\n")
    runner.add(["/usr/bin/mokutil", "--test-key", KEY], stdout=f"{KEY} is not enrolled\n")
    source = _finding(diagnose(HostRoot(root), runner=runner), "secure-boot-blocks-dkms")
    assert f"sudo mokutil --import {KEY}" in source.fix.steps[0]  # the private key was passed over
    plan = prepare_bundle(HostRoot(root), runner=RecordedRunner.from_json(runner.to_json()))
    plan.save(tmp_path / "b.tar.gz")
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        names = tar.getnames()
        assert not any(n.endswith((".priv", ".key")) for n in names), names
        assert b"PRIVKEYMATERIAL42" not in b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    with open_bundle(tmp_path / "b.tar.gz") as opened:
        again = _finding(diagnose(opened.root), "secure-boot-blocks-dkms")
    assert again.explanation == source.explanation and again.fix.steps == source.fix.steps


def test_enrolled_answer_round_trips(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.install_dkms_amdgpu(root)
    sc.set_secure_boot(root, True)
    sc.unload_amdgpu(root)
    runner = RecordedRunner()
    runner.add(["/usr/bin/mokutil", "--sb-state"], stdout="SecureBoot enabled\n")
    runner.add(["/usr/bin/mokutil", "--test-key", KEY], stdout=f"{KEY} is already enrolled\n")
    source = _finding(diagnose(HostRoot(root), runner=runner), "secure-boot-blocks-dkms")
    assert "is enrolled" in source.title
    plan = prepare_bundle(HostRoot(root), runner=RecordedRunner.from_json(runner.to_json()))
    plan.save(tmp_path / "b.tar.gz")
    with open_bundle(tmp_path / "b.tar.gz") as opened:
        again = _finding(diagnose(opened.root), "secure-boot-blocks-dkms")
    assert (again.title, again.severity, [e.path for e in again.evidence]) == (
        source.title, source.severity, [e.path for e in source.evidence])


def test_private_signing_keys_are_denied_whoever_reads_them():
    from rocmdesk.report import filters

    for path in ("var/lib/shim-signed/mok/MOK.priv", "var/lib/dkms/mok.key", "etc/pki/dkms/signing.key"):
        assert not filters.allowed(path), path
    for path in ("var/lib/shim-signed/mok/MOK.der", "var/lib/dkms/mok.pub", "etc/dkms/framework.conf"):
        assert filters.allowed(path), path
