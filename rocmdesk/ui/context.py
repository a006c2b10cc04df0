"""What every tab may use: the host root, the runner, the data source and the live feed.

Tabs receive one :class:`AppContext` and must not reach for globals; this is what lets the
same tabs run on the live machine, the demo, a support snapshot and in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmdesk.host import CommandRunner, HostRoot
from rocmdesk.ui.settings import Settings

if TYPE_CHECKING:
    from rocmdesk.ui.feed import SampleFeed

MODES = ("live", "demo", "snapshot")


@dataclass
class AppContext:
    """Shared state of one window.

    ``mode`` is "live" (this machine), "demo" (bundled recordings) or "snapshot" (a support
    bundle or a root folder given with --root); ``mode_reason`` says why in words.
    ``feed`` delivers samples on the GUI thread (signals ``snapshot``, ``gpus_changed``,
    ``stale_changed``, ``gpu_event``); ``feed.history`` holds the recorded series;
    ``feed.latest`` maps PCI address to the last :class:`GpuSample`.
    """

    root: HostRoot
    runner: CommandRunner
    mode: str
    mode_reason: str
    backend_name: str
    settings: Settings
    feed: SampleFeed
    bundle_path: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # for tabs that need to share something

    @property
    def is_live(self) -> bool:
        return self.mode == "live"

    @property
    def sampler(self) -> Any:
        return self.feed.sampler

    @property
    def history(self) -> Any:
        return self.feed.history
