"""docs/architecture.md against the code: its module table names every part of tiptop and
every engine module, and nothing else; the engine's modules import only the steps before
them, in the refresh order the document draws (``ENGINE_ORDER``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.test_layers import PKG, RULES, imports

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
    "count.exits",
    "count.units",
    "count.readout",
    "count.counters",
    "count.packing",
    "count.plan",
    "count.spawned",
    "count.attach",
    "assemble",
    "sampler",
    "replay",
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


def test_the_module_table_names_every_module_and_nothing_else() -> None:
    rows = documented()
    assert len(rows) == len(set(rows)), "a module is in the table twice"
    assert set(rows) == expected()


def test_the_table_lists_the_engine_in_refresh_order() -> None:
    engine = [r.removeprefix("engine/").replace("/", ".") for r in documented() if "engine/" in r]
    assert engine == [m for m in ENGINE_ORDER if (ENGINE / (m.replace(".", "/") + ".py")).exists()]
