"""The ``tiptop`` and ``ptiptop`` commands: parse, merge options, pick a screen, run.

Every option of the original (tiptop-original.md section 2) plus modern spellings
(``--delay=2``, ``-d2``, ``-bi``) and ``--format``, ``--list-events``, ``--check``,
``--export``. Everything a user can get wrong ends here as one line on stderr and an exit
code (2 for usage errors), never a traceback. ``-h``, ``-v``, ``--version`` and
``--list-screens`` never probe the PMU first (a defect of the original fixed).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from tiptop import __version__
from tiptop.errors import TiptopError, UsageError
from tiptop.options import Action, merge, parse_argv

USAGE = """\
Usage: {prog} [option] [-- command args]
	-b             run in batch mode
	-c             use command line instead of process name
	--cpu-min m    minimum %CPU to display a process
	-d delay       delay in seconds between refreshes (at least 0.01)
	-E filename    file where errors are logged
	--epoch        add epoch at beginning of each line
	-h --help      print this message
	-H             show threads
	-K --kernel    show kernel activity
	-i             also display idle processes
	--list-screens display list of available screens
	-n num         max number of refreshes
	--no-collect   no attempt to collect idle processes when out of files
	-o outfile     output file in batch mode
	--only-conf    disable default screen, only configuration
	-p --pid pid|name  only display task with this PID/name
	-S num|name    screen number (or part of its name) to display
	--sticky       keep final status of dead processes
	--timestamp    add timestamp at beginning of each line
	-u user|uid    only show user's processes
	-U             show user name
	-v             print version and exit
	--version      print legalese and exit
	-W path        directory holding .tiptoprc (or a config file)
	-w pid|name    watch this process (highlighted)
	--format f     batch output: text (default), csv or json
	--list-events  list events and whether they open here
	--check        explain what this machine allows, and how to get more
	--export FILE  write the screens to FILE (.yaml/.yml or .xml)
	-- cmd args    run cmd and monitor it (and its children) from its first instruction
"""


def _flag(actions: list[Action], name: str) -> bool:
    return any(a.name == name and a.kind == "flag" for a in actions)


def _last_value(actions: list[Action], name: str) -> str | None:
    values = [a.value for a in actions if a.name == name and a.kind == "set"]
    return values[-1] if values else None


def _print_version(out: IO[str], legalese: bool) -> None:
    if legalese:
        out.write(
            f"tiptop {__version__}.\n"
            "Python reimplementation of tiptop 2.3.1 (C) 2011-2015 Inria.\n"
            "This is free software (GPL-2.0-or-later). No warranty.\n"
        )
    else:
        out.write(f"This is tiptop version {__version__} (tiptop-perf, Python).\n")


def _fmt_list_screens(screens: ScreenSet, probe: bool) -> str:
    lines = ["Available screens:"]
    availability: dict[str, str] = {}
    if probe:
        from tiptop import diagnose

        availability = {s.name: diagnose.screen_status(s) for s in screens.screens}
    for i, s in enumerate(screens.screens):
        line = f"{i:2d}: '{s.name}', {s.desc}"
        if s.name in availability:
            line += f"  [{availability[s.name]}]"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run ``tiptop``; returns the exit status (0 ok, 1 error, 2 usage, or the status of
    the command run after ``--``)."""
    if argv is None:
        argv = sys.argv[1:]
    if prog is None:
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "tiptop"
        if "ptiptop" not in prog:
            prog = "tiptop"
    try:
        return _main(list(argv), prog)
    except TiptopError as exc:
        _err_line(prog, str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a file we had to read or write
        where = f" '{exc.filename}'" if exc.filename else ""
        _err_line(prog, f"{exc.strerror or exc}{where}")
        return 1
    except BrokenPipeError:
        _devnull_stdout()
        return 0


def main_ptiptop() -> int:
    """``ptiptop PATTERN... [OPTIONS]``: unknown arguments are ``-p`` patterns."""
    return main(sys.argv[1:], prog="ptiptop")


def _err_line(prog: str, message: str) -> None:
    try:
        sys.stderr.write(f"{prog}: {message}\n")
        sys.stderr.flush()
    except OSError:
        pass


def _devnull_stdout() -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, sys.stdout.fileno())
    os.close(fd)


def _main(argv: list[str], prog: str) -> int:
    actions, command = parse_argv(argv, ptiptop="ptiptop" in prog)
    # One-shot answers first: no config, no PMU probe.
    if _flag(actions, "help"):
        sys.stdout.write(USAGE.format(prog=prog))
        return 0
    if _flag(actions, "version") or _flag(actions, "legalese"):
        _print_version(sys.stdout, _flag(actions, "legalese"))
        return 0
    merge({}, actions)  # validate every command-line value before reading any file
    config_dir = _last_value(actions, "config_dir")
    loaded = load_screens(config_dir, only_conf=_flag(actions, "only_conf"))
    opts, warnings = merge(loaded.options, actions)
    opts.command = command
    for w in [*warnings, *loaded.problems]:
        _err_line(prog, w)
    if opts.list_screens:
        sys.stdout.write(_fmt_list_screens(loaded, probe=True))
        return 0
    if opts.export:
        _export(loaded, opts.export)
        sys.stdout.write(f"screens written to {opts.export}\n")
        return 0
    if opts.list_events or opts.check:
        from tiptop import diagnose

        out = diagnose.list_events() if opts.list_events else diagnose.check(loaded)
        sys.stdout.write(out)
        return 0
    return run_monitor(opts, loaded, prog)


# --------------------------------------------------------------------------- screens


@dataclass
class ScreenSet:
    """The screens in the original's order and what the config file said."""

    screens: list[Any] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    path: str | None = None


def host_target() -> Any:
    """This CPU as the config's ``arch``/``model`` gating sees it (section 4.4): ``x86``
    and ``%02X_%02X`` family_model from /proc/cpuinfo, or the machine name elsewhere."""
    import platform

    from tiptop.spec.model import Target

    machine = platform.machine()
    if machine in ("x86_64", "i686", "i386"):
        fam = mod = None
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    key, _, val = line.partition(":")
                    key = key.strip()
                    if key == "cpu family" and fam is None:
                        fam = int(val)
                    elif key == "model" and mod is None:
                        mod = int(val)
                    if fam is not None and mod is not None:
                        break
        except (OSError, ValueError):
            pass
        model = f"{fam:02X}_{mod:02X}" if fam is not None and mod is not None else None
        return Target("x86", model)
    return Target({"aarch64": "arm64"}.get(machine, machine), None)


def _config_path(config_dir: str | None) -> str | None:
    """The rc file (``tiptop.spec.loader.find_config``: ``-W`` directory or file,
    ``$TIPTOP``, ``./.tiptoprc``, XDG, ``~/.tiptoprc``); a ``-W`` that does not exist is
    a usage error."""
    from tiptop.spec.loader import find_config

    if config_dir is not None and not os.path.exists(os.path.expanduser(config_dir)):
        raise UsageError(f"-W: '{config_dir}' does not exist")
    return find_config(config_dir, os.environ, os.getcwd(), os.environ.get("HOME"))


def load_screens(config_dir: str | None, *, only_conf: bool = False) -> ScreenSet:
    """Built-in screens (unless ``--only-conf``) around the config file's screens:
    ``default`` and ``branch`` first, then the file's, then the other built-ins."""
    from tiptop.spec import loader

    target = host_target()
    result = ScreenSet()
    path = _config_path(config_dir)
    conf_screens: list[Any] = []
    if path is not None:
        conf = loader.load_file(path, target)
        result.path = path
        result.options = dict(conf.options)
        conf_screens = list(conf.screens)
        result.problems = [str(p) for p in conf.problems]
    builtins: list[Any] = []
    if not only_conf:
        builtins = list(loader.builtin_screens(target))
    # A config screen named like a built-in replaces it in the built-in's place, so a file
    # written by --export or the W key (every screen, built-ins included) loads back as
    # the same list; the original appended copies (defect 13: duplicates on reload).
    by_name: dict[str, Any] = {}
    for s in conf_screens:
        by_name.setdefault(s.name, s)
    used: set[int] = set()

    def swap(builtin: Any) -> Any:
        mine = by_name.get(builtin.name)
        if mine is None:
            return builtin
        used.add(id(mine))
        return mine

    first = [swap(s) for s in builtins if s.name in ("default", "branch")]
    rest = [swap(s) for s in builtins if s.name not in ("default", "branch")]
    conf_screens = [s for s in conf_screens if id(s) not in used]
    result.screens = first + conf_screens + rest
    if not result.screens:
        raise TiptopError("no screen to show (--only-conf without screens in the config file)")
    return result


def pick_screen(screens: Sequence[Any], wanted: str | None) -> tuple[int, Any]:
    """``-S``: a number, else the first screen whose name contains the text."""
    if wanted is None:
        return 0, screens[0]
    try:
        index = int(wanted, 10)
    except ValueError:
        for i, s in enumerate(screens):
            if wanted in s.name:
                return i, s
        raise UsageError(f"-S: no screen named like '{wanted}' (see --list-screens)") from None
    if not 0 <= index < len(screens):
        raise UsageError(f"-S: no screen number {index} (0 to {len(screens) - 1})")
    return index, screens[index]


def _export(loaded: ScreenSet, path: str) -> None:
    from tiptop.spec.loader import export_xml, export_yaml
    from tiptop.spec.model import ConfigSpec

    if not path.endswith((".xml", ".yaml", ".yml")):
        raise UsageError(f"--export: '{path}' must end in .yaml, .yml or .xml")
    writer = export_xml if path.endswith(".xml") else export_yaml
    text = writer(ConfigSpec(path=None, options=dict(loaded.options), screens=loaded.screens))
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        raise TiptopError(f"cannot write '{path}': {exc.strerror}") from None


# --------------------------------------------------------------------------- running


def _open_output(path: str | None, what: str) -> IO[str] | None:
    if path is None:
        return None
    try:
        return open(path, "w")
    except OSError as exc:
        raise TiptopError(f"{what}: cannot open '{path}': {exc.strerror}") from None


def _check_privileges(opts: Any) -> None:
    from tiptop.perf import is_privileged, kernel_counting_allowed, read_paranoid

    paranoid = read_paranoid()
    if opts.show_kernel and not kernel_counting_allowed(paranoid, is_privileged()):
        # The original's two sentences (tiptop-original.md section 2, ``-K``) on one line,
        # with the level found and the way out.
        raise TiptopError(
            "Kernel mode (-K --kernel) not available. You are not root, the binary is not "
            f"setuid, and the paranoia level is too high (perf_event_paranoid is {paranoid}; "
            "sysctl kernel.perf_event_paranoid=1 allows it)."
        )


def run_monitor(opts: Any, loaded: ScreenSet, prog: str) -> int:
    """Start sampling and hand over to live mode or the batch loop."""
    from tiptop import batch, table
    from tiptop.sampler import Sampler, SamplerConfig

    index, screen = pick_screen(loaded.screens, opts.screen)
    table.check_formats(screen)
    opts.pid_width = table.pid_width_for(read_pid_max())
    _check_privileges(opts)
    if opts.only_pid is not None and not os.path.exists(f"/proc/{opts.only_pid}"):
        raise TiptopError(f"-p {opts.only_pid}: no such process")
    if opts.screen is None:
        index, screen = _fallback_screen(loaded, index, screen, prog)
    live = not opts.batch and opts.output is None and sys.stdout.isatty()
    out = _open_output(opts.output, "-o")
    errf = _open_output(opts.error_file, "-E")
    child = None
    if opts.command:
        from tiptop import spawn

        child = spawn.fork_blocked(opts.command)
        opts.only_pid, opts.only_name, opts.show_idle = child.pid, None, True
    config = SamplerConfig(
        threads=opts.show_threads,
        kernel=opts.show_kernel,
        only_pid=opts.only_pid,
        only_name=opts.only_name,
        match_cmdline=opts.show_cmdline,
        uid=opts.uid,
        collect=opts.collect,
        cpu_threshold=opts.cpu_threshold,
        sticky=opts.sticky,
    )
    stop = batch.Stop()
    sampler = None
    try:
        sampler = Sampler(screen, config)
        if child is not None:
            sampler.attach_spawned(child.pid)
            sampler.start()
            child.release()
        if live:
            from tiptop import live as live_mode

            code = live_mode.run(
                opts,
                sampler,
                loaded.screens,
                screen_index=index,
                started=child is not None,
                exporter=export_current,
            )
            if child is not None and code == 0 and child.exited():
                return child.reap()  # the command ended first: its status, as in batch
            return code  # 130 after Ctrl-C; a command still running is ended below
        old = {
            sig: signal.signal(sig, lambda *_: setattr(stop, "requested", True))
            for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            batch.run(
                opts,
                sampler,
                screen,
                index,
                out or sys.stdout,
                errf or sys.stderr,
                started=child is not None,
                stop=stop,
                child=child,
            )
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        if child is not None and stop.requested and not child.exited():
            os.kill(child.pid, signal.SIGTERM)  # pass the request on to the command
        return child.reap() if child is not None else 0
    finally:
        if child is not None and child.status is None and not child.exited():
            child.kill()
        if sampler is not None:
            sampler.close()
        for f in (out, errf):
            if f is not None:
                try:
                    f.close()
                except OSError as exc:
                    raise TiptopError(f"cannot write output: {exc.strerror}") from None


def read_pid_max(path: str = "/proc/sys/kernel/pid_max") -> int:
    """The kernel's ``pid_max`` (proc(5)); 32768, the historical default, when unreadable."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 32768


def export_current(options: Any, screens: Sequence[Any]) -> str:
    """The live ``W`` key's text: the current options and every screen as an XML
    ``.tiptoprc`` (tiptop-original.md section 4.6; values escaped, unlike the original).
    Loading it back with ``-W`` gives the same screens (see :func:`load_screens`)."""
    from tiptop.options import to_rc
    from tiptop.spec import ConfigSpec, export_xml

    return export_xml(ConfigSpec(path=None, options=to_rc(options), screens=list(screens)))


def _fallback_screen(loaded: ScreenSet, index: int, screen: Any, prog: str) -> tuple[int, Any]:
    """Without any usable hardware event, start on ``sched`` (software events) and say so."""
    from tiptop import diagnose

    ok, total, reason = diagnose.screen_counters(screen)
    if total == 0 or ok > 0:
        return index, screen
    for i, s in enumerate(loaded.screens):
        if s.name == "sched":
            _err_line(
                prog,
                f"screen '{screen.name}' cannot count here ({reason}); "
                "starting on screen 'sched' (software events)",
            )
            return i, s
    return index, screen
