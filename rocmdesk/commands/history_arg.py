"""``--history FILE`` of the commands that put telemetry into a bundle or report (capture, report)."""

from __future__ import annotations

from typing import Any, TextIO


def load_history_arg(path: str, command: str, err: TextIO) -> tuple[Any, int | None]:
    """(the recording, None), or (None, 2) after one line on ``err`` saying why it cannot be used."""
    from rocmdesk.telemetry.recording import RecordingError, load_recording  # a report without history never loads it

    try:
        return load_recording(path), None
    except RecordingError as exc:
        print(f"rocmdesk {command}: {exc}", file=err)
        return None, 2
