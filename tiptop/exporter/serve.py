"""``--serve`` and ``--textfile``: the refresh loop feeding :class:`~.aggregate.Aggregator`,
and the exposition through ``prometheus_client`` (the only module that imports it, so
batch and live start-up do not pay for it).

The collector holds the families of the latest refresh, built whole by the refresh loop
and swapped in by one assignment; a scrape only reads that reference, so no lock is held
while a response is written. The HTTP server (``prometheus_client.start_http_server``, a
threading WSGI server) answers each client on its own daemon thread: a slow or bad client
holds only its thread, never the sampler. Its registry holds this collector only (no
process or platform metrics of the exporter itself).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tiptop.errors import UsageError
from tiptop.exporter.aggregate import Aggregator, Snapshot
from tiptop.frame import FrameSource


def parse_address(text: str, where: str = "--serve") -> tuple[str, int]:
    """``[HOST:]PORT`` -> ``(host, port)``; the host is 127.0.0.1 unless given
    (``[::1]:9100`` for IPv6). Raises UsageError."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.removeprefix("[").removesuffix("]") if host.startswith("[") else host
    if not host:
        raise UsageError(f"{where}: empty host in '{text}'")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"{where}: '{port}' is not a port number (0 to 65535)")
    return host, int(port)


def families(snapshot: Snapshot) -> list[Metric]:
    """``prometheus_client`` metric families of a snapshot."""
    out: list[Metric] = []
    for fam in snapshot.families:
        cls = CounterMetricFamily if fam.kind == "counter" else GaugeMetricFamily
        metric = cls(fam.name, fam.help, labels=list(fam.labels))
        for labels, value in fam.samples:
            metric.add_metric(list(labels), value)
        out.append(metric)
    return out


class SnapshotCollector:
    """A custom collector (prometheus_client "custom collectors") over the latest families."""

    def __init__(self) -> None:
        self._families: list[Metric] = []

    def publish(self, snapshot: Snapshot) -> None:
        """Build the families of ``snapshot`` and swap them in (one reference assignment)."""
        self._families = families(snapshot)

    def collect(self) -> Iterator[Metric]:
        """The families of the latest refresh (the registry's scrape calls this)."""
        yield from self._families


class Exporter:
    """A frame source sampled every ``delay`` seconds, exported over HTTP and/or a file."""

    def __init__(self, source: FrameSource, aggregator: Aggregator, delay: float) -> None:
        self.source = source
        self.aggregator = aggregator
        self.delay = delay
        self.collector = SnapshotCollector()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)  # type: ignore[arg-type]
        self.server: Any = None
        self.stop = threading.Event()

    def serve(self, host: str, port: int) -> int:
        """Start the HTTP server on ``host:port``; the port bound (``port`` 0 picks one)."""
        started = start_http_server(port, addr=host, registry=self.registry)
        if started is None:  # prometheus_client < 0.20 returns nothing
            return port
        self.server = started[0]
        return int(self.server.server_address[1])

    def run(
        self,
        textfile: str | None = None,
        max_iter: int = 0,
        after: Callable[[Snapshot], None] | None = None,
        keep: Callable[[Any], None] | None = None,
    ) -> None:
        """Refresh every ``delay`` until :attr:`stop` is set or ``max_iter`` refreshes;
        each refresh is published, written to ``textfile`` (atomically: a temporary file
        renamed over it, as ``write_to_textfile`` does) and passed to ``after``. ``keep``
        sees each frame first (the cgroup cache forgets ended processes with it)."""
        self.source.start()
        deadline = time.monotonic()
        done = 0
        while not self.stop.is_set():
            deadline += self.delay
            if self.stop.wait(max(deadline - time.monotonic(), 0.0)):
                break
            frame = self.source.refresh()
            if keep is not None:
                keep(frame)
            snapshot = self.aggregator.update(frame)
            self.collector.publish(snapshot)
            if textfile is not None:
                write_to_textfile(textfile, self.registry)
            if after is not None:
                after(snapshot)
            done += 1
            if max_iter and done >= max_iter:
                break

    def close(self) -> None:
        """Stop the HTTP server (the source is closed by its owner)."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


__all__ = ["Exporter", "SnapshotCollector", "families", "parse_address"]
