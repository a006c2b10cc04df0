"""Issue 11: secrets planted where a bundle used to leak them; none may be in the bundle's bytes, and the
bundle's diagnosis must still equal the live one (the redaction applied to the source's evidence)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot, runner_for
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from tests.support import scenarios as sc
from tests.support.planted import HOSTNAME, plant_secrets


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    base = tmp_path_factory.mktemp("planted")
    root = sc.clean_workstation(base / "root")
    sc.comfyui_process(root)
    secrets = plant_secrets(root)
    source = diagnose(HostRoot(root), runner=runner_for(HostRoot(root))).to_json()
    plan = prepare_bundle(HostRoot(root))
    bundle = base / "bundle.tar.gz"
    plan.save(bundle)
    return root, secrets, source, plan, bundle


def _members(bundle) -> dict[str, bytes]:
    out = {}
    with tarfile.open(bundle, "r:gz") as tar:
        for member in tar:
            fh = tar.extractfile(member) if member.isreg() else None
            out[member.name] = (fh.read() if fh else b"") + member.linkname.encode()
    return out


def test_at_least_the_issue_s_42_secrets_are_planted(planted):
    _root, secrets, _source, _plan, _bundle = planted
    assert len(secrets) >= 42
    assert len(set(secrets.values())) == len(secrets)


def test_no_planted_value_is_in_the_bundle_s_bytes(planted):
    _root, secrets, _source, _plan, bundle = planted
    raw = gzip.decompress(bundle.read_bytes())  # the whole tar: names, link targets, pax headers, contents
    members = _members(bundle)
    leaks = {}
    for label, value in secrets.items():
        needle = value.encode()
        where = [name for name, data in members.items() if needle in data or needle in name.encode()]
        if needle in raw or where:
            leaks[label] = where or ["(tar headers)"]
    assert not leaks, leaks


def test_the_bundle_s_diagnosis_equals_the_live_one(planted):
    _root, _secrets, source, plan, bundle = planted
    with open_bundle(bundle) as opened:
        again = diagnose(opened.root, runner=opened.runner(), python_envs=opened.python_envs).to_json()
    expected = plan.redact_json(source)
    assert [(c["id"], c["status"], c.get("reason")) for c in again["checks"]] == \
        [(c["id"], c["status"], c.get("reason")) for c in expected["checks"]]
    assert again["findings"] == expected["findings"]  # evidence (text, file, line) included


def test_what_a_check_needs_is_still_there(planted):
    """Scrubbing must not cost the evidence: the ComfyUI's requirements (without the credentials),
    the commented-out line still commented, the host name placeholder in the log prefix."""
    _root, _secrets, _source, _plan, bundle = planted
    members = _members(bundle)
    reqs = members["home/user1/ComfyUI/requirements.txt"].decode()
    assert reqs.startswith("--extra-index-url https://<redacted>@gitlab.example.com/api/v4/projects/42/")
    assert "torchsde" in reqs
    node = members["home/user1/ComfyUI/custom_nodes/private-node/requirements.txt"].decode()
    assert "git+https://<redacted>@github.com/acme/private-node.git" in node and "opencv-python" in node
    assert members["home/user1/ComfyUI/main.py"] == b""  # a stand-in: only its presence is checked
    assert not [n for n in members if "projects" in n]  # another project under home: nothing of it
    alsa = members["etc/modprobe.d/alsa-base.conf"].decode().splitlines()
    assert alsa[-1] == "# xxx xxx xxxxx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" and "options snd-pcsp index=-2" in alsa
    blacklist = members["etc/modprobe.d/blacklist.conf"].decode().splitlines()
    assert blacklist[-1] == "# xxxxxxxxxxx xxx xxxxxx xxxxxxxxxxxx xxxxxx amdgpu"  # still mentions amdgpu
    assert "blacklist evbug" in blacklist
    log = members["var/log/kern.log"].decode()
    assert " host1 kernel: " in log and f" {HOSTNAME} " not in log
    assert "02:00:00:00:00:01" in log and "2001:db8::" in log
    bashrc = members["home/user1/.bashrc"].decode()
    assert "export ROCM_PATH=/opt/rocm  # xx xxxxx xxx xxx xxxx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n" in bashrc
    assert "alias" not in bashrc


def test_dry_run_lists_each_redaction_kind_with_counts(planted):
    _root, _secrets, _source, plan, _bundle = planted
    lines = plan.preview(limit=None)
    start = lines.index("Redactions (kind: replacements):")
    kinds = {}
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        kind, _, count = line.strip().rpartition(": ")
        kinds[kind] = int(count)
    for kind in ("url credentials", "secrets by name", "tokens", "ip addresses", "mac addresses", "email addresses",
                 "personal names", "comments", "machine ids", "host names", "user names", "identifiers"):
        assert kinds.get(kind, 0) > 0, (kind, kinds)
    manifest = json.loads(_members_of_plan(plan))
    assert manifest["redaction"]["url_credentials"] == kinds["url credentials"]


def _members_of_plan(plan) -> str:
    buf = io.BytesIO(plan.manifest.dumps())
    return buf.getvalue().decode()
