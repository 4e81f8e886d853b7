"""The exporter's pure parts: metric names, cgroup labels, totals that never go backwards,
bounded series with ``--by pid``, the exposition through prometheus_client, and the
command-line options (tiptop/exporter/, docs/exporter.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import generate_latest
from prometheus_client.core import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from tests.support.builders import frame, screen
from tests.support.live import ScriptedSampler
from tiptop.cells import Status
from tiptop.choices import SeriesBy
from tiptop.errors import UsageError
from tiptop.exporter.aggregate import (
    OTHER,
    TIME_METRICS,
    Aggregator,
    Snapshot,
    metrics_for,
    shortest_all,
    stable_comm,
)
from tiptop.exporter.serve import (
    Exporter,
    Exposition,
    SnapshotCollector,
    parse_address,
    text_format,
)
from tiptop.kernel.cgroup import CgroupCache, path_of, shorten
from tiptop.options import merge, parse_argv

SCHED = screen(
    "sched",
    counters={"TC": "task-clock", "CS": "cs", "PF": "page-faults", "C": (0, 0), "I": (0, 1)},
    columns=[(" %CPU", "%5.1f", "CPU_TOT")],
)


def rows(*specs: tuple[int, str, float, Sequence[float]], **extra: object) -> list[dict]:
    """``(tid, name, %cpu, deltas)`` rows of SCHED."""
    return [{"tid": t, "name": n, "cells": [c], "deltas": d} | extra for t, n, c, d in specs]


def sample(snap: Snapshot, name: str) -> dict[tuple[str, ...], float]:
    """The samples of family ``name`` (none when the family is left out)."""
    fam = next((f for f in snap.families if f.name == name), None)
    return dict(fam.samples) if fam is not None else {}


def test_metric_names_follow_the_conventions() -> None:
    names = [(m.name, m.scale) for m in metrics_for(SCHED.counters)]
    assert names == [
        ("tiptop_task_clock_seconds_total", 1e-9),
        ("tiptop_context_switches_total", 1.0),
        ("tiptop_page_faults_total", 1.0),
        ("tiptop_cycles_total", 1.0),
        ("tiptop_instructions_total", 1.0),
    ]
    twice = screen(counters={"A": "cycles", "B": "cpu-cycles"})
    assert [m.name for m in metrics_for(twice.counters)] == [
        "tiptop_cycles_total",
        "tiptop_cycles_b_total",
    ]
    # Help texts in words: no screen alias ("alias CS") in them.
    assert [m.help for m in metrics_for(SCHED.counters)][:3] == [
        "Time counted by the perf software event task-clock, in seconds",
        "Events counted by the perf event context-switches",
        "Events counted by the perf event page-faults",
    ]


@pytest.mark.parametrize(
    ("comm", "stable"),
    [
        ("kworker/u8:2-events_unbound", "kworker"),
        ("kworker/0:1H-events_highpri", "kworker"),
        ("kworker/R-rcu_gp", "kworker"),
        ("ksoftirqd/3", "ksoftirqd"),
        ("irq/24-pciehp", "irq"),
        ("migration/1", "migration"),
        ("rcu_preempt", "rcu_preempt"),
        ("python3", "python3"),
        ("a/b", "a/b"),
    ],
)
def test_kernel_threads_are_exported_by_their_base_name(comm: str, stable: str) -> None:
    assert stable_comm(comm) == stable


def test_a_label_set_unseen_for_the_expiry_is_dropped() -> None:
    agg = Aggregator(metrics_for(SCHED.counters), expiry=600)
    t0 = 1_800_000_000.0
    one = rows((1, "kworker/0:1-events", 50.0, [0] * 5), (2, "cron", 10.0, [0] * 5))
    snap = agg.update(frame(one, SCHED, timestamp=t0))
    assert set(sample(snap, "tiptop_cpu_seconds_total")) == {
        ("kworker", "root", "/"),
        ("cron", "root", "/"),
    }
    two = rows((1, "kworker/0:1-mm_percpu_wq", 50.0, [0] * 5))  # same series, new work
    snap = agg.update(frame(two, SCHED, timestamp=t0 + 600))
    assert set(sample(snap, "tiptop_cpu_seconds_total")) == {
        ("kworker", "root", "/"),
        ("cron", "root", "/"),  # 600 s unseen: kept
    }
    snap = agg.update(frame(two, SCHED, timestamp=t0 + 601))
    assert sample(snap, "tiptop_cpu_seconds_total") == {("kworker", "root", "/"): 1.5}
    never = Aggregator(metrics_for(SCHED.counters), expiry=0)
    never.update(frame(one, SCHED, timestamp=t0))
    snap = never.update(frame(two, SCHED, timestamp=t0 + 1e6))
    assert ("cron", "root", "/") in sample(snap, "tiptop_cpu_seconds_total")


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("/", "/"),
        ("/system.slice/nginx.service", "nginx"),
        ("/user.slice/user-1000.slice/session-2.scope", "user-1000/session-2"),
        ("/system.slice/docker-0123456789abcdef0123.scope", "docker/0123456789ab"),
        ("/docker/0123456789abcdef0123", "docker/0123456789ab"),
        ("/libpod_parent/libpod-0123456789abcdef0123", "podman/0123456789ab"),
        (
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_5e6f.slice"
            "/cri-containerd-fedcba9876543210fedc.scope",
            "k8s/pod1a2b3c4d-5e6f/fedcba987654",
        ),
        (
            "/kubepods/besteffort/pod1a2b3c4d-5e6f/fedcba9876543210fedc",
            "k8s/pod1a2b3c4d-5e6f/fedcba987654",
        ),
    ],
)
def test_cgroup_paths_are_shortened(path: str, label: str) -> None:
    assert shorten(path) == label


def test_cgroup_line_of_v2_then_v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert path_of("0::/system.slice/a.service\n") == "/system.slice/a.service"
    assert path_of("4:memory:/x\n1:name=systemd:/system.slice/b.service\n") == (
        "/system.slice/b.service"
    )
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cgroup").write_text("0::/system.slice/sshd.service\n")
    cache = CgroupCache(str(tmp_path))
    assert cache.label(7) == "sshd" and cache.label(8) == "/"
    (tmp_path / "7" / "cgroup").write_text("0::/system.slice/cron.service\n")
    assert cache.label(7) == "sshd"  # not read again while it does not run
    cache.follow([7, 8])
    assert cache.label(7) == "sshd" and cache.moves == 0
    cache.follow([7, 8], ran=[7, 8])  # 8 was never asked: nothing to read again
    assert cache.label(7) == "cron" and cache.moves == 1  # moved, found when it ran
    cache.follow([7], ran=[7])
    assert cache.moves == 1  # read again, the same cgroup: no move
    (tmp_path / "7" / "cgroup").write_text("0::/system.slice/cups.service\n")
    opened: list[str] = []
    real_open = os.open

    def counted_open(path: str, *args: int) -> int:
        opened.append(path)
        return real_open(path, *args)

    monkeypatch.setattr(os, "open", counted_open)
    cache.follow([7, 7, 7], ran=[7, 7, 7])  # three thread rows of one process (-H)
    assert len(opened) == 1 and cache.label(7) == "cups" and cache.moves == 2
    (tmp_path / "7" / "cgroup").unlink()  # it ran, then ended before the read
    cache.follow([7], ran=[7])
    assert cache.label(7) == "cups" and cache.moves == 2  # its last row stays in its cgroup
    (tmp_path / "7" / "cgroup").write_text("0::/system.slice/at.service\n")
    cache.follow([8])
    assert cache.label(7) == "at"  # gone from a refresh: a reused PID is read again


def test_totals_keep_a_dead_tasks_counts() -> None:
    agg = Aggregator(metrics_for(SCHED.counters))
    a = frame(rows((1, "w", 50.0, [1e9, 3, 10, 100, 200]), (2, "w", 25.0, [0, 1, 5, 1, 2])), SCHED)
    snap = agg.update(a)
    key = ("w", "root", "/")
    assert sample(snap, "tiptop_cpu_seconds_total")[key] == pytest.approx(0.75)
    assert sample(snap, "tiptop_page_faults_total")[key] == 15
    assert sample(snap, "tiptop_task_clock_seconds_total")[key] == pytest.approx(1.0)
    # Task 2 dies: its final interval is counted once, then it is gone; nothing decreases.
    b = frame(
        rows((1, "w", 50.0, [0, 0, 2, 0, 0])) + rows((2, "w", 0.0, [0, 0, 1, 0, 0]), dead=True),
        SCHED,
    )
    snap = agg.update(b)
    assert sample(snap, "tiptop_page_faults_total")[key] == 18
    assert sample(snap, "tiptop_tasks")[key] == 1
    snap = agg.update(frame([], SCHED))
    assert sample(snap, "tiptop_page_faults_total")[key] == 18
    assert sample(snap, "tiptop_cpu_seconds_total")[key] == pytest.approx(1.25)
    assert key not in sample(snap, "tiptop_tasks")  # no live task: no gauges


def test_a_process_first_shown_later_is_counted_from_birth() -> None:
    births = {1: 100.0, 2: 3.0, 3: None}  # CPU seconds since birth (/proc/PID/stat)
    agg = Aggregator(metrics_for(SCHED.counters), cpu_since_birth=births.get)
    key = ("w", "root", "/")
    snap = agg.update(frame(rows((1, "w", 50.0, [0, 0, 0, 0, 0])), SCHED))
    # Process 1 was there at the first refresh: counted from it, not from its birth.
    assert sample(snap, "tiptop_cpu_seconds_total")[key] == pytest.approx(0.5)
    later = rows((1, "w", 50.0, [0] * 5), (2, "w", 100.0, [0] * 5), (3, "w", 10.0, [0] * 5))
    snap = agg.update(frame(later, SCHED))
    # 2 is new: its 3 s since birth replace its interval's 1 s; 3's /proc is gone: 0.1 s.
    assert sample(snap, "tiptop_cpu_seconds_total")[key] == pytest.approx(0.5 + 0.5 + 3 + 0.1)
    snap = agg.update(frame(later, SCHED))  # once only
    assert sample(snap, "tiptop_cpu_seconds_total")[key] == pytest.approx(4.1 + 0.5 + 1 + 0.1)


def test_missing_and_scaled_counts_are_flagged() -> None:
    agg = Aggregator(metrics_for(SCHED.counters))
    f = frame(rows((1, "w", 1.0, [1, 2, 3, 4, 5]), (2, "w", 1.0, [1, 2, 3, 4, 5])), SCHED)
    f.counter_status[1, 2] = Status.UNREADABLE
    f.counter_running[0, 3] = 0.25
    snap = agg.update(f)
    key = ("w", "root", "/")
    assert sample(snap, "tiptop_page_faults_total")[key] == 3  # the unreadable one adds 0
    assert sample(snap, "tiptop_event_read_ok")[("page_faults", *key)] == 0
    assert sample(snap, "tiptop_event_read_ok")[("cycles", *key)] == 1
    assert sample(snap, "tiptop_event_running_ratio")[("cycles", *key)] == 0.25
    assert sample(snap, "tiptop_event_running_ratio")[("instructions", *key)] == 1.0


def test_by_pid_is_capped_at_top_n_plus_other() -> None:
    others = (OTHER,) * 4  # every label of the summed series says so
    agg = Aggregator(metrics_for(SCHED.counters), by=SeriesBy.PID, top=10)
    cpu = np.arange(2000, dtype=float) / 20.0
    specs = [(t + 1, f"p{t % 7}", float(cpu[t]), [0, 0, 1, 0, 0]) for t in range(2000)]
    snap = agg.update(frame(rows(*specs), SCHED))
    for fam in snap.families:
        if fam.labels:
            assert len({s[0][-4:] for s in fam.samples}) <= 11, fam.name
    faults = sample(snap, "tiptop_page_faults_total")
    assert faults[others] == 1990
    assert {k[0] for k in faults} - {OTHER} == {str(t) for t in range(1991, 2001)}
    snap = agg.update(frame(rows(*specs[:5]), SCHED))  # the top ones ended
    faults = sample(snap, "tiptop_page_faults_total")
    assert set(faults) == {others} | {(str(t), f"p{(t - 1) % 7}", "root", "/") for t in range(1, 6)}
    assert faults[others] == 1990  # never down


def test_exposition_parses_back() -> None:
    agg = Aggregator(metrics_for(SCHED.counters))
    collector = SnapshotCollector()
    collector.publish(agg.update(frame(rows((1, 'we"ird\n', 100.0, [1, 2, 3, 4, 5])), SCHED)))
    exporter = Exporter(ScriptedSampler(), agg, 1.0)
    exporter.collector = collector
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    fams = {f.name: f for f in text_string_to_metric_families(generate_latest(reg).decode())}
    s = fams["tiptop_page_faults"].samples[0]
    assert s.name == "tiptop_page_faults_total" and s.value == 3
    assert s.labels == {"comm": 'we"ird\n', "user": "root", "cgroup": "/"}
    assert fams["tiptop_cpu_seconds"].type == "counter"


def test_our_text_format_is_prometheus_clients_byte_for_byte() -> None:
    agg = Aggregator(metrics_for(SCHED.counters), by=SeriesBy.PID, top=3, cmdline=True)
    odd = ['we"ird\n', "back\\slash", "ünï \t tab", "plain", "a,b=c}"]
    specs = [(t, name, 10.0 * t, [1e9 / 3, t, 2.5, 1e21, 0.1]) for t, name in enumerate(odd, 1)]
    frames = [
        frame(rows(*specs, cmdline='x "y"\\z'), SCHED),
        frame(rows(*specs[:2]), SCHED, timestamp=1795291600.0),
        frame([], SCHED),
    ]
    for f in frames:
        snapshot = agg.update(f)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(Exposition(snapshot))
        assert text_format(snapshot) == generate_latest(registry)
        assert Exposition(snapshot).text() == generate_latest(registry)
    assert b'cmdline="x \\"y\\"\\\\z",comm="a,b=c}"' in text_format(agg.update(frames[0]))


def test_addresses_and_options() -> None:
    assert parse_address("9100") == ("127.0.0.1", 9100)
    assert parse_address("0.0.0.0:9100") == ("0.0.0.0", 9100)
    assert parse_address("[::1]:9100") == ("::1", 9100)
    for bad in ("x", ":9100", "1:99999", "host:"):
        with pytest.raises(UsageError):
            parse_address(bad)
    opts, _ = merge({}, parse_argv(["--serve", "9100", "--by", "pid", "--textfile=/t.prom"])[0])
    assert (opts.serve, opts.series_by, opts.textfile) == ("9100", "pid", "/t.prom")
    assert (opts.series_expiry, opts.web_config) == (600.0, None)
    argv = ["--serve", "9100", "--series-expiry", "90", "--web-config", "w.yml"]
    opts, _ = merge({}, parse_argv(argv)[0])
    assert (opts.series_expiry, opts.web_config) == (90.0, "w.yml")
    for words in (["--by", "tid"], ["--series-expiry", "-1"], ["--series-expiry", "soon"]):
        with pytest.raises(UsageError):
            merge({}, parse_argv(words)[0])


def test_the_docs_use_only_names_the_exporter_exports() -> None:
    import re

    from tiptop.screens.loader import builtin_screens, load_file
    from tiptop.screens.model import Target

    docs = Path(__file__).resolve().parents[2] / "docs"
    icelake = Target("x86", "06_7E")
    screens = [
        *load_file(str(docs / "prometheus" / "exporter.yaml"), icelake).screens,
        *(s for s in builtin_screens(icelake) if s.name in ("topdown", "sched")),
    ]
    agg = Aggregator(metrics_for([c for s in screens for c in s.counters]))
    one = frame(rows((1, "w", 1.0, [1, 1, 1, 1, 1])), SCHED)
    exported = {m.name for m in (*agg.metrics, *TIME_METRICS)} | {
        f.name for f in Aggregator(metrics_for(SCHED.counters)).update(one).families
    }
    assert {"tiptop_slots_total", "tiptop_topdown_retiring_total"} <= exported
    texts = [
        (docs / "prometheus" / n).read_text()
        for n in ("grafana-dashboard.json", "tiptop-rules.yml")
    ]
    used = set(re.findall(r"(?<![:\w])tiptop_[a-z_]+\b", "\n".join(texts)))  # not rule names
    assert used and used <= exported, used - exported


def test_by_cgroup_takes_the_cgroups_own_cpu_where_it_is_more() -> None:
    """``--by cgroup`` as root: a cgroup's CPU from its ``cpu.stat`` (scripted here) where
    it exceeds its shown tasks' sum (processes too short to be shown); never less than
    that sum; a cgroup with no task shown still counts; an idle one gets no series."""
    used = [{"db": 2.0}, {"db": 0.1, "cron": 0.7, "idle": 0.0}, {}]
    calls: list[list[int]] = []

    def cgroup_cpu(pids: list[int]) -> dict[str, float]:
        calls.append(pids)
        return used[len(calls) - 1]

    agg = Aggregator(
        metrics_for(SCHED.counters),
        by=SeriesBy.CGROUP,
        cgroup_of=lambda pid: "db",
        cgroup_cpu=cgroup_cpu,
    )
    one = frame(rows((7, "pg", 50.0, [0] * 5)), SCHED)  # 0.5 s shown over 1 s
    db, cron = ("",) * 6 + ("db",), ("",) * 6 + ("cron",)
    snap = agg.update(one)
    assert sample(snap, "tiptop_cpu_seconds_total") == {db: pytest.approx(2.0)}
    snap = agg.update(one)  # the cgroup says 0.1 s: the shown task's 0.5 s stands
    cpu = sample(snap, "tiptop_cpu_seconds_total")
    assert cpu == {db: pytest.approx(2.5), cron: pytest.approx(0.7)}
    snap = agg.update(one)  # no reading: the tasks' sum
    assert sample(snap, "tiptop_cpu_seconds_total")[db] == pytest.approx(3.0)
    assert calls == [[7], [7], [7]]


def test_by_cgroup_labels_say_who_runs_in_the_cgroup() -> None:
    """``--by cgroup``: the labels of kube-state-metrics and cAdvisor (namespace, pod,
    container, container_id with its runtime's prefix, uid), ``unit`` for systemd, and the
    cgroup's label always; a cgroup's own CPU is added to its resolved series."""
    from tiptop.exporter.aggregate import CGROUP_LABELS
    from tiptop.workload import Workload, WorkloadKind

    pod = Workload(
        WorkloadKind.K8S, "k8s/podu1/abc", "shop", "api-0", "u1", "api", "containerd://abc"
    )
    unit = Workload(WorkloadKind.SYSTEMD, "nginx", unit="nginx.service")
    workloads = {7: pod, 8: unit, 9: Workload(WorkloadKind.OTHER, "/")}
    agg = Aggregator(
        metrics_for(SCHED.counters),
        by=SeriesBy.CGROUP,
        cgroup_of=lambda pid: workloads[pid].label,
        workload_of=workloads.__getitem__,
        cgroup_cpu=lambda pids: {"k8s/podu1/abc": 3.0},
    )
    assert agg.labels == CGROUP_LABELS
    f = frame(
        rows((7, "api", 50.0, [0] * 5), (8, "nginx", 10.0, [0] * 5), (9, "x", 1.0, [0] * 5)), SCHED
    )
    cpu = sample(agg.update(f), "tiptop_cpu_seconds_total")
    assert cpu == {
        ("shop", "api-0", "api", "containerd://abc", "u1", "", "k8s/podu1/abc"): pytest.approx(3.0),
        ("", "", "", "", "", "nginx.service", "nginx"): pytest.approx(0.1),
        ("", "", "", "", "", "", "/"): pytest.approx(0.01),
    }


def test_cgroup_cpu_reads_leaf_cgroups_usage(tmp_path: Path) -> None:
    """``CgroupCpu.used``: a leaf cgroup's ``usage_usec`` since it was first followed (from
    its birth when made after the start), followed while its processes are gone; the root
    and a cgroup with children (usage counted in theirs) are left out; a removed cgroup
    is dropped. The directory tree stands for /sys/fs/cgroup and /proc."""
    import os

    from tiptop.kernel.cgroup import CgroupCpu

    cg, proc = tmp_path / "cg", tmp_path / "proc"

    def make(path: str, usec: int) -> None:
        (cg / path).mkdir(parents=True, exist_ok=True)
        (cg / path / "cpu.stat").write_text(f"usage_usec {usec}\nuser_usec {usec}\n")

    def task(pid: int, path: str) -> None:
        (proc / str(pid)).mkdir(parents=True, exist_ok=True)
        (proc / str(pid) / "cgroup").write_text(f"0::{path}\n")

    make("", 9_000_000)
    make("system.slice", 8_000_000)
    make("system.slice/db.service", 5_000_000)
    task(1, "/")
    task(2, "/system.slice/db.service")
    task(3, "/system.slice")
    started = os.stat(cg / "system.slice/db.service").st_ctime + 1  # made before it
    reader = CgroupCpu(CgroupCache(str(proc)), str(cg), started=started)
    assert reader.used([1, 2, 3]) == {"db": 0.0}  # counted from now; / and the slice out
    make("system.slice/db.service", 6_500_000)
    assert reader.used([]) == {"db": pytest.approx(1.5)}  # its process gone: followed
    reader.started = 0.0  # from here on, cgroups are made after the start
    make("system.slice/job.scope", 250_000)
    task(4, "/system.slice/job.scope")
    assert reader.used([4]) == {"db": 0.0, "job": pytest.approx(0.25)}  # from its birth
    (cg / "system.slice/job.scope/cpu.stat").unlink()
    (cg / "system.slice/job.scope").rmdir()
    assert reader.used([]) == {"db": 0.0}


def test_cgroup_cpu_leaves_idle_cgroups_unread(tmp_path: Path) -> None:
    """A followed cgroup whose events say none of its tasks ran (``idle``) used none: its
    ``cpu.stat`` is not read, and what ran after its last read is counted at the next."""
    from tiptop.kernel.cgroup import CgroupCpu

    cg, proc = tmp_path / "cg", tmp_path / "proc"
    (cg / "db.service").mkdir(parents=True)
    stat = cg / "db.service" / "cpu.stat"
    stat.write_text("usage_usec 5000000\n")
    (proc / "2").mkdir(parents=True)
    (proc / "2" / "cgroup").write_text("0::/db.service\n")
    reader = CgroupCpu(CgroupCache(str(proc)), str(cg), started=float("inf"))
    idle = {"/db.service"}
    assert reader.used([2], idle) == {"db": 0.0}  # first seen: read, its baseline
    stat.write_text("garbage: unreadable if read\n")
    assert reader.used([2], idle) == {"db": 0.0}  # idle: not read (else left out)
    stat.write_text("usage_usec 5250000\n")
    assert reader.used([2], idle) == {"db": 0.0}
    assert reader.used([2]) == {"db": pytest.approx(0.25)}  # ran: all since its last read


def test_the_grouping_is_kept_only_while_the_row_labels_are_the_same() -> None:
    """The sampler hands the same row-label lists while nothing changed: the grouping is
    reused then, and made again for other lists (a renamed process)."""
    agg = Aggregator(metrics_for(SCHED.counters))
    one = frame(rows((1, "w", 50.0, [0] * 5), (2, "v", 50.0, [0] * 5)), SCHED)
    agg.update(one)
    snap = agg.update(one)  # the same lists: kept
    cpu = sample(snap, "tiptop_cpu_seconds_total")
    assert cpu == {("v", "root", "/"): pytest.approx(1.0), ("w", "root", "/"): pytest.approx(1.0)}
    renamed = frame(rows((1, "x", 50.0, [0] * 5), (2, "v", 50.0, [0] * 5)), SCHED)
    snap = agg.update(renamed)
    assert sample(snap, "tiptop_cpu_seconds_total")[("x", "root", "/")] == pytest.approx(0.5)


def test_a_process_moved_to_another_cgroup_is_counted_there_in_the_kept_rows() -> None:
    """The same row-label lists (nothing renamed), but a process found in another cgroup
    (``CgroupCache.moves``): the grouping is made again, and the refresh's CPU goes to
    the new cgroup's series, not to the one it was first seen in."""
    where = {1: "a", 2: "b"}
    moves = [0]
    agg = Aggregator(
        metrics_for(SCHED.counters),
        cgroup_of=lambda pid: where[pid],
        cgroup_moves=lambda: moves[0],
    )
    one = frame(rows((1, "w", 50.0, [0] * 5), (2, "w", 50.0, [0] * 5)), SCHED)
    agg.update(one)
    where[1], moves[0] = "b", 1
    snap = agg.update(one)
    cpu = sample(snap, "tiptop_cpu_seconds_total")
    assert cpu[("w", "root", "b")] == pytest.approx(1.5)  # 0.5 s then 1 s: both ran in b
    assert cpu[("w", "root", "a")] == pytest.approx(0.5)  # its first refresh, in a


def test_values_are_written_as_the_decimals_they_mean() -> None:
    """A sum of interval deltas is written without its float noise (issue 50 item 5:
    ``0.42000000000000004``): shortest round-trip text of the value rounded to 15 digits,
    which a counter's rate() cannot tell from the exact sum, and never makes it decrease."""
    agg = Aggregator(metrics_for(SCHED.counters))
    agg.update(frame(rows((1, "w", 10.0, [0.1, 0, 0, 0, 0])), SCHED))
    snap = agg.update(frame(rows((1, "w", 32.0, [0.32, 0, 0, 0, 0])), SCHED))
    assert 0.1 + 0.32 == 0.42000000000000004
    text = text_format(snap).decode()
    assert 'tiptop_cpu_seconds_total{cgroup="/",comm="w",user="root"} 0.42\n' in text
    assert "00000000" not in text, text
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams["tiptop_cpu_seconds"].samples[0].value == 0.42
    big = np.array([[1e21, 123456789.123456789, 2.0**60, 1e-9 / 3, -0.0, np.nan]])
    assert [repr(v) for v in shortest_all(big)[0]] == [
        "1e+21",
        "123456789.123457",
        "1.15292150460685e+18",
        "3.33333333333333e-10",
        "-0.0",
        "nan",
    ]


def test_before_the_first_refresh_a_scrape_is_503_with_retry_after() -> None:
    """Issue 50 item 5: an exporter answered 200 with an empty body before its first
    refresh, which Prometheus stores as every series gone."""
    from tiptop.exporter.httpd import Request

    collector = SnapshotCollector(retry_after=2.5)
    get = Request("GET", "/metrics", {})
    before = collector.handle(get)
    assert (before.status, before.headers) == (503, (("Retry-After", "3"),))
    assert collector.handle(Request("OPTIONS", "*", {})).status == 200
    agg = Aggregator(metrics_for(SCHED.counters))
    collector.publish(agg.update(frame(rows((1, "w", 10.0, [0] * 5)), SCHED)))
    after = collector.handle(get)
    assert after.status == 200 and b"tiptop_cpu_seconds_total" in after.body


def test_series_are_bounded_in_count_the_least_recently_seen_going_first() -> None:
    """A user spawning processes of new names (churn_comm.py: 5 a second, each a new label
    set) adds no more than ``max_series`` label sets, whatever the expiry; the ones seen
    last stay, and of those the busiest."""
    agg = Aggregator(metrics_for(SCHED.counters), max_series=3, expiry=0)
    t0 = 1_800_000_000.0
    agg.update(frame(rows((1, "busy", 90.0, [0] * 5)), SCHED, timestamp=t0))
    for i in range(2, 6):  # one new name a refresh, "busy" seen each time
        snap = agg.update(
            frame(
                rows((1, "busy", 90.0, [0] * 5), (i, f"n{i}", 1.0, [0] * 5)),
                SCHED,
                timestamp=t0 + i,
            )
        )
    assert [k[0] for k in sample(snap, "tiptop_cpu_seconds_total")] == ["busy", "n4", "n5"]
    # More names in one refresh than the bound: those that used the least CPU go.
    many = rows(*[(i, f"m{i}", float(i), [0] * 5) for i in range(10, 16)])
    snap = agg.update(frame(many, SCHED, timestamp=t0 + 10))
    assert [k[0] for k in sample(snap, "tiptop_cpu_seconds_total")] == ["m13", "m14", "m15"]


def test_where_the_time_went_is_exported_in_seconds() -> None:
    """Two refreshes of 2 s: the loop 50% on a CPU and 50% waiting each time (1 s + 1 s per
    refresh), the sleeper nothing; I/O unknown (no delay accounting): no I/O series, absent
    rather than zero; the throttled series counts the zeros it knows."""
    agg = Aggregator(metrics_for(SCHED.counters), by=SeriesBy.COMM)
    nan = float("nan")
    for _ in range(2):
        loop, sleeper = rows((1, "loop", 50.0, [0.0] * 5), (2, "sleeper", 0.0, [0.0] * 5))
        loop["time"], sleeper["time"] = [50.0, 50.0, 0.0, nan], [0.0, 0.0, 0.0, nan]
        f = frame([loop, sleeper], SCHED, interval=2.0)
        snap = agg.update(f)
    run = sample(snap, "tiptop_run_seconds_total")
    assert run == {("loop", "root", "/"): 2.0, ("sleeper", "root", "/"): 0.0}
    assert sample(snap, "tiptop_wait_seconds_total")[("loop", "root", "/")] == 2.0
    assert sample(snap, "tiptop_throttled_seconds_total")[("loop", "root", "/")] == 0.0
    assert sample(snap, "tiptop_io_wait_seconds_total") == {}
    helps = {fam.name: fam.help for fam in snap.families}
    assert "schedstat" in helps["tiptop_run_seconds_total"]
