"""Tool output made hostile (issue 11, item 3): every recorded rocm-smi/amd-smi output, through every parser.

A snapshot or ``--root`` folder replays its tools' outputs from ``rocmdesk/commands.json``, so they are as
untrusted as its sysfs. Each recording (tests/data/tool-output) is turned into each kind below and given
to every parser: the only exception allowed is ToolOutputError (the backend's "cannot run" with a reason),
and every GPU parsed must become a sample that JSON can print, with finite numbers within 64 bits.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from rocmdesk.telemetry import smi_parsers
from rocmdesk.telemetry.model import GpuInfo

DATA = Path(__file__).resolve().parents[2] / "data" / "tool-output"
RECORDINGS = sorted(p for p in DATA.iterdir() if p.name != "README.md")
PARSERS = [smi_parsers.parse_rocm_smi, smi_parsers.parse_rocm_smi_text, smi_parsers.parse_amd_smi_list,
           smi_parsers.parse_amd_smi_static, smi_parsers.parse_amd_smi_metric, smi_parsers.parse_amd_smi_text]


def _kind(kind: str, text: str, rng: random.Random) -> str:
    if kind == "empty":
        return ""
    if kind == "binary":
        return bytes(rng.getrandbits(8) for _ in range(2048)).decode("utf-8", errors="replace")
    if kind == "long_fields":  # the tool's own layout, every number 5000 digits long
        return re.sub(r"[0-9]+", "9" * 5000, text)
    if kind == "huge_json_int":  # JSON integers of 400 digits: json takes them, float() does not
        return re.sub(r"(?<=[:\[,] )[0-9]+(?=[,\n}\]])", "9" * 400, text)
    if kind == "nan":
        return re.sub(r"[0-9]+(\.[0-9]+)?", "NaN", text)
    if kind == "negative":
        return re.sub(r"(?<![0-9.])([0-9]+)", r"-\1", text)
    if kind == "deep":  # a document nested 100 000 deep
        return "{\"card0\": " + "[" * 100_000 + "]" * 100_000 + "}"
    if kind == "huge":
        return (text * (300_000 // max(1, len(text)) + 1))[:300_000]  # many documents after one another
    raise ValueError(kind)


KINDS = ("empty", "binary", "long_fields", "huge_json_int", "nan", "negative", "deep", "huge")


def _check(value, where: str) -> list[str]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int):
        return [] if abs(value) < 1 << 64 else [f"{where}: an integer of {value.bit_length()} bits"]
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f"{where}: {value}"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _check(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [p for n, v in enumerate(value) for p in _check(v, f"{where}[{n}]")]
    return []


@pytest.mark.parametrize("kind", KINDS)
def test_no_tool_output_breaks_a_parser(kind):
    problems = []
    cases = 0
    for recording in RECORDINGS:
        text = _kind(kind, recording.read_text(errors="replace"), random.Random(f"{recording.name}:{kind}"))
        for parse in PARSERS:
            cases += 1
            for stdout, stderr in ((text, ""), ("", text)):
                try:
                    result = parse(stdout, stderr) if parse.__code__.co_argcount > 1 else parse(stdout)
                except smi_parsers.ToolOutputError:
                    continue
                except Exception as exc:
                    problems.append(f"{recording.name} {parse.__name__}: {type(exc).__name__}: {str(exc)[:120]}")
                    continue
                gpus = result.values() if isinstance(result, dict) else result
                for n, gpu in enumerate(gpus):
                    if not isinstance(gpu, smi_parsers.ToolGpu):
                        continue
                    info = GpuInfo(card=f"card{n}", pci=f"0000:0{n % 10}:00.0", name="GPU")
                    sample = gpu.to_sample(info, 0.0, "fuzz")
                    data = sample.to_json()
                    problems += [f"{recording.name} {parse.__name__}: {p}" for p in _check(data, "sample")]
                    try:
                        json.dumps(data, allow_nan=False)
                    except ValueError as exc:
                        problems.append(f"{recording.name} {parse.__name__}: JSON: {str(exc)[:120]}")
    assert cases == len(RECORDINGS) * len(PARSERS)
    assert not problems, "\n".join(problems[:30])
