"""The one-way import rule (docs/architecture.md), checked with ``ast`` over tiptop/.

Each top-level part of the package may import only the parts listed for it; imports under
``if TYPE_CHECKING:`` are exempt (live gets the sampler passed in). ``tiptop/kernel/_ffi.py``
is the only file that may import cffi. A module that is in no layer fails the test: the
table must say where a new part belongs.

Also checked here: no import cycle between tiptop's modules, no design cycle (a class that
declares attributes or stub methods another class provides, as a mixin does), and at most
one catch-all ``except``, the live loop's last resort.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tiptop"

#: layer -> the tiptop layers it may import (besides itself).
RULES: dict[str, set[str]] = {
    "readonly": set(),  # the read-only record decorator, which every layer may use
    "outside": set(),  # the one boundary of outside text (decoded, printable): every layer's
    "choices": set(),  # the words a user picks among (--format, --by): every layer's
    "errors": set(),
    "cells": set(),
    "host": set(),  # what this machine allows (paranoid, privileges, fd limits)
    "messages": set(),  # the one message log
    "refresh": {"messages"},  # the one loop that hands frames to a consumer
    "files": {"errors"},  # files a user names to be written (regular files only); a kind in words
    "workload": set(),  # who runs in a cgroup, by name: the record (every layer may import it)
    # a cgroup's workload from its path and the container runtimes' state on disk
    "runtimes": {"kernel"},
    "vocab": set(),  # perf_event's vocabulary: event types, ids, perf's and the original's names
    # the kernel boundary: perf_event_open (cffi), group reads, /proc readers, errno meanings
    "kernel": {"errors", "cells", "host", "vocab"},
    "events": {"kernel", "errors", "vocab"},
    "screens": {"errors", "cells", "vocab", "frame"},
    "frame": {"cells", "messages"},
    # the refresh cycle; its own modules are ordered by ENGINE_ORDER below
    "engine": {
        "kernel",
        "events",
        "screens",
        "frame",
        "cells",
        "errors",
        "host",
        "messages",
        "vocab",
    },
    "table": {"frame", "screens", "cells", "errors"},
    "options": {"errors", "screens", "cells", "table", "frame"},
    # --check, --list-events
    "diagnose": {"kernel", "events", "screens", "cells", "errors", "host", "vocab"},
    "live": {"table", "frame", "options", "cells", "errors", "host", "refresh", "where"},
    "outputs": {"table", "frame", "options", "cells", "errors", "refresh", "where"},
    # --where: one process sampled (kernel/ring), its samples named (ELF symbols, JIT maps)
    "where": {"kernel", "events", "errors", "host", "messages", "vocab", "files"},
    "recording": {"frame", "screens", "cells", "errors", "messages", "files"},  # --record
    "spawn": {"errors"},
    # --serve, --textfile: frames as Prometheus metrics (the only prometheus_client importer)
    "exporter": {
        "frame",
        "cells",
        "errors",
        "vocab",
        "kernel",
        "refresh",
        "screens",
        "files",
        "runtimes",
    },
    # sources built on another source: rows summed by cgroup
    "sources": {"frame", "screens", "kernel", "cells", "runtimes"},
    # --selftest: known-count kernels counted through the engine
    "selftest": {"engine", "events", "kernel", "screens", "host", "messages", "errors", "vocab"},
    "cli": {"*"},
    "__main__": {"cli"},
    "__init__": set(),
}


#: Layers every layer may import, as it may the standard library.
EVERYWHERE = {"readonly", "outside", "workload", "choices"}


def layer_of(path: Path) -> str:
    """``tiptop/kernel/group.py`` -> ``kernel``; ``tiptop/tasks.py`` -> ``tasks``."""
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    for n in ast.walk(sub):
                        if hasattr(n, "lineno"):
                            lines.add(n.lineno)
    return lines


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import outside ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_lines(tree)
    pkg_parts = ["tiptop", *path.relative_to(PKG).parts[:-1]]
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[: len(pkg_parts) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from tiptop import events``, ``from tiptop.engine import tasks``: the module
            # imported is the name when it is a module of its own.
            subs = [f"{mod}.{a.name}" for a in node.names if _is_module(f"{mod}.{a.name}")]
            out += [(node.lineno, m) for m in subs] if subs else [(node.lineno, mod)]
    return out


def _is_module(dotted: str) -> bool:
    """Whether ``tiptop.a.b`` names a module or package of tiptop (not a class)."""
    parts = dotted.split(".")
    if parts[0] != "tiptop":
        return False
    base = PKG.joinpath(*parts[1:])
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


FILES = sorted(PKG.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unknown = sorted({layer_of(f) for f in FILES} - RULES.keys())
    assert not unknown, f"add these parts of tiptop to the layer table: {unknown}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_go_one_way(path: Path) -> None:
    layer = layer_of(path)
    allowed = RULES.get(layer, set()) | EVERYWHERE
    bad = []
    for line, mod in imports(path):
        parts = mod.split(".")
        if parts[0] == "cffi" and path.relative_to(PKG).as_posix() != "kernel/_ffi.py":
            bad.append(f"line {line}: cffi outside kernel/_ffi.py")
        if parts[0] != "tiptop" or len(parts) < 2:
            continue
        target = parts[1]
        if target != layer and "*" not in allowed and target not in allowed:
            bad.append(f"line {line}: {layer} may not import tiptop.{target}")
    assert not bad, f"{path.relative_to(PKG)}: " + "; ".join(bad)


def test_the_checker_catches_a_bad_import() -> None:
    """The rule checker itself must be able to fail (a test that cannot fail is a defect)."""
    bad = PKG / "frame.py"
    src = "from tiptop.engine import sampler\nfrom .kernel import group\nimport cffi\n"
    tree_imports = [m for _, m in imports_of_text(src, bad)]
    assert "tiptop.engine.sampler" in tree_imports
    assert "tiptop.kernel.group" in tree_imports  # resolved against frame.py's package
    assert "cffi" in tree_imports


def imports_of_text(src: str, as_path: Path) -> list[tuple[int, str]]:
    """:func:`imports` of ``src`` as if it were the file ``as_path``."""
    orig = Path.read_text
    try:
        Path.read_text = lambda self, *a, **k: src  # type: ignore[method-assign]
        return imports(as_path)
    finally:
        Path.read_text = orig  # type: ignore[method-assign]


def test_type_checking_imports_are_exempt() -> None:
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tiptop.engine.sampler import Sampler\n"
        "from tiptop import table\n"
    )
    mods = [m for _, m in imports_of_text(src, PKG / "live" / "app.py")]
    assert mods == ["typing", "tiptop.table"]


# ---------------------------------------------------------------- design cycles

#: Bases whose subclasses declare fields by design (the checker below skips them).
DECLARING_BASES = frozenset({"Protocol", "NamedTuple", "TypedDict"})
#: Decorators whose classes declare fields by design: dataclasses and records (tiptop.readonly).
DECLARING_DECORATORS = frozenset({"dataclass", "readonly", "by_value", "mutable"})


def _base_name(node: ast.expr) -> str | None:
    """``Protocol``, ``typing.Protocol``, ``Protocol[T]``, ``dataclass(frozen=True)`` ->
    the bare name."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _is_stub(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body of only ``...`` or ``pass`` (after an optional docstring)."""
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:] if isinstance(body[0].value.value, str) else body
    return all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is ...)
        for s in body
    )


def _assigned_on_self(cls: ast.ClassDef) -> set[str]:
    """The attributes the class's own methods assign on their first argument."""
    out: set[str] = set()
    for func in cls.body:
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) or not func.args.args:
            continue
        me = func.args.args[0].arg
        for n in ast.walk(func):
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name)
                and n.value.id == me
            ):
                out.add(n.attr)
    return out


def design_cycles(tree: ast.AST) -> list[str]:
    """Classes that declare what another class provides: a bare annotation ``name: T`` for
    an attribute none of the class's own methods assigns, or a stub method (``...``).
    Protocols, NamedTuples, TypedDicts, dataclasses and read-only records declare by design
    and are skipped."""
    bad = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        if any(_base_name(b) in DECLARING_BASES for b in cls.bases) or any(
            _base_name(d) in DECLARING_DECORATORS for d in cls.decorator_list
        ):
            continue
        mine = _assigned_on_self(cls)
        for s in cls.body:
            if isinstance(s, ast.AnnAssign) and s.value is None and isinstance(s.target, ast.Name):
                if s.target.id not in mine:
                    bad.append(f"line {s.lineno}: {cls.name} declares {s.target.id!r}")
            elif isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and _is_stub(s):
                overload = any(_base_name(d) == "overload" for d in s.decorator_list)
                if not overload:
                    bad.append(f"line {s.lineno}: {cls.name}.{s.name} is a stub")
    return bad


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_no_class_declares_another_s_attributes(path: Path) -> None:
    """No design cycle: a class that needs another's state is handed it (composition), it
    does not declare it for a subclass or mixin host to provide."""
    bad = design_cycles(ast.parse(path.read_text(), str(path)))
    assert not bad, f"{path.relative_to(PKG)}: " + "; ".join(bad)


def test_the_design_check_catches_a_mixin() -> None:
    """The shape of the old live ``KeyHandlers`` mixin fails; a Protocol, a dataclass and a
    class that assigns what it declares pass."""
    mixin = (
        "class KeyHandlers:\n"
        "    view: Any\n"
        "    delay: float\n"
        "    def _ask(self):\n        self.delay = 1.0\n"
        "    def restart(self, **config): ...\n"
        "    @property\n    def screen(self):\n        '''The screen.'''\n        ...\n"
    )
    assert design_cycles(ast.parse(mixin)) == [
        "line 2: KeyHandlers declares 'view'",
        "line 6: KeyHandlers.restart is a stub",
        "line 8: KeyHandlers.screen is a stub",
    ]
    fine = (
        "class Source(typing.Protocol):\n    messages: Log\n    def refresh(self): ...\n"
        "@dataclasses.dataclass(frozen=True)\nclass Rec:\n    x: int\n"
        "@readonly\nclass Made:\n    y: int\n"
        "class Own:\n    x: int\n    def __init__(self):\n        self.x = 1\n"
    )
    assert design_cycles(ast.parse(fine)) == []


# ---------------------------------------------------------------- import cycles


def _module_name(path: Path) -> str:
    """``tiptop/live/app.py`` -> ``tiptop.live.app``; a package's ``__init__`` -> its name."""
    parts = ["tiptop", *path.relative_to(PKG).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """tiptop module -> the tiptop modules it imports (anywhere in it, lazily too; a name
    imported from a module counts as that module)."""
    mods = {_module_name(p): p for p in FILES}
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        graph[name] = set()
        for _, mod in imports(path):
            while mod and mod not in mods:
                mod = mod.rpartition(".")[0]
            if mod and mod != name:
                graph[name].add(mod)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle ``[a, b, ..., a]`` in ``graph``, or ``[]`` when there is none."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for nxt in sorted(graph.get(node, ())):
            found = visit(nxt, [*path, node])
            if found:
                return found
        done.add(node)
        return []

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return []


def test_no_runtime_import_cycle() -> None:
    """No two tiptop modules import each other, directly or around a loop, even lazily
    (a function-level import is how a cycle usually hides)."""
    cycle = find_cycle(import_graph())
    assert not cycle, " -> ".join(cycle)


def test_the_cycle_finder_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


# ---------------------------------------------------------------- catch-all handlers

#: Where the one catch-all handler tiptop may have would go: the live loop's last resort
#: (restore the terminal, then report). ``(file under tiptop/, function)``.
LAST_RESORTS = {
    ("live/app.py", "LiveApp.run"),
    # Issue 37: whatever answering one request raises answers it 500 (or closes it), never
    # stops the exporter's HTTP loop.
    ("exporter/httpd.py", "MetricsServer._step"),
}


def catch_alls(tree: ast.AST) -> list[tuple[str, int]]:
    """``(enclosing function, line)`` of every ``except:``, ``except Exception`` and
    ``except BaseException`` (alone or in a tuple)."""
    broad = {"Exception", "BaseException"}
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, where: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, [*where, child.name])
                continue
            if isinstance(child, ast.ExceptHandler):
                kinds = child.type.elts if isinstance(child.type, ast.Tuple) else [child.type]
                if child.type is None or any(_base_name(k) in broad for k in kinds if k):
                    found.append((".".join(where) or "<module>", child.lineno))
            visit(child, where)

    visit(tree, [])
    return found


def test_at_most_one_catch_all_handler() -> None:
    """Errors are caught by kind where they can happen; a handler that catches everything
    is only a last resort: the live loop's, and the exporter's HTTP loop's (one each)."""
    found = [
        (path.relative_to(PKG).as_posix(), func, line)
        for path in FILES
        for func, line in catch_alls(ast.parse(path.read_text(), str(path)))
    ]
    assert len(found) <= len(LAST_RESORTS), f"more catch-all handlers than places: {found}"
    assert all((f, func) in LAST_RESORTS for f, func, _ in found), (
        f"a catch-all handler outside {LAST_RESORTS}: {found}"
    )


def test_the_catch_all_check_sees_each_form() -> None:
    src = (
        "def f():\n    try:\n        pass\n    except:\n        pass\n"
        "class C:\n    def g(self):\n        try:\n            pass\n"
        "        except (OSError, builtins.Exception):\n            pass\n"
        "try:\n    pass\nexcept BaseException:\n    pass\n"
        "try:\n    pass\nexcept (OSError, ValueError):\n    pass\n"
    )
    assert catch_alls(ast.parse(src)) == [("f", 4), ("C.g", 10), ("<module>", 14)]
