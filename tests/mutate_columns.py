"""A mutation check of the built-in screens' tests: does a change of one event in a column
fail a test? For each counter-reading column of every built-in variant (or a random sample
of them), the column's expression is made to read one other event of its screen in place of
one it reads (another counter alias whose event differs: ``delta(FLT)`` becomes
``delta(FLOP)``), the screen tests are run on that change in this process, and the change is
undone. A change that no test fails survives. Run from the repository root::

    python3 -m tests.mutate_columns                    # every column, one change each
    python3 -m tests.mutate_columns --sample 40 --seed 7
    python3 -m tests.mutate_columns --every            # every change of every column

The tests run first unchanged (they must pass); the exit status is 0 when no change
survives, 1 when one does (each is listed), 2 when the unchanged tests fail. The screens'
own tests are the ones run (:data:`TESTS`): the oracle comparison with the kernel's tables
(tests/unit/test_oracle_screens.py), the fixed-count values (test_screen_values.py), the
bottleneck draws and the vendors' screen tests. Not collected by pytest (no ``test_``
prefix); it reads tests/ and tiptop/ only, and changes the loaded screens in memory only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import sys
import time
from dataclasses import dataclass

import pytest

from tiptop.screens.build import RawItem, RawScreen
from tiptop.screens.builtin_data import SCREENS
from tiptop.screens.expr import compile_column

#: The test files run on each change, the fast ones first (``-x`` stops at a failure).
TESTS = (
    "tests/unit/test_screen_values.py",
    "tests/unit/test_oracle_screens.py",
    "tests/unit/test_amd_screens.py",
    "tests/unit/test_intel_screens.py",
    "tests/unit/test_arm_screens.py",
    "tests/unit/test_builtin_screens.py",
    "tests/unit/test_bottleneck.py",
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Mutant:
    """One change: in ``column`` of ``variant``, the occurrence of ``old`` at ``at`` reads
    ``new``."""

    variant: str
    column: str
    item: RawItem
    at: int
    old: str
    new: str

    @property
    def expr(self) -> str:
        """The changed expression."""
        text = self.item.attrs["expr"]
        return text[: self.at] + self.new + text[self.at + len(self.old) :]

    def __str__(self) -> str:
        return f"{self.variant} {self.column!r}: {self.old} -> {self.new}: {self.expr}"


def _events(raw: RawScreen) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each counter alias of ``raw`` and what it counts (every gated alternative)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for i in raw.items:
        if i.kind == "counter":
            event = (i.attrs["config"], i.attrs.get("type", ""))
            out.setdefault(i.attrs["alias"], []).append(event)
    return {a: tuple(sorted(e)) for a, e in out.items()}


def columns() -> list[tuple[str, RawScreen, RawItem]]:
    """Every counter-reading column of every built-in variant, as ``(variant id, screen,
    column item)``; variant ids as the oracle tests name them."""
    out = []
    for fname, raws in SCREENS.items():
        for raw in raws:
            first = (raw.model or "any").split(";")[0].split("-")[0]
            for item in raw.items:
                expr = item.attrs.get("expr", "")
                path = expr.lstrip().startswith("bottleneck")
                if item.kind == "column" and not path and compile_column(expr).aliases:
                    out.append((f"{fname}:{raw.name}:{first}", raw, item))
    return out


def mutants(variant: str, raw: RawScreen, item: RawItem) -> list[Mutant]:
    """Every one-event change of the column ``item``: each occurrence of a counter alias
    read in place of each alias whose event differs (``CYC2``, a second ``ls_not_halted_cyc``
    for another group, is no change of ``CYC``)."""
    events = _events(raw)
    header = item.attrs["header"].strip()
    out = []
    for m in _NAME.finditer(item.attrs["expr"]):
        old = m[0]
        if old not in events:
            continue
        for new in events:
            if events[new] != events[old]:
                out.append(Mutant(variant, header, item, m.start(), old, new))
    return out


def run_tests() -> int:
    """The screen tests, quietly, stopping at the first failure: pytest's exit code."""
    args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *TESTS]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return int(pytest.main(args))


def survives(mutant: Mutant) -> bool:
    """Whether every screen test passes with ``mutant`` applied (undone afterwards)."""
    original = mutant.item.attrs["expr"]
    mutant.item.attrs["expr"] = mutant.expr
    try:
        code = run_tests()
    finally:
        mutant.item.attrs["expr"] = original
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the tests did not run ({pytest.ExitCode(code).name}): {mutant}")
    return code == pytest.ExitCode.OK


def main(argv: list[str]) -> int:
    """Parse ``argv``, run the chosen changes, print the survivors; the exit status."""
    ap = argparse.ArgumentParser(prog="python3 -m tests.mutate_columns", description=__doc__)
    ap.add_argument("--sample", type=int, help="this many columns, drawn at random")
    ap.add_argument("--seed", default="issue-51", help="the draw's seed (one change per column)")
    ap.add_argument("--every", action="store_true", help="every change of each column")
    opts = ap.parse_args(argv)
    rng = random.Random(opts.seed)
    chosen = columns()
    if opts.sample is not None:
        chosen = rng.sample(chosen, min(opts.sample, len(chosen)))
    todo: list[Mutant] = []
    for variant, raw, item in chosen:
        options = mutants(variant, raw, item)
        if options:  # a column whose screen has one event has no other to read
            todo += options if opts.every else [rng.choice(options)]
    if run_tests() != pytest.ExitCode.OK:
        print("the screen tests fail unchanged: fix them first", file=sys.stderr)
        return 2
    start = time.monotonic()
    survivors = [m for m in todo if survives(m)]
    took = time.monotonic() - start
    print(
        f"{len(chosen)} columns, {len(todo)} one-event changes, {len(survivors)} survived "
        f"({took:.0f} s)"
    )
    for m in survivors:
        print(f"  survived: {m}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
