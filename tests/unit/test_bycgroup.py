"""Rows summed by cgroup (``--by cgroup``, the live ``G`` key; tiptop/sources/bycgroup.py):
counts summed, columns evaluated again from the sums, ``?`` only when no task counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.builders import SCREEN, StubSource, frame, task
from tiptop.cells import Status
from tiptop.choices import Format, SeriesBy
from tiptop.frame import Frame
from tiptop.messages import MessageLog
from tiptop.sources.bycgroup import CgroupSource, Membership, group


def test_group_sums_counts_and_evaluates_ratios_again() -> None:
    f = frame(
        [
            task(1, 50.0, 10.0, 2.0, user="a"),  # 10 M cycles, 20 M instructions
            task(2, 25.0, 30.0, 0.5, user="b"),  # 30 M cycles, 15 M instructions
            task(3, 10.0, 1.0, 1.0, user="a"),
        ]
    )
    g = group(f, SCREEN, ["web", "web", "db"])
    assert g.name == ["db", "web"] and g.user == ["a", "*"]
    assert g.pid.tolist() == [3, 1]
    web = g.values[1]
    assert web[0] == pytest.approx(75.0)  # %CPU summed
    assert web[1] == pytest.approx(40.0)  # Mcycle summed
    assert web[2] == pytest.approx(35.0 / 40.0)  # IPC of the sums, not a sum of IPCs
    assert (g.status == Status.OK).all()


def test_a_counter_is_missing_only_when_no_task_counted_it() -> None:
    f = frame([task(1, 1.0, 10.0, 1.0), task(2, 1.0, 10.0, 1.0), task(3, 1.0, 10.0, 1.0)])
    f.counter_status[0, :] = Status.NOT_COUNTED  # task 1 counted nothing
    f.counter_status[2, :] = Status.NOT_COUNTED
    f.counter_running[1, 0] = 0.5
    g = group(f, SCREEN, ["x", "x", "y"])
    assert g.values[0, 1] == pytest.approx(10.0)  # task 2 only
    assert g.status[0].tolist() == [Status.OK] * 3
    assert g.running[0, 1] == 0.5
    assert g.status[1, 1:].tolist() == [Status.NOT_COUNTED] * 2  # y: '?'
    assert not g.dead.any()


class _Source(StubSource):
    messages = MessageLog()
    screen = SCREEN

    def __init__(self, f: Frame) -> None:
        self.f = f

    def refresh(self) -> Frame:
        return self.f


def test_the_g_key_switches_grouping(tmp_path: Path) -> None:
    for pid, path in ((1, "/system.slice/a.service"), (2, "/system.slice/a.service"), (3, "/")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cgroup").write_text(f"0::{path}\n")
    f = frame([task(1, 1.0, 1.0, 1.0), task(2, 1.0, 1.0, 1.0), task(3, 1.0, 1.0, 1.0)])
    src = CgroupSource(_Source(f), enabled=False, membership=Membership(str(tmp_path)))
    assert len(src.refresh()) == 3
    assert src.key("G") and src.refresh().name == ["/", "a.service"]
    assert not src.key("x")
    assert src.messages is _Source.messages
    assert np.array_equal(src.refresh().num_threads, [1, 2])


def test_a_bottleneck_is_found_again_from_the_sums() -> None:
    """Each group's bottleneck is its summed counts', not one of its tasks': a retiring
    task (IPC 3.6 of 4) and a back-end bound one (IPC 0.4) sum to IPC 1.2, back end 70%."""
    import dataclasses

    from tiptop.screens.bottleneck import parse_path
    from tiptop.screens.model import ColumnSpec

    td = dataclasses.replace(
        SCREEN,
        columns=tuple(
            ColumnSpec(*c)
            for c in [
                (" %CPU", "%5.1f", "CPU_TOT"),
                ("   %RET", "%7.1f", "100*delta(INSN)/(4*delta(CYCLE))"),
                ("    %BE", "%7.1f", "100 - 100*delta(INSN)/(4*delta(CYCLE))"),
                (" BOTTLENECK", "%.0f%%", "bottleneck(tma: RET=%RET, BE=%BE)"),
            ]
        ),
    )
    rows = [
        {"tid": t, "cells": [c, 0.0, 0.0, 0.0], "deltas": [cyc, ins]}
        for t, c, cyc, ins in ((1, 50.0, 10e6, 36e6), (2, 50.0, 30e6, 12e6))
    ]
    labels = parse_path(td.columns[-1].expr).labels
    alone = group(frame(rows, td), td, ["a", "b"])
    assert [labels[j] for j in alone.node[:, 3]] == ["RET", "BE"]
    both = group(frame(rows, td), td, ["x", "x"])
    idx, share = both.node[0, 3], both.values[0, 3]
    assert (labels[idx], share) == ("BE", pytest.approx(70.0))


def test_rows_by_cgroup_head_their_name_column_cgroup() -> None:
    """A cgroup row's name is the cgroup's label: the header says CGROUP, not COMMAND, in
    batch (``--by cgroup``) and live (the frame says its rows are cgroups; issue 39)."""
    from tiptop.live.app import LiveApp
    from tiptop.options import Options
    from tiptop.table import header

    f = frame([task(1, 50.0, 10.0, 2.0), task(2, 25.0, 30.0, 0.5)])
    g = group(f, SCREEN, ["web", "db"])
    assert g.by_cgroup and not f.by_cgroup
    assert header(SCREEN, Options(series_by=SeriesBy.CGROUP).view()).rstrip().endswith(" CGROUP")
    assert header(SCREEN, Options().view()).rstrip().endswith(" COMMAND")
    app = LiveApp(Options(), _Source(f), [SCREEN])
    assert app._header().rstrip().endswith(" COMMAND")
    app.frame = g  # after the G key
    assert app._header().rstrip().endswith(" CGROUP")


def test_where_the_time_went_is_summed_per_group() -> None:
    """The time parts of a group are its tasks' sums over their threads (a part unknown
    only where no task knows it), its limit the tightest of its tasks' cgroups', and the
    ``state`` screen's bottleneck is found again from the sums: two loops waiting for one
    CPU make a group that waits."""
    from tiptop.frame import Context
    from tiptop.screens import Target, builtin_screens

    state = next(s for s in builtin_screens(Target()) if s.name == "state")
    nan = float("nan")
    rows = [
        {"tid": 1, "cells": [50.0] + [nan] * 9, "time": [50.0, 50.0, 0.0, nan]},
        {"tid": 2, "cells": [50.0] + [nan] * 9, "time": [50.0, 50.0, 0.0, nan]},
        {"tid": 3, "cells": [1.0] + [nan] * 9, "time": [1.0, 0.0, 0.0, 2.0], "threads": 3},
    ]
    f = frame(rows, state)
    f.cpu_limit[:] = [0.5, 2.0, nan]
    f.context = Context(2, 1, 0.0)
    g = group(f, state, ["pair", "pair", "one"])
    one, pair = 0, 1
    assert g.time_percent[pair].tolist()[:3] == [100.0, 100.0, 0.0]
    assert np.isnan(g.time_percent[pair, 3]) and g.time_status[pair, 3] == Status.UNREADABLE
    assert g.time_percent[one].tolist() == [1.0, 0.0, 0.0, 2.0]
    assert g.time_threads.tolist() == [3.0, 2.0] and g.cpu_limit[pair] == 0.5
    assert np.isnan(g.cpu_limit[one]) and g.context is f.context
    heads = [c.header.strip() for c in state.columns]
    sleep, bottleneck = heads.index("%SLEEP"), heads.index("BOTTLENECK")
    assert g.values[pair, sleep] == 0.0 and g.values[one, sleep] == pytest.approx(297.0)
    labels = ("Run", "Wait", "Throttled", "IO", "Sleep")
    assert labels[g.node[pair, bottleneck]] == "Wait" and g.node[one, bottleneck] == -1


def test_group_rows_are_named_by_who_runs_in_them(tmp_path: Path) -> None:
    """A row per name: a docker container's two cgroups (its own and one made inside it)
    are one row ``docker:web``, a pod's container ``namespace/pod/container``; each row
    carries its workload, the unresolved one its cgroup's label."""
    from tests.support import runtimes as rt
    from tiptop.runtimes import Workloads

    state = tmp_path / "root"
    rt.docker(state, rt.ID_A, "web")
    rt.containerd_k8s(state, rt.ID_B, "api-0", "shop", "api")
    uid = rt.UID.replace("-", "_")
    paths = {
        1: f"/system.slice/docker-{rt.ID_A}.scope",
        2: f"/system.slice/docker-{rt.ID_A}.scope/inner",
        3: f"/kubepods.slice/kubepods-pod{uid}.slice/cri-containerd-{rt.ID_B}.scope",
        4: "/system.slice/cron.service",
        5: f"/docker/{rt.ID_C}",
    }
    for pid, path in paths.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cgroup").write_text(f"0::{path}\n")
    f = frame([task(pid, 10.0 * pid, 1.0, 1.0) for pid in paths])
    who = Membership(str(tmp_path), Workloads(None, str(state)))
    src = CgroupSource(_Source(f), membership=who)
    g = src.refresh()
    assert g.name == ["cron.service", f"docker/{rt.ID_C[:12]}", "docker:web", "shop/api-0/api"]
    assert g.values[2, 0] == pytest.approx(30.0)  # pids 1 and 2
    assert g.workload is not None
    web, pod = g.workload[2], g.workload[3]
    assert (web.kind, web.container, web.container_id) == ("docker", "web", f"docker://{rt.ID_A}")
    assert (pod.namespace, pod.pod, pod.container, pod.uid) == ("shop", "api-0", "api", rt.UID)
    assert g.workload[1].label == f"docker/{rt.ID_C[:12]}"


def test_csv_and_json_rows_by_cgroup_carry_the_workload() -> None:
    """``--by cgroup --format csv/json``: the workload's fields and the cgroup label, after
    ``dead`` (csv) or under ``workload`` (json); empty where not known."""
    import csv
    import io
    import json

    from tiptop.options import Options
    from tiptop.outputs.records import RecordWriter
    from tiptop.workload import Workload, WorkloadKind

    pod = Workload(
        WorkloadKind.K8S, "k8s/podu/abc", "shop", "api-0", "u", "api", "containerd://abc"
    )
    other = Workload(WorkloadKind.OTHER, "batch")
    f = frame([task(1, 10.0, 1.0, 1.0), task(2, 5.0, 1.0, 1.0)])
    g = group(f, SCREEN, [pod.shown(), other.shown()], [pod, other])
    opts = Options(batch=True, series_by=SeriesBy.CGROUP, show_idle=True)
    out = io.StringIO()
    writer = RecordWriter(out, opts, SCREEN, 0, Format.CSV)
    writer.begin(0.0)
    writer.frame(g, 0)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    by_name = {r["command"]: r for r in rows}
    row = by_name["shop/api-0/api"]
    assert (row["kind"], row["namespace"], row["pod"], row["container"]) == (
        "k8s",
        "shop",
        "api-0",
        "api",
    )
    assert row["container_id"] == "containerd://abc" and row["cgroup"] == "k8s/podu/abc"
    assert by_name["batch"]["namespace"] == "" and by_name["batch"]["kind"] == "other"
    out = io.StringIO()
    RecordWriter(out, opts, SCREEN, 0, Format.JSON).frame(g, 0)
    recs = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {r["workload"]["pod"] for r in recs} == {"api-0", ""}
