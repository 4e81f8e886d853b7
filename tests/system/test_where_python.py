"""Python functions in ``--where``'s stacks: a process started with ``python3 -X perf``
(3.12+; or ``PYTHONPERFSUPPORT=1``) runs each Python function through a trampoline that
its perf map (/tmp/perf-PID.map, read already) names ``py::function:file``; with frame
pointers in the interpreter the kernel's walk goes through them.

The real test needs a Python 3.12+ built with frame pointers; this machine's (pyenv's
3.12 and 3.13) were built without, so it skips saying so. The mechanism itself is tested
on every x86-64 machine with a C program that runs CPython's trampoline code, byte for
byte, named by a perf map as CPython names it (tests/data/trampoline.c)."""

from __future__ import annotations

import glob
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.system.hostile import Target
from tests.system.test_where import launch, start
from tests.system.test_where_calls import build, built, stacks

assert start and built  # fixtures, used by name

BUSY = """\
import os, sys, time
def inner_py_work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def outer_py_caller():
    return inner_py_work(200000)
print(os.getpid(), flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    outer_py_caller()
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="CPython's x86-64 trampoline")
def test_a_trampoline_named_by_the_perf_map_is_a_frame(built: Path, start: list[Target]) -> None:
    target = launch(start, [str(build(built, "trampoline.c", "-fno-omit-frame-pointer"))])
    address = int(target.stdout.readline(), 16)
    jit_map = Path(f"/tmp/perf-{target.pid}.map")
    jit_map.write_text(f"{address:x} 8 py::fake_function:/app/fake.py\n")
    found, taken, _err = stacks(target.pid, "-n", "2", "-d", "1")
    through = sum(n for k, n in found.items() if "main;py::fake_function:/app/fake.py;spin" in k)
    assert taken > 100 and through > 0.8 * taken, found


def pythons() -> list[str]:
    """Every Python 3.12 or later on this machine (PATH, pyenv's versions)."""
    found = [shutil.which(f"python3.{minor}") for minor in range(12, 20)]
    found += sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]"))
    return [p for p in dict.fromkeys(found) if p]


def flags(python: str) -> str:
    """The C compiler flags ``python`` was built with."""
    code = "import sysconfig; print(sysconfig.get_config_var('CFLAGS') or '')"
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("how", ["-X perf", "PYTHONPERFSUPPORT=1"])
def test_python_functions_show_through_the_perf_map(
    how: str, start: list[Target], tmp_path: Path
) -> None:
    candidates = pythons()
    with_frames = [p for p in candidates if "-fno-omit-frame-pointer" in flags(p)]
    if not with_frames:
        seen = ", ".join(candidates) or "none"
        pytest.skip(
            "no Python 3.12+ built with frame pointers here (Python 3.12+ found: "
            f"{seen}; their CFLAGS lack -fno-omit-frame-pointer, so the kernel cannot walk "
            f"their frames; this interpreter is {sys.version.split()[0]})"
        )
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    argv = [with_frames[0], "-X", "perf"] if how == "-X perf" else [with_frames[0]]
    if how != "-X perf":
        argv = ["env", "PYTHONPERFSUPPORT=1", *argv]
    target = launch(start, [*argv, str(script), "20"])
    found, taken, _err = stacks(target.pid, "-n", "2", "-d", "1")
    named = sum(n for k, n in found.items() if "py::inner_py_work:" in k)
    assert taken > 100 and named > 0.5 * taken, found
