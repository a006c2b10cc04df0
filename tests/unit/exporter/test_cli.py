"""``rocmdesk exporter`` arguments and the ways it can fail to start: one line, exit 2, nothing left behind."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest

from rocmdesk.cli import build_parser
from rocmdesk.commands import exporter as command
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import build_root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("mi300x")
    return build_root(tmp / "tree", instinct_specs(tmp / "dumps", "mi300x", count=1))


def run(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["exporter", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = command.run(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:9410", ("127.0.0.1", 9410)),
    ("[::1]:9410", ("::1", 9410)),
    ("0.0.0.0:0", ("0.0.0.0", 0)),
    ("localhost:80", ("localhost", 80)),
])
def test_listen_addresses(text, expected):
    assert command.parse_listen(text) == expected


@pytest.mark.parametrize("text", ["9410", ":9410", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:-1", "example.com:80",
                                  "1.2.3.4:80x", "", "[::1]9410"])
def test_bad_listen_addresses_are_refused(text):
    with pytest.raises(ValueError):
        command.parse_listen(text)


def test_bad_listen_exits_2_with_one_line(tree):
    code, _, err = run("--root", str(tree), "--listen", "nowhere", "--diagnose-every", "0")
    assert code == 2
    assert err.count("\n") == 1 and "--listen" in err


def test_port_taken_exits_2(tree):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = run("--root", str(tree), "--listen", f"127.0.0.1:{port}", "--diagnose-every", "0")
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err


def test_once_needs_textfile(tree):
    code, _, err = run("--root", str(tree), "--once")
    assert (code, err.strip()) == (2, "rocmdesk exporter: --once needs --textfile DIR")


def test_root_must_be_a_folder(tmp_path):
    code, _, err = run("--root", str(tmp_path / "missing"))
    assert code == 2 and "is not a folder" in err


def test_textfile_folder_missing(tree, tmp_path):
    code, _, err = run("--root", str(tree), "--textfile", str(tmp_path / "nope"), "--once", "--diagnose-every", "0")
    assert code == 2 and "is not a folder" in err


def test_textfile_unwritable_leaves_no_temporary_file(tree, tmp_path):
    (tmp_path / "rocmdesk.prom").mkdir()  # a folder where the file should go: the rename fails
    code, _, err = run("--root", str(tree), "--textfile", str(tmp_path), "--once", "--diagnose-every", "0")
    assert code == 2 and "cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rocmdesk.prom"]


def test_textfile_once_writes_the_readings(tree, tmp_path):
    code, out, _ = run("--root", str(tree), "--textfile", str(tmp_path), "--once", "--diagnose-every", "0")
    assert code == 0 and "wrote" in out
    text = (tmp_path / "rocmdesk.prom").read_text()
    assert 'gpu_junction_temperature{card="card0"' in text
    assert "rocmdesk_finding" not in text  # --diagnose-every 0: no diagnosis
    assert oct((tmp_path / "rocmdesk.prom").stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("value", ["0", "5", "nan", "-1", "x"])
def test_interval_outside_the_sampler_range_is_an_argument_error(value, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["exporter", "--interval", value])
    assert info.value.code == 2


@pytest.mark.parametrize("value", ["-1", "inf", "nan", "soon"])
def test_diagnose_every_must_be_finite_and_not_negative(value):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["exporter", "--diagnose-every", value])
