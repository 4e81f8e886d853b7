"""``tiptop --selftest``: plan the screen, run the kernels, fit, and print the verdicts.

One line per event of the screen plus the software events checked everywhere (task-clock,
page-faults, context-switches, when the screen lacks them), then one summary line; the exit
status is ``checks.exit_code``. See docs/selftest.md.
"""

from __future__ import annotations

import json
import math
import os

from tiptop.choices import Format
from tiptop.engine.count.plan import Planner, ScreenPlan
from tiptop.errors import EventError
from tiptop.events import resolve, resolve_numeric
from tiptop.host import Host
from tiptop.kernel.backend import Backend
from tiptop.kernel.explain import NO_PMU, NO_PMU_KEY, NO_PMU_SHORT
from tiptop.messages import MessageLog
from tiptop.screens.model import CounterSpec, NamedEvent, ScreenSpec
from tiptop.selftest.checks import (
    REPEATS,
    SIZES,
    Row,
    Verdict,
    check_for,
    exit_code,
    judge,
    pick_run,
    summary,
)
from tiptop.selftest.code import KERNELS
from tiptop.selftest.measure import ChildError, KernelChild, Run, measure

#: Software events every self-test checks, with the aliases they get when the screen lacks them.
EXTRAS = (
    ("task-clock", "st-task-clock"),
    ("page-faults", "st-page-faults"),
    ("context-switches", "st-context-switches"),
)


def _event_key(c: CounterSpec, sysfs_root: str) -> tuple[int, int] | None:
    """The perf type and config a counter resolves to here (its first binding), or None."""
    try:
        if isinstance(c.event, NamedEvent):
            b = resolve(c.event.name, sysfs_root=sysfs_root)
        else:
            b = resolve_numeric(c.event.type, c.event.config, sysfs_root=sysfs_root)
    except EventError:
        return None
    return b[0].attr.type, b[0].attr.config


def selftest_screen(screen: ScreenSpec, sysfs_root: str) -> ScreenSpec:
    """``screen``'s counters plus the software events it lacks (``EXTRAS``), no columns."""
    have = {_event_key(c, sysfs_root) for c in screen.counters}
    extra = []
    for name, alias in EXTRAS:
        c = CounterSpec(alias=alias, event=NamedEvent(name), config=name)
        if _event_key(c, sysfs_root) not in have:
            extra.append(c)
    return ScreenSpec(screen.name, screen.desc, (*screen.counters, *extra), ())


def _label(c: CounterSpec) -> str:
    return c.event.name if isinstance(c.event, NamedEvent) else c.config


def _rows(spec: ScreenSpec, splan: ScreenPlan, log: MessageLog) -> list[Row]:
    """A row per counter: unsupported (with the probe's reason) when not opened here."""
    keys: dict[int, tuple[int, int]] = {}
    for g in splan.plan.groups:
        for attr, j in zip(g.attrs, g.alias_index, strict=True):
            keys.setdefault(int(j), (attr.type, attr.config))
    rows = []
    for j, c in enumerate(spec.counters):
        row = Row(c.alias, _label(c))
        if j not in keys:
            msg = log.about(c.alias)
            row.kind = Verdict.UNSUPPORTED
            # The no-PMU sentence said short per row, whole once below the table.
            line = "not opened" if msg is None else msg.line.replace(NO_PMU, NO_PMU_SHORT)
            if msg is not None and msg.key == NO_PMU_KEY:
                line = f"{c.event_label}: ENOENT: {NO_PMU_SHORT}"  # no_pmu(): ENOENT
            row.verdict = "unsupported here: " + line
        elif (chk := check_for(*keys[j])) is not None:
            row.kernel = chk.kernel
        rows.append(row)
    return rows


def _run_kernels(
    needed: set[str], splan: ScreenPlan, planner: Planner, backend: Backend
) -> dict[str, list[list[Run]]]:
    """Every needed kernel at each of its sizes, ``REPEATS`` passes over them all in one
    child: per kernel, per size, its runs."""
    kernels = [k for k in KERNELS if k in needed]
    runs: dict[str, list[list[Run]]] = {k: [[] for _ in SIZES[k]] for k in kernels}
    with KernelChild() as child:
        for _ in range(REPEATS):
            for kernel in kernels:
                for i, n in enumerate(SIZES[kernel]):
                    runs[kernel][i].append(measure(child, kernel, n, splan, planner, backend))
    return runs


def run_selftest(screen: ScreenSpec, host: Host, backend: Backend | None = None) -> list[Row]:
    """Check ``screen``'s events (and ``EXTRAS``) on this machine; one row each."""
    if backend is None:
        from tiptop.kernel import PerfBackend

        backend = PerfBackend()
    log = MessageLog()
    planner = Planner(backend, host, log, threads=False, kernel=False)
    spec = selftest_screen(screen, host.sysfs_root)
    splan = planner.plan(spec)
    rows = _rows(spec, splan, log)
    needed = {r.kernel for r in rows if r.kernel and r.kind is not Verdict.UNSUPPORTED}
    try:
        runs = _run_kernels(needed, splan, planner, backend) if needed else {}
    except ChildError as e:
        for r in rows:
            if r.kernel in needed:
                r.kind, r.verdict = Verdict.UNSUPPORTED, f"unsupported here: {e}"
        return rows
    for j, r in enumerate(rows):
        if r.kind is Verdict.UNSUPPORTED or r.kernel not in runs:
            continue
        why = next((x.failed[j] for rs in runs[r.kernel] for x in rs if j in x.failed), None)
        if why is not None:
            r.kind, r.verdict = Verdict.UNSUPPORTED, f"unsupported here: {why}"
            continue
        key = next(
            (a.type, a.config)
            for g in splan.plan.groups
            for a, k in zip(g.attrs, g.alias_index, strict=True)
            if k == j
        )
        chk = check_for(*key)
        assert chk is not None
        picked = [
            rs[pick_run(chk, [(float(x.counts[j]), x.cpu_ns) for x in rs])] for rs in runs[r.kernel]
        ]
        judge(
            r,
            chk,
            list(SIZES[r.kernel]),
            [float(x.counts[j]) for x in picked],
            [x.cpu_ns for x in picked],
            sum(x.steal_ns for x in picked),
        )
    return rows


def _num(v: float | None, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}f}"


def format_text(screen: str, rows: list[Row], code: int) -> str:
    """The report as aligned text: a header, one line per event, the summary."""
    head = (
        f"tiptop selftest: screen '{screen}' on {os.uname().machine}; kernels counted "
        "by pid through tiptop's engine (user space only), fitted over 4 sizes "
        f"({REPEATS} runs each)"
    )
    lines = [
        head,
        f"{'EVENT':<28} {'KERNEL':<10} {'PREDICTED':>10} {'SLOPE':>12} "
        f"{'INTERCEPT':>11} {'R2':>10}  VERDICT",
    ]
    for r in rows:
        name = r.event if r.alias.startswith("st-") else f"{r.event} ({r.alias})"
        lines.append(
            f"{name:<28} {r.kernel or '-':<10} {_num(r.predicted):>10} {_num(r.slope, 6):>12} "
            f"{_num(r.intercept, 1):>11} {_num(r.r2, 6):>10}  {r.verdict}"
        )
    if any(r.verdict.endswith(NO_PMU_SHORT) for r in rows):
        lines.append(NO_PMU)
    lines.append(summary(rows, code))
    return "\n".join(lines) + "\n"


def format_json(screen: str, rows: list[Row], code: int) -> str:
    """The report as one JSON document (``--format json``)."""
    doc = {
        "screen": screen,
        "arch": os.uname().machine,
        "exit": code,
        "summary": summary(rows, code),
        "events": [r.as_dict() for r in rows],
    }
    return json.dumps(doc, indent=1) + "\n"


def selftest_main(screen: ScreenSpec, host: Host, fmt: Format = Format.TEXT) -> tuple[str, int]:
    """Run the self-test; the report in ``fmt`` (text or json) and the exit status."""
    rows = run_selftest(screen, host)
    code = exit_code(rows)
    out = format_json if fmt is Format.JSON else format_text
    return out(screen.name, rows, code), code
