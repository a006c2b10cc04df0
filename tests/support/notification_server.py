# ruff: noqa: UP037, F821, F722 -- dbus-next reads D-Bus signatures ("s", "a{sv}") from the annotations
"""A stand-in freedesktop notification server for tests: owns org.freedesktop.Notifications on the
session bus given in DBUS_SESSION_BUS_ADDRESS and appends every Notify call to a JSON-lines file.

Run: ``python -m tests.support.notification_server OUT_FILE`` (prints "ready" once the name is owned).
"""

from __future__ import annotations

import asyncio
import json
import sys

from dbus_next.aio import MessageBus
from dbus_next.service import ServiceInterface, method


class Notifications(ServiceInterface):
    def __init__(self, out: str) -> None:
        super().__init__("org.freedesktop.Notifications")
        self.out = out
        self.next_id = 0

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s", body: "s",
               actions: "as", hints: "a{sv}", expire_timeout: "i") -> "u":
        self.next_id += 1
        record = {"app_name": app_name, "app_icon": app_icon, "summary": summary, "body": body,
                  "hints": {k: v.value for k, v in hints.items()}, "expire_timeout": expire_timeout}
        with open(self.out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        return self.next_id

    @method()
    def GetCapabilities(self) -> "as":
        return ["body"]


async def main(out: str) -> None:
    bus = await MessageBus().connect()
    bus.export("/org/freedesktop/Notifications", Notifications(out))
    await bus.request_name("org.freedesktop.Notifications")
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
