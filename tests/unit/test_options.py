"""options: argv parsing (original and modern forms) and the defaults < rc < argv merge."""

from __future__ import annotations

import pytest

from tiptop.errors import UsageError
from tiptop.options import Options, merge, parse_argv


def _opts(
    argv: list[str], rc: dict[str, str] | None = None, ptiptop: bool = False
) -> tuple[Options, list[str]]:
    actions, command = parse_argv(argv, ptiptop=ptiptop)
    return merge(rc, actions, command)


def test_forms_are_equivalent() -> None:
    for argv in (["-d", "2.5"], ["-d2.5"], ["--delay=2.5"], ["--delay", "2.5"]):
        assert _opts(argv)[0].delay == 2.5
    o, _ = _opts(["-bi", "-n3", "--cpu-min=1.5", "-S", "branch", "--", "ls", "-l"])
    assert (o.batch, o.show_idle, o.max_iter, o.cpu_threshold, o.screen) == (
        True,
        True,
        3,
        1.5,
        "branch",
    )
    assert o.command == ("ls", "-l")


def test_toggles_invert_rc_and_values_override() -> None:
    rc = {"show_threads": "1", "show_cmdline": "1", "delay": "5", "sticky": "0"}
    o, w = _opts(["-H", "-c", "--sticky"], rc)
    assert (o.show_threads, o.show_cmdline, o.sticky, o.delay) == (False, False, True, 5.0)
    assert _opts(["-d", "1"], rc)[0].delay == 1.0
    assert w == []


def test_rc_or_set_cannot_be_cleared() -> None:
    rc = {"show_epoch": "1"}
    o, _ = _opts([], {**rc})
    assert o.show_epoch
    # OR-set: a later "0" in the file does not clear it (dict keeps the last value, so
    # apply twice through the merge by listing both in file order is not possible;
    # check the semantics directly instead).
    from tiptop.options import Options, apply_rc

    o, _ = apply_rc(Options(show_epoch=True), {"show_epoch": "0", "show_user": "0"})
    assert o.show_epoch is True and o.show_user is False


def test_rc_bad_values_warn() -> None:
    o, w = _opts([], {"delay": "0.001", "watch_uid": "nosuchuser_x", "batch": "1"})
    assert o.delay == 2.0 and not o.batch
    assert len(w) == 2 and all(x.startswith("config file:") for x in w)


def test_targets_and_users() -> None:
    o, _ = _opts(["-p", "123", "-w", "fire"])
    assert (o.only_pid, o.only_name, o.watch_pid, o.watch_name) == (123, None, None, "fire")
    assert _opts(["-p", "0"])[0].only_name == "0"  # the original's atoi rule
    o, _ = _opts(["-u", "root"])
    assert (o.uid, o.user_name) == (0, "root")
    assert _opts(["-u", "65534"])[0].uid == 65534


def test_ptiptop_patterns() -> None:
    o, _ = _opts(["firefox", "-b"], ptiptop=True)
    assert o.only_name == "firefox" and o.batch


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["-d", "0.001"], "at least 0.01"),
        (["-d", "abc"], "not a number"),
        (["-d"], "missing value after -d"),
        (["-n", "-1"], "must not be negative"),
        (["-x"], "unknown option '-x'"),
        (["--bogus"], "unknown option '--bogus'"),
        (["--"], "no command after --"),
        (["-u", "nosuchuser_x"], "does not exist"),
        (["--format", "xml"], "not one of text, csv, json"),
        (["--epoch=1"], "takes no value"),
        (["stray"], "unexpected argument"),
        (["--cpu-min", "nan"], "is not a number"),
        (["--cpu-min", "-1"], "non-negative"),
        (["--cpu-min", "1e400"], "non-negative"),  # overflows to inf
        (["-d", "infinity"], "not a number of seconds"),
        (["-d", " 2"], "not a number of seconds"),
        (["-d", "604801"], "at most 604800 s"),
        (["-n", "0x10"], "not a whole number"),
        (["-u", "4294967295"], "neither a user name nor a uid"),  # (uid_t) -1
        (["-u", "a\0b"], "does not exist"),  # getpwnam raises ValueError on NUL
        (["-p", ""], "-p: empty value"),
        (["--watch="], "--watch: empty value"),
    ],
)
def test_usage_errors(argv: list[str], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment.replace("(", r"\(")):
        _opts(argv)


def test_strict_numbers_still_take_what_c_takes() -> None:
    """Decimal forms strtod/atoi accept keep working after the strict parsing."""
    o, _ = _opts(["-d", "0.5", "-n", "+3", "--cpu-min", "1e-1"])
    assert (o.delay, o.max_iter, o.cpu_threshold) == (0.5, 3, 0.1)
    assert _opts(["-d", ".25"])[0].delay == 0.25
    assert _opts(["-d", "604800"])[0].delay == 604800.0
    assert _opts(["-p", "+12"])[0].only_pid == 12
    assert _opts(["-u", "4294967294"])[0].uid == 4294967294


def test_rc_atoi_semantics() -> None:
    """The rc file's integers are C ``atoi``: leading digits, else 0."""
    from tiptop.options import Options, apply_rc

    o, warnings = apply_rc(Options(), {"max_iter": "  12abc", "idle": "x1", "sticky": "-3"})
    assert warnings == []
    assert (o.max_iter, o.show_idle, o.sticky) == (12, False, True)


def test_rc_odd_values_are_warned_or_ignored() -> None:
    """rc values a user can get wrong: one warning line each, the default kept; an empty
    ``watch_name`` (which would mark every task) is ignored like an absent one."""
    from tiptop.options import Options, apply_rc

    o, warnings = apply_rc(
        Options(),
        {"delay": "1e300", "watch_uid": "no_such_user_zz", "watch_name": "", "max_iter": "9" * 30},
    )
    assert warnings == [
        "config file: option 'delay': delay must be at least 0.01 s and at most 604800 s "
        "(got '1e300'), ignored",
        "config file: User name 'no_such_user_zz' does not exist, ignored",
    ]
    # Out of range, atoi is glibc's strtol: LONG_MAX (strtol(3)).
    assert (o.delay, o.uid, o.watch_name, o.max_iter) == (2.0, None, None, 2**63 - 1)


def test_help_names_every_option_the_man_page_documents() -> None:
    """``--help`` gave only short forms where the man page documents long ones too."""
    import re
    from pathlib import Path

    from tiptop.cli import USAGE
    from tiptop.options.argv import LONG, SHORT

    man = (Path(__file__).resolve().parents[2] / "docs" / "tiptop.1").read_text()
    in_man = {m.replace("\\-", "-") for m in re.findall(r"\\-\\-([a-z](?:[a-z]|\\-)*)", man)}
    in_help = set(re.findall(r"(?<![\w-])--([a-z][a-z-]*)", USAGE))
    assert in_man == in_help == set(LONG)
    assert {m for m in re.findall(r"(?<![\w-])-([A-Za-z])\b", USAGE)} == set(SHORT)


def test_the_man_page_is_installed_where_man_looks() -> None:
    """``man tiptop`` after ``pip install .``: the page goes to <prefix>/share/man/man1,
    which man(1) searches for <prefix>/bin on PATH; --help says how to read it."""
    import tomllib
    from pathlib import Path

    from tiptop.cli import USAGE

    root = Path(__file__).resolve().parents[2]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["data-files"] == {
        "share/man/man1": ["docs/tiptop.1"],
        # and the shell completion beside it (tests/system/test_completion.py)
        "share/bash-completion/completions": ["completions/bash/tiptop"],
        "share/zsh/site-functions": ["completions/zsh/_tiptop"],
    }
    assert "man tiptop" in USAGE and "man ./docs/tiptop.1" in USAGE
