"""``rocmdesk exporter``: GPU readings and the diagnosis for Prometheus.

    rocmdesk exporter [--listen 127.0.0.1:9410] [--root DIR] [--interval S] [--diagnose-every S]
    rocmdesk exporter --textfile DIR [--once]

Served over HTTP (``/metrics``) or written atomically to ``DIR/rocmdesk.prom`` for node_exporter's
textfile collector. Binds 127.0.0.1 unless ``--listen`` says otherwise. Exit codes: 0 stopped
cleanly (Ctrl-C, SIGTERM, ``--once`` written), 2 could not start (bad address, port taken, no
backend, unwritable folder).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import TextIO

log = logging.getLogger(__name__)

EXIT_OK, EXIT_CANNOT_RUN = 0, 2
DEFAULT_LISTEN = "127.0.0.1:9410"
TEXTFILE_NAME = "rocmdesk.prom"
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.1, 4.0  # the sampler's 0.25-10 Hz


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", metavar="HOST:PORT", default=DEFAULT_LISTEN,
                        help=f"address to serve /metrics on (default {DEFAULT_LISTEN}; [::1]:PORT for IPv6)")
    parser.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                        help="read this folder as the machine's root instead of /")
    parser.add_argument("--backend", default="sysfs", help="where readings come from (default: sysfs)")
    parser.add_argument("--interval", metavar="S", type=_interval, default=1.0,
                        help=f"seconds between samples ({MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g}, default 1)")
    parser.add_argument("--diagnose-every", metavar="S", type=_seconds, default=600.0,
                        help="seconds between diagnoses (default 600; 0 = never)")
    parser.add_argument("--textfile", metavar="DIR",
                        help=f"write DIR/{TEXTFILE_NAME} for node_exporter's textfile collector instead of serving")
    parser.add_argument("--once", action="store_true", help="with --textfile: write once and exit")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text!r}")
    return value


def _interval(text: str) -> float:
    value = _seconds(text)
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"must be between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g} s, got {text!r}")
    return value


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); ValueError says what is wrong."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"port must be a number from 0 to 65535, got {port_text!r}")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"host must be an IP address or localhost, got {host!r}") from None
    return host, int(port_text)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    from rocmdesk.exporter.service import Exporter
    from rocmdesk.host import HostRoot
    from rocmdesk.telemetry.backends.base import BackendError
    from rocmdesk.telemetry.backends.factory import make_backend

    root_dir = getattr(args, "root", None) or "/"
    if not os.path.isdir(root_dir):
        print(f"rocmdesk exporter: {root_dir} is not a folder", file=err)
        return EXIT_CANNOT_RUN
    if args.once and not args.textfile:
        print("rocmdesk exporter: --once needs --textfile DIR", file=err)
        return EXIT_CANNOT_RUN
    root = HostRoot(root_dir)
    try:
        backend = make_backend(args.backend, root)
    except BackendError as exc:
        print(f"rocmdesk exporter: {exc}", file=err)
        return EXIT_CANNOT_RUN
    if args.textfile:
        return _run_textfile(args, root, backend, out, err)
    try:
        address = parse_listen(args.listen)
    except ValueError as exc:
        backend.close()
        print(f"rocmdesk exporter: --listen: {exc}", file=err)
        return EXIT_CANNOT_RUN
    exporter = Exporter(root, backend, interval_s=args.interval, diagnose_every_s=args.diagnose_every)
    try:
        server = _make_server(address, exporter)
    except OSError as exc:
        backend.close()
        print(f"rocmdesk exporter: cannot listen on {args.listen}: {exc.strerror or exc}", file=err)
        return EXIT_CANNOT_RUN
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    print(f"rocmdesk exporter: serving http://{shown}:{port}/metrics (root {root_dir}, {backend.name}, "
          f"every {args.interval:g} s)", file=out, flush=True)
    exporter.start()
    _serve_until_signal(server)
    exporter.stop()
    return EXIT_OK


def _make_server(address: tuple[str, int], exporter):
    from rocmdesk.exporter.service import MetricsServer

    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET

    class Server(MetricsServer):
        address_family = family

    return Server(address, exporter)


def _serve_until_signal(server) -> None:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    try:
        _wait_for_signal(0.5, lambda: None)
    finally:
        server.shutdown()
        server.server_close()


def _run_textfile(args: argparse.Namespace, root, backend, out: TextIO, err: TextIO) -> int:
    from rocmdesk.atomic_file import atomic_write_bytes
    from rocmdesk.exporter.service import Exporter

    folder = Path(args.textfile)
    if not folder.is_dir():
        backend.close()
        print(f"rocmdesk exporter: --textfile {folder} is not a folder", file=err)
        return EXIT_CANNOT_RUN
    target = folder / TEXTFILE_NAME
    failures: list[str] = []

    def write(body: bytes) -> None:
        try:
            atomic_write_bytes(target, body)
        except OSError as exc:
            failures.append(f"cannot write {target}: {exc.strerror or exc}")
            log.error("%s", failures[-1])

    if args.once:
        exporter = Exporter(root, backend, interval_s=args.interval, diagnose_every_s=args.diagnose_every)
        try:
            exporter.sampler.start(scheduler=False)
            exporter.sampler.tick()
            exporter.sampler.wait_idle(30.0)
            if args.diagnose_every > 0:
                exporter.run_diagnosis_once()
            write(exporter.body)
        finally:
            exporter.stop()
        if failures:
            print(f"rocmdesk exporter: {failures[-1]}", file=err)
            return EXIT_CANNOT_RUN
        print(f"rocmdesk exporter: wrote {target}", file=out)
        return EXIT_OK
    exporter = Exporter(root, backend, interval_s=args.interval, diagnose_every_s=args.diagnose_every)
    print(f"rocmdesk exporter: writing {target} every {args.interval:g} s", file=out, flush=True)
    exporter.start()
    try:
        _wait_for_signal(args.interval, lambda: write(exporter.body))  # one write per interval, not per render
    finally:
        exporter.stop()
    return EXIT_OK


def _wait_for_signal(every_s: float, tick) -> None:
    """Call ``tick`` every ``every_s`` until SIGTERM or SIGINT (systemd stops a unit with SIGTERM)."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not stop.wait(every_s):
            tick()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
