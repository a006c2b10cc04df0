"""The Prometheus text format (0.0.4) of metric families, written fast enough to render every sample.

prometheus_client's ``generate_latest`` escapes and sorts every label of every sample (5 ms for the
~500 samples of 8 GPUs here, twice the cost of the sample itself). The GPU's five labels are the same
in every family, so their escaped, sorted text is cached; the output is byte-for-byte what
``generate_latest`` writes for the same families (a test compares them), so prometheus_client stays
the definition of the format.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

_CACHE_LIMIT = 8192
_label_cache: dict[tuple[tuple[str, str], ...], str] = {}
# Readings repeat from sample to sample (temperatures, sizes, caps): formatting each once is enough.
_value_text = lru_cache(maxsize=_CACHE_LIMIT)(floatToGoString)


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    key = tuple(labels.items())  # a family's labels come in one order: the sort is needed only on a miss
    text = _label_cache.get(key)
    if text is None:
        if len(_label_cache) >= _CACHE_LIMIT:  # reasons and subjects change: never grow without end
            _label_cache.clear()
        text = "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in sorted(key)) + "}"
        _label_cache[key] = text
    return text


def render_text(metrics: Iterable[Metric]) -> bytes:
    """Families as the text exposition format, in the given order."""
    out: list[str] = []
    for metric in metrics:
        name = metric.name + "_total" if metric.type == "counter" else metric.name
        kind = "untyped" if metric.type == "unknown" else metric.type
        help_text = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
        for sample in metric.samples:
            out.append(f"{sample.name}{_labels(sample.labels)} {_value_text(sample.value)}\n")
    return "".join(out).encode("utf-8")
