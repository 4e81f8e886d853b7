"""Monitoring proper: open the outputs, spawn the ``--`` command, build the sampler and
hand over to live mode or the batch loop; everything opened here is closed here."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any

from tiptop.cli.screens import ScreenSet, export_current, fallback_screen, host_target, pick_screen
from tiptop.errors import TiptopError


def open_output(path: str | None, what: str) -> IO[str] | None:
    """``-o``/``-E``: the file opened for writing, or None; one line when it cannot be.
    Bytes of a non-UTF-8 process name are written back as they were (surrogateescape)."""
    if path is None:
        return None
    try:
        return open(path, "w", errors="surrogateescape")
    except OSError as exc:
        raise TiptopError(f"{what}: cannot open '{path}': {exc.strerror}") from None


def check_privileges(opts: Any) -> None:
    """``-K`` without the right to count kernel events is an error, as in the original."""
    from tiptop.kernel import is_privileged, kernel_counting_allowed, read_paranoid

    paranoid = read_paranoid()
    if opts.show_kernel and not kernel_counting_allowed(paranoid, is_privileged()):
        # The original's two sentences (tiptop-original.md section 2, ``-K``) on one line,
        # with the level found and the way out.
        raise TiptopError(
            "Kernel mode (-K --kernel) not available. You are not root, the binary is not "
            f"setuid, and the paranoia level is too high (perf_event_paranoid is {paranoid}; "
            "sysctl kernel.perf_event_paranoid=1 allows it)."
        )


def read_pid_max(path: str = "/proc/sys/kernel/pid_max") -> int:
    """The kernel's ``pid_max`` (proc(5)); 32768, the historical default, when unreadable."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 32768


def is_live(opts: Any) -> bool:
    """Whether this run takes the terminal over (live mode) rather than printing batches."""
    return not opts.batch and opts.output is None and sys.stdout.isatty()


def run_monitor(
    opts: Any, loaded: ScreenSet, say: Callable[[str], None], problems: Sequence[str] = ()
) -> int:
    """Start sampling and hand over to live mode or the batch loop; ``say`` prints one
    diagnostic line. ``problems`` (configuration warnings not printed yet, in live mode)
    go to the live error log and a notice on the message line."""
    from tiptop import table
    from tiptop.engine.sampler import Sampler, SamplerConfig
    from tiptop.outputs import batch

    index, screen = pick_screen(loaded.screens, opts.screen)
    table.check_formats(screen)
    opts.pid_width = table.pid_width_for(read_pid_max())
    opts.target = host_target()
    opts.config_path = loaded.path
    check_privileges(opts)
    if opts.only_pid is not None and not os.path.exists(f"/proc/{opts.only_pid}"):
        raise TiptopError(f"-p {opts.only_pid}: no such process")
    # Files first: a bad -o or -E is the one line the user sees, before any screen notice.
    out = open_output(opts.output, "-o")
    errf = open_output(opts.error_file, "-E")
    live = is_live(opts)
    # In live mode the terminal is about to be taken over: notices go on its message line.
    notices: list[str] = []
    if problems:
        n = len(problems)
        notices.append(f"{n} problem{'s' if n > 1 else ''} in the configuration ('e' lists them)")
    if opts.screen is None:
        index, screen = fallback_screen(loaded, index, screen, notices.append if live else say)
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
        for line in problems:
            sampler.note(line)
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
                error_log=errf,
                message="; ".join(notices),
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
