"""``--where`` on a process of uid 65534 that attacks root's tiptop (issue 52; the
attacker's reproducers /work/shared/attacks/where_*.sh, kept bounded): whatever the target's
user plants at ``/tmp/perf-PID.map`` (a FIFO, a link to ``/dev/zero`` or to a root-only
file, garbage, a 33 MB map touched every half second), the run ends on time with one line
saying what was skipped, no traceback, a peak RSS under 100 MB."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.system.hostile import NOBODY, Target, as_nobody, hotcold, needs_root, run_measured


@pytest.fixture(scope="module")
def program() -> Iterator[Path]:
    needs_root()
    where = Path(tempfile.mkdtemp(prefix="tiptop-hostile-"))
    os.chmod(where, 0o755)
    try:
        yield hotcold(where)
    finally:
        for f in where.iterdir():
            f.unlink()
        where.rmdir()


@pytest.fixture
def jit_target(program: Path) -> Iterator[Jit]:
    """The program of uid 65534 running only in anonymous memory (a "JIT")."""
    target = Jit([*NOBODY, str(program), "0", "jit"])
    yield target
    target.stop()


class Jit(Target):
    """The program in its JIT mode: the address of its code, its second line."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv)
        self.address = int(self.stdout.readline(), 16)


def big(path: Path, lines: int, base: int) -> None:
    path.write_bytes(
        b"".join(b"%x 10 jitted_function_%d\n" % (base + i * 16, i) for i in range(lines))
    )
    os.chown(path, 65534, 65534)


def fifo(path: Path, _base: int) -> None:
    as_nobody("mkfifo", str(path))


def devzero(path: Path, _base: int) -> None:
    as_nobody("ln", "-s", "/dev/zero", str(path))


def garbage(path: Path, _base: int) -> None:
    path.write_bytes(os.urandom(3_000_000))
    os.chown(path, 65534, 65534)


PLANTS: dict[str, tuple[Callable[[Path, int], None], str]] = {
    "fifo": (fifo, "a FIFO, not a regular file"),
    "devzero": (devzero, "a symbolic link (never followed)"),
    "garbage": (garbage, ""),
    "lines": (lambda p, base: big(p, 1_000_000, base), "read its first 250,000 lines only"),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_planted_jit_map(jit_target: Jit, plant: str) -> None:
    """where_jitmap.sh: the FIFO held root's tiptop for ever, the link to /dev/zero and
    the 4,000,000-line map ended in MemoryError tracebacks."""
    make, line = PLANTS[plant]
    path = Path(f"/tmp/perf-{jit_target.pid}.map")
    make(path, jit_target.address)
    r = run_measured(["-b", "--where", str(jit_target.pid), "-d", "1", "-n", "3"], timeout=40)
    print(f"{plant}: rc {r.rc}, {r.wall:.1f} s, peak RSS {r.maxrss_kb} kB, CPU {r.cpu:.2f} s")
    assert r.rc == 0, r
    r.check_clean()
    assert r.out.count(" samples of cpu-clock ") == 3, r.out
    assert r.wall < 3 + 6, r  # three refreshes, start-up, and no hang
    said = [ln for ln in r.err.splitlines() if ln.startswith("tiptop: --where")]
    if line:
        joint = ":" if line.startswith("read") else " not read:"
        assert said == [f"tiptop: --where {jit_target.pid}: {path}{joint} {line}"], r.err
    else:
        assert said == [], r.err


def test_a_big_map_touched_every_half_second(jit_target: Jit) -> None:
    """where_jitmap_more.sh (b): a 1,000,000-line map (33 MB) touched every 0.5 s was read
    and parsed again at every refresh: 0.64 s of CPU per refresh, 452 MB."""
    path = Path(f"/tmp/perf-{jit_target.pid}.map")
    big(path, 1_000_000, jit_target.address)
    done = threading.Event()

    def touch() -> None:
        while not done.wait(0.5):
            os.utime(path)

    toucher = threading.Thread(target=touch)
    toucher.start()
    try:
        r = run_measured(["-b", "--where", str(jit_target.pid), "-d", "1", "-n", "10"], timeout=60)
    finally:
        done.set()
        toucher.join()
    print(f"touched: rc {r.rc}, {r.wall:.1f} s, peak RSS {r.maxrss_kb} kB, CPU {r.cpu:.2f} s")
    assert r.rc == 0, r
    r.check_clean()
    assert "jitted_function_" in r.out
    assert r.cpu < 4.0, r.cpu  # start-up ~1 s; 10 refreshes at 0.64 s each were 6.4 s more


def test_a_link_to_a_root_only_file_is_not_read(jit_target: Jit) -> None:
    """where_jitmap_more.sh (a): with fs.protected_symlinks at 0, root's tiptop followed
    the target's link to a root-only file and printed its lines as symbol names."""
    with tempfile.TemporaryDirectory() as private:
        secret = Path(private) / "secret.map"
        secret.write_text(f"{jit_target.address:x} 1000 ROOT_ONLY_SECRET\n")
        path = Path(f"/tmp/perf-{jit_target.pid}.map")
        as_nobody("ln", "-s", str(secret), str(path))
        r = run_measured(["-b", "--where", str(jit_target.pid), "-d", "1", "-n", "2"])
    assert r.rc == 0, r
    assert "ROOT_ONLY_SECRET" not in r.out and "never followed" in r.err, r
