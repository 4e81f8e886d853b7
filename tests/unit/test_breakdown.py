"""A screen's ``breakdown``: columns whose percentages must add up to 100 (a top-down level 1).
Read from YAML and XML and written back; judged per task (``SUSPECT`` when the parts miss
100 by more than 5 points, for a task on a CPU long enough); shown, exported and replayed
with that status. And the one line a multiplexed screen gets, with its running fraction."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pytest

from tests.support import host_at
from tests.support.builders import replayed, screen
from tests.support.sampling import FakeEnv, row
from tiptop import recording
from tiptop.cells import STATUS_NAME, Status
from tiptop.choices import Format
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.exporter.aggregate import Aggregator, metrics_for
from tiptop.frame import Frame
from tiptop.host import Clock
from tiptop.options import Options
from tiptop.outputs.batch import make_writer
from tiptop.screens import builtin_screens, load_text
from tiptop.screens.evaluate import BREAKDOWN_MIN_CPU, judge_breakdown
from tiptop.screens.loader import export_xml, export_yaml
from tiptop.screens.model import ConfigSpec, ScreenSpec, Target
from tiptop.screens.printf import row_format
from tiptop.sources.bycgroup import group

YAML = """
screens:
  - name: td
    desc: level 1
    counters: {S: slots, R: topdown-retiring, B: topdown-bad-spec}
    columns:
      - {header: " %CPU", format: "%5.1f", expr: CPU_TOT}
      - {header: "  %RET", format: "%6.1f", expr: 100*delta(R)/delta(S)}
      - {header: "  %BAD", format: "%6.1f", expr: 100*delta(B)/delta(S)}
    breakdown: ["%RET", "%BAD"]
"""


def test_yaml_breakdown_is_read_and_survives_export_to_yaml_and_xml() -> None:
    (s,) = load_text(YAML, Target(), yaml=True).screens
    assert s.breakdown == ("%RET", "%BAD")
    assert s.breakdown_columns() == (1, 2)
    config = ConfigSpec(screens=[s])
    (y,) = load_text(export_yaml(config), Target(), yaml=True).screens
    (x,) = load_text(export_xml(config), Target()).screens
    assert y.breakdown == x.breakdown == s.breakdown
    assert y.breakdown_columns() == x.breakdown_columns() == (1, 2)
    assert 'breakdown="%RET;%BAD"' in export_xml(config)


def test_a_breakdown_naming_a_missing_column_is_a_problem_and_unchecked() -> None:
    text = YAML.replace('breakdown: ["%RET", "%BAD"]', 'breakdown: ["%RET", "%FE"]')
    config = load_text(text, Target(), yaml=True, path="t.yaml")
    (s,) = config.screens
    assert s.breakdown == () and s.breakdown_columns() == ()
    (p,) = [str(e) for e in config.problems]
    assert p == "t.yaml:3:5: Breakdown of screen 'td': no column '%FE'; not checked"


def test_level1_topdown_variants_declare_their_breakdown() -> None:
    for model, n in (("06_8F", 4), ("06_55", 4), ("19_11", 5), ("1A_02", 5), ("7F_00", 0)):
        (s,) = [s for s in builtin_screens(Target("x86", model)) if s.name == "topdown"]
        cols = s.breakdown_columns()
        assert len(cols) == n, (model, s.breakdown)
        assert all(s.columns[c].header.strip().startswith("%") for c in cols)


def _judge(parts: list[list[float]], cpu: list[float], interval: float = 1.0) -> np.ndarray:
    values = np.array([[50.0, *p] for p in parts])
    status = np.zeros(values.shape, np.uint8)
    judge_breakdown(values, status, (1, 2, 3), np.array(cpu), interval)
    return status


def test_judge_marks_rows_whose_parts_miss_100() -> None:
    status = _judge(
        [[30, 30, 40], [30, 30, 60], [30, 30, 44.9], [-10, 60, 50], [30, 30, 40]],
        [100, 100, 100, 100, 100],
    )
    suspect = [Status.SUSPECT] * 3
    assert status.tolist() == [
        [0, 0, 0, 0],  # 100: ok
        [0, *suspect],  # 120: the breakdown cells, not %CPU
        [0, 0, 0, 0],  # 104.9: within 5 points
        [0, *suspect],  # adds up, but a part is -10% of the whole
        [0, 0, 0, 0],
    ]


def test_judge_leaves_short_runs_and_unreadable_parts_alone() -> None:
    minimum = 100 * BREAKDOWN_MIN_CPU  # %CPU over a 1 s interval
    status = _judge([[30, 30, 60]] * 3, [minimum * 0.9, minimum, float("nan")])
    assert status[:, 1].tolist() == [Status.OK, Status.SUSPECT, Status.OK]
    values = np.array([[50.0, 30, 30, 60]])
    status = np.array([[0, 0, Status.DIV0, 0]], np.uint8)
    judge_breakdown(values, status, (1, 2, 3), np.array([100.0]), 1.0)
    assert status.tolist() == [[0, 0, Status.DIV0, 0]]


# --------------------------------------------------------------------------- the sampler

S, RET, BAD, FE, BE = ((4, c) for c in (0xA4, 0xC2, 0x0D, 0x9C, 0xA2))


def level1() -> ScreenSpec:
    cols = [(" %CPU", "%5.1f", "CPU_TOT")]
    cols += [
        (f"{'%' + a:>7}", "%7.1f", f"100*delta({a})/delta(S)") for a in ("RET", "BAD", "FE", "BE")
    ]
    counters = {"S": S, "RET": RET, "BAD": BAD, "FE": FE, "BE": BE}
    scr = screen("level1", counters=counters, columns=cols)
    return dataclasses.replace(scr, breakdown=("%RET", "%BAD", "%FE", "%BE"))


def run_level1(
    env: FakeEnv, scale: float, on_cpu: float, mux: float = 1.0
) -> tuple[Frame, Sampler]:
    """One 2 s refresh of a task whose parts add up to ``scale`` of the slots, on a CPU
    ``on_cpu`` of the time, its hardware groups counting ``mux`` of it."""
    fp, b = env
    fp.add(10, "app", utime=0)
    b.script(10, S, 4e9, on_cpu=on_cpu, mux=mux)
    for ev, share in ((RET, 0.4), (BAD, 0.1), (FE, 0.2), (BE, 0.3 + scale - 1)):
        b.script(10, ev, 4e9 * share)
    # The engine's clock is the fake backend's (2 s means 2 s).
    host = host_at(str(fp.root), str(fp.root.parent / "nosys"), clock=Clock(monotonic=b.clock))
    s = Sampler(level1(), SamplerConfig(), backend=b, host=host)
    s.start()
    b.clock.advance(2.0)
    fp.set_stat(10, "app", utime=round(200 * on_cpu))  # ticks of 10 ms: on_cpu of 2 s
    f = s.refresh()
    s.close()
    return f, s


@pytest.mark.parametrize(
    ("scale", "on_cpu", "expected"),
    [
        (1.0, 1.0, Status.OK),  # the parts add up to the slots
        (1.2, 1.0, Status.SUSPECT),  # 120% of the slots: something is off
        (1.2, 0.01, Status.OK),  # 20 ms on a CPU in 2 s: too short to judge
    ],
)
def test_sampler_judges_the_breakdown(
    env: FakeEnv, scale: float, on_cpu: float, expected: Status
) -> None:
    f, _s = run_level1(env, scale, on_cpu)
    i = row(f, 10)
    assert f.values[i, 1:].sum() == pytest.approx(100 * scale)
    assert f.cpu_total[i] == pytest.approx(100 * on_cpu)
    assert f.status[i].tolist() == [Status.OK] + [expected] * 4


def test_a_suspect_cell_keeps_its_value_marked_in_text_csv_and_json(env: FakeEnv) -> None:
    f, s = run_level1(env, 1.2, 1.0)
    i = row(f, 10)
    fmt = row_format(s.screen.columns)
    codes = f.status[i].astype(np.uint8).tobytes()
    # %BE is 50% of the slots: "   50.0" moved one place left, then the mark.
    assert fmt.cells(f.values[i].tolist(), codes) == [
        "100.0",
        "  40.0!",
        "  10.0!",
        "  20.0!",
        "  50.0!",
    ]
    assert fmt.text(f.values[i].tolist(), codes) == "100.0   40.0!   10.0!   20.0!   50.0! "
    assert STATUS_NAME[Status.SUSPECT] == "suspect"
    out = io.StringIO()
    w = make_writer(out, Options(format=Format.JSON), s.screen, 0)
    w.frame(f, 0)
    rec = json.loads(out.getvalue())
    assert rec["columns"]["%BE"] == pytest.approx(50.0)
    assert rec["status"] == {
        "%CPU": "ok",
        "%RET": "suspect",
        "%BAD": "suspect",
        "%FE": "suspect",
        "%BE": "suspect",
    }
    out = io.StringIO()
    w = make_writer(out, Options(format=Format.CSV), s.screen, 0)
    w.begin(0.0)
    w.frame(f, 0)
    head, line = [x.split(",") for x in out.getvalue().splitlines()]
    got = dict(zip(head, line, strict=True))
    assert float(got["%BE"]) == pytest.approx(50.0) and got["%BE_status"] == "suspect"


def test_the_exporter_counts_suspect_tasks_only_for_a_breakdown_screen(env: FakeEnv) -> None:
    f, s = run_level1(env, 1.2, 1.0)
    for breakdown, expected in ((True, [(("app", "root", "/"), 1.0)]), (False, None)):
        agg = Aggregator(metrics_for(s.screen.counters), breakdown=breakdown)
        fams = {fam.name: fam for fam in agg.update(f).families}
        fam = fams.get("tiptop_breakdown_suspect_tasks")
        if expected is None:
            assert fam is None
        else:
            assert fam is not None and fam.kind == "gauge" and list(fam.samples) == expected


def test_a_multiplexed_screen_says_so_once_with_its_running_fraction(env: FakeEnv) -> None:
    f, s = run_level1(env, 1.0, 1.0, mux=0.25)
    said = [m for m in s.messages.lines() if "multiplexes" in m or "ran " in m]
    assert said == [
        "screen 'level1': other users of the PMU (perf, another tiptop, the NMI watchdog) "
        "hold counters; its counters ran 25% of the time, so its values are scaled estimates"
    ]
    i = row(f, 10)
    assert f.status[i].tolist() == [Status.OK] * 5  # scaled alike: still adds up


def test_a_recording_keeps_the_breakdown_and_a_replay_judges_it_again(
    env: FakeEnv, tmp_path: Path
) -> None:
    fp, b = env
    fp.add(10, "app", utime=0)
    b.script(10, S, 4e9)
    for ev, share in ((RET, 0.4), (BAD, 0.1), (FE, 0.2), (BE, 0.5)):  # 120% of the slots
        b.script(10, ev, 4e9 * share)
    host = host_at(str(fp.root), str(fp.root.parent / "nosys"), clock=Clock(monotonic=b.clock))
    path = str(tmp_path / "rec.jsonl")
    sampler = Sampler(level1(), SamplerConfig(), backend=b, host=host)
    source = recording.RecordingSource(sampler, recording.Recorder(path, {"host": "h"}))
    source.start()
    b.clock.advance(2.0)
    fp.set_stat(10, "app", utime=200)
    live = source.refresh()
    source.close()
    suspect = [Status.OK] + [Status.SUSPECT] * 4
    assert live.status[row(live, 10)].tolist() == suspect
    rec = recording.load(path)
    assert rec.screens[0].breakdown == ("%RET", "%BAD", "%FE", "%BE")
    again = replayed(recording.ReplaySource(rec, rec.screens[0]), 0)
    assert again.status[row(again, 10)].tolist() == suspect
    np.testing.assert_array_equal(again.values, live.values)
    # A recording made before breakdowns existed has none in its header: no check.
    lines = Path(path).read_text().splitlines()
    head = json.loads(lines[0])
    del head["screen"]["breakdown"]
    Path(path).write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    rec = recording.load(path)
    assert rec.screens[0].breakdown == ()
    old = replayed(recording.ReplaySource(rec, rec.screens[0]), 0)
    assert old.status[row(old, 10)].tolist() == [Status.OK] * 5


def test_cgroup_rows_are_judged_again(env: FakeEnv) -> None:
    f, s = run_level1(env, 1.2, 1.0)
    g = group(f, s.screen, ["/a"] * len(f))
    assert g.status[0].tolist() == [Status.OK] + [Status.SUSPECT] * 4
    ok = dataclasses.replace(s.screen, breakdown=())  # the same counts, nothing to judge
    assert group(f, ok, ["/a"] * len(f)).status[0].tolist() == [Status.OK] * 5
