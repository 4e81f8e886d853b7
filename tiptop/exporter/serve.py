"""``--serve`` and ``--textfile``: the refresh loop feeding :class:`~.aggregate.Aggregator`,
and the exposition through ``prometheus_client`` (the only module that imports it, so
batch and live start-up do not pay for it).

The collector holds the families of the latest refresh, built whole by the refresh loop
and swapped in by one assignment (:class:`Exposition`); a scrape only reads that
reference, so no lock is held while a response is written. Each format a scraper asks for
(text or OpenMetrics, gzipped or not: ``prometheus_client.exposition.choose_encoder``) is
rendered once per refresh and kept with the families it renders. The HTTP server is
:mod:`.httpd` (one thread, bounded clients, timeouts), the file writer :mod:`.textfile`.
Nothing but tiptop's own families is exported (no process or platform metrics of the
exporter itself).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder, gzip_accepted

from tiptop.errors import UsageError
from tiptop.exporter.aggregate import Aggregator, Snapshot
from tiptop.exporter.httpd import MetricsServer, Reply, Request
from tiptop.exporter.textfile import TextfileWriter
from tiptop.frame import Frame, FrameSource
from tiptop.refresh import Stop, consume, paced


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


class Exposition:
    """One refresh's families and their renderings, made on first demand; never changed
    after, so it needs no lock (a rendering made twice by two threads is the same)."""

    def __init__(self, fams: list[Metric]) -> None:
        self.families = fams
        self._rendered: dict[tuple[str, bool], bytes] = {}

    def collect(self) -> Iterator[Metric]:
        """The families (a ``prometheus_client`` collector, for its encoders)."""
        yield from self.families

    def render(self, accept: str = "", accept_encoding: str = "") -> tuple[str, bool, bytes]:
        """``(content type, gzipped, body)`` for a request's Accept and Accept-Encoding."""
        encoder, content_type = choose_encoder(accept)
        gzipped = gzip_accepted(accept_encoding)
        body = self._rendered.get((content_type, gzipped))
        if body is None:
            body = encoder(self)  # type: ignore[arg-type]
            if gzipped:
                body = gzip.compress(body, compresslevel=6)
            self._rendered[(content_type, gzipped)] = body
        return content_type, gzipped, body

    def text(self) -> bytes:
        """The Prometheus text format, as written to ``--textfile``: the rendering a scrape
        without Accept and Accept-Encoding gets (``choose_encoder("")`` is the text
        format's), made once for both."""
        return self.render()[2]


class SnapshotCollector:
    """The latest refresh's :class:`Exposition` (a prometheus_client "custom collector")."""

    def __init__(self) -> None:
        self.latest = Exposition([])

    def publish(self, snapshot: Snapshot) -> None:
        """Build the families of ``snapshot`` and swap them in (one reference assignment)."""
        self.latest = Exposition(families(snapshot))

    def collect(self) -> Iterator[Metric]:
        """The families of the latest refresh."""
        yield from self.latest.families

    def handle(self, request: Request) -> Reply:
        """An HTTP request's answer: the latest exposition for GET on any path (as
        prometheus_client's server), 405 for other methods."""
        if request.method == "OPTIONS":
            return Reply(200, (("Allow", "OPTIONS, GET"),))
        if request.method != "GET":
            return Reply(405, (("Allow", "OPTIONS, GET"),), b"405 Method Not Allowed\n")
        content_type, gzipped, body = self.latest.render(
            request.headers.get("accept", ""), request.headers.get("accept-encoding", "")
        )
        headers = [("Content-Type", content_type)]
        if gzipped:
            headers.append(("Content-Encoding", "gzip"))
        return Reply(200, tuple(headers), body)


class Exporter:
    """A frame source sampled every ``delay`` seconds, exported over HTTP and/or a file."""

    def __init__(self, source: FrameSource, aggregator: Aggregator, delay: float) -> None:
        self.source = source
        self.aggregator = aggregator
        self.delay = delay
        self.collector = SnapshotCollector()
        self.server: MetricsServer | None = None
        self.stop = Stop()

    def serve(self, host: str, port: int, max_clients: int) -> int:
        """Serve on ``host:port`` with at most ``max_clients`` connections; the port bound
        (``port`` 0 picks one). Raises TiptopError naming the address it could not bind."""
        self.server = MetricsServer(host, port, self.collector.handle, max_clients)
        self.server.start()
        return self.server.port

    def run(
        self,
        textfile: str | None = None,
        max_iter: int = 0,
        after: Callable[[Snapshot], None] | None = None,
        keep: Callable[[Any], None] | None = None,
        report: Callable[[str], None] | None = None,
    ) -> None:
        """Refresh every ``delay`` until :attr:`stop` is requested or ``max_iter``
        refreshes, under the one consumer loop (``tiptop.refresh.consume``); each refresh
        is published, written to ``textfile`` (:mod:`.textfile`) and passed to ``after``.
        ``keep`` sees each frame first (the cgroup cache forgets ended processes with it);
        ``report`` gets each new line of the source's message log."""
        messages = self.source.messages  # the FrameSource's one message log
        writer = None if textfile is None else TextfileWriter(textfile, messages.say)

        def take(frame: Frame, _count: int) -> None:
            if keep is not None:
                keep(frame)
            snapshot = self.aggregator.update(frame)
            self.collector.publish(snapshot)
            if writer is not None:
                writer.write(self.collector.latest.text())
            if after is not None:
                after(snapshot)

        self.source.start()
        frames = paced(self.source, self.delay, self.stop)
        consume(frames, take, messages, report or _unsaid, max_iter)

    def close(self) -> None:
        """Stop the HTTP server (the source is closed by its owner)."""
        if self.server is not None:
            self.server.close()
            self.server = None
        self.stop.close()


def _unsaid(line: str) -> None:
    """No one to tell: the messages stay in the log (the ``/metrics`` gauges say them)."""


__all__ = ["Exporter", "Exposition", "SnapshotCollector", "families", "parse_address"]
