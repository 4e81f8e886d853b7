"""``tiptop -b --where PID`` with call chains on real programs, no PMU needed (``cpu-clock``
samples, the user stack walked by the kernel by frame pointer): a C program built with
``-fno-omit-frame-pointer`` in which ``main -> a -> work`` takes 75% of its CPU time and
``main -> b -> work`` 25% (tests/data/callers.c, by its thread CPU clock) must come out so;
a C++ program's frames are demangled (``ns::Klass::method(int)``); a program built without
frame pointers is said so once, its stacks shown as they came."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, run
from tests.system.hostile import Target
from tests.system.test_where import launch, start

assert start  # a fixture, used by name
DATA = Path(REPO) / "tests" / "data"

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


@pytest.fixture(scope="module")
def built() -> Iterator[Path]:
    """A directory uid 65534 can reach, where the programs are built."""
    where = Path(tempfile.mkdtemp(prefix="tiptop-calls-"))
    os.chmod(where, 0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def build(where: Path, source: str, *flags: str, compiler: str = "cc") -> Path:
    """``tests/data/<source>`` compiled at -O1 with ``flags`` into ``where``."""
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler}")
    program = where / f"{Path(source).stem}{''.join(flags)}"
    if not program.exists():
        argv = [compiler, "-O1", *flags, "-o", str(program), str(DATA / source)]
        subprocess.run(argv, check=True)
    return program


def stacks(pid: int, *args: str) -> tuple[dict[str, int], int, str]:
    """Every refresh's stacks added up (``main;a;work`` -> samples), the samples taken
    and stderr."""
    r = run("-b", "--where", str(pid), "--format", "json", *args)
    assert r.returncode == 0, r
    found: dict[str, int] = {}
    taken = 0
    for line in r.stdout.splitlines():
        rec = json.loads(line)
        taken += rec["samples"]
        assert sum(s["samples"] for s in rec["stacks"]) == rec["samples"], rec
        for s in rec["stacks"]:
            key = ";".join(f[0] for f in s["frames"])
            found[key] = found.get(key, 0) + s["samples"]
    return found, taken, r.stderr


def share_ending(found: dict[str, int], taken: int, tail: str) -> float:
    """The percent of the samples whose stack ends with ``tail`` (libc's frames before
    ``main`` differ between systems)."""
    return 100.0 * sum(n for k, n in found.items() if k.endswith(tail)) / taken


def test_the_callers_of_a_function_split_as_they_call_it(built: Path, start: list[Target]) -> None:
    target = launch(start, [str(build(built, "callers.c", "-fno-omit-frame-pointer"))])
    found, taken, err = stacks(target.pid, "-n", "3", "-d", "1")
    assert taken > 300, found
    via_a = share_ending(found, taken, "main;a;work")
    via_b = share_ending(found, taken, "main;b;work")
    assert 68 <= via_a <= 82 and 18 <= via_b <= 32, (via_a, via_b, found)
    assert "frame pointers" not in err, err


def test_cpp_frames_are_demangled(built: Path, start: list[Target]) -> None:
    program = build(built, "klass.cpp", "-fno-omit-frame-pointer", compiler="c++")
    target = launch(start, [str(program)])
    found, taken, _err = stacks(target.pid, "-n", "2", "-d", "1")
    assert share_ending(found, taken, "main;ns::Klass::method(int)") > 80, found


def test_a_program_without_frame_pointers_is_said_so_once(built: Path, start: list[Target]) -> None:
    """hotcold.c at -O1 with -fomit-frame-pointer: its samples' chains are one or two
    frames; one line says why, once over three refreshes, and the stacks are as they came
    (``hot_loop`` alone, no frame made up above it)."""
    target = launch(start, [str(build(built, "hotcold.c", "-fomit-frame-pointer"))])
    found, taken, err = stacks(target.pid, "-n", "3", "-d", "1")
    lines = [ln for ln in err.splitlines() if "frame pointers" in ln]
    assert len(lines) == 1, err
    assert "(hotcold-fomit-frame-pointer) are 2 frames deep or fewer" in lines[0], lines
    assert found.get("hot_loop", 0) > 0.5 * taken, found


def test_the_text_tree_top_down_shows_each_caller_and_its_share(
    built: Path, start: list[Target]
) -> None:
    """``--top-down``'s text: ``main`` then ``a`` and ``b`` one level below it, ``work``
    below each; each path's share, weighted by each refresh's samples, 75 and 25."""
    target = launch(start, [str(build(built, "callers.c", "-fno-omit-frame-pointer"))])
    r = run("-b", "--where", str(target.pid), "-n", "3", "-d", "1", "--top-down")
    assert r.returncode == 0, r
    assert "(top-down: callers, then their callees)" in r.stdout.splitlines()[0], r.stdout
    through: dict[str, float] = {"a": 0.0, "b": 0.0}
    taken = 0
    for block in r.stdout.split("\n\n"):
        lines = block.strip("\n").splitlines()
        head = next((i for i, ln in enumerate(lines) if " samples of cpu-clock " in ln), None)
        if head is None:
            continue
        n = int(lines[head].split(": ")[1].split()[0])
        taken += n
        path: list[str] = []
        for line in lines[head + 1 :]:
            if "  waiting  " in line:
                break  # where it waited off CPU (as root): test_where_offcpu's
            share, rest = line.split("%", 1)
            depth = (len(rest) - len(rest.lstrip(" ")) - 2) // 2
            symbol = rest.strip().split("  ")[0]
            del path[depth:]
            path.append(symbol)
            if path[-3:] in (["main", "a", "work"], ["main", "b", "work"]):
                through[path[-2]] += float(share) * n
    via_a, via_b = through["a"] / taken, through["b"] / taken
    assert 68 <= via_a <= 82 and 18 <= via_b <= 32, (via_a, via_b, r.stdout)
