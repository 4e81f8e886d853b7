"""Socket helpers shared by the exporter's unit and system tests (no process started)."""

from __future__ import annotations

import socket

from tiptop.exporter.aggregate import Family, MetricType, Snapshot
from tiptop.exporter.httpd import MetricsServer
from tiptop.exporter.serve import SnapshotCollector
from tiptop.exporter.webconfig import WebConfig


def closed_by_peer(sock: socket.socket, within: float = 0.0) -> bool:
    """Whether the other end closes ``sock`` (EOF or reset) within ``within`` seconds
    (0: as things stand now)."""
    if within:
        sock.settimeout(within)
    else:
        sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except (BlockingIOError, TimeoutError):
        return False
    except ConnectionResetError:
        return True


def web_server(web: WebConfig) -> MetricsServer:
    """A started server of 8 slots behind ``web``'s TLS and basic auth, serving one
    counter family (``tiptop_cpu_seconds_total``); the caller closes it."""
    collector = SnapshotCollector()
    fam = Family(
        "tiptop_cpu_seconds_total", "CPU", MetricType.COUNTER, ("comm",), ((("sh",), 1.5),)
    )
    collector.publish(Snapshot((fam,), 1.0))
    srv = MetricsServer("127.0.0.1", 0, web.guard(collector.handle), 8, web.tls)
    srv.start()
    return srv
