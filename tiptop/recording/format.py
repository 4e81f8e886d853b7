"""The recording format, in one place: its version, its limits, and each kind of line
written (``tiptop.recording.writer``) and checked when read (``tiptop.recording.reader``).

A recording is JSON lines (docs/guide.md, "Recording format"): a header line
(``tiptop_recording``: the format version, where and how it was recorded, the screen shown),
a ``screen`` line whenever the screen shown changed, per refresh an optional ``facts`` line
(pid, user, name and command line of the tasks first seen or changed; who runs in the
cgroups first seen, numbered) and one frame line (``{"t": ...``: the refresh's time,
interval and per task its numbers, and the number of who runs in its cgroup). A header line later in
the file starts another session appended to it.

Reading checks every value's type and every list's length against the frame's task count
here, so a damaged line is one :class:`FormatError` saying what is wrong, never a crash
later when it is shown. Every text read back is outside text (a recording may be crafted):
it is made printable here (``tiptop.outside``), so that no escape sequence in a name, a
command line or a screen's text reaches a terminal from a replay.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import field

import numpy as np

from tiptop.cells import STATUS_DTYPE, Status
from tiptop.frame import Context, Pressure
from tiptop.outside import printable, shown
from tiptop.readonly import mutable, readonly
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec
from tiptop.screens.printf import check_formats
from tiptop.workload import FIELDS, KINDS, Workload, WorkloadKind

#: The format version written and read.
FORMAT_VERSION = 1

#: The longest line read (a frame of 100,000 tasks fits); a longer one is skipped.
MAX_LINE = 16 << 20
#: The most bytes of a recording read (after decompression); the rest is left unread.
MAX_BYTES = 4 << 30
#: The most refreshes read (eleven days at one a second).
MAX_FRAMES = 1_000_000
#: The most distinct task facts kept (pid, user, name, command line).
MAX_FACTS = 1_000_000
#: After this many damaged lines the file is read no further.
MAX_DAMAGED = 10_000
#: The longest text of a screen (a name, header, format or expression) and the most
#: counters or columns a recorded screen may have.
MAX_TEXT = 4096
MAX_ITEMS = 256

_MiB = 1 << 20
_STATUSES = max(int(s) for s in Status)
_NUMBER_TYPES = {int, float, type(None)}  # JSON's numbers and null (nan)


#: A JSON value as written (what ``json.dumps`` takes). A line read is checked value by
#: value from ``object`` instead: nothing parsed is trusted to have this shape.
JsonValue = str | int | float | bool | None | Sequence["JsonValue"] | Mapping[str, "JsonValue"]
#: A JSON object as written: one line of a recording, or an object within one.
JsonObject = dict[str, JsonValue]


class FormatError(ValueError):
    """What is wrong with one line (a phrase, without the file or line number)."""


def line_limit() -> str:
    """The line length limit in words, for the messages that hit it."""
    return f"{MAX_LINE // _MiB} MiB (the longest line read)"


def bytes_limit() -> str:
    """The size limit in words, for the message that hits it."""
    return f"{MAX_BYTES >> 30} GiB (the most read of a recording)"


# --------------------------------------------------------------------------- screens


def screen_record(screen: ScreenSpec) -> JsonObject:
    """A screen's counters and columns as a header or ``screen`` line stores them."""
    return {
        "name": screen.name,
        "desc": screen.desc,
        "counters": [
            {"alias": c.alias, "config": c.config, "type": c.type} for c in screen.counters
        ],
        "columns": [c.written() for c in screen.columns],
        **({"breakdown": list(screen.breakdown)} if screen.breakdown else {}),
    }


def _text(d: Mapping[str, object], key: str, where: str, default: str | None = None) -> str:
    x = d.get(key, default)
    if not isinstance(x, str) or len(x) > MAX_TEXT:
        raise FormatError(f"{where}: '{key}' is not a text of at most {MAX_TEXT} characters")
    return printable(x)


def _items(d: Mapping[str, object], key: str, where: str) -> list[dict[str, object]]:
    x = d.get(key, [])
    if not isinstance(x, list) or len(x) > MAX_ITEMS or not all(isinstance(i, dict) for i in x):
        raise FormatError(f"{where}: '{key}' is not a list of at most {MAX_ITEMS} objects")
    return x


def _threshold(c: Mapping[str, object], where: str) -> float | None:
    x = c.get("threshold")
    if x is None:
        return None
    if (f := finite(x)) is None:
        raise FormatError(f"{where}: 'threshold' is not a number")
    return f


def screen_from_record(d: object) -> ScreenSpec:
    """The screen a header or ``screen`` line describes (events kept as names, never
    resolved); :class:`FormatError` when it is not one that can be shown."""
    if not isinstance(d, dict):
        raise FormatError("'screen' is not an object")
    name = _text(d, "name", "screen")
    where = f"screen '{name}'"
    counters = tuple(
        CounterSpec(
            _text(c, "alias", where),
            NamedEvent(_text(c, "config", where)),
            _text(c, "config", where),
            _type_name(c.get("type")),
        )
        for c in _items(d, "counters", where)
    )
    columns = tuple(
        ColumnSpec(
            _text(c, "header", where),
            _text(c, "format", where),
            _text(c, "expr", where),
            _text(c, "desc", where, "(unknown)"),
            _threshold(c, where),
            c.get("threshold_below") is True,
        )
        for c in _items(d, "columns", where)
    )
    if not columns:
        raise FormatError(f"{where} has no columns")
    breakdown = d.get("breakdown", [])  # absent from recordings made before it
    if not isinstance(breakdown, list) or not all(isinstance(b, str) for b in breakdown):
        raise FormatError(f"{where}: 'breakdown' is not a list of headers")
    screen = ScreenSpec(
        name,
        _text(d, "desc", where, ""),
        counters,
        columns,
        source="recording",
        breakdown=tuple(map(printable, breakdown)),
    )
    try:
        check_formats(screen)
    except ValueError as exc:  # SpecError
        raise FormatError(str(exc)) from None
    return screen  # a column whose expression does not compile reads '?', as when loaded


def _type_name(x: object) -> str | None:
    """A counter's recorded ``type`` (a text), or None."""
    return x if isinstance(x, str) else None


def screen_number(d: object) -> int | None:
    """The number a header or ``screen`` line's screen had in the recording session
    (``number``, from 0 to :data:`MAX_ITEMS`); None when the line does not say (a
    recording made before screens carried it) or says something else."""
    x = d.get("number") if isinstance(d, dict) else None
    return x if type(x) is int and 0 <= x <= MAX_ITEMS else None


# --------------------------------------------------------------------------- header


@readonly
class RecordedOptions:
    """What the recording run watched (``tiptop.cli.record`` writes them in the header's
    ``options``), each checked."""

    show_idle: bool = False
    only_pid: int | None = None
    only_name: str | None = None
    uid: int | None = None
    user_name: str | None = None
    #: Who runs in each task's cgroup was recorded (``workloads``, ``wl``): a replay can
    #: show rows by cgroup.
    cgroups: bool = False


@mutable
class Header:
    """A session's header line, each value checked (a wrong one is left at its default and
    said in ``problems``)."""

    screen: ScreenSpec | None
    started: float | None = None
    interval: float | None = None
    screen_index: int = 0
    #: The first screen's number in the session (its ``number``, else ``screen_index``).
    screen_number: int | None = None
    pid_width: int | None = None
    host: str = "?"
    #: What the recording run watched.
    options: RecordedOptions = field(default_factory=RecordedOptions)
    raw: Mapping[str, object] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def is_header(d: Mapping[str, object]) -> bool:
    """Whether a parsed line is a session's header."""
    return "tiptop_recording" in d


def header_from(d: Mapping[str, object]) -> Header:
    """A header line checked; :class:`FormatError` when its version is not this one's or its
    screen cannot be shown (other wrong values: their defaults, in ``problems``)."""
    version = d.get("tiptop_recording")
    if type(version) is not int or version != FORMAT_VERSION:
        raise FormatError(
            f"recording format {shown(str(version), 20)}; this tiptop reads format {FORMAT_VERSION}"
        )
    h = Header(screen=screen_from_record(d.get("screen")), raw=d)

    def number(key: str, low: float, high: float) -> float | None:
        x = d.get(key)
        if x is None:
            return None
        if isinstance(x, bool) or not isinstance(x, int | float) or not low <= x <= high:
            h.problems.append(f"header '{key}' is not a number from {low:g} to {high:g}: ignored")
            return None
        return x

    h.started = number("started", 0, 1e11)
    h.interval = number("interval", 0.0001, 1e6)
    index = number("screen_index", 0, MAX_ITEMS)
    h.screen_index = int(index or 0)
    h.screen_number = screen_number(d.get("screen"))
    if h.screen_number is None and index is not None:
        h.screen_number = int(index)
    width = number("pid_width", 1, 20)
    h.pid_width = int(width) if width is not None else None
    host = d.get("host")
    h.host = printable(host[:MAX_TEXT]) if isinstance(host, str) else "?"
    opts = d.get("options", {})
    if not isinstance(opts, dict):
        h.problems.append("header 'options' is not an object: ignored")
        opts = {}
    h.options = _recorded_options(opts, h.problems)
    return h


def _recorded_options(opts: Mapping[str, object], problems: list[str]) -> RecordedOptions:
    """The header's ``options`` checked; a value of a wrong type is left out, said in
    ``problems``."""

    def wrong(key: str) -> None:
        if opts.get(key) is not None:
            problems.append(f"header option '{key}' has a wrong type: ignored")

    def small_int(key: str) -> int | None:
        x = opts.get(key)
        if isinstance(x, int) and not isinstance(x, bool) and abs(x) < 2**31:
            return x
        wrong(key)
        return None

    def text(key: str) -> str | None:
        x = opts.get(key)
        if isinstance(x, str):
            return printable(x[:MAX_TEXT])
        wrong(key)
        return None

    idle, cgroups = opts.get("show_idle"), opts.get("cgroups")
    if not isinstance(idle, bool):
        wrong("show_idle")
    if not isinstance(cgroups, bool):
        wrong("cgroups")
    return RecordedOptions(
        show_idle=idle is True,
        cgroups=cgroups is True,
        only_pid=small_int("only_pid"),
        only_name=text("only_name"),
        uid=small_int("uid"),
        user_name=text("user_name"),
    )


# --------------------------------------------------------------------------- facts


def facts_from(d: Mapping[str, object]) -> dict[int, tuple[int, str, str, str]]:
    """A ``facts`` line: tid -> (pid, user, name, command line); :class:`FormatError` when
    an entry is not that."""
    facts = d.get("facts")
    if not isinstance(facts, dict):
        raise FormatError("'facts' is not an object")
    out: dict[int, tuple[int, str, str, str]] = {}
    for key, f in facts.items():
        if not (key.isascii() and key.isdigit() and len(key) <= 10):
            raise FormatError(f"facts: task id {key[:20]!r} is not a number")
        ok = isinstance(f, list) and len(f) == 4 and type(f[0]) is int and 0 <= f[0] < 2**31
        if not ok or not all(isinstance(s, str) for s in f[1:]):
            raise FormatError(f"facts of task {key}: not [pid, user, name, command line]")
        out[int(key)] = (f[0], printable(f[1]), printable(f[2]), printable(f[3]))
    return out


def workload_record(w: Workload) -> JsonObject:
    """Who runs in a cgroup as a ``facts`` line's ``workloads`` holds it: its kind and
    label, and the other fields (``tiptop.workload.FIELDS``) that are known."""
    fields = dict(zip(FIELDS, w.values(), strict=True))
    return {"label": w.label, **{k: v for k, v in fields.items() if v or k == "kind"}}


def workloads_from(d: Mapping[str, object]) -> dict[int, Workload]:
    """A ``facts`` line's ``workloads`` (absent from recordings made before it: empty):
    number -> who runs in a cgroup; :class:`FormatError` when an entry is not that. A kind
    this tiptop does not know is ``other``."""
    found = d.get("workloads", {})
    if not isinstance(found, dict):
        raise FormatError("'workloads' is not an object")
    out: dict[int, Workload] = {}
    for key, w in found.items():
        if not (key.isascii() and key.isdigit() and len(key) <= 10):
            raise FormatError(f"workloads: {key[:20]!r} is not a number")
        if not isinstance(w, dict):
            raise FormatError(f"workload {key}: not an object")
        where = f"workload {key}"
        values = {k: _text(w, k, where, "") for k in (*FIELDS, "label")}
        word = values.pop("kind")
        kind = WorkloadKind(word) if word in KINDS else WorkloadKind.OTHER
        label = values.pop("label") or "?"
        out[int(key)] = Workload(kind, label, **values)
    return out


# --------------------------------------------------------------------------- frames


@mutable
class FrameLine:
    """One frame line, checked: every per-task list an array of the task count's length
    (optional ones None), per counter alias its arrays."""

    t: float
    dt: float
    it: int | None
    threads: bool
    tasks_total: int | None
    tid: np.ndarray
    values: dict[str, np.ndarray | None]
    counters: dict[str, dict[str, np.ndarray]]
    #: What the machine did over the refresh (``ctx``); None where not recorded.
    context: Context | None = None
    #: The cgroups counted whole (``cg``), by who runs in them (their number): per counter
    #: alias ``[raw, scaled, running, total, ok]`` (nan where null).
    cgroups: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)


def _floats(x: object, n: int, what: str) -> np.ndarray:
    """A list of n numbers or nulls (nan) as float64."""
    if not isinstance(x, list) or len(x) != n:
        raise FormatError(f"'{what}' is not a list of {n} numbers")
    if not set(map(type, x)) <= _NUMBER_TYPES:
        raise FormatError(f"'{what}' holds a value that is not a number")
    try:
        return np.array(x, dtype=np.float64)
    except OverflowError:  # an integer past a float's range
        raise FormatError(f"'{what}' holds a number too large") from None


def _ints(x: object, n: int, what: str, low: int, high: int) -> np.ndarray:
    """A list of n integers from ``low`` to ``high`` as int64."""
    # The common case checked in Python: a few numpy calls cost more for a short list.
    if isinstance(x, list) and len(x) == n and all(type(v) is int for v in x):
        ints: list[int] = x
        if not ints or (low <= min(ints) and max(ints) <= high):
            return np.array(ints, np.int64)
    a = _floats(x, n, what)
    if n and not (
        np.isfinite(a).all() and (a == np.trunc(a)).all() and a.min() >= low and a.max() <= high
    ):
        raise FormatError(f"'{what}' holds a value that is not an integer from {low} to {high}")
    return a.astype(np.int64)


#: The per-task lists of where the time went (``Frame.time_percent``'s columns, in order):
#: % of the interval on a CPU, waiting, throttled, blocked on I/O; null where unknown.
TIME_KEYS = ("run", "wait", "thr", "io")

#: Per-task lists of a frame line: key -> kind (f: numbers, i: integers, s: statuses).
_TASK_KEYS = {
    "nth": "i",
    "cpu": "f",
    "usr": "f",
    "sys": "f",
    "proc": "f",
    "dead": "b",
    "cs": "s",
    "ss": "s",
    "w": "f",
    **dict.fromkeys(TIME_KEYS, "f"),
    "lim": "f",
    "cpus": "f",
    "wl": "i",
}
#: Per-counter lists: key -> kind; ``d`` is required.
_COUNTER_KEYS = {"d": "f", "st": "s", "s": "f", "T": "f", "r": "f", "Ts": "s"}


def _column(x: object, n: int, what: str, kind: str) -> np.ndarray:
    if kind == "f":
        return _floats(x, n, what)
    if kind == "i":
        return _ints(x, n, what, 0, 2**31)
    if kind == "b":
        return _ints(x, n, what, 0, 1).astype(bool)
    return _ints(x, n, what, 0, _STATUSES).astype(STATUS_DTYPE)


def _number(d: Mapping[str, object], key: str, required: bool = True) -> float | None:
    x = d.get(key)
    if x is None and not required:
        return None
    if (f := finite(x)) is None:
        raise FormatError(f"'{key}' is not a number")
    return f


def finite(x: object) -> float | None:
    """``x`` as a float when it is a finite JSON number, else None: a bool is not one, nor
    an integer past a float's range (JSON integers have no bound; ``float()`` raises)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    try:
        f = float(x)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def frame_from(
    d: object, aliases: Collection[str] | None = None, task_keys: Collection[str] | None = None
) -> FrameLine:
    """A parsed frame line checked (:class:`FormatError` saying the first thing wrong).
    ``aliases``, ``task_keys``: only those counters and per-task lists are read and
    checked (the others are left out: ``--plot`` reads what its column needs)."""
    if not isinstance(d, dict):
        raise FormatError("not an object")
    t, dt = _number(d, "t"), _number(d, "dt")
    assert t is not None and dt is not None
    if dt < 0:
        raise FormatError("'dt' is negative")
    it, total = _number(d, "it", False), _number(d, "n", False)
    tid = d.get("tid")
    n = len(tid) if isinstance(tid, list) else 0
    tids = _ints(tid, n, "tid", 0, 2**31)
    values = {
        key: _column(d[key], n, key, kind)
        if d.get(key) is not None and (task_keys is None or key in task_keys)
        else None
        for key, kind in _TASK_KEYS.items()
    }
    k = d.get("k", {})
    if not isinstance(k, dict) or len(k) > MAX_ITEMS:
        raise FormatError(f"'k' is not an object of at most {MAX_ITEMS} counters")
    counters: dict[str, dict[str, np.ndarray]] = {}
    for alias, c in k.items():
        if aliases is not None and alias not in aliases:
            continue
        if not isinstance(c, dict) or c.get("d") is None:
            raise FormatError(f"counter '{alias[:40]}' has no deltas")
        counters[alias] = {
            key: _column(c[key], n, f"{alias[:40]}.{key}", kind)
            for key, kind in _COUNTER_KEYS.items()
            if c.get(key) is not None
        }
    return FrameLine(
        t=t,
        dt=dt,
        it=_count(it),
        threads=d.get("th") is True,
        tasks_total=_count(total),
        tid=tids,
        values=values,
        counters=counters,
        context=context_from(d.get("ctx")),
        cgroups=cgroups_from(d.get("cg"), aliases),
    )


#: The most cgroups counted whole that one frame line may hold.
MAX_CGROUPS = 100_000


def cgroups_from(
    x: object, aliases: Collection[str] | None = None
) -> dict[int, dict[str, np.ndarray]]:
    """A frame line's ``cg`` (absent: none) checked: per workload number, per counter
    alias (those of ``aliases`` only, when given) five numbers or nulls."""
    if x is None:
        return {}
    if not isinstance(x, dict) or len(x) > MAX_CGROUPS:
        raise FormatError(f"'cg' is not an object of at most {MAX_CGROUPS} cgroups")
    out: dict[int, dict[str, np.ndarray]] = {}
    for key, counts in x.items():
        if not (key.isascii() and key.isdigit() and len(key) <= 10):
            raise FormatError(f"cg: {key[:20]!r} is not a number")
        if not isinstance(counts, dict) or len(counts) > MAX_ITEMS:
            raise FormatError(f"cg.{key}: not an object of at most {MAX_ITEMS} counters")
        out[int(key)] = {
            alias: _floats(c, 5, f"cg.{key}.{alias[:40]}")
            for alias, c in counts.items()
            if aliases is None or alias in aliases
        }
    return out


#: The resources a ``ctx``'s ``psi`` may name (Documentation/accounting/psi.rst).
_PRESSURE = ("cpu", "io", "memory")


def context_from(x: object) -> Context | None:
    """A frame line's ``ctx`` (what the machine did) checked; None when absent.
    :class:`FormatError` when it is not one."""
    if x is None:
        return None
    if not isinstance(x, dict):
        raise FormatError("'ctx' is not an object")
    cpus, runnable = x.get("cpus"), x.get("run")
    if type(cpus) is not int or not 0 < cpus < 2**20:
        raise FormatError("'ctx.cpus' is not a number of CPUs")
    if runnable is not None and (type(runnable) is not int or not 0 <= runnable < 2**31):
        raise FormatError("'ctx.run' is not a number of tasks")
    psi = x.get("psi", {})
    if not isinstance(psi, dict) or len(psi) > len(_PRESSURE):
        raise FormatError("'ctx.psi' is not an object of pressures")
    pressure = []
    for resource in _PRESSURE:
        pair = psi.get(resource)
        if pair is None:
            continue
        if not isinstance(pair, list) or len(pair) != 2:
            raise FormatError(f"'ctx.psi.{resource}' is not [some, full]")
        pressure.append(Pressure(resource, _fraction(pair[0]), _fraction(pair[1])))
    return Context(cpus, runnable, _fraction(x.get("steal")), tuple(pressure))


def _fraction(x: object) -> float | None:
    """A fraction from 0 to 1, or null; :class:`FormatError` when it is something else."""
    if x is None:
        return None
    f = finite(x)
    if f is None or not 0.0 <= f <= 1.0:
        raise FormatError("a pressure or steal is not a fraction from 0 to 1")
    return f


def _count(x: float | None) -> int | None:
    return None if x is None else int(min(max(x, 0), 2**62))


_NUMBER = rb"(-?[0-9][0-9.eE+-]{0,30})"
_FRAME_T = re.compile(rb'\{"t":\s*' + _NUMBER + rb'\s*(?:,\s*"dt":\s*' + _NUMBER + rb")?\s*[,}]")


def frame_times(head: bytes) -> tuple[float | None, float]:
    """The time and the interval (``dt``, the writer puts it second) of a frame line from its
    first bytes, without parsing the rest: (None, nan) when the line does not start as a
    frame line does, nan for an interval not there or not a number of seconds."""
    m = _FRAME_T.match(head)
    if m is None:
        return None, math.nan
    t, dt = _float(m.group(1)), _float(m.group(2))
    if t is None or not 0 <= t < 1e11:
        return None, math.nan
    return t, dt if dt is not None and 0 <= dt < 1e7 else math.nan


def _float(text: bytes | None) -> float | None:
    """``text`` as a finite float, else None."""
    if text is None:
        return None
    try:
        f = float(text)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


__all__ = [
    "FORMAT_VERSION",
    "MAX_BYTES",
    "MAX_CGROUPS",
    "MAX_DAMAGED",
    "MAX_FACTS",
    "MAX_FRAMES",
    "MAX_LINE",
    "TIME_KEYS",
    "FormatError",
    "FrameLine",
    "Header",
    "JsonObject",
    "JsonValue",
    "RecordedOptions",
    "bytes_limit",
    "cgroups_from",
    "context_from",
    "facts_from",
    "frame_from",
    "frame_times",
    "header_from",
    "is_header",
    "line_limit",
    "screen_from_record",
    "screen_number",
    "screen_record",
    "workload_record",
    "workloads_from",
]
