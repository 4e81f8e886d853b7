"""docs/architecture.md against the code: its module table names every part of tiptop and
every engine module, and nothing else; the engine's modules import only the steps before
them, in the refresh order the document draws (``ENGINE_ORDER``); and the invariants it
states that a cheap look at the code can check: which module alone imports cffi,
prometheus_client and urwid, the ``FrameSource`` protocol's members, wrappers that forward
every call, both counter backends implementing the whole protocol, and no errno compared in
the engine."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from tests.unit.test_layers import FILES, PKG, RULES, imports

DOC = PKG.parent / "docs" / "architecture.md"

#: The engine's modules in refresh order: each may import only the ones before it, so one
#: refresh flows one way (scan -> the hand-off -> count -> assemble; the sampler sequences
#: them). docs/architecture.md draws this path.
ENGINE_ORDER = (
    "scan.task",
    "activity",
    "scan.listing",
    "scan.trees",
    "scan.threadscan",
    "scan.tasks",
    "scan.times",
    "count.exits",
    "count.units",
    "count.readout",
    "count.counters",
    "count.packing",
    "count.plan",
    "count.cgroups",
    "count.spawned",
    "count.attach",
    "assemble",
    "cgroupwalk",
    "sampler",
)
ENGINE = PKG / "engine"


def engine_name(path: Path) -> str:
    """``tiptop/engine/scan/tasks.py`` -> ``scan.tasks``."""
    return ".".join(path.relative_to(ENGINE).with_suffix("").parts)


@pytest.mark.parametrize("path", sorted(ENGINE.rglob("*.py")), ids=engine_name)
def test_engine_modules_import_only_earlier_steps(path: Path) -> None:
    if path.stem == "__init__":
        return
    name = engine_name(path)
    assert name in ENGINE_ORDER, f"add engine/{name} to ENGINE_ORDER"
    mine = ENGINE_ORDER.index(name)
    bad = []
    for line, mod in imports(path):
        inner = mod.removeprefix("tiptop.engine.")
        if mod.startswith("tiptop.engine.") and (
            inner not in ENGINE_ORDER or ENGINE_ORDER.index(inner) >= mine
        ):
            bad.append(f"line {line}: engine.{name} may not import {mod}")
    assert not bad, "; ".join(bad)


def documented() -> list[str]:
    """The first column of the document's module table: ``engine/scan/tasks``, ``kernel/``."""
    text = DOC.read_text()
    table = text[text.index("## Modules") :]
    return re.findall(r"^\| `([\w/]+)` \|", table, re.MULTILINE)


def expected() -> set[str]:
    """What the table must name: each part of tiptop outside the engine (``x/`` for a
    package, ``x`` for a module) and each module of the engine."""
    parts = {
        f"{name}/" if (PKG / name).is_dir() else name
        for name in RULES
        if name not in ("engine", "__init__", "__main__")
    }
    engine = {
        "engine/" + engine_name(p).replace(".", "/")
        for p in ENGINE.rglob("*.py")
        if p.stem != "__init__"
    }
    return parts | engine


def test_engine_order_names_only_modules_that_exist() -> None:
    gone = [m for m in ENGINE_ORDER if not (ENGINE / (m.replace(".", "/") + ".py")).exists()]
    assert not gone, f"ENGINE_ORDER names modules that do not exist: {gone}"


def test_the_module_table_names_every_module_and_nothing_else() -> None:
    rows = documented()
    assert len(rows) == len(set(rows)), "a module is in the table twice"
    assert set(rows) == expected()


def test_the_table_lists_the_engine_in_refresh_order() -> None:
    engine = [r.removeprefix("engine/").replace("/", ".") for r in documented() if "engine/" in r]
    assert engine == list(ENGINE_ORDER)


# ---------------------------------------------------------------- the document's invariants


def _every_import(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of ``path``, those under ``if TYPE_CHECKING`` and
    inside functions included (a rule about who may import a library holds for all)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.lineno, node.module or ""))
    return out


def importers(library: str) -> set[str]:
    """The files of tiptop (``kernel/_ffi.py``) that import ``library`` or a module of it."""
    return {
        path.relative_to(PKG).as_posix()
        for path in FILES
        for _line, mod in _every_import(path)
        if mod == library or mod.startswith(library + ".")
    }


@pytest.mark.parametrize(
    ("library", "allowed"),
    [
        ("cffi", {"kernel/_ffi.py"}),  # "_ffi.py is the only cffi importer"
        ("prometheus_client", {"exporter/serve.py"}),  # "`serve`, its only importer"
        ("pycxxfilt", {"where/demangle.py"}),  # "`demangle`, its only importer"
        ("urwid", "live/"),  # "live/ (urwid)": the display is the live package's alone
    ],
)
def test_a_library_is_imported_only_where_the_document_says(
    library: str, allowed: set[str] | str
) -> None:
    found = importers(library)
    assert found, f"nothing imports {library}: the rule checks nothing"
    if isinstance(allowed, str):
        bad = {f for f in found if not f.startswith(allowed)}
    else:
        bad = found - allowed
    assert not bad, f"{library} imported outside what docs/architecture.md allows: {sorted(bad)}"


def test_the_import_rule_sees_imports_inside_functions_and_type_checking() -> None:
    """:func:`_every_import` finds what a narrower walk would miss (so the test above can
    fail)."""
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import urwid\n"
        "def f() -> None:\n    from prometheus_client import core\n"
    )
    probe = PKG / "frame.py"
    orig = Path.read_text
    try:
        Path.read_text = lambda self, *a, **k: src if self == probe else orig(self, *a, **k)  # type: ignore[method-assign]
        assert "frame.py" in importers("urwid") and "frame.py" in importers("prometheus_client")
    finally:
        Path.read_text = orig  # type: ignore[method-assign]


def _protocol_members(cls: type) -> set[str]:
    """The public methods, properties and annotated attributes ``cls`` declares itself."""
    names = {n for n in vars(cls) if not n.startswith("_")}
    return names | {n for n in getattr(cls, "__annotations__", {}) if not n.startswith("_")}


def test_the_frame_source_protocol_is_what_the_document_lists() -> None:
    """docs/architecture.md names the ``frame.FrameSource`` protocol's members; the
    protocol has exactly those."""
    from tiptop.frame import FrameSource

    text = DOC.read_text()
    start = text.index("`frame.FrameSource` protocol (")
    listed = set(re.findall(r"`(\w+)", text[start : text.index("defaults)", start)])) - {"frame"}
    assert _protocol_members(FrameSource) == listed


def test_wrappers_extend_source_wrapper() -> None:
    """ "Wrappers (recording, cgroup rows) extend `frame.SourceWrapper`, which forwards
    every call": each call of the protocol is forwarded."""
    from tiptop.frame import FrameSource, SourceWrapper
    from tiptop.recording.writer import RecordingSource
    from tiptop.sources.bycgroup import CgroupSource

    assert issubclass(RecordingSource, SourceWrapper) and issubclass(CgroupSource, SourceWrapper)
    calls = {n for n, f in vars(FrameSource).items() if not n.startswith("_") and callable(f)}
    assert calls
    assert {n for n in calls if n not in vars(SourceWrapper)} == set()


def test_both_backends_implement_every_call_of_the_protocol() -> None:
    """ "The kernel's (`kernel/group.PerfBackend`) and the tests' FAKE one implement all of
    them": every method and property of ``Backend`` and ``Group``."""
    from tests.support.fake_backend import FakeBackend, FakeGroup
    from tiptop.kernel.backend import Backend, Group
    from tiptop.kernel.group import CounterGroup, PerfBackend

    for protocol, impls in (
        (Backend, (PerfBackend, FakeBackend)),
        (Group, (CounterGroup, FakeGroup)),
    ):
        calls = {n for n in vars(protocol) if not n.startswith("_")}
        assert calls, protocol
        for impl in impls:
            # attributes set on the instance
            made = inspect.getsource(impl.__init__) if "__init__" in vars(impl) else ""
            missing = sorted(n for n in calls if not hasattr(impl, n) and f"self.{n} =" not in made)
            assert not missing, f"{impl.__name__} lacks {missing} of {protocol.__name__}"


def test_the_engine_never_compares_errno_values() -> None:
    """ "The engine asks 'is the task gone?' or 'out of fds?', never compares errno values":
    no comparison in tiptop/engine/ reads ``errno.X`` or ``.errno``."""
    bad = []
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            for part in ast.walk(node):
                is_errno = isinstance(part, ast.Attribute) and (
                    part.attr == "errno"
                    or (isinstance(part.value, ast.Name) and part.value.id == "errno")
                )
                if is_errno:
                    bad.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert not bad, f"errno compared in the engine: {bad}"
