"""Where the time went, everywhere the other columns go (issue 47): through the sampler on
the FAKE backend and a fake ``/proc`` (``schedstat`` files, the machine's files), into a
recording and back: a replay shows the same ``state`` screen, the same shares, the same
machine context, and an older recording without them reads '?' (never zeros)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from tests.fakeproc import FakeProc
from tests.support import host_at
from tests.support.builders import recorded_line, replayed
from tests.support.fake_backend import FakeBackend
from tiptop import recording
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.host import Clock
from tiptop.options import Options
from tiptop.outputs.batch import TextWriter
from tiptop.screens import Target, builtin_screens

STATE = next(s for s in builtin_screens(Target()) if s.name == "state")


def machine_files(root: Path, ticks: int, steal: int, psi_us: int) -> None:
    """/proc/stat's cpu line (``ticks`` in all, ``steal`` of them stolen), /proc/loadavg and
    /proc/pressure/cpu of a fake machine."""
    line = f"cpu  {ticks - steal} 0 0 0 0 0 0 {steal} 0 0"
    (root / "stat").write_text(f"{line}\nbtime 1700000000\n")
    (root / "loadavg").write_text("1.00 1.00 1.00 4/300 999\n")
    (root / "pressure").mkdir(exist_ok=True)
    (root / "pressure" / "cpu").write_text(f"some avg10=0 avg60=0 avg300=0 total={psi_us}\n")


def schedstat(root: Path, pid: int, run_s: float, wait_s: float) -> None:
    (root / str(pid) / "schedstat").write_text(f"{int(run_s * 1e9)} {int(wait_s * 1e9)} 1\n")


def record_state(tmp_path: Path, name: str = "r.jsonl") -> tuple[str, str, Options]:
    """Two refreshes of 2 s of the ``state`` screen over a loop (pid 100: 1 s on a CPU and
    1 s waiting each time) and a sleeper (pid 200), recorded; the live batch text."""
    fp, b = FakeProc(tmp_path / "proc"), FakeBackend()
    fp.add(100, "loop")
    fp.add(200, "sleeper")
    root = fp.root
    machine_files(root, 1000, 0, 0)
    schedstat(root, 100, 10.0, 5.0)
    schedstat(root, 200, 0.001, 0.0)
    host = host_at(str(root), str(tmp_path / "nosys"), clock=Clock(monotonic=b.clock), cpus=2)
    sampler = Sampler(STATE, SamplerConfig(), backend=b, host=host)
    path = str(tmp_path / name)
    source = recording.RecordingSource(sampler, recording.Recorder(path, {"host": "h"}))
    opts = Options(delay=2.0, show_idle=True)
    out = io.StringIO()
    writer = TextWriter(out, opts, STATE, 0)
    source.start()
    for it in range(2):
        b.clock.advance(2.0)
        fp.set_stat(100, "loop", utime=(it + 1) * 100)
        schedstat(root, 100, 10.0 + (it + 1), 5.0 + (it + 1))
        machine_files(root, 1000 + (it + 1) * 400, (it + 1) * 20, (it + 1) * 500_000)
        writer.frame(source.refresh(), it)
    source.close()
    return out.getvalue(), path, opts


def test_the_state_screen_live_and_replayed(tmp_path: Path) -> None:
    live, path, opts = record_state(tmp_path)
    line = next(ln for ln in live.splitlines() if ln.endswith(" loop"))
    # %CPU %RUN %WAIT %THRT %IO %SLEEP LIMIT CSW/s FLT/s BOTTLENECK
    assert line.split()[2:7] == ["50.0", "50.0", "0.0", "?", "0.0"], line
    assert line.split()[-3:] == ["Wait", "50%", "loop"], line
    rec = recording.load(path)
    first = recorded_line(rec, 0)
    parts = zip(first["tid"], first["run"], first["wait"], strict=True)
    by_tid = {tid: (run, wait) for tid, run, wait in parts}
    assert by_tid == {100: (50, 50), 200: (0, 0)}
    assert first["io"] == [None, None] and "lim" not in first
    assert first["ctx"] == {"cpus": 2, "run": 3, "steal": 0.05, "psi": {"cpu": [0.25, None]}}
    src = recording.ReplaySource(rec, STATE)
    out = io.StringIO()
    writer = TextWriter(out, opts, STATE, 0)
    for i in range(len(rec)):
        frame = replayed(src, i)
        writer.frame(frame, i)
        assert frame.context is not None and frame.context.steal == pytest.approx(0.05)
    assert out.getvalue() == live


def test_a_recording_without_the_time_reads_unknown(tmp_path: Path) -> None:
    """A recording made before tiptop read where the time went (its frame lines lack the
    lists): the state screen replays its time columns as '?', the bottleneck unknown."""
    _live, path, _opts = record_state(tmp_path)
    old = tmp_path / "old.jsonl"
    lines = []
    for text in Path(path).read_text().splitlines():
        d = json.loads(text)
        for key in ("run", "wait", "thr", "io", "lim", "cpus", "ctx"):
            d.pop(key, None)
        lines.append(json.dumps(d))
    old.write_text("\n".join(lines) + "\n")
    frame = replayed(recording.ReplaySource(recording.load(str(old)), STATE), 0)
    heads = [h.strip() for h in frame.headers]
    for col in ("%RUN", "%WAIT", "%THRT", "%IO", "%SLEEP"):
        assert (frame.status[:, heads.index(col)] == Status.UNREADABLE).all(), col
    assert (frame.status[:, heads.index("%CPU")] == Status.OK).all()
    assert np.isnan(frame.time_percent).all() and frame.context is None
