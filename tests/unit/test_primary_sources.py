"""The shipped code and check metadata cite primary sources, never a notes file outside the project.

Comments, docstrings and ``sources:`` once pointed at a compiled facts file ("rocm-facts.md 4b",
"facts 1c", "[S23]") that is not part of the repository, so a reader could not follow them. Each such
place now names the repository and path, kernel file, man page or issue itself; this keeps it so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The shipped code, check metadata and helper first; the rest of the project is held to the same rule.
SCANNED = ("rocmdesk", "resources", "helper",
           "tools", "tests", "docs", "benchmarks", "packaging", "scripts", "README.md")
THIS_FILE = Path(__file__).resolve()

# "rocm-facts" in any spelling; a bare source tag such as [S23] or (S14); a section of "the facts
# file" ("facts 1b", "facts 5a", "facts section 9", "facts file 4b").
_OUTSIDE_REFERENCE = re.compile(
    r"rocm[-_ ]facts"
    r"|[\[(]S\d{1,2}[\])]"
    r"|\bS\d{1,2}(?:-S\d{1,2})?\)"
    r"|\b(?:sources?|facts) S\d{1,2}\b"
    r"|\bfacts (?:file|section)\b"
    r"|\bfacts \d[a-g]?\b",
    re.IGNORECASE,
)


def outside_references(text: str) -> list[str]:
    """Every citation of the external facts file in ``text``."""
    return [m.group(0) for m in _OUTSIDE_REFERENCE.finditer(text)]


def _text_files() -> list[Path]:
    files: list[Path] = []
    for top in SCANNED:
        base = ROOT / top
        for path in sorted([base] if base.is_file() else base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.resolve() == THIS_FILE:
                continue
            try:
                path.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                continue  # icons and other binary resources
            files.append(path)
    return files


@pytest.mark.parametrize("text", [
    "# PP_OVERDRIVE_MASK, bit 14 (facts 5a [S4])",
    "Facts: docs/rocm-facts.md sections 6 and 8",
    '- "rocm-facts.md 4b: libhsakmt topology.c parses it [S23]"',
    "falls back to the average (S14).",
    "(sources S14, S15, S52-S56 there)",
    "# The real torch/version.py of a ROCm nightly (facts S28)",
    "GPUs are matched by PCI address (facts section 9).",
    "(facts file 4b; LLVM AMDGPU processor table)",
    "stops amdgpu from loading (facts 1c).",
])
def test_detects_references_to_the_facts_file(text: str) -> None:
    assert outside_references(text), text


@pytest.mark.parametrize("text", [
    "# PP_OVERDRIVE_MASK, bit 14 (Linux drivers/gpu/drm/amd/include/amd_shared.h)",
    "the same words as every other step (facts.initramfs_regenerate_step)",
    "facts: HostFacts = ctx.facts",
    "ROCm/legacy-rocm-build#5238 and pytorch/pytorch#133259",
    "sd_notify(3) and systemd.exec(5) Environment=",
    "RX 7900 XTX (S1 is a board name only inside words like GS1)",
])
def test_leaves_primary_references_and_code_alone(text: str) -> None:
    assert outside_references(text) == []


def test_scan_covers_the_code_the_metadata_and_the_helper() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in _text_files()}
    assert "helper/rocmdesk-helper" in files
    assert "rocmdesk/diagnosis/gfx.py" in files
    assert any(f.startswith("resources/checks/") and f.endswith(".yaml") for f in files)
    assert "README.md" in files and "tools/make_demo.py" in files
    assert "tests/unit/test_primary_sources.py" not in files  # its own examples are the patterns themselves


def test_no_project_file_cites_the_external_facts_file() -> None:
    found = []
    for path in _text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for ref in outside_references(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {ref!r} in {line.strip()[:100]}")
    assert found == [], "cite the primary source (repository + path, kernel file, man page, issue) instead:\n" + \
        "\n".join(found)
