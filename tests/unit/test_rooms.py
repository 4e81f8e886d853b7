"""The two rooms stay honest, checked with ``ast``: the unit room (tests/unit/ and what it
imports from tests/support/ and tests/fakeproc.py) starts no process, runs no tmux and no
setpriv; every test module sits in a room; and the formatter owns the layout (no code packed
by hand under a size).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

#: What the unit room may use: its own tests, the fakes and builders, the fake /proc.
UNIT_ROOM = (TESTS / "unit", TESTS / "support", TESTS / "fakeproc.py")

#: Modules that start processes.
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty", "pexpect"}

#: ``os`` functions that start or replace a process (the Python library reference, module
#: ``os``, "Process Management").
OS_PROCESS_CALLS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}
OS_PROCESS_PREFIXES = ("exec", "spawn")

#: The helpers of tests/helpers.py that run ``python -m tiptop`` or setpriv.
PROCESS_HELPERS = {"run", "TIPTOP", "nobody_command", "nobody_site"}

#: Programs the unit room never names as a command.
PROGRAMS = {"setpriv", "tmux"}

#: How many lines may keep the formatter away: true data tables only (issue 36).
MAX_PACKED = 10


def _starts_process(os_name: str) -> bool:
    """Whether ``os.<os_name>`` starts or replaces a process."""
    return os_name in OS_PROCESS_CALLS or os_name.startswith(OS_PROCESS_PREFIXES)


def _os_call(node: ast.AST) -> str | None:
    """``fork`` for ``os.fork(...)``, ``execv`` for ``os.execv(...)``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        f = node.func
        if isinstance(f.value, ast.Name) and f.value.id == "os":
            return f.attr
    return None


def violations(source: str) -> list[str]:
    """``line: what`` for each way ``source`` leaves the unit room."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PROCESS_MODULES:
                    found.append(f"{line}: import {a.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.split(".")[0] in PROCESS_MODULES or mod.startswith("tests.system"):
                found.append(f"{line}: from {mod} import")
            elif mod == "tests.helpers":
                found += [
                    f"{line}: {a.name} from tests.helpers"
                    for a in node.names
                    if a.name in PROCESS_HELPERS
                ]
            elif mod == "os":
                found += [f"{line}: os.{a.name}" for a in node.names if _starts_process(a.name)]
        elif (name := _os_call(node)) is not None and _starts_process(name):
            found.append(f"{line}: os.{name}()")
    found += [f"{c.lineno}: names {str(c.value).split()[0]}" for c in _commands(tree)]
    return found


def _commands(tree: ast.AST) -> list[ast.Constant]:
    """The strings that name a program of :data:`PROGRAMS` as a command: the first item of
    a list or tuple (an argv) or the first argument of a call (``shutil.which("tmux")``).
    A shell command line needs ``subprocess`` or ``os.system``, which are caught anyway."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple):
            first = node.elts[:1]
        elif isinstance(node, ast.Call):
            first = node.args[:1]
        else:
            continue
        found += [c for c in first if isinstance(c, ast.Constant) and _program(c) in PROGRAMS]
    return sorted(found, key=lambda c: c.lineno)


def _program(node: ast.AST) -> str | None:
    """``tmux`` for the string ``"/usr/bin/tmux -L x"``; None for anything but a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split():
        return node.value.split()[0].rsplit("/", 1)[-1]
    return None


def unit_room_files() -> list[Path]:
    """Every Python file of the unit room."""
    return sorted(p for top in UNIT_ROOM for p in ([top] if top.is_file() else top.rglob("*.py")))


@pytest.mark.parametrize(
    ("planted", "needle"),
    [
        ("import subprocess\n", "import subprocess"),
        ("from subprocess import run\n", "from subprocess import"),
        ("import multiprocessing.pool\n", "import multiprocessing.pool"),
        ("from tests.helpers import nobody_command\n", "nobody_command from tests.helpers"),
        (
            "from tests.system.scripted_child import Child\n",
            "from tests.system.scripted_child import",
        ),
        ("import os\npid = os.fork()\n", "os.fork()"),
        ("import os\nos.execv('/bin/true', ['true'])\n", "os.execv()"),
        ("from os import posix_spawn\n", "os.posix_spawn"),
        ("cmd = ['setpriv', '--reuid=65534', 'id']\n", "names setpriv"),
        ("cmd = ('/usr/bin/tmux', '-L', 'x')\n", "names /usr/bin/tmux"),
        ("import shutil\nshutil.which('tmux')\n", "names tmux"),
    ],
)
def test_the_check_sees_a_process(planted: str, needle: str) -> None:
    (got,) = violations(planted)
    assert got.endswith(needle), got


def test_the_check_lets_words_pass() -> None:
    """A docstring, a set or a fake process name that mentions tmux or setpriv,
    ``os.getpid()``, the PMU probe."""
    ok = (
        '"""Unlike the tmux test, no setpriv here."""\n'
        "import os\nfrom tests.helpers import hardware_pmu_error\nos.getpid()\n"
        "PROGRAMS = {'setpriv', 'tmux'}\n"
        "fp.add(10, 'tmux: server', cmdline=b'tmux\\0new')\n"
        "assert cmdline == 'tmux new -s a'\n"
    )
    assert violations(ok) == []


def test_unit_room_starts_no_process() -> None:
    files = unit_room_files()
    assert TESTS / "unit" / "test_rooms.py" in files and TESTS / "fakeproc.py" in files
    found = {p.relative_to(TESTS).as_posix(): v for p in files if (v := violations(p.read_text()))}
    assert found == {}


def test_every_test_module_is_in_a_room() -> None:
    rooms = {"unit", "system", "hwpmu"}
    stray = [
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("test_*.py")
        if p.relative_to(TESTS).parts[0] not in rooms
    ]
    assert stray == []


def packing_markers(text: str) -> list[int]:
    """The lines of ``text`` that keep the formatter away (``fmt: skip``, ``fmt: off``)."""
    marker = re.compile(r"#\s*fmt:\s*(skip|off)\b")
    return [i for i, line in enumerate(text.splitlines(), 1) if marker.search(line)]


def test_the_packing_check_sees_a_marker() -> None:
    text = "x = [1,2]  # fmt: skip\ny = 2\n# fmt: off\nz = 3\n# fmt:on\n"
    assert packing_markers(text) == [1, 3]


def test_the_formatter_owns_layout() -> None:
    """The formatter lays out the code (docs/architecture.md, "Size"): a size is a smell
    that asks "is this one job?", never a gate to squeeze lines under, so no line count is
    checked here; what is checked is that layout is not packed by hand to hide a size.
    A true data table may keep its rows on one line each: at most MAX_PACKED markers."""
    found = {
        p.relative_to(TESTS.parent).as_posix(): lines
        for top in (TESTS.parent / "tiptop", TESTS, TESTS.parent / "benchmarks")
        for p in sorted(top.rglob("*.py"))
        if (lines := packing_markers(p.read_text())) and p.name != "test_rooms.py"
    }
    assert sum(len(v) for v in found.values()) <= MAX_PACKED, found
