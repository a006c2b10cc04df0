"""Words every surface shows the same way (window, reports, command line), kept in the Qt-free core."""

import math
import time

NA = "N/A"  # a value that is not available; the reason goes beside it (a tooltip, a footnote), never a 0


def short_gpu_name(name: str) -> str:
    """The marketing name without the vendor words every AMD GPU shares ("MI300X", "RX 7900 XTX")."""
    short = name
    for word in ("AMD ", "Radeon ", "Instinct "):
        short = short.replace(word, "")
    return short.strip() or name


def gpu_label(info: object) -> str:
    """The one label of a GPU in every view (cards, legend, menus, processes, banner, report charts): its
    DRM card, as /sys/class/drm and the kernel log name it, and its short name: "card1 · MI300X"."""
    card = getattr(info, "card", "") or getattr(info, "pci", "") or "GPU"
    name = str(getattr(info, "name", "") or "")
    return f"{card} · {short_gpu_name(name)}" if name else card


def recorded_text(start: float | None, count: int, span_s: float) -> str:
    """How a recording is described everywhere (status bar, graphs, report): its own clock, never the
    viewer's: "recorded 2026-12-01 21:42 · 120 samples over 2 min" (local time of the viewer's zone)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(start)) if start else "at an unknown time"
    if count <= 1:
        return f"recorded {when} · {max(count, 0)} sample" + ("" if count == 1 else "s")
    span = max(0.0, float(span_s))
    over = f"{span / 60:.0f} min" if span >= 90 else f"{span:.0f} s"
    return f"recorded {when} · {count} samples over {over}"


def demo_replay_text(machine: str, recorded: float | None) -> str:
    """What the demo's status bar says instead of "Sampling at 1 Hz · just now": the readings are a
    replay of a recording, not a live machine: "demo replay of rx7900xtx-comfyui · recorded 2025-12-01 21:42"."""
    what = f"demo replay of {machine}" if machine else "demo replay of a recording"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(recorded)) if recorded else ""
    return f"{what} · recorded {when}" if when else what


_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def fmt_bytes(value: object) -> str:
    """A size in binary units, the one byte formatter of every view: one decimal under 100, whole above
    ("512 B", "1.5 GiB", "24.0 GiB", "192 GiB"); N/A for anything that is not a finite number (``None``,
    NaN, a bool, a string), never a 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return NA
    size = float(value)
    if abs(size) < 1024:
        return f"{size:.0f} B"
    for unit in _BYTE_UNITS[1:]:
        size /= 1024
        if abs(size) < 1023.5 or unit == _BYTE_UNITS[-1]:  # 1023.6 KiB reads "1.0 MiB", not "1024 KiB"
            return f"{size:.1f} {unit}" if abs(size) < 99.95 else f"{size:.0f} {unit}"
    raise AssertionError("unreachable: the last unit returns")
