"""Helpers of the exporter's system tests: ``tiptop --serve`` started on 127.0.0.1 (port 0,
the bound port read from its stderr), scraped over HTTP, and a real Prometheus server
(Debian package ``prometheus``) scraping it every second."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import TIPTOP

#: A Python child named ``comm`` (``/proc/self/comm``, proc(5)) running ``body``.
CHILD = "open('/proc/self/comm', 'w').write({comm!r})\n{body}"


def child(comm: str, body: str, **kw: object) -> subprocess.Popen[str]:
    """A Python child process whose comm is ``comm``, running ``body``."""
    code = CHILD.format(comm=comm, body=textwrap.dedent(body))
    return subprocess.Popen(["python3", "-c", code], text=True, **kw)  # type: ignore[call-overload]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(
    *args: str,
    env: dict[str, str] | None = None,
    cmd: list[str] | None = None,
    nofile: int | None = None,
    nice: int = 0,
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``tiptop --serve 127.0.0.1:0 args``; yields the process and ``host:port``. With
    ``nofile`` it runs under RLIMIT_NOFILE ``nofile`` soft and hard (``ulimit -n``), with
    ``nice`` at that niceness where allowed (a negative one needs root)."""
    argv = [*(cmd or TIPTOP), "--serve", "127.0.0.1:0", *args]

    def limits() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if nice:
            with contextlib.suppress(OSError):
                os.nice(nice)

    proc = subprocess.Popen(
        argv,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=limits,
    )
    try:
        assert proc.stderr is not None
        said = []  # lines before the start line (warnings), until it or the end
        while (line := proc.stderr.readline()) and not line.startswith("tiptop: serving "):
            said.append(line)
        served = re.match(r"tiptop: serving https?://(\S+)/metrics", line)
        assert served, "".join(said) + line
        yield proc, served.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def scrape(address: str, timeout: float = 10) -> str:
    """The body of ``http://address/metrics``."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=timeout) as r:
        return r.read().decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``(sample name, sorted labels) -> value`` of an exposition."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def wait_for(address: str, predicate: Callable[[str], bool], timeout: float = 30) -> str:
    """Scrape until ``predicate(text)`` holds; the text. A 503 (no refresh yet) is
    scraped again."""
    end = time.monotonic() + timeout
    while True:
        try:
            text = scrape(address)
        except urllib.error.HTTPError as err:
            if err.code != 503 or time.monotonic() > end:
                raise
            text = ""
        if (text and predicate(text)) or time.monotonic() > end:
            return text
        time.sleep(0.3)


def prometheus_missing() -> str | None:
    """Why a real Prometheus cannot run here, or None."""
    missing = [p for p in ("prometheus", "promtool") if shutil.which(p) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (Debian package 'prometheus'; .ci/run)"
    return None


class Prometheus:
    """A Prometheus server on 127.0.0.1 scraping ``target`` every second (and each of
    ``more``'s targets, job name -> ``host:port``)."""

    def __init__(self, target: str, workdir: Path, more: dict[str, str] | None = None) -> None:
        self.port = free_port()
        config = workdir / "prometheus.yml"
        jobs = {"tiptop": target, **(more or {})}
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            + "".join(
                f"  - job_name: {job}\n    static_configs: [{{targets: ['{where}']}}]\n"
                for job, where in jobs.items()
            )
        )
        self.log = open(workdir / "prometheus.log", "w")  # noqa: SIM115 (closed by close())
        self.proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'db'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        end = time.monotonic() + 60
        while not self._ready():
            assert self.proc.poll() is None, (workdir / "prometheus.log").read_text()
            assert time.monotonic() < end, "prometheus did not become ready in 60 s"
            time.sleep(0.5)
        self.started = time.monotonic()

    def _ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.port}/-/ready"
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, promql: str) -> list[dict]:
        """The result vector of an instant query (the HTTP API, /api/v1/query)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql}
        )
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, promql: str) -> float | None:
        """The single value of an instant query, or None when it has no result."""
        result = self.query(promql)
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None

    def close(self) -> None:
        """Stop the server."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (/proc/PID/stat fields 14 and 15, proc(5))."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raise_nofile(need: int) -> str | None:
    """Raise this process's soft RLIMIT_NOFILE to at least ``need`` (within the hard
    limit); why it cannot, or None."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return None
    if hard != resource.RLIM_INFINITY and hard < need:
        return f"RLIMIT_NOFILE hard limit {hard} < {need} fds this test holds"
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return None


#: New connections a flood test may make while it runs (the idle flood: ~5,000 a second
#: for 10 s), each an entry in netfilter's connection table where one is kept.
FLOOD_CONNECTIONS = 60_000


def conntrack_short(need: int = FLOOD_CONNECTIONS, wait: float = 30.0) -> str | None:
    """Why a flood test cannot run here, or None: where netfilter tracks connections
    (``nf_conntrack``, loaded by podman's rules), a table without room for ``need`` more
    entries drops new connections' SYNs, a scraper's as well as a flood's (dmesg: "table
    full, dropping packet"). Waits up to ``wait`` seconds for entries to expire (a reset
    connection's after 10 s, a closed one's after 120 s: nf_conntrack-sysctl docs)."""
    root = Path("/proc/sys/net/netfilter")
    if not (root / "nf_conntrack_count").exists():
        return None
    end = time.monotonic() + wait
    while True:
        count = int((root / "nf_conntrack_count").read_text())
        most = int((root / "nf_conntrack_max").read_text())
        if most - count >= need or time.monotonic() > end:
            break
        time.sleep(1)
    if most - count >= need:
        return None
    return (
        f"netfilter's connection table has room for {most - count} of the {need} "
        f"connections a flood makes (nf_conntrack_count {count} of {most}): other "
        "connections fill it, and the kernel would drop the scraper's"
    )


def hold_idle(address: str, n: int) -> list[socket.socket]:
    """``n`` connections to ``address`` that never send anything."""
    host, port = address.rsplit(":", 1)
    return [socket.create_connection((host, int(port)), timeout=10) for _ in range(n)]


def burst(address: str, n: int, timeout: float = 60) -> list[float]:
    """``n`` GET /metrics sent at once from one thread (non-blocking sockets, so the
    client's own scheduling adds nothing per request); the seconds each took from the
    burst's start to the end of its answer. Raises AssertionError for a failed one."""
    host, port = address.rsplit(":", 1)
    request = f"GET /metrics HTTP/1.1\r\nHost: {address}\r\n\r\n".encode()
    sel = selectors.DefaultSelector()
    got: dict[socket.socket, bytearray] = {}
    took: list[float] = []
    start = time.monotonic()
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        assert s.connect_ex((host, int(port))) in (0, errno.EINPROGRESS)
        sel.register(s, selectors.EVENT_WRITE)
        got[s] = bytearray()
    while sel.get_map() and time.monotonic() - start < timeout:
        for key, _ev in sel.select(timeout=1):
            assert isinstance(key.fileobj, socket.socket)
            s = key.fileobj
            if key.events == selectors.EVENT_WRITE:
                s.sendall(request)
                sel.modify(s, selectors.EVENT_READ)
                continue
            data = s.recv(1 << 20)
            got[s] += data
            if not data:
                sel.unregister(s)
                s.close()
                took.append(time.monotonic() - start)
                assert got[s].split(b" ", 2)[1:2] == [b"200"], bytes(got[s][:200])
                assert b"tiptop_tasks_tracked" in got[s]
    assert len(took) == n, f"{n - len(took)} of {n} scrapes unanswered in {timeout} s"
    sel.close()
    return took


def fd_count(pid: int, kind: str = "") -> int:
    """fds process ``pid`` has open (/proc/PID/fd, proc(5)); with ``kind`` (``socket``)
    only those whose link reads ``kind:[inode]``."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed since the listing
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return sum(1 for link in links if link.startswith(f"{kind}:")) if kind else len(links)
