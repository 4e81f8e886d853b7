"""``tiptop --serve`` for real: a Prometheus server scrapes it and its HTTP API answers
the PromQL of docs/exporter.md; counters never go backwards when tasks die; the series
stay bounded with 2000 tasks and ``--by pid``; ``promtool`` accepts the exposition; bad
and slow clients do not stall the sampler."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import hardware_pmu_error
from tests.system.exporter_support import (
    Prometheus,
    child,
    cpu_seconds,
    prometheus_missing,
    samples,
    scrape,
    serving,
    wait_for,
)

#: The screen docs/prometheus ships for the exporter.
SHIPPED = Path(__file__).resolve().parents[2] / "docs" / "prometheus" / "exporter.yaml"
#: Every series of the shipped screen's hardware events.
HARDWARE_SERIES = '{__name__=~"tiptop_(cycles|instructions|cache_misses)_total"}'

#: Pages the pager child touches once told to (madvise(2) MADV_NOHUGEPAGE: one fault each).
PAGES = 500

PAGER = f"""
import mmap, sys
def touch():
    m = mmap.mmap(-1, {PAGES} * 4096)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range({PAGES}):
        m[i * 4096] = 1
    return m
keep = [touch()]  # the same code once first: the interpreter's own pages are in
sys.stdin.readline()
keep.append(touch())
sys.stdin.readline()
"""


def _stable(prom: Prometheus, promql: str, timeout: float = 30) -> float:
    """The query's value once it held for 3 s (three scrapes)."""
    end = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        v = prom.value(promql)
        if v != last:
            last, since = v, time.monotonic()
        elif v is not None and time.monotonic() - since >= 3:
            return v
        time.sleep(0.5)
    raise AssertionError(f"{promql} did not settle: {last}")


def _nice_up(pid: int) -> None:
    """Every thread of ``pid`` at nice -20 where allowed (root): on a loaded machine an
    exporter that waits for a CPU answers a scrape after Prometheus's timeout (the scrape
    interval, 1 s) and refreshes late, so its samples lag what /proc says."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, int(tid), -20)


@pytest.mark.skipif(prometheus_missing() is not None, reason=str(prometheus_missing()))
def test_prometheus_scrapes_cpu_rate_exact_page_faults_and_no_absent_event(
    tmp_path: Path,
) -> None:
    # Niced up (root) so that the other work of this 2-core machine cannot slow it much.
    # Names of this run's own (comm, 15 bytes at most): a test run beside it has its own.
    bname, pname = f"ttbusy{os.getpid()}", f"ttpager{os.getpid()}"
    busy = child(bname, "import os\ntry: os.nice(-20)\nexcept OSError: pass\nwhile True: pass")
    pager = child(pname, PAGER, stdin=subprocess.PIPE)
    prom = None
    try:
        # The shipped screen (docs/prometheus/exporter.yaml): hardware and software events.
        # The exporter as niced up as the spinner: starved beside it, its refreshes would
        # come late by a varying lag, which a 15 s rate() reads as a lower rate.
        shipped = ("-W", str(SHIPPED), "-S", "exporter", "-d", "0.5")
        with serving(*shipped, nice=-20) as (_proc, address):
            text = wait_for(address, lambda t: f'comm="{pname}"' in t)
            check = subprocess.run(
                ["promtool", "check", "metrics"],
                input=text,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert check.returncode == 0, check.stdout + check.stderr
            prom = Prometheus(address, tmp_path)
            _nice_up(prom.proc.pid)
            faults = f'tiptop_page_faults_total{{comm="{pname}"}}'
            before = _stable(prom, faults)
            hardware = prom.query(HARDWARE_SERIES)
            if hardware_pmu_error() is not None:  # absent, not zero
                assert hardware == [], hardware[:3]
                assert prom.value('min(tiptop_event_read_ok{event="cycles"})') == 0
            else:
                assert hardware, "a PMU here, but no hardware series"
            assert pager.stdin is not None
            pager.stdin.write("go\n")
            pager.stdin.flush()
            time.sleep(2)
            after = _stable(prom, faults)
            assert after - before == PAGES
            time.sleep(max(0.0, 3 - (time.monotonic() - prom.started)))
            t0, c0 = time.monotonic(), cpu_seconds(busy.pid)
            time.sleep(15)
            rates = []  # the median of five evaluations: less scrape jitter on a busy machine
            for _ in range(5):
                rates.append(prom.value(f'rate(tiptop_cpu_seconds_total{{comm="{bname}"}}[15s])'))
                time.sleep(1)
            truth = (cpu_seconds(busy.pid) - c0) / (time.monotonic() - t0)
            assert None not in rates, rates
            rate = sorted(rates)[2]  # type: ignore[type-var]
            print(f"rate(cpu ttbusy)={rate} /proc says {truth:.3f}; faults {before} -> {after}")
            assert rate is not None and abs(rate - truth) <= 0.1, (rate, truth)
            if truth >= 0.95:  # the spinner had its CPU (not so on an overloaded machine)
                assert abs(rate - 1.0) <= 0.1, rate
            assert prom.value(f'resets(tiptop_cpu_seconds_total{{comm="{bname}"}}[1m])') == 0
    finally:
        if prom is not None:
            prom.close()
        for p in (busy, pager):
            p.kill()
            p.wait()


def test_counters_never_decrease_when_tasks_die() -> None:
    kids = [child("ttchurn", "while True: pass") for _ in range(4)]
    try:
        with serving("-S", "sched", "-d", "0.3") as (_proc, address):
            wait_for(address, lambda t: 'comm="ttchurn"' in t)
            seen: dict = {}
            checked = 0
            for k in [*kids, None, None]:
                time.sleep(0.7)
                now = samples(scrape(address))
                for key, value in now.items():
                    if key[0].endswith("_total") and key in seen:
                        assert value >= seen[key], (key, seen[key], value)
                        checked += 1
                    seen[key] = value
                if k is not None:
                    k.kill()
                    k.wait()
            churn = [
                v
                for (n, lb), v in seen.items()
                if n == "tiptop_cpu_seconds_total" and ("comm", "ttchurn") in lb
            ]
            assert churn and churn[0] > 1.0  # the dead ones' seconds are still in the sum
            assert checked > 100
    finally:
        for k in kids:
            k.kill()
            k.wait()


def test_by_pid_series_stay_bounded_with_2000_tasks() -> None:
    sleepers = [subprocess.Popen(["sleep", "120"]) for _ in range(2000)]
    try:
        with serving("-S", "sched", "-d", "2", "--by", "pid", "--top", "10") as (_p, address):
            text = wait_for(address, lambda t: "tiptop_tasks_tracked" in t, timeout=120)
            got = samples(text)
            tracked = got[("tiptop_tasks_tracked", ())]
            assert tracked >= 2000
            pids = {dict(lb)["pid"] for (n, lb) in got if n == "tiptop_cpu_seconds_total"}
            assert len(pids) == 11 and "other" in pids, pids
            for name in {n for n, _ in got}:
                per = {dict(lb).get("pid") for (n, lb) in got if n == name} - {None}
                assert len(per) <= 11, (name, len(per))
    finally:
        for s in sleepers:
            s.kill()
        for s in sleepers:
            s.wait()


def test_bad_and_slow_clients_do_not_stall_the_sampler() -> None:
    with serving("-S", "sched", "-d", "0.3") as (_proc, address):
        host, port = address.rsplit(":", 1)
        wait_for(address, lambda t: "tiptop_refresh_interval_seconds" in t)
        slow = [socket.create_connection((host, int(port))) for _ in range(5)]
        for s in slow:
            s.sendall(b"GET /metr")  # never finished
        bad = socket.create_connection((host, int(port)))
        bad.sendall(b"\x00\xffNOT HTTP\r\n\r\n")
        bad.settimeout(5)
        answer = b"".join(iter(lambda: bad.recv(4096), b""))
        assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer
        first = samples(scrape(address))
        time.sleep(1.5)
        second = samples(scrape(address, timeout=5))
        key = ("tiptop_tasks_tracked", ())
        assert key in second
        cpu = [k for k in second if k[0] == "tiptop_cpu_seconds_total" and k in first]
        assert any(second[k] > first[k] for k in cpu)  # refreshes went on
        for s in [*slow, bad]:
            s.close()


def test_serve_stops_on_sigterm_and_rejects_bad_addresses(tmp_path: Path) -> None:
    from tests.helpers import run

    r = run("--serve", "host:notaport")
    assert r.returncode == 2 and "not a port number" in r.stderr
    out = tmp_path / "t.prom"
    r = run("--textfile", str(out), "-S", "sched", "-d", "0.2", "-n", "2")
    assert r.returncode == 0, r.stderr
    assert "tiptop_cpu_seconds_total" in out.read_text()
    assert not [p for p in tmp_path.iterdir() if p != out]  # the temporary file renamed
    with serving("-S", "sched", "-d", "0.2") as (proc, _address):
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 143  # 128 + SIGTERM, as the man page says


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) not installed")
def test_unprivileged_exporter_exports_only_its_own_tasks() -> None:
    from tests.helpers import nobody_command

    where = Path(tempfile.mkdtemp(prefix="tiptop-exporter-"))  # uid 65534 can reach it
    where.chmod(0o777)
    out = where / "nobody.prom"
    args = ["--textfile", str(out), "-S", "sched", "-d", "0.3", "-n", "2", "-c", "--by", "pid"]
    cmd, env = nobody_command(["-m", "tiptop", *args, "--top", "50"])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = samples(out.read_text())
    users = {dict(lb).get("user") for (n, lb) in got if n == "tiptop_cpu_seconds_total"}
    assert users - {""} == {"nobody"}, users  # root's tasks (this test's own) are not there
    cmdlines = {dict(lb).get("cmdline") for (n, lb) in got if n == "tiptop_cpu_seconds_total"}
    assert any("--textfile" in (c or "") for c in cmdlines)  # -c asked for command lines
    r = subprocess.run(
        cmd[: cmd.index("-c")] + cmd[cmd.index("-c") + 1 :],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "cmdline=" not in out.read_text()
    shutil.rmtree(where)


@pytest.mark.skipif(prometheus_missing() is not None, reason=str(prometheus_missing()))
def test_promtool_accepts_the_docs_queries(tmp_path: Path) -> None:
    import json

    docs = Path(__file__).resolve().parents[2] / "docs" / "prometheus"
    dash = json.loads((docs / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(exprs) >= 8
    rules = tmp_path / "dash.yml"
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "1m").replace("$instance", ".*")
        lines += [f"      - record: dashboard_{i}", f"        expr: {json.dumps(e)}"]
    rules.write_text("\n".join(lines) + "\n")
    for path in (rules, docs / "tiptop-rules.yml"):
        r = subprocess.run(
            ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(
        ["promtool", "check", "config", "prometheus.yml"],
        cwd=docs,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
