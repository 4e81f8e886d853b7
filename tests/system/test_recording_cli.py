"""Recordings as a user replays them (``python3 -m tiptop --replay``): a format-1 file made
by the writer as of b2b1dda replays each refresh under the screen that was shown; damaged
lines are each one line on stderr and the rest replays; what cannot be read or written,
or would be silently dropped, is one line and an exit status, never a traceback."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from tests.helpers import run

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "recording-v1.jsonl"


def _expected_blocks() -> list[tuple[str, list[str]]]:
    """recording-v1.expected: per frame the screen it was shown under and its rows."""
    blocks: list[tuple[str, list[str]]] = []
    for line in (DATA / "recording-v1.expected").read_text().splitlines():
        if line.startswith("== frame"):
            blocks.append((line.split()[-1], []))
        elif line:
            blocks[-1][1].append(line)
    return blocks


#: How a batch replay says it reached the end (on stderr, last; issue 50).
END = "tiptop: replay: the end of the recording: 5 refreshes, "


def _golden_lines() -> list[bytes]:
    return GOLDEN.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("name", ["recording-v1.jsonl", "recording-v1.jsonl.gz"])
def test_format_1_replays_each_frame_under_the_screen_shown(name: str) -> None:
    r = run("-b", "--replay", str(DATA / name))
    assert r.returncode == 0 and r.stderr.startswith(END), r.stderr
    assert r.stderr.count("\n") == 1
    lines = r.stdout.splitlines()
    assert lines[3] == "Screen 0: default"
    body = [x for x in lines[6:] if x]
    expected: list[str] = []
    for i, (screen, rows) in enumerate(_expected_blocks()):
        if i == 3:  # the recorded switch to 'branch': its name and header, then its rows
            assert screen == "branch"
            expected += ["Screen 1: branch", "  PID   [%CPU]   %MIS/I    %MISP   %BR/I COMMAND "]
        expected += rows
    assert body == expected
    # -S picks another recorded screen for every frame: the first frames under 'branch'.
    r = run("-b", "-n", "1", "-S", "branch", "--replay", str(DATA / name))
    assert r.returncode == 0 and "%MIS/I" in r.stdout and "Mcycle" not in r.stdout
    assert r.stderr == ""  # -n 1: not the end


def test_each_damaged_line_is_one_note_and_the_rest_replays(tmp_path: Path) -> None:
    lines = _golden_lines()  # header, facts, frame, frame, frame, screen, frame, frame
    frames = [i for i, x in enumerate(lines) if x.startswith(b'{"t":')]
    assert len(frames) == 5
    bad = list(lines)
    bad[frames[1]] = lines[frames[1]].replace(b'"tid":[', b'"tid":[1e30,', 1)
    bad[frames[2]] = lines[frames[2]].replace(b'"dt":', b'"dt":"x","y":', 1)
    bad.insert(frames[3], b"\xff\xfe not json\n")
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b"".join(bad))
    r = run("-b", "--replay", str(p))
    assert r.returncode == 0, r.stderr
    err = r.stderr.splitlines()
    assert err.pop().startswith(END), r.stderr
    # The non-JSON line at load; each frame line with a wrong value when it is shown.
    assert err == [
        f"tiptop: {p}: line {frames[3] + 1}: not JSON (damaged): skipped",
        f"tiptop: {p}: line {frames[1] + 1}: 'tid' holds a value that is not an integer "
        "from 0 to 2147483648: refresh skipped",
        f"tiptop: {p}: line {frames[2] + 1}: 'dt' is not a number: refresh skipped",
    ]
    assert r.stdout.count(" compute") == 3  # the three good refreshes


def test_nothing_usable_is_one_line_and_rc_1(tmp_path: Path) -> None:
    p = tmp_path / "junk"
    p.write_bytes(b"\x00\xff" * 1000 + b"\n" + b"x\n" * 10)
    r = run("-b", "--replay", str(p))
    assert r.returncode == 1
    why = "is not a tiptop recording (line 1: not JSON (damaged): skipped)"
    assert r.stderr == f"tiptop: --replay: '{p}' {why}\n"


@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "dir", "/dev/null"])
def test_what_is_not_a_regular_file_is_refused(tmp_path: Path, what: str) -> None:
    path = what
    if what == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    elif what == "dir":
        path = str(tmp_path)
    for flag in ("--replay", "--plot"):
        r = run(flag, path, "-b", "-o", str(tmp_path / "x.png"), timeout=20)
        assert r.returncode == 1, r.stderr
        assert r.stderr == f"tiptop: {flag}: '{path}' is not a regular file: not read\n"
    r = run("-b", "-n", "1", "--record", path, timeout=20)
    assert r.returncode == 1
    assert r.stderr == f"tiptop: --record: '{path}' is not a regular file: not written\n"


def test_record_with_the_exporter_is_refused() -> None:
    r = run("--textfile", "/tmp/x.prom", "--record", "/tmp/x.jsonl")
    assert r.returncode == 2
    assert r.stderr == "tiptop: --record does not work with --textfile: run two tiptops\n"
    r = run("--serve", "127.0.0.1:0", "-o", "/tmp/x.txt")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


def test_a_note_found_at_the_end_is_said_by_a_batch_replay(tmp_path: Path) -> None:
    p = tmp_path / "cut.jsonl.gz"
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    p.write_bytes(c.compress(GOLDEN.read_bytes()) + c.flush(zlib.Z_SYNC_FLUSH))  # no trailer
    r = run("-b", "--replay", str(p))
    assert r.returncode == 0 and r.stdout.count(" compute") == 5
    note, end = r.stderr.splitlines()
    assert note == f"tiptop: {p}: compressed data ends early (recorder stopped?)"
    assert end.startswith(END)
