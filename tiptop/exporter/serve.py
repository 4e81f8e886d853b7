"""``--serve`` and ``--textfile``: the refresh loop feeding :class:`~.aggregate.Aggregator`,
and the exposition through ``prometheus_client`` (the only module that imports it, so
batch and live start-up do not pay for it).

The collector holds the families of the latest refresh, built whole by the refresh loop
and swapped in by one assignment (:class:`Exposition`); a scrape only reads that
reference, so no lock is held while a response is written. Each format a scraper asks for
(text or OpenMetrics, gzipped or not: :func:`choose_format`) is rendered once per refresh
and kept with the families it renders. The HTTP server is
:mod:`.httpd` (one thread, bounded clients, timeouts), the file writer :mod:`.textfile`.
Nothing but tiptop's own families is exported (no process or platform metrics of the
exporter itself).
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, gzip_accepted
from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from tiptop.errors import UsageError
from tiptop.exporter.aggregate import Aggregator, MetricType, Snapshot
from tiptop.exporter.httpd import Handler, MetricsServer, Reply, Request
from tiptop.exporter.textfile import Textfile, TextfileWriter
from tiptop.frame import Frame, FrameSource
from tiptop.refresh import Stop, consume, paced

if TYPE_CHECKING:
    from tiptop.exporter.webconfig import WebConfig
    from tiptop.frame import Frame


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
        cls = CounterMetricFamily if fam.kind is MetricType.COUNTER else GaugeMetricFamily
        metric = cls(fam.name, fam.help, labels=list(fam.labels))
        for labels, value in fam.samples:
            metric.add_metric(list(labels), value)
        out.append(metric)
    return out


#: The formats a scraper may get: the Prometheus text format 0.0.4 and OpenMetrics 1.0.0,
#: by their fixed Content-Type (``prometheus_client``'s constants).
TEXT = CONTENT_TYPE_PLAIN_0_0_4
OPENMETRICS = openmetrics.CONTENT_TYPE_LATEST


def choose_format(accept: str) -> str:
    """The Content-Type answered to an Accept header: OpenMetrics when its first media
    type the exporter knows is ``application/openmetrics-text``, else the text format.

    Not ``prometheus_client.exposition.choose_encoder``: it copies the Accept header's
    ``version`` into the Content-Type it returns (a bare LF in it became a response header)
    and raises TypeError on a version such as ``1.x``. Here the answer is one of two fixed
    strings, whatever the request says."""
    for accepted in accept.split(","):
        media = accepted.split(";")[0].strip().lower()
        if media == "application/openmetrics-text":
            return OPENMETRICS
        if media == "text/plain":
            return TEXT
    return TEXT


def _label_value(text: str) -> str:
    """A label value escaped as the text format wants (backslash, newline, double quote)."""
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def text_format(snapshot: Snapshot) -> bytes:
    """The Prometheus text format (0.0.4) of ``snapshot``: byte for byte what
    prometheus_client's ``generate_latest`` writes for :func:`families` of it
    (``tests/unit/test_exporter.py`` compares them), without building its objects first.
    That encoder took 6.4 ms for a 491-line exposition here, the better part of what a
    ``--textfile`` refresh cost beyond a batch one; each label set's text is made once
    here, for every family it appears in."""
    out: list[str] = []
    made: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
    for fam in snapshot.families:
        help_text = fam.help.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {fam.name} {help_text}\n# TYPE {fam.name} {fam.kind}\n")
        order = sorted(range(len(fam.labels)), key=fam.labels.__getitem__)
        for values, value in fam.samples:
            labels = made.get((fam.labels, values))
            if labels is None:
                pairs = ",".join(f'{fam.labels[i]}="{_label_value(values[i])}"' for i in order)
                labels = made[(fam.labels, values)] = f"{{{pairs}}}" if pairs else ""
            out.append(f"{fam.name}{labels} {floatToGoString(value)}\n")
    return "".join(out).encode("utf-8")


class Exposition(Collector):
    """One refresh's snapshot and its renderings, made on first demand (the
    ``prometheus_client`` families too, for OpenMetrics only); never changed after, so it
    needs no lock (a rendering made twice by two threads is the same)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._families: list[Metric] | None = None
        self._rendered: dict[tuple[str, bool], bytes] = {}

    @property
    def families(self) -> list[Metric]:
        """The ``prometheus_client`` families of the snapshot."""
        if self._families is None:
            self._families = families(self.snapshot)
        return self._families

    def collect(self) -> Iterator[Metric]:
        """The families (a ``prometheus_client`` collector, for its encoders)."""
        yield from self.families

    def render(self, accept: str = "", accept_encoding: str = "") -> tuple[str, bool, bytes]:
        """``(content type, gzipped, body)`` for a request's Accept and Accept-Encoding."""
        content_type = choose_format(accept)
        gzipped = gzip_accepted(accept_encoding)
        body = self._rendered.get((content_type, gzipped))
        if body is None:
            body = (
                text_format(self.snapshot)
                if content_type == TEXT
                else openmetrics.generate_latest(self)
            )
            if gzipped:
                body = gzip.compress(body, compresslevel=6)
            self._rendered[(content_type, gzipped)] = body
        return content_type, gzipped, body

    def text(self) -> bytes:
        """The Prometheus text format, as written to ``--textfile``: the rendering a scrape
        without Accept and Accept-Encoding gets, made once for both."""
        return self.render()[2]


#: The methods answered.
ALLOW = "OPTIONS, GET, HEAD"
#: The body of a scrape answered before the first refresh.
NOT_YET = b"503 Service Unavailable: no refresh yet, tiptop has just started\n"


class SnapshotCollector:
    """The latest refresh's :class:`Exposition` (a prometheus_client "custom collector").
    Until the first refresh is published a scrape gets 503 with ``Retry-After``
    (``retry_after`` seconds, the exporter's delay), never an empty 200 that Prometheus
    would store as a scrape where every series had vanished."""

    def __init__(self, retry_after: float = 1.0) -> None:
        self.latest = Exposition(Snapshot())
        self.published = False
        self.retry_after = retry_after

    def publish(self, snapshot: Snapshot) -> None:
        """Build the families of ``snapshot`` and swap them in (one reference assignment)."""
        self.latest = Exposition(snapshot)
        self.published = True

    def collect(self) -> Iterator[Metric]:
        """The families of the latest refresh."""
        yield from self.latest.families

    def handle(self, request: Request) -> Reply:
        """An HTTP request's answer: the latest exposition for GET on any path (as
        prometheus_client's server; the server answers HEAD as GET without the body), 405
        for other methods."""
        if request.method == "OPTIONS":
            return Reply(200, (("Allow", ALLOW),))
        if request.method != "GET":
            return Reply(405, (("Allow", ALLOW),), b"405 Method Not Allowed\n")
        if not self.published:
            wait = str(max(math.ceil(self.retry_after), 1))
            return Reply(503, (("Retry-After", wait),), NOT_YET)
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
        self.collector = SnapshotCollector(retry_after=delay)
        self.server: MetricsServer | None = None
        #: The ``--textfile`` writer of the latest :meth:`run` (its counts say whether the
        #: file was ever written).
        self.writer: TextfileWriter | None = None
        self.stop = Stop()

    def serve(self, host: str, port: int, max_clients: int, web: WebConfig | None = None) -> str:
        """Serve on ``host:port`` with at most ``max_clients`` connections, with ``web``'s
        TLS and basic authentication (``--web-config``); the URL served, and what guards
        it (``https://127.0.0.1:9464/metrics with basic auth (1 user)``; ``port`` 0 picks
        one). Raises TiptopError naming the address it could not bind."""
        handler: Handler = self.collector.handle
        if web is not None:
            handler = web.guard(self.collector.handle)
        tls = None if web is None else web.tls
        self.server = MetricsServer(host, port, handler, max_clients, tls)
        self.server.start()
        where = f"[{host}]" if ":" in host else host
        url = f"{'https' if tls else 'http'}://{where}:{self.server.port}/metrics"
        guards = "" if web is None else web.describe()
        return f"{url} with {guards}" if guards else url

    def run(
        self,
        textfile: Textfile | None = None,
        max_iter: int = 0,
        after: Callable[[Snapshot], None] | None = None,
        keep: Callable[[Frame], None] | None = None,
        report: Callable[[str], None] | None = None,
    ) -> None:
        """Refresh every ``delay`` until :attr:`stop` is requested or ``max_iter``
        refreshes, under the one consumer loop (``tiptop.refresh.consume``); each refresh
        is published, written to ``textfile`` (:mod:`.textfile`) and passed to ``after``.
        ``keep`` sees each frame first (the cgroup cache forgets ended processes with it);
        ``report`` gets each new line of the source's message log."""
        messages = self.source.messages  # the FrameSource's one message log
        writer = None if textfile is None else TextfileWriter(textfile, messages.say)
        self.writer = writer

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
