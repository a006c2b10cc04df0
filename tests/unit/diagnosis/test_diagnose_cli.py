"""`rocmdesk diagnose`: exit codes, JSON contract, text for people, and text/JSON agreement."""

from __future__ import annotations

import io
import json

import pytest

from rocmdesk import cli
from rocmdesk.commands.diagnose import Style, render_text
from rocmdesk.diagnosis.engine import registered_checks
from rocmdesk.diagnosis.runner import diagnose
from tests.support import scenarios as sc


@pytest.fixture
def root(tmp_path):
    return sc.clean_workstation(tmp_path / "root")


def run_cli(capsys, *argv):
    code = cli.main(["diagnose", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract_on_clean_root(root, capsys):
    code, out, _err = run_cli(capsys, "--root", str(root), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"host", "checks", "findings", "target"}
    assert set(data["host"]) == {"kernel", "distro", "rocm", "gpus"}
    # whose machine (issue 10): a root folder, never applicable, with the identity its files show
    assert data["target"]["kind"] == "root" and data["target"]["applicable"] is False
    assert data["target"]["machine"]["kernel"] == data["host"]["kernel"]
    assert data["findings"] == []
    assert [c["id"] for c in data["checks"]] == [s.id for s in registered_checks()]
    for entry in data["checks"]:
        assert {"id", "status", "reason"} <= set(entry)
        assert entry["status"] in ("pass", "fail", "skip", "error")


def test_error_findings_exit_1_and_text_agrees_with_json(root, capsys):
    sc.unload_amdgpu(root)
    sc.blacklist_amdgpu(root)
    sc.add_cmdline(root, "nomodeset")
    code, out, _ = run_cli(capsys, "--root", str(root), "--json")
    assert code == 1
    data = json.loads(out)
    finding = next(f for f in data["findings"] if f["id"] == "amdgpu-blacklisted")
    assert set(finding) >= {"id", "severity", "title", "explanation", "evidence", "fix"}
    assert finding["evidence"][0] == {"path": "/etc/modprobe.d/blacklist-amdgpu.conf", "line": 2,
                                      "text": "blacklist amdgpu"}
    assert set(finding["fix"]) >= {"id", "privileged", "steps"}
    code_text, text, _ = run_cli(capsys, "--root", str(root))
    assert code_text == code
    assert "\033[" not in text  # capsys is not a terminal
    for check in data["checks"]:
        assert check["id"] in text
    for f in data["findings"]:
        assert f["title"] in text
        for ev in f["evidence"]:
            where = f"{ev['path']}:{ev['line']}" if ev["path"] and ev["line"] else (ev["path"] or "")
            expected = f"{where}: {ev['text']}" if where else ev["text"]
            assert expected in text
        for step in f["fix"]["steps"]:
            assert step in text
    assert "/etc/modprobe.d/blacklist-amdgpu.conf:2: blacklist amdgpu" in text
    failed = sum(1 for c in data["checks"] if c["status"] == "fail")
    assert f"{failed} failed" in text


def test_info_findings_exit_0(root, capsys):
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M")
    code, out, _ = run_cli(capsys, "--root", str(root))
    assert code == 0 and "[INFO]" in out


def test_missing_root_exits_2(tmp_path, capsys):
    code, out, err = run_cli(capsys, "--root", str(tmp_path / "nope"))
    assert code == 2 and out == "" and "not a folder" in err


def test_bad_snapshot_exits_2(tmp_path, capsys):
    bad = tmp_path / "bundle.tar.gz"
    bad.write_bytes(b"not a tarball")
    code, _out, err = run_cli(capsys, "--snapshot", str(bad))
    assert code == 2 and "snapshot" in err
    code, _out, err = run_cli(capsys, "--snapshot", str(tmp_path / "missing.tar.gz"))
    assert code == 2


def test_snapshot_bundle_round_trip(root, tmp_path, capsys):
    from rocmdesk.host import HostRoot
    from rocmdesk.report.bundle import capture

    sc.blacklist_amdgpu(root)
    bundle = tmp_path / "support.tar.gz"
    capture(bundle, root=HostRoot(root))
    code, out, _ = run_cli(capsys, "--snapshot", str(bundle), "--json")
    data = json.loads(out)
    assert code == 0  # a blacklist while amdgpu is loaded is a warning
    finding = next(f for f in data["findings"] if f["id"] == "amdgpu-blacklisted")
    assert finding["evidence"][0]["path"] == "/etc/modprobe.d/blacklist-amdgpu.conf"
    assert data["host"]["kernel"] == sc.KERNEL


def test_root_and_snapshot_together_exit_2(root, tmp_path, capsys):
    code, _out, err = run_cli(capsys, "--root", str(root), "--snapshot", str(tmp_path / "x"))
    assert code == 2 and "either" in err


def test_engine_crash_exits_2(root, capsys, monkeypatch):
    import rocmdesk.diagnosis.runner as runner

    monkeypatch.setattr(runner, "diagnose", lambda *a, **k: (_ for _ in ()).throw(MemoryError("full")))
    code, _out, err = run_cli(capsys, "--root", str(root))
    assert code == 2 and "could not run" in err


class Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self):
        return True


def test_colour_only_on_a_terminal_without_no_color(root, monkeypatch):
    sc.remove_kfd(root)
    report = diagnose(root)
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = render_text(report, Style(Tty()))
    assert "\033[31" in coloured and "✘" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033[" not in render_text(report, Style(Tty()))
    monkeypatch.delenv("NO_COLOR")
    plain = render_text(report, Style(io.StringIO()))
    assert "\033[" not in plain and "FAIL" in plain  # no UTF-8 declared: ASCII marks


def test_fix_with_sudo_steps_is_never_labelled_as_your_user(root, capsys):
    # an override in a system unit: the fix is not a helper action, but its steps need sudo
    sc.unit_environment(root, "HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    _code, out, _err = run_cli(capsys, "--root", str(root))
    block = out.split("[hsa-override-mismatch]", 1)[1]
    assert "Fix (some steps need administrator rights):" in block.split("[", 1)[0]
    assert "sudo systemctl" in block


def test_user_level_fix_says_as_your_user(root, capsys):
    from tests.support.python_envs import make_comfyui

    make_comfyui(root, f"home/{sc.USER}/ComfyUI", torch="cuda")
    _code, out, _err = run_cli(capsys, "--root", str(root))
    block = out.split("[torch-wheel-mismatch]", 1)[1]
    assert "Fix (as your user):" in block and "sudo" not in block.split("checks:", 1)[0]
