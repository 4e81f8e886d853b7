"""``--record`` then ``--replay`` on the FAKE backend: the replayed frames print the same
batch text as the live ones (every number re-evaluated from the recorded counters), another
screen over the same counters evaluates too, a cut-off last line is dropped with a note, and
bad files are one line."""

from __future__ import annotations

import dataclasses
import errno
import gzip
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.support.builders import recorded_line, replayed
from tests.support.sampling import default_screen_sampler
from tiptop import recording
from tiptop.cells import Status
from tiptop.errors import TiptopError
from tiptop.options import Options
from tiptop.outputs.batch import TextWriter
from tiptop.screens import ScreenSpec, Target, builtin_screens

if TYPE_CHECKING:
    from typing_extensions import Buffer


def _record(tmp_path: Path, name: str, n: int = 3) -> tuple:
    """Run the default screen for ``n`` refreshes through a recording source; the live
    batch text and the recording's path."""
    fp, b, sampler = default_screen_sampler(tmp_path, (1.1e9, 2.3e9, 1.7e6, 4e6))
    default = sampler.screen
    path = str(tmp_path / name)
    source = recording.RecordingSource(
        sampler, recording.Recorder(path, {"host": "h", "interval": 2.0})
    )
    opts = Options(delay=2.0, show_idle=True)
    out = io.StringIO()
    writer = TextWriter(out, opts, default, 0)
    source.start()
    for it in range(n):
        b.clock.advance(2.0)
        fp.set_stat(100, "compute", utime=(it + 1) * 173, stime=(it + 1) * 21, processor=1)
        fp.set_stat(300, "server", utime=(it + 1) * 77, threads=2)
        fp.set_stat(300, "server", tid=300, utime=(it + 1) * 50, threads=2)
        fp.set_stat(300, "server", tid=301, utime=(it + 1) * 27, threads=2)
        writer.frame(source.refresh(), it)
    source.close()
    return out.getvalue(), path, default, opts


def _replayed(path: str, screen: ScreenSpec, opts: Options) -> str:
    rec = recording.load(path)
    src = recording.ReplaySource(rec, screen)
    out = io.StringIO()
    writer = TextWriter(out, opts, screen, 0)
    for i in range(len(rec)):
        writer.frame(replayed(src, i), i)
    return out.getvalue()


@pytest.mark.parametrize("name", ["rec.jsonl", "rec.jsonl.gz"])
def test_replay_prints_what_was_printed_live(tmp_path: Path, name: str) -> None:
    live, path, default, opts = _record(tmp_path, name)
    assert "compute" in live and "2.09" in live  # IPC 2.3e9/1.1e9, shown to 2 digits
    assert _replayed(path, default, opts) == live
    # The recorded screen, rebuilt from the header alone, gives the same text.
    rec = recording.load(path)
    assert rec.header.host == "h" and rec.header.raw["tiptop_recording"] == 1
    assert _replayed(path, rec.screens[0], opts) == live
    if name.endswith(".gz"):
        with gzip.open(path) as f:
            assert f.readline().startswith(b'{"tiptop_recording":1')


def test_another_screen_over_the_same_counters(tmp_path: Path) -> None:
    _live, path, _default, _opts = _record(tmp_path, "r.jsonl")
    (branch,) = [s for s in builtin_screens(Target()) if s.name == "branch"]
    rec = recording.load(path)
    f = replayed(recording.ReplaySource(rec, branch), 0)
    row = list(f.tid).index(100)
    # INSTR and BMISS are recorded (as INSN and BR: the same events under other aliases),
    # branch-instructions is not: %MIS/I = 100 * 4e6 / 2.3e9, %MISP and %BR/I are '?'.
    assert [h.strip() for h in f.headers] == ["%CPU", "%MIS/I", "%MISP", "%BR/I"]
    assert f.values[row, 1] == pytest.approx(100 * 4e6 / 2.3e9)
    assert list(f.status[row, 1:]) == [Status.OK, Status.UNREADABLE, Status.UNREADABLE]
    # The default screen's own BR (branch-misses) is not mistaken for branch-instructions.
    assert (
        f.values[row, 0] == replayed(recording.ReplaySource(rec, rec.screens[0]), 0).values[row, 0]
    )


def test_cut_off_last_line_is_dropped_with_a_note(tmp_path: Path) -> None:
    _live, path, _d, _o = _record(tmp_path, "r.jsonl", n=3)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-40])
    rec = recording.load(path)
    assert len(rec) == 2
    assert len(rec.notes) == 1 and "line 5: incomplete" in rec.notes[0]


def test_cut_off_gzip_keeps_the_flushed_refreshes(tmp_path: Path) -> None:
    _live, path, _d, _o = _record(tmp_path, "r.jsonl.gz", n=3)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-12])  # the trailer and the end of the stream lost
    rec = recording.load(path)
    assert len(rec) == 3  # each refresh was sync-flushed
    assert any("ends early" in n for n in rec.notes)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"hello\n", "is not a tiptop recording"),
        (b'{"a": 1}\n', "is not a tiptop recording"),
        (json.dumps({"tiptop_recording": 99, "screen": {}}).encode() + b"\n", "format 99"),
    ],
)
def test_bad_files_are_one_line(tmp_path: Path, content: bytes, why: str) -> None:
    p = tmp_path / "bad"
    p.write_bytes(content)
    with pytest.raises(TiptopError, match=why):
        recording.load(str(p))
    with pytest.raises(TiptopError, match="cannot read"):
        recording.load(str(tmp_path / "missing"))


def test_full_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _live, path, default, _o = _record(tmp_path, "r.jsonl", n=1)
    rec = recording.Recorder(str(tmp_path / "x"), {})

    class Full(io.RawIOBase):
        closed = False

        def write(self, b: Buffer) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    rec._f = rec._raw = Full()  # type: ignore[assignment]
    frame = replayed(recording.ReplaySource(recording.load(path), default), 0)
    with pytest.raises(TiptopError, match=r"^--record: cannot write .*No space left on device$"):
        rec.write(frame, default)


def test_numbers_round_trip() -> None:
    a = np.array([0.0, 1.0, 2.5, np.nan, 1e20, 0.1 + 0.2, -0.0, 123456789.0])
    back = np.array(json.loads(json.dumps(recording.numbers(a))), dtype=np.float64)
    assert np.array_equal(back, a, equal_nan=True)
    assert np.signbit(back[6])
    assert recording.numbers(np.array([3.0, 4.0])) == [3, 4]


def test_format_versions_agree() -> None:
    assert recording.FORMAT_VERSION == recording.FORMAT_VERSION


def test_totals_recorded_only_for_aliases_read_bare(tmp_path: Path) -> None:
    from tiptop.screens.model import ColumnSpec

    _live, path, default, _o = _record(tmp_path, "r.jsonl", n=2)
    assert recording.bare_aliases(default) == frozenset()
    rec = recording.load(path)
    assert all("T" not in c for c in recorded_line(rec, 0)["k"].values())
    # A screen reading the running total of instructions: '?' on this recording.
    cum = dataclasses.replace(
        default, columns=(ColumnSpec("  Ginstr", "%7.2f", "INSN / 1e9", "total"),)
    )
    assert recording.bare_aliases(cum) == frozenset({"INSN"})
    f = replayed(recording.ReplaySource(rec, cum), 1)
    assert (f.status[:, 0] == Status.UNREADABLE).all()


def test_sticky_rows_keep_their_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tiptop.frame import Frame

    _live, path, default, _o = _record(tmp_path, "r.jsonl", n=1)
    f = replayed(recording.ReplaySource(recording.load(path), default), 0)
    kept = Frame.empty().concat(f.take(slice(1, None)))  # the sampler's sticky dead rows
    assert kept.cpu_user is not None and len(kept.cpu_user) == len(f) - 1
    both = f.take(slice(0, 1)).concat(kept)
    assert np.array_equal(both.cpu_sys, f.cpu_sys)
    assert np.array_equal(both.counter_scaled, f.counter_scaled, equal_nan=True)


def test_a_bottleneck_column_is_evaluated_on_replay(tmp_path: Path) -> None:
    """A screen with a ``bottleneck(...)`` column over the recorded counters: computed by
    the same evaluator on replay, and its definition survives a recording's header."""
    from tiptop.recording.format import screen_from_record, screen_record
    from tiptop.screens.bottleneck import parse_path
    from tiptop.screens.model import ColumnSpec

    _live, path, default, _opts = _record(tmp_path, "r.jsonl")
    td = dataclasses.replace(
        default,
        name="td",
        columns=tuple(
            ColumnSpec(*c)
            for c in [
                (" %CPU", "%5.1f", "CPU_TOT"),
                ("   %RET", "%7.1f", "100*delta(INSN)/(4*delta(CYCLE))"),
                ("    %BE", "%7.1f", "100 - 100*delta(INSN)/(4*delta(CYCLE))"),
                ("BOTTLENECK", "%.0f%%", "bottleneck(tma: RET=%RET, BE=%BE)"),
            ]
        ),
    )
    f = replayed(recording.ReplaySource(recording.load(path), td), 1)
    row = list(f.tid).index(100)
    share = 100 - 100 * 2.3e9 / (4 * 1.1e9)  # 47.7: over BE's 20%, retiring is not over 70%
    labels = parse_path(td.columns[-1].expr).labels
    idx, got = int(f.node[row, 3]), f.values[row, 3]
    assert (labels[idx], got) == ("BE", pytest.approx(share))
    assert f.status[row, 3] == Status.OK
    back = screen_from_record(screen_record(td))
    assert back.columns[-1] == dataclasses.replace(td.columns[-1], desc=back.columns[-1].desc)
