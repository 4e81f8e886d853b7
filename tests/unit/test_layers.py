"""The one-way import rule (docs/architecture.md), checked with ``ast`` over tiptop/.

Each top-level part of the package may import only the parts listed for it; imports under
``if TYPE_CHECKING:`` are exempt (live gets the sampler passed in). ``tiptop/kernel/_ffi.py``
is the only file that may import cffi. A module that is in no layer fails the test: the
table must say where a new part belongs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tiptop"

#: layer -> the tiptop layers it may import (besides itself).
RULES: dict[str, set[str]] = {
    "errors": set(),
    "cells": set(),
    "host": set(),  # what this machine allows (paranoid, privileges, fd limits)
    "messages": set(),  # the one message log
    # the kernel boundary: perf_event_open (cffi), group reads, /proc readers, errno meanings
    "kernel": {"errors", "cells", "host"},
    "events": {"kernel", "errors"},
    "screens": {"errors", "cells"},
    "frame": {"cells", "messages"},
    # the refresh cycle; its own modules are ordered by ENGINE_ORDER below
    "engine": {"kernel", "events", "screens", "frame", "cells", "errors", "host", "messages"},
    "table": {"frame", "screens", "cells", "errors"},
    "options": {"errors", "screens", "cells", "table"},
    "diagnose": {
        "kernel",
        "events",
        "screens",
        "cells",
        "errors",
        "host",
    },  # --check, --list-events
    "live": {"table", "frame", "options", "cells", "errors", "host"},
    "outputs": {"table", "frame", "options", "cells", "errors"},
    "spawn": {"errors"},
    "cli": {"*"},
    "__main__": {"cli"},
    "__init__": set(),
}


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


#: The engine's modules in refresh order: each may import only the ones before it, so one
#: refresh flows one way (scan -> plan -> attach -> readout -> evaluate; the sampler
#: sequences them). docs/architecture.md draws this path.
ENGINE_ORDER = ("tasks", "readout", "plan", "attach", "evaluate", "sampler")


@pytest.mark.parametrize("path", sorted((PKG / "engine").glob("*.py")), ids=lambda p: p.name)
def test_engine_modules_import_only_earlier_steps(path: Path) -> None:
    if path.stem == "__init__":
        return
    assert path.stem in ENGINE_ORDER, f"add engine/{path.name} to ENGINE_ORDER"
    mine = ENGINE_ORDER.index(path.stem)
    bad = []
    for line, mod in imports(path):
        parts = mod.split(".")
        inner = parts[:2] == ["tiptop", "engine"] and len(parts) > 2
        if inner and (parts[2] not in ENGINE_ORDER or ENGINE_ORDER.index(parts[2]) >= mine):
            bad.append(f"line {line}: engine.{path.stem} may not import {mod}")
    assert not bad, "; ".join(bad)


def test_every_module_has_a_layer() -> None:
    unknown = sorted({layer_of(f) for f in FILES} - RULES.keys())
    assert not unknown, f"add these parts of tiptop to the layer table: {unknown}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_go_one_way(path: Path) -> None:
    layer = layer_of(path)
    allowed = RULES.get(layer, set())
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
