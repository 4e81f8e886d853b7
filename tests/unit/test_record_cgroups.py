"""Recordings carry who runs in each task's cgroup (issue 48, item 3): ``--record`` live or
with ``--by cgroup`` writes each cgroup's identity once (a ``facts`` line's
``workloads``), each task's number in its frame line (``wl``) and the counts of cgroups
counted whole (``cg``); a replay shows rows by cgroup named and identified as they were, and
a recording made without them still reads (tiptop/recording/, tiptop/sources/bycgroup.py)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.support.builders import SCREEN, StubSource, frame, task
from tiptop import recording
from tiptop.cells import Status
from tiptop.choices import Format, SeriesBy
from tiptop.errors import TiptopError
from tiptop.frame import CgroupCounts, Frame
from tiptop.messages import MessageLog
from tiptop.options import Options
from tiptop.outputs.records import RecordWriter
from tiptop.sources.bycgroup import CgroupSource
from tiptop.workload import Workload, WorkloadKind

POD = Workload(WorkloadKind.K8S, "k8s/pod1/abc", "shop", "api-0", "u-1", "api", "containerd://abc")
WEB = Workload(WorkloadKind.DOCKER, "docker/def", container="web", container_id="docker://def")
UNIT = Workload(WorkloadKind.SYSTEMD, "nginx.service", unit="nginx.service")
#: Who runs in each task's cgroup: tasks 1 and 2 in the pod, 3 in docker's web, 4 nginx.
WHO = {1: POD, 2: POD, 3: WEB, 4: UNIT}


class Tasks(StubSource):
    """Frames of four tasks, as a sampler hands them out."""

    messages = MessageLog()
    screen = SCREEN

    def refresh(self) -> Frame:
        f = frame(
            [
                task(1, 10.0, 10.0, 2.0),
                task(2, 20.0, 30.0, 1.0),
                task(3, 5.0, 0.0, 1.0),
                task(4, 1.0, 1.0, 1.0),
            ]
        )
        f.counter_status[2] = Status.NOT_COUNTED  # counted as part of its cgroup
        f.counter_scaled[2] = np.nan
        return f


class Who:
    """Who runs in each task's cgroup (``tiptop.recording.writer.Cgroups``, as the rows by
    cgroup's ``Membership`` answers): web is counted whole, its task counts nothing."""

    def __init__(self, who: Mapping[int, Workload] = WHO) -> None:
        self.who = who

    def of(self, f: Frame) -> Sequence[Workload]:
        return [self.who[pid] for pid in f.pid.tolist()]

    def counted(self) -> Mapping[Workload, CgroupCounts]:
        ones = np.ones(2)
        cycles = np.array([4e6, 6e6])  # 4 M cycles, 6 M instructions
        return {WEB: CgroupCounts(cycles, cycles, ones, 2 * cycles, np.ones(2, bool))}


def record(path: Path, n: int = 2, who: Who | None = None) -> None:
    recorder = recording.Recorder(str(path), {"host": "h", "interval": 1.0}, (), who)
    if who is not None:
        recorder.header["options"] = {"cgroups": True}
    source = recording.RecordingSource(Tasks(), recorder)
    source.start()
    for _ in range(n):
        source.refresh()
    source.close()


def replayed(path: Path) -> Iterator[Frame]:
    rec = recording.load(str(path))
    return recording.ReplaySource(rec).recorded()


def test_each_cgroup_is_written_once_and_each_task_numbered(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record(path, 3, Who())
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    facts = [x for x in lines if "facts" in x]
    assert len(facts) == 1  # the tasks and cgroups are new once only
    assert facts[0]["workloads"] == {
        "0": {"label": "k8s/pod1/abc", "kind": "k8s", "namespace": "shop", "pod": "api-0"}
        | {"uid": "u-1", "container": "api", "container_id": "containerd://abc"},
        "1": {"label": "docker/def", "kind": "docker", "container": "web"}
        | {"container_id": "docker://def"},
        "2": {"label": "nginx.service", "kind": "systemd", "unit": "nginx.service"},
    }
    frames = [x for x in lines if "t" in x]
    assert [f["wl"] for f in frames] == [[0, 0, 1, 2]] * 3
    assert frames[0]["cg"] == {
        "1": {"CYCLE": [4e6, 4e6, 1, 8e6, 1], "INSN": [6e6, 6e6, 1, 12e6, 1]}
    }


def test_a_replay_shows_rows_by_cgroup_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record(path, 2, Who())
    frames = list(replayed(path))
    assert frames[0].workload == [POD, POD, WEB, UNIT]
    rec = recording.load(str(path))
    source = CgroupSource(recording.ReplaySource(rec), enabled=False)
    assert source.refresh().tid.tolist() == [1, 2, 3, 4]
    assert source.key("G")  # the live G key
    g = source.refresh()
    assert g.name == ["docker:web", "nginx.service", "shop/api-0/api"]
    assert g.workload == [WEB, UNIT, POD]
    web = g.values[0]
    # Its task counted nothing (counted whole): Mcycle and IPC are the cgroup's own.
    assert web[1] == pytest.approx(4.0) and web[2] == pytest.approx(1.5)
    assert (g.status[0] == Status.OK).all()
    pod = g.values[2]
    assert pod[0] == pytest.approx(30.0) and pod[2] == pytest.approx(50.0 / 40.0)


def test_csv_of_a_replay_carries_the_identity(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record(path, 1, Who())
    g = CgroupSource(recording.ReplaySource(recording.load(str(path)))).refresh()
    opts = Options(batch=True, series_by=SeriesBy.CGROUP, show_idle=True)
    out = io.StringIO()
    writer = RecordWriter(out, opts, SCREEN, 0, Format.CSV)
    writer.begin(0.0)
    writer.frame(g, 0)
    rows = {r["command"]: r for r in csv.DictReader(io.StringIO(out.getvalue()))}
    pod = rows["shop/api-0/api"]
    assert [pod[k] for k in ("kind", "namespace", "pod", "uid", "container")] == [
        "k8s",
        "shop",
        "api-0",
        "u-1",
        "api",
    ]
    assert pod["container_id"] == "containerd://abc" and pod["cgroup"] == "k8s/pod1/abc"
    assert rows["nginx.service"]["unit"] == "nginx.service"
    assert rows["docker:web"]["container_id"] == "docker://def"


def test_a_recording_without_cgroups_still_reads(tmp_path: Path) -> None:
    """A recording made in batch without ``--by cgroup`` (or before they were recorded):
    its tasks replay, rows by cgroup pass them on as tasks, and ``--by cgroup`` says why
    it cannot."""
    from tiptop.cli.replay import _by_cgroup

    path = tmp_path / "r.jsonl"
    record(path)
    text = path.read_text()
    assert '"wl"' not in text and '"workloads"' not in text and '"cg"' not in text
    frames = list(replayed(path))
    assert len(frames) == 2 and frames[0].workload is None and frames[0].whole is None
    rec = recording.load(str(path))
    assert not rec.header.options.cgroups
    g = CgroupSource(recording.ReplaySource(rec)).refresh()
    assert g.tid.tolist() == [1, 2, 3, 4] and not g.by_cgroup
    assert _by_cgroup(Options(), rec) is None
    with pytest.raises(TiptopError, match="holds no cgroups"):
        _by_cgroup(Options(series_by=SeriesBy.CGROUP), rec)


def test_recorded_identities_are_checked_and_printable(tmp_path: Path) -> None:
    """What a recording says of a cgroup is outside text: escapes shown, a kind not known
    ``other``, a damaged entry one note (the rest read), a number never named ``?``."""
    path = tmp_path / "r.jsonl"
    evil = Workload(
        "k8s\x1b[2J",  # type: ignore[arg-type]  # a hostile kind
        "x\x1b]0;PWN\x07",
        "ns\x9b",
        "pod",
        container="c\n",
    )
    record(path, 2, Who({1: evil, 2: POD, 3: WEB, 4: UNIT}))
    lines = path.read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith('{"t"'))
    first = json.loads(lines[at])
    first["wl"][3] = 7  # a number no line names
    lines[at] = json.dumps(first)
    lines.insert(at, json.dumps({"facts": {}, "workloads": {"3": ["a list"]}}))
    path.write_text("\n".join(lines) + "\n")
    rec = recording.load(str(path))
    assert any("workload 3: not an object" in n for n in rec.notes), rec.notes
    f = recording.ReplaySource(rec).frame(0)
    assert f is not None and f.workload is not None
    shown = f.workload[0]
    assert shown.kind == "other" and shown.label == "x\\x1b]0;PWN\\x07"
    assert shown.namespace == "ns\\x9b" and shown.container == "c\\n"
    assert f.workload[3].label == "?"


def test_an_appended_session_numbers_its_own(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record(path, 1, Who())
    other = {1: UNIT, 2: UNIT, 3: POD, 4: WEB}  # numbers 0, 1, 2 name others now
    record(path, 1, Who(other))
    first, second = replayed(path)
    assert first.workload == [POD, POD, WEB, UNIT]
    assert second.workload == [UNIT, UNIT, POD, WEB]
    assert second.whole is not None and list(second.whole) == [WEB]
