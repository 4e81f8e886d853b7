"""The ``tiptop`` and ``ptiptop`` commands: parse, merge options, pick a screen, run.

Every option of the original (docs/original.md section 1) plus modern spellings
(``--delay=2``, ``-d2``, ``-bi``) and ``--format``, ``--list-events``, ``--check``,
``--export``. Everything a user can get wrong ends here as one line on stderr and an exit
code (2 for usage errors), never a traceback. ``-h``, ``-v``, ``--version`` and
``--list-screens`` never probe the PMU first (docs/original.md section 8, defect 3).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Sequence
from typing import IO, NoReturn

from tiptop import __version__, imports_frozen

# Every command's own modules (~7,000 objects, as long-lived as numpy's): imported with
# the collector paused, then frozen, as numpy is (tiptop/__init__.py).
with imports_frozen():
    from tiptop.cli.run import read_pid_max, run_monitor
    from tiptop.cli.screens import (
        ScreenSet,
        export_current,
        export_screens,
        format_list,
        host_target,
        load_screens,
        pick_screen,
    )
    from tiptop.errors import TiptopError
    from tiptop.host import Host
    from tiptop.options import Action, Options, merge, parse_argv
    from tiptop.options.argv import Act
    from tiptop.options.inversion import inverted_by_flags
    from tiptop.options.modes import Mode, asked, settle
    from tiptop.outside import printable

__all__ = [
    "USAGE",
    "ScreenSet",
    "command",
    "command_ptiptop",
    "exit_now",
    "export_current",
    "host_target",
    "load_screens",
    "main",
    "main_ptiptop",
    "pick_screen",
    "read_pid_max",
    "run_monitor",
]

USAGE = """\
Usage: {prog} [option] [-- command args]
	-b --batch            run in batch mode
	-c --cmdline          use command line instead of process name
	--cpu-min m           minimum %CPU to display a process
	-d --delay delay      delay in seconds between refreshes (0.01 to 604800)
	-E --error-file file  file where errors are logged
	--epoch               add epoch at beginning of each line
	-g                    accepted for compatibility; no effect
	-h --help             print this message
	-H --threads          show threads
	-K --kernel           show kernel activity
	-i --idle             also display idle processes
	--list-screens        display list of available screens
	-n --iterations num   max number of refreshes
	--no-collect          no attempt to collect idle processes when out of files
	-o --output outfile   output file in batch mode
	--only-conf           disable default screen, only configuration
	-p --pid pid|name     only display task with this PID/name
	-S --screen num|name  screen number (or part of its name) to display
	--sticky              keep final status of dead processes
	--timestamp           add timestamp at beginning of each line
	-u --user user|uid    only show user's processes
	-U --show-user        show user name
	-v                    print version and exit
	--version             print legalese and exit
	-W --config path      directory holding .tiptoprc (or a config file)
	-w --watch pid|name   watch this process (highlighted)
	--format f            batch output: text (default), csv or json
	--list-events         list events and whether they open here
	--check               explain what this machine allows, and how to get more
	--selftest            check that the counters count what the screen (-S) says (--format json)
	--export FILE         write the screens to FILE (.yaml/.yml or .xml)
	--record FILE         append every refresh to FILE (JSON lines; gzip if FILE ends in .gz)
	--replay FILE         show a recording at its pace (live: ( ) speed, [ ] step, {{ }} a minute)
	--from t --to t       replay or plot from/to t (10:32, "2026-11-23 10:32", "5m ago")
	--plot FILE           draw a column over time (-o image.png/.svg/.pdf, --column IPC, --top N)
	--serve [HOST:]PORT   serve Prometheus /metrics (127.0.0.1 unless HOST given)
	--textfile PATH       write the metrics to PATH each refresh (node_exporter textfile)
	--web-config FILE     --serve's TLS and basic auth (exporter-toolkit's web config)
	--runtime-root DIR    --by cgroup: the container runtimes' /run and /var/lib under DIR (/)
	--task-counters       --by cgroup as root: count each task, not each cgroup whole
	--series-expiry S     exporter: drop a series unseen for S seconds (600; 0: never)
	--by comm|pid|cgroup  exporter series (--top N with pid); cgroup: rows too (live: G)
	--why PID             batch: the process's top-down tree and bottleneck per refresh
	--where PID           batch: the process's hottest functions and their callers (sampled)
	--depth N             --where's tree: at most N levels (8; 0: all)
	--min-share PCT       --where's tree: no function under PCT % of the samples (0.5)
	--top-down            --where's tree from the callers down (default: each function up)
	--folded FILE         --where's call stacks, folded (flamegraph.pl, inferno, speedscope)
	-- cmd args           run cmd and monitor it (and its children) from its first instruction
A value may be attached (-d2, --delay=2); toggles may be grouped (-bi).
Toggles invert the configuration file's value (as the original): with idle on in the
file, -i turns it off (said in a warning). Each mode (live, batch, --replay, --serve...)
takes its own options: another mode's option is refused, exit status 2.
Manual: man tiptop (installed by pip), or man ./docs/tiptop.1 in a source tree.
"""


def _flag(actions: list[Action], name: str) -> bool:
    return any(a.name == name and a.kind is Act.FLAG for a in actions)


def _last_value(actions: list[Action], name: str) -> str | None:
    values = [a.value for a in actions if a.name == name and a.kind is Act.SET]
    return values[-1] if values else None


def _print_version(out: IO[str], legalese: bool) -> None:
    if legalese:
        out.write(
            f"tiptop {__version__}\n"
            "Python reimplementation of tiptop 2.3.1 (C) 2011-2015 Inria.\n"
            "This is free software (GPL-2.0-or-later). No warranty.\n"
        )
    else:
        out.write(f"This is tiptop version {__version__} (tiptop-perf, Python).\n")


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run ``tiptop``; returns the exit status (0 ok, 1 error, 2 usage, or the status of
    the command run after ``--``)."""
    if argv is None:
        argv = sys.argv[1:]
    if prog is None:
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "tiptop"
        if "ptiptop" not in prog:
            prog = "tiptop"
    _closed_standard_streams()
    _tolerant_stdout()
    try:
        code = _main(list(argv), prog)
        sys.stdout.flush()  # a reader gone shows here, not in the interpreter's exit
        return code
    except TiptopError as exc:
        _err_line(prog, str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # ``tiptop --list-events | head -1``: quietly done
        _devnull_stdout()
        return 0
    except OSError as exc:  # a file we had to read or write
        where = f" '{exc.filename}'" if exc.filename else ""
        _err_line(prog, f"{exc.strerror or exc}{where}")
        return 1


def main_ptiptop() -> int:
    """``ptiptop PATTERN... [OPTIONS]``: unknown arguments are ``-p`` patterns."""
    return main(sys.argv[1:], prog="ptiptop")


def command() -> NoReturn:
    """The ``tiptop`` command and ``python -m tiptop``: :func:`main`, then :func:`exit_now`."""
    exit_now(main())


def command_ptiptop() -> NoReturn:
    """The ``ptiptop`` command: :func:`main_ptiptop`, then :func:`exit_now`."""
    exit_now(main_ptiptop())


def exit_now(code: int) -> NoReturn:
    """End the process with status ``code`` once stdout and stderr are flushed, without the
    interpreter's teardown (``os._exit``, the os module's documentation: no cleanup
    handlers, no flushing of stdio buffers). That teardown frees, object by object, every
    module and record the run made, which the kernel takes back at once at exit (exit(2)):
    CPU each start paid for nothing (benchmarks/README.md, issue 53, twelfth stop). What a
    run writes is written before :func:`main` returns: every file it opens is closed on its
    way out (``with``, or the writers' ``close()``; ``-o`` and ``-E`` by
    ``cli.run._close_outputs``), the ``-- CMD`` child is waited for, and the live display
    has put the terminal back. :func:`main` called in a process that goes on (the tests) is
    left as it was."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _err_line(prog: str, message: str) -> None:
    try:
        sys.stderr.write(f"{prog}: {printable(message)}\n")
        sys.stderr.flush()
    except OSError:
        pass


def _devnull_stdout() -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, sys.stdout.fileno())
    os.close(fd)


class _Refusing(io.StringIO):
    """Standard output closed before tiptop started (``tiptop -b >&-``): each write fails
    as write(2) to a closed fd does, EBADF, so that the run ends on one line as at any
    failed write; a run that writes nothing there (``--serve``, ``-b -o FILE``) goes on."""

    def write(self, s: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


class _Discarding(io.StringIO):
    """Standard error closed before tiptop started (``2>&-``): what tiptop says there goes
    nowhere, as the user asked, and the run goes on."""

    def write(self, s: str) -> int:
        return len(s)


def _closed_standard_streams() -> None:
    """Where stdin, stdout or stderr was closed before tiptop started (``tiptop -b >&-``):
    /dev/null holds the fd, so that no file tiptop opens later takes its number (open(2)
    gives the lowest free one) and gets what is written to the standard fd directly (the
    interpreter's fatal errors, the C library's), as glibc does for set-user-ID programs
    (csu/check_fds.c); the hold is close-on-exec (PEP 446), so a ``-- CMD`` gets the fd
    closed, as the user gave it. And stand-ins take the place of the None that Python left
    in ``sys.stdout`` and ``sys.stderr`` (the sys module's documentation, its note on
    ``__stdout__``), whose first write was a traceback."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            # open(2) gives the lowest free fd: this one, those below being open by now.
            with contextlib.suppress(OSError):  # no /dev/null (a bare chroot): left closed
                os.open(os.devnull, os.O_RDWR)
    if sys.stdout is None:
        sys.stdout = _Refusing()
    if sys.stderr is None:
        sys.stderr = _Discarding()


def _tolerant_stdout() -> None:
    """Write bytes that are not valid in the locale's encoding (a ``-p`` name or process
    name taken from non-UTF-8 bytes) back as the same bytes instead of raising
    UnicodeEncodeError: Python does so by itself only in the C/POSIX locale (PEP 540)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(
                    errors="surrogateescape" if stream is sys.stdout else "backslashreplace"
                )


def _main(argv: list[str], prog: str) -> int:
    actions, command = parse_argv(argv, ptiptop="ptiptop" in prog)
    # One-shot answers first: no config, no PMU probe.
    first = asked(actions)
    if first is not None and first.mode is Mode.HELP:
        sys.stdout.write(USAGE.format(prog=prog))
        return 0
    if first is not None and first.mode is Mode.VERSION:
        _print_version(sys.stdout, _flag(actions, "legalese"))
        return 0
    merge({}, actions)  # validate every command-line value before reading any file
    config_dir = _last_value(actions, "config_dir")
    host = Host.read()
    loaded = load_screens(
        config_dir, only_conf=_flag(actions, "only_conf"), target=host_target(host.cpuinfo)
    )
    opts, warnings = merge(loaded.options, actions, command)
    # The run's mode, once; an option another mode owns is one line here (status 2).
    opts = settle(opts, actions, tty=sys.stdout.isatty())
    if opts.live and not os.isatty(0):  # urwid's raw display reads keys from it, raw
        raise TiptopError(
            "live mode reads keys from standard input, which is not a terminal "
            "(-b prints batch output)"
        )
    warnings = [*warnings, *inverted_by_flags(loaded.options, actions)]
    problems = [str(w) for w in [*warnings, *loaded.problems]]
    # Live mode would wipe stderr lines at its first draw: its error log gets them instead.
    deferred = problems if opts.live else []
    if not deferred:
        for line in problems:
            _err_line(prog, line)
    return _run(opts, loaded, host, prog, deferred, paced=_last_value(actions, "delay") is None)


def _run(
    opts: Options, loaded: ScreenSet, host: Host, prog: str, deferred: list[str], *, paced: bool
) -> int:
    """Run ``opts.mode``: the one dispatch on the mode."""

    def say(line: str) -> None:
        _err_line(prog, line)

    match opts.mode:
        case Mode.LIST_SCREENS:
            sys.stdout.write(format_list(loaded, host))
            return 0
        case Mode.EXPORT:
            assert opts.export is not None  # its selector
            export_screens(loaded, opts.export)
            sys.stdout.write(f"screens written to {opts.export}\n")
            return 0
        case Mode.LIST_EVENTS | Mode.CHECK:
            from tiptop import diagnose

            listing = opts.mode is Mode.LIST_EVENTS
            sys.stdout.write(
                diagnose.list_events(host) if listing else diagnose.check(host, loaded)
            )
            return 0
        case Mode.SELFTEST:
            from tiptop.cli.selftest import run_selftest_command

            return run_selftest_command(opts, loaded, host, say)
        case Mode.PLOT:
            from tiptop.cli.plot import run_plot

            return run_plot(opts, loaded, say)
        case Mode.REPLAY:
            from tiptop.cli.replay import run_replay

            # Live replay plays at the recorded pace unless -d is given (a delay from the
            # configuration file is for watching this machine, not for replaying).
            return run_replay(opts, loaded, host, say, paced=paced)
        case Mode.SERVE | Mode.TEXTFILE:
            from tiptop.cli.serve import run_serve

            return run_serve(opts, loaded, host, say)
        case Mode.WHERE:
            from tiptop.cli.where import run_where

            return run_where(opts, host, say)
        case Mode.WHY | Mode.BATCH | Mode.LIVE:
            return run_monitor(opts, loaded, host, deferred)
        case Mode.HELP | Mode.VERSION:  # pragma: no cover - answered before any file is read
            raise AssertionError(opts.mode)
