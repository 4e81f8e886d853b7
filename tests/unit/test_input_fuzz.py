"""No traceback from any input: the command line (``parse_argv`` and ``merge``), both screen
file loaders and the expression compiler, fed the inputs that once ended in a traceback
(4,301-digit numbers, a 256-digit hex constant, 1,000-term expressions, 1,000-deep YAML, an
unknown XML encoding) and 15,400 generated cases around them (6,000 from Hypothesis,
9,400 from a seeded sweep; about 15 s on two cores). Only a :class:`TiptopError` may come
out, and its text is one line without control characters; an error about a file says where
in it (path:line:column).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiptop.errors import SpecError, TiptopError, UsageError
from tiptop.options import merge, parse_argv
from tiptop.options.argv import LONG
from tiptop.screens import Target, compile_column, evaluate_config, load_text

BIG = "1" * 4301  # one digit over Python's int() limit (sys.int_info.default_max_str_digits)
HEX = "0x1" + "0" * 256
CHAIN = "+".join(["delta(A)"] * 1000)
CONFIG_CHAIN = "|".join(["1"] * 1000)
#: Control characters a terminal obeys (C0, DEL, C1).
CONTROLS = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}
TARGET = Target("x86", "06_2A")

#: Option values that once broke a parser, or might.
VALUES = [
    BIG,
    "-" + BIG,
    "+" + BIG,
    "0" * 5000 + "1",
    "9" * 20,
    "9223372036854775808",
    "1e400",
    "-1",
    "0",
    "",
    " ",
    "1_000",
    "0x10",
    "١٢",
    "inf",
    "nan",
    "\x1b[31mred",
    "a\nb",
    "\x00",
    "\udcff",
    "root",
    "nobody",
    "2",
    "0.001",
    "%",
    "é",
]
SHORT_VALUES = [v for v in VALUES if len(v) < 100]
#: Values XML can hold (no C0 control but tab and newline, no lone surrogate).
XML_VALUES = [v for v in VALUES if not {"\x00", "\x1b", "\udcff"} & set(v)]
SHORT_OPTS = [
    "-b",
    "-c",
    "-H",
    "-i",
    "-K",
    "-U",
    "-g",
    "-d",
    "-E",
    "-n",
    "-o",
    "-p",
    "-S",
    "-u",
    "-W",
    "-w",
    "-bi",
    "-d2",
    "-n" + BIG,
    "-x",
]
#: Every long option the parser knows, and some it does not.
LONG_OPTS = [
    *(f"--{name}" for name in LONG),
    "--batch=1",
    "--delay=" + BIG,
    "--from=" + BIG,
    "--nope",
    "--",
]
RC_NAMES = [
    "delay",
    "cpu_threshold",
    "show_cmdline",
    "show_kernel",
    "idle",
    "sticky",
    "max_iter",
    "watch_name",
    "watch_uid",
    "show_user",
    "unknown",
]
EXPR_TOKENS = [
    "A",
    "delta(A)",
    "CPU_TOT",
    "1",
    "0",
    "2.5",
    "1e400",
    BIG,
    HEX,
    "0x1f",
    "(",
    ")",
    "+",
    "-",
    "*",
    "/",
    "|",
    "and",
    "shl",
    "shr",
    "min(",
    "max(",
    ",",
    " ",
    "\x1b",
    "-(",
    "+A" * 60,
    "-" * 60,
    "(" * 60,
    ")" * 60,
]
SHORT_TOKENS = [t for t in EXPR_TOKENS if len(t) < 100]
XML_HEAD = [
    "",
    "",
    "",
    "",
    "<?xml version='1.0'?>",
    "<?xml version='1.0' encoding='foo'?>",
    "<?xml version='1.0' encoding='utf-16'?>",
    "<?xml version='1.0' encoding='latin-1'?>",
    "<?xml version='1.0' encoding='" + "x" * 300 + "'?>",
]
FORMATS = [
    "%4.1f",
    "%4.1f",
    "%6.2f%%",
    "%" + BIG + "f",
    "%." + BIG + "f",
    "%999999999f",
    "%.999999999f",
    "%d",
    "\x1b[31m%f",
    "%%",
    "%f%f",
    "%65f",
    "%.64f",
]

#: A counter's type attribute: mostly none (the config is then an event name).
TYPES = [None, None, None, None, "HARDWARE", "RAW", BIG, "0x" + BIG, "-1", "\x1b", "&#10;"]


def cases(n: int) -> settings:
    """Hypothesis settings for ``n`` generated cases, with no deadline (CI machines vary)."""
    return settings(
        max_examples=n, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )


def one_line(text: str) -> None:
    """``text`` is one line a terminal prints as written."""
    assert not CONTROLS & set(text), repr(text)


P = ParamSpec("P")
R = TypeVar("R")


def only_tiptop_errors(run: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R | TiptopError:
    """``run(*args, **kwargs)``, asserting that anything it raises is a one-line
    TiptopError (which it returns)."""
    try:
        return run(*args, **kwargs)
    except TiptopError as err:
        one_line(str(err))
        return err


# --------------------------------------------------------------------------- the known cases


@pytest.mark.parametrize("opt", ["-n", "-p", "-u", "-w", "--iterations", "--pid"])
def test_4301_digit_option_values_are_one_usage_line(opt: str) -> None:
    actions, _ = parse_argv([opt, BIG])
    with pytest.raises(UsageError, match=r"out of range|nor a uid") as err:
        merge({}, actions)
    assert len(str(err.value)) < 140  # the value is not echoed whole
    one_line(str(err.value))


@pytest.mark.parametrize("name", ["max_iter", "idle", "show_cmdline", "watch_uid", "delay"])
def test_4301_digit_config_options_warn_or_saturate(name: str) -> None:
    cfg = load_text(
        f'<tiptop><options><option name="{name}" value="{BIG}"/></options></tiptop>', TARGET
    )
    opts, warnings = merge(cfg.options, [])
    assert all(len(w) < 200 for w in warnings)
    if name == "max_iter":
        assert opts.max_iter == 2**63 - 1  # atoi is strtol: LONG_MAX (strtol(3))


def _column(expr: str, config: str = "1", fmt: str = "%4.1f") -> str:
    return (
        f'<tiptop>\n<screen name="s">\n<counter alias="A" config="{config}" type="RAW"/>\n'
        f'<column header=" h" format="{fmt}" expr="{expr}"/>\n</screen>\n</tiptop>\n'
    )


@pytest.mark.parametrize(
    ("expr", "config", "fmt", "line", "message"),
    [
        (HEX, "1", "%4.1f", 4, "hex constant over 16 digits"),
        (CHAIN, "1", "%4.1f", 4, "deeper than 100 levels"),
        ("delta(A)", CONFIG_CHAIN, "%4.1f", 3, "deeper than 100 levels"),
        ("delta(A)", HEX, "%4.1f", 3, "hex constant over 16 digits"),
        ("delta(A)", "1", "%" + BIG + "f", 4, "is over 64"),
    ],
    ids=["hex", "chain", "config-chain", "config-hex", "format-width"],
)
def test_xml_problems_are_located(
    expr: str, config: str, fmt: str, line: int, message: str
) -> None:
    cfg = load_text(_column(expr, config, fmt), TARGET, path="rc.xml")
    p = cfg.problems[0]
    assert (p.path, p.line, message in p.message) == ("rc.xml", line, True), str(p)
    assert p.column is not None
    assert str(p).startswith(f"rc.xml:{line}:{p.column}: ")


@pytest.mark.parametrize(
    ("expr", "config", "message"),
    [
        (CHAIN, "cycles", "deeper than 100"),
        ("delta(A)", CONFIG_CHAIN, "deeper than 100"),
        (HEX, "cycles", "hex constant"),
    ],
    ids=["chain", "config-chain", "hex"],
)
def test_yaml_problems_are_located(expr: str, config: str, message: str) -> None:
    text = (
        f"screens:\n  - name: s\n    counters:\n      A: '{config}'\n"
        f"    columns:\n      - {{header: ' h', format: '%4.1f', expr: '{expr}'}}\n"
    )
    (p, *_) = load_text(text, TARGET, path="rc.yaml", yaml=True).problems
    assert (p.path, message in p.message) == ("rc.yaml", True), str(p)
    assert p.line in (4, 6) and p.column is not None


def test_an_unknown_xml_encoding_is_located() -> None:
    with pytest.raises(SpecError) as err:
        load_text(b"<?xml version='1.0' encoding='foo'?>\n<tiptop/>", TARGET, path="rc")
    assert str(err.value) == "rc:1:31: malformed XML: unknown encoding: foo"


@pytest.mark.parametrize(
    "text", ["[" * 1000, "{a: " * 1000, "- " * 1000 + "x"], ids=["flow", "map", "block"]
)
def test_deep_yaml_is_located(text: str) -> None:
    with pytest.raises(SpecError, match="nested deeper than 50") as err:
        load_text(text, TARGET, path="rc.yaml", yaml=True)
    assert err.value.line == 1 and err.value.column is not None


@pytest.mark.parametrize(
    "text",
    [CHAIN, "1+" * 2000 + "1", "-" * 1000 + "1", HEX, "0x" + BIG],
    ids=["chain", "sum", "minus", "hex", "big-hex"],
)
def test_expressions_never_recurse_too_deep(text: str) -> None:
    with pytest.raises(SpecError):
        compile_column(text)
    with pytest.raises(SpecError):
        evaluate_config(text.replace("+", "|"))


def test_expressions_of_100_levels_still_compile() -> None:
    assert compile_column("+".join(["delta(A)"] * 100)).aliases == {"A"}
    assert evaluate_config("|".join(["1"] * 100)) == 1
    assert compile_column("-" * 99 + "1").const


# --------------------------------------------------------------------------- generated cases
#
# Each generator builds one case from ``pick(choices)``: Hypothesis's draws (which shrink a
# failure to its smallest form) or a seeded ``random.Random`` (a hundred times cheaper per
# case, for volume: Hypothesis spends about a millisecond a case here).

Pick = Callable[[Sequence[Any]], Any]

#: Characters of free text: controls, digits of other scripts, a lone surrogate, quotes.
CHARS = [
    *"az09-+.=_ %'\"<>&",
    "\x00",
    "\x1b",
    "\n",
    "\t",
    "\x7f",
    "\x9b",
    "é",
    "١",
    "\udcff",
    "\u2028",
]


def _text(pick: Pick, most: int) -> str:
    return "".join(pick(CHARS) for _ in range(pick(range(most + 1))))


def _soup(pick: Pick, tokens: Sequence[str], most: int) -> str:
    return "".join(pick(tokens) for _ in range(pick(range(most + 1))))


def argv_of(pick: Pick) -> list[str]:
    """A command line: options, values and free text, in any order."""
    words = SHORT_OPTS + LONG_OPTS + VALUES
    return [pick(words) if pick((0, 1, 2)) else _text(pick, 12) for _ in range(pick(range(9)))]


def rc_of(pick: Pick) -> dict[str, str]:
    """A config file's ``<options>``."""
    return {pick(RC_NAMES): pick(VALUES) for _ in range(pick(range(5)))}


def expr_of(pick: Pick) -> str:
    """A token soup, or a chain of up to 300 terms."""
    return _soup(pick, EXPR_TOKENS, 40) if pick((0, 1, 2)) else "1" + "+A" * pick(range(301))


def _xml_escaped(text: str) -> str:
    """An attribute value: markup escaped, newlines and tabs as character references."""
    for a, b in (("&", "&amp;"), ("<", "&lt;"), ('"', "&quot;"), ("\n", "&#10;"), ("\t", "&#9;")):
        text = text.replace(a, b)
    return text


def xml_of(pick: Pick) -> str:
    """A well-formed file around adversarial values (each value good three times in four, values
    with characters XML refuses in one file in four), under any XML declaration."""
    values = VALUES if pick(range(4)) == 0 else XML_VALUES

    def v(good: str = "") -> str:
        if pick(range(4)):  # a good value three times in four
            return good
        return _xml_escaped(pick(values) if pick((0, 1)) else _soup(pick, EXPR_TOKENS, 8))

    type_ = pick(TYPES)
    counter = f'alias="{pick(["A", "A", "", "x" * 70])}" config="{v("cycles")}"'
    counter += "" if type_ is None else f' type="{type_}"'
    column = (
        f'header="{v(" h")}" format="{pick(FORMATS)}" expr="{v("delta(A)")}" '
        f'threshold="{v("1")}" threshold_below="{v("1")}"'
    )
    return (
        f"{pick(XML_HEAD)}\n<tiptop><options>"
        f'<option name="{pick(RC_NAMES)}" value="{v("1")}"/></options>\n'
        f'<screen name="{v("s")}" desc="{v()}" model="{v("06_2A")}">\n'
        f"<counter {counter}/>\n<column {column}/>\n</screen></tiptop>\n"
    )


def _q(s: str) -> str:
    """A double-quoted YAML scalar: any character, escaped."""
    return '"' + s.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def yaml_of(pick: Pick) -> str:
    """A file of the schema around adversarial values (each value good three times in four),
    maybe with deep nesting; long values only where the type goes (PyYAML's scanner is
    slow on them)."""

    def v(good: str = "") -> str:
        if pick(range(4)):  # a good value three times in four
            return _q(good)
        return _q(pick(SHORT_VALUES) if pick((0, 1)) else _soup(pick, SHORT_TOKENS, 8))

    nest = pick(range(61))
    return (
        f"options: {{{pick(RC_NAMES)}: {v('1')}}}\n"
        f"screens:\n  - name: {v('s')}\n    desc: {v()}\n    counters:\n"
        f"      A: {{config: {v('cycles')}{pick(['', '', ', type: ' + BIG, ', type: 1'])}}}\n"
        f"    columns:\n      - {{header: {v(' h')}, format: {_q(pick(FORMATS))},"
        f" expr: {v('delta(A)')}, threshold: {v('1')}}}\n"
        + pick(["", "  - " + "[" * nest + "]" * nest + "\n"])
    )


def check_command_line(argv: list[str], rc: dict[str, str]) -> None:
    """Parsed and merged with ``rc``: options, or one line of error."""
    parsed = only_tiptop_errors(parse_argv, argv)
    if isinstance(parsed, TiptopError):
        return
    merged = only_tiptop_errors(merge, rc, parsed[0])
    if not isinstance(merged, TiptopError):
        for warning in merged[1]:
            one_line(warning)


def check_expression(text: str) -> None:
    """Compiled as a column and as a counter config: a result, or one line of error."""
    only_tiptop_errors(compile_column, text)
    only_tiptop_errors(evaluate_config, text)


def check_load(text: str, path: str, yaml: bool) -> None:
    """Loaded: a fatal error naming ``path``, or screens whose problems are located lines."""
    data = text.encode("utf-8", "surrogatepass")
    cfg = only_tiptop_errors(load_text, data, TARGET, path=path, yaml=yaml)
    if isinstance(cfg, TiptopError):  # a fatal error: the file's, with its path
        assert isinstance(cfg, SpecError) and cfg.path == path, str(cfg)
        return
    for p in cfg.problems:
        one_line(str(p))
        assert p.path == path and p.line is not None, str(p)
    merged = only_tiptop_errors(merge, cfg.options, [])
    if not isinstance(merged, TiptopError):
        for warning in merged[1]:
            one_line(warning)


_SAMPLED: dict[Any, st.SearchStrategy[Any]] = {}


def _sampled(choices: Sequence[Any]) -> st.SearchStrategy[Any]:
    """``st.sampled_from(choices)``, built once per list of choices (building one per
    draw would double the time a case takes)."""
    key = choices if isinstance(choices, tuple | range) else tuple(choices)
    if key not in _SAMPLED:
        _SAMPLED[key] = st.sampled_from(key)
    return _SAMPLED[key]


@st.composite
def drawn(draw: st.DrawFn, make: Callable[[Pick], Any]) -> Any:
    """A case of generator ``make`` from Hypothesis's draws."""
    return make(lambda choices: draw(_sampled(choices)))


@cases(2000)
@given(drawn(argv_of), drawn(rc_of), st.lists(st.text(max_size=12), max_size=3))
def test_command_lines_give_one_line_or_options(
    argv: list[str], rc: dict[str, str], text: list[str]
) -> None:
    check_command_line(argv + text, rc)


@cases(2000)
@given(drawn(expr_of))
def test_expressions_give_one_line_or_compile(text: str) -> None:
    check_expression(text)


@cases(1200)
@given(drawn(xml_of))
def test_xml_files_give_located_lines_or_screens(text: str) -> None:
    check_load(text, "fuzz.xml", yaml=False)


@cases(800)
@given(drawn(yaml_of))
def test_yaml_files_give_located_lines_or_screens(text: str) -> None:
    check_load(text, "fuzz.yaml", yaml=True)


#: Seeded random cases per input kind (9,400 in all, about 3 s).
SWEEP = {"argv": 5000, "expr": 2000, "xml": 2000, "yaml": 400}


@pytest.mark.parametrize("kind", sorted(SWEEP))
def test_a_seeded_random_sweep(kind: str) -> None:
    rng = random.Random(f"tiptop-{kind}")
    for _ in range(SWEEP[kind]):
        if kind == "argv":
            check_command_line(argv_of(rng.choice), rc_of(rng.choice))
        elif kind == "expr":
            check_expression(expr_of(rng.choice))
        else:
            check_load(
                (xml_of if kind == "xml" else yaml_of)(rng.choice), "f." + kind, kind == "yaml"
            )
