"""Any recording file is survived: generated damaged recordings (truncated, bits flipped,
values of wrong types, keys missing, huge numbers, bytes that are not UTF-8, lines shuffled,
gzip bombs) loaded, every refresh decoded and printed as batch text, in one child process:
no traceback (only ``TiptopError``, one line), no case over 10 s, and at most 300 MB of
peak RSS (``VmHWM``, proc(5)) for the whole run. A few of the worst as a user runs them
(``python3 -m tiptop --replay``): rc 1 and one line on stderr.

1,000 cases by default (the README's test command); ``make slow``, which CI runs, runs
10,000 (``TIPTOP_FUZZ_CASES=10000``). The cases are generated from a seed, so a failure is
reproduced by its case number (``TIPTOP_FUZZ_CASES``, ``TIPTOP_FUZZ_SEED`` change the run).
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from pathlib import Path

from tests.helpers import REPO, run

DATA = Path(__file__).resolve().parents[1] / "data"
#: The default run's cases; the slow target's run is ten times as many (Makefile).
CASES = int(os.environ.get("TIPTOP_FUZZ_CASES", "1000"))
SEED = int(os.environ.get("TIPTOP_FUZZ_SEED", "29"))
HANG_S = 10
RSS_MB = 300


# --------------------------------------------------------------------------- cases


def _seed_lines() -> list[bytes]:
    """The golden recording's lines (header, facts, frames, a screen switch)."""
    return (DATA / "recording-v1.jsonl").read_bytes().splitlines(keepends=True)


_ODD = [
    None,
    True,
    -1,
    0,
    1e308,
    -1e308,
    2**63,
    10**30,
    "x",
    "",
    [],
    {},
    [1],
    {"a": 1},
    [[1, 2]],
    float("nan"),
    1.5,
    "1e30",
    [None],
    "\x00\x1b[2J",
    1e-300,
]


def _paths(x: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path into a parsed line."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    elif isinstance(x, list):
        for i, v in enumerate(x[:4]):
            out.append((*prefix, i))
            out += _paths(v, (*prefix, i))
    return out


def _mutate_json(rng: random.Random, line: bytes) -> bytes:
    """A line with one value of a wrong type, a key missing, or a huge number."""
    try:
        d = json.loads(line)
    except ValueError:
        return line
    paths = _paths(d)
    if not paths:
        return line
    d = copy.deepcopy(d)
    path = rng.choice(paths)
    parent = d
    for k in path[:-1]:
        parent = parent[k]
    how = rng.random()
    if how < 0.3 and isinstance(parent, dict):
        del parent[path[-1]]
    elif how < 0.4 and isinstance(parent[path[-1]], list):
        parent[path[-1]] = parent[path[-1]][: rng.randrange(4)]  # a short list
    else:
        parent[path[-1]] = rng.choice(_ODD)
    return json.dumps(d, allow_nan=True, separators=(",", ":")).encode() + b"\n"


def _flip(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def _damage(rng: random.Random, lines: list[bytes]) -> bytes:
    kind = rng.randrange(8)
    lines = list(lines)
    if kind == 0:  # wrong types, missing keys, huge numbers, in one or more lines
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            lines[i] = _mutate_json(rng, lines[i])
    elif kind == 1:  # bytes that are not UTF-8 (and controls) into a line
        i = rng.randrange(len(lines))
        j = rng.randrange(len(lines[i]))
        junk = bytes(rng.choice([0x80, 0xFF, 0xC3, 0x00, 0x1B, 0x0A, 0x7B, 0x22]) for _ in range(5))
        lines[i] = lines[i][:j] + junk + lines[i][j:]
    elif kind == 2:  # lines lost, repeated, shuffled
        rng.shuffle(lines)
        lines = lines[: rng.randint(1, len(lines))] * rng.randint(1, 3)
    elif kind == 3:  # a frame line that starts and ends as one but is not JSON
        i = rng.randrange(len(lines))
        lines[i] = b'{"t":' + str(rng.random() * 2e9).encode() + b",\xff" + lines[i][9:-2] + b"}\n"
    data = b"".join(lines)
    if kind == 4:
        data = _flip(rng, data)
    elif kind == 5:
        data = data[: rng.randrange(len(data))]
    if rng.random() < 0.4:  # gzip: damage the compressed stream too, or append members
        data = gzip.compress(data, mtime=0)
        if kind >= 6:
            data = _flip(rng, data) if kind == 6 else data[: rng.randrange(len(data))]
        if rng.random() < 0.2:
            data += gzip.compress(b"".join(_seed_lines()), mtime=0)
    elif kind >= 6:
        data = _flip(rng, data) if kind == 6 else data[: rng.randrange(1, len(data) + 1)]
    return data


def _gzip_of(*parts: tuple[bytes, int]) -> bytes:
    """gzip of each ``(bytes, times)`` repeated, made piece by piece (never held whole)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = []
    for piece, times in parts:
        for _ in range(times):
            out.append(c.compress(piece))
    return b"".join([*out, c.flush()])


def _bombs() -> list[bytes]:
    """Small files that grow large: zeros, newlines, blanks, one refresh repeated, a line
    of brackets."""
    frame = next(x for x in _seed_lines() if x.startswith(b'{"t":'))
    head = b"".join(_seed_lines()[:2])
    mib = 1 << 20
    return [
        _gzip_of((b"\0" * mib, 200)),
        _gzip_of((b"\n" * mib, 200)),
        _gzip_of((head, 1), (b" \n" * mib, 20)),
        _gzip_of((head, 1), (frame * 1000, 200)),
        _gzip_of((head, 1), (b"{" * mib, 40), (b"\n", 1)),
        _gzip_of((head, 1), (b'{"t":1,', 1), (b"[" * mib, 30), (b"}\n", 1)),
    ]


def case(seed: int, number: int, lines: list[bytes]) -> bytes:
    """Generated case ``number`` (its own random stream: any case is made alone)."""
    rng = random.Random(seed * 1_000_003 + number)
    if number % 500 == 7:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000)))
    return _damage(rng, lines)


def _replay(path: str) -> int:
    """What ``--replay -b`` does with a file: load, decode each refresh (200 of a long
    one), print batch text."""
    from tiptop import recording
    from tiptop.errors import TiptopError
    from tiptop.options import Options
    from tiptop.outputs.batch import TextWriter

    try:
        rec = recording.load(path)
    except TiptopError as exc:
        assert "\n" not in str(exc)
        return 0
    try:
        src = recording.ReplaySource(rec)
        out = io.StringIO()
        writer = None
        for i in range(0, len(rec), max(len(rec) // 200, 1)):  # a bomb's refreshes: some
            screen = src.screen_for(i)
            f = src.frame(i)
            if f is None:
                continue
            if writer is None or writer.screen is not screen:
                writer = TextWriter(out, Options(show_idle=True), screen, 0)
            writer.frame(f, i)
        return len(rec)
    finally:
        rec.close()


def child(first: int, stop: int, seed: int) -> None:
    """Run cases ``first`` to ``stop - 1`` in this process (the bombs are cases 0 to 5);
    print one JSON report line."""

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError("case ran over the time limit")

    signal.signal(signal.SIGALRM, alarm)
    lines = _seed_lines()
    bombs = _bombs() if first == 0 else []
    failures: dict[str, list[int]] = {}
    slowest = 0.0
    # tmpfs where there is one: truncating a file on disk 10,000 times is slow
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    fd, path = tempfile.mkstemp(suffix=".jsonl", dir=shm)
    try:
        for n in range(first, stop):
            data = bombs[n] if n < len(bombs) else case(seed, n, lines)
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            t0 = time.monotonic()
            signal.alarm(HANG_S)
            try:
                _replay(path)
            except Exception as exc:
                tb = traceback.extract_tb(exc.__traceback__)[-1]
                key = f"{type(exc).__name__} at {Path(tb.filename).name}:{tb.lineno}: {exc}"[:300]
                failures.setdefault(key, []).append(n)
            finally:
                signal.alarm(0)
            slowest = max(slowest, time.monotonic() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    with open("/proc/self/status") as f:
        hwm = next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))
    print(json.dumps({"failures": failures, "slowest": slowest, "vmhwm_kb": hwm}))


# --------------------------------------------------------------------------- tests


def test_ten_thousand_damaged_recordings_are_survived() -> None:
    """Two children (two cores), half the cases each."""
    env = dict(os.environ, PYTHONPATH=REPO)
    t0 = time.monotonic()
    half = CASES // 2
    code = "from tests.system.test_recording_fuzz import child; child({}, {}, {})"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code.format(a, b, SEED)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        for a, b in ((0, half), (half, CASES))
    ]
    reports = []
    for p in children:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-3000:]
        reports.append(json.loads(out.splitlines()[-1]))
    took = time.monotonic() - t0
    failures = {k: v for r in reports for k, v in r["failures"].items()}
    assert failures == {}, (
        f"{sum(map(len, failures.values()))} tracebacks, {len(failures)} signatures: "
        f"{json.dumps(failures)[:3000]}"
    )
    slowest = max(r["slowest"] for r in reports)
    hwm = max(r["vmhwm_kb"] for r in reports)
    assert slowest < HANG_S and hwm < RSS_MB * 1024, reports
    print(f"{CASES} cases in {took:.1f} s, slowest {slowest:.2f} s, VmHWM {hwm // 1024} MB")


def test_the_worst_as_a_user_runs_them(tmp_path: Path) -> None:
    (tmp_path / "bomb.jsonl.gz").write_bytes(_bombs()[0])
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "bomb.jsonl.gz", tmp_path / "fifo", "/dev/zero", tmp_path):
        for args in (["--replay", str(path), "-b"], ["--plot", str(path), "-o", "/tmp/x.png"]):
            r = run(*args, timeout=60)
            assert r.returncode == 1, r.stderr
            assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
