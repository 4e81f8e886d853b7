"""options/modes.py: one mode per run, derived once; an option that the mode does not take is
one line (a UsageError: status 2), whichever mode owns it (issue 50)."""

from __future__ import annotations

import pytest

from tiptop.errors import UsageError
from tiptop.options import Options, merge, parse_argv
from tiptop.options.argv import LONG, SHORT
from tiptop.options.modes import COMMAND, MODES, ORIGINAL, Mode, asked, settle, spec_of


def settled(*argv: str, tty: bool = False) -> Options:
    """The options of ``argv`` with their mode derived, as the command line does."""
    actions, command = parse_argv(argv)
    opts, _ = merge(None, actions, command)
    return settle(opts, actions, tty=tty)


def refusal(*argv: str, tty: bool = False) -> str:
    """The one line that refuses ``argv``."""
    with pytest.raises(UsageError) as caught:
        settled(*argv, tty=tty)
    return str(caught.value)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        # The three.
        (["-b", "--from", "10:00"], "--from: only with --plot or --replay"),
        (["-b", "--web-config", "x.yml"], "--web-config: only with --serve"),
        (["--selftest", "--replay", "x"], "--replay and --selftest: one at a time"),
        # And the others it names as silently ignored with -b.
        (["-b", "--column", "IPC"], "--column: only with --plot"),
        (["-b", "--top", "3"], "--top: only with --plot, --serve or --textfile"),
        (["-b", "--series-expiry", "5"], "--series-expiry: only with --serve or --textfile"),
        (
            ["-b", "--by", "pid"],
            "--by pid: only with --serve or --textfile "
            "(live and batch mode and --replay take --by cgroup)",
        ),
        (["-b", "--to", "5m ago"], "--to: only with --plot or --replay"),
        (["--textfile", "m.prom", "--web-config", "w.yml"], "--web-config: only with --serve"),
        (["--serve", "9100", "--top", "3"], "--top: with --serve, only with --by pid"),
        (["--where", "1", "--why", "1"], "--why and --where: one at a time"),
        (["--where", "1", "-H"], "-H: not with --where"),
        (["--why", "1", "-p", "2"], "-p: not with --why"),
        (["--check", "-d", "1"], "-d: not with --check"),
        (["--replay", "r.jsonl", "-K"], "-K: not with --replay"),
        (["--serve", "9100", "-i"], "-i: not with --serve"),
        (["--plot", "r.jsonl", "-o", "x.png", "-p", "foo"], "-p foo: --plot takes a PID"),
        (["--why", "1", "--format", "csv"], "--why prints a tree: --format text or json, not csv"),
        (["--selftest", "--format", "csv"], "--selftest prints a report: --format text or json"),
        (["--why", "1", "--", "true"], "--why takes the PID of a running process"),
        (["--serve", "9100", "--", "true"], "--serve: no command after -- (export what runs)"),
        (["--replay", "r.jsonl", "--", "true"], "-- command: not with --replay"),
        (["--textfile", "m", "--record", "r"], "--record does not work with --textfile"),
        (["--serve", "9100", "-o", "x"], "-o does not work with --serve"),
        (["--replay", "r.jsonl", "--record", "r"], "--record does not work with --replay"),
        (["-b", "--task-counters"], "--task-counters: only with --by cgroup"),
        (["-b", "--runtime-root", "/x"], "--runtime-root: only with --by cgroup"),
        (["--where", "1", "--runtime-root", "/x"], "--runtime-root: not with --where"),
        (["--replay", "r", "--by", "pid"], "--by pid: only with --serve or --textfile"),
        (["-b", "--depth", "3"], "--depth: only with --where"),
        (["-b", "--folded", "f"], "--folded: only with --where"),
        (["--where", "1", "--", "true"], "--where takes the PID of a running process"),
        (["--where", "1", "--why", "1"], "--why and --where: one at a time"),
    ],
)
def test_an_option_of_another_mode_is_one_line(argv: list[str], line: str) -> None:
    assert refusal(*argv).startswith(line)


def test_format_is_batch_output() -> None:
    """Live mode prints no format: ``--format`` on a terminal without -b says to add it;
    to a file or pipe (no terminal) the run is batch and takes it."""
    assert refusal("--format", "csv", tty=True) == (
        "--format: batch output (-b); a live view has no format"
    )
    assert refusal("--replay", "r.jsonl", "--format", "json", tty=True).startswith("--format")
    assert settled("--format", "csv", tty=False).mode is Mode.BATCH
    assert settled("-b", "--format", "csv", tty=True).mode is Mode.BATCH
    assert settled("--replay", "r", "-b", "--format", "csv", tty=True).live is False


@pytest.mark.parametrize(
    ("argv", "tty", "mode", "live"),
    [
        ([], True, Mode.LIVE, True),
        ([], False, Mode.BATCH, False),
        (["-b"], True, Mode.BATCH, False),
        (["-o", "out.txt"], True, Mode.BATCH, False),
        (["--replay", "r"], True, Mode.REPLAY, True),
        (["--replay", "r", "-o", "out.txt"], True, Mode.REPLAY, False),
        (["--why", "1"], True, Mode.WHY, False),
        (["--where", "1"], True, Mode.WHERE, False),
        (["--serve", "9100", "--textfile", "m.prom"], True, Mode.SERVE, False),
        (["--textfile", "m.prom"], True, Mode.TEXTFILE, False),
        (["--plot", "r", "-o", "x.png"], True, Mode.PLOT, False),
        (["--list-screens", "-b", "-H", "-d", "3"], True, Mode.LIST_SCREENS, False),
        (["--check", "-b", "-W", "/tmp"], True, Mode.CHECK, False),
        (["-b", "--by", "cgroup"], True, Mode.BATCH, False),
        (["-b", "--by", "cgroup", "--task-counters"], True, Mode.BATCH, False),
        (["--runtime-root", "/x"], True, Mode.LIVE, True),  # the G key's rows
        (["--serve", "9100", "--by", "cgroup", "--runtime-root", "/x"], True, Mode.SERVE, False),
        (["--replay", "r", "-b", "--by", "cgroup"], True, Mode.REPLAY, False),
        (
            ["--where", "1", "--depth", "2", "--min-share", "1", "--top-down", "--folded", "f"],
            True,
            Mode.WHERE,
            False,
        ),
    ],
)
def test_the_mode_is_derived_once(argv: list[str], tty: bool, mode: Mode, live: bool) -> None:
    opts = settled(*argv, tty=tty)
    assert (opts.mode, opts.live) == (mode, live)


def test_help_and_version_are_asked_before_anything() -> None:
    """-h and -v answer whatever else the line says (help's habit), before any file."""
    for argv, mode in ((["--replay", "x", "-h"], Mode.HELP), (["--check", "-v"], Mode.VERSION)):
        spec = asked(parse_argv(argv)[0])
        assert spec is not None and spec.mode is mode


def test_the_originals_modes_take_every_option_of_the_original() -> None:
    """docs/original.md section 1: live, batch and --list-screens took every option."""
    for mode in (Mode.LIVE, Mode.BATCH, Mode.LIST_SCREENS):
        assert spec_of(mode).takes >= ORIGINAL, mode
    original = ["-b", "-c", "-H", "-i", "-K", "-U", "-g", "--epoch", "--sticky"]
    original += ["--timestamp", "--no-collect", "--only-conf", "--cpu-min", "1", "-d", "1"]
    original += ["-n", "1", "-p", "1", "-S", "0", "-w", "1", "-u", "0", "-E", "/dev/null"]
    assert settled(*original, "--", "true").mode is Mode.BATCH
    assert settled(*original, "-o", "/dev/null").mode is Mode.BATCH
    assert settled(*original, "--list-screens").mode is Mode.LIST_SCREENS


def test_every_mode_declared_and_every_option_taken_somewhere() -> None:
    """Each Mode has one declaration; each option of the command line (argv.SHORT, LONG)
    is taken by some mode (an option no mode takes would always be refused)."""
    assert [s.mode for s in MODES] == list(Mode)
    names = {name for _kind, name in [*SHORT.values(), *LONG.values()]} | {COMMAND}
    taken = set().union(*(s.takes for s in MODES)) | {"help", "version", "legalese"}
    assert names - taken == set()
    assert taken - names == set()
    selectors = [name for s in MODES for name in s.selectors]
    assert len(selectors) == len(set(selectors))


def test_the_config_files_options_are_never_refused() -> None:
    """Only the command line is checked: a file's threads, idle, delay... stay the file's
    in --serve as before (the exporter reads what it needs of them)."""
    actions, command = parse_argv(["--serve", "9100"])
    opts, _ = merge({"show_threads": "1", "idle": "1", "delay": "5"}, actions, command)
    assert settle(opts, actions, tty=True).mode is Mode.SERVE
