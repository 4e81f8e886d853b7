"""``tiptop [options] -- command args``: run a command with counters from its first
instruction (docs/original.md section 7.4, fixed).

The child is forked and blocks reading a pipe; the caller attaches counters with
``enable_on_exec`` and ``inherit`` (``Sampler.attach_spawned``, perf_event_open(2):
"enable_on_exec ... counter is enabled when the process calls exec"), then releases it and
the child ``execvp``s. An exec failure comes back through a close-on-exec pipe, as
``subprocess`` reports it (the pipe reads EOF once the exec succeeded, else the errno): the
caller gets :class:`ExecFailed` at once, before any refresh, and exits 127 (the shell's
convention). :meth:`Spawned.exited` notices the end *without reaping*
(``waitid(WNOWAIT)``), so the last interval can still be read before :meth:`Spawned.reap`
collects the status: the exit code, or 128 + signal number.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import sys
from collections.abc import Sequence

from tiptop.errors import TiptopError
from tiptop.outside import shown


class ExecFailed(TiptopError):
    """The command after ``--`` could not be executed (exit status 127, as a shell's)."""

    exit_code = 127


class Spawned:
    """A forked child waiting on a pipe before it execs the command."""

    def __init__(self, pid: int, gate: int, report: int = -1, name: str = "") -> None:
        self.pid = pid
        self._gate = gate  # write end of the pipe the child blocks on
        self._report = report  # read end of the close-on-exec pipe of the exec's errno
        self.name = name
        self.status: int | None = None
        #: Left to its own fate (tiptop ended before it): never killed, never reaped.
        self.abandoned = False

    def release(self) -> None:
        """Let the child exec the command; raise :class:`ExecFailed` (the child reaped)
        when the exec failed."""
        if self._gate >= 0:
            try:
                os.write(self._gate, b"g")
            finally:
                os.close(self._gate)
                self._gate = -1
        if self._report < 0:
            return
        try:
            answer = _read_all(self._report)  # EOF: the exec closed the pipe
        finally:
            os.close(self._report)
            self._report = -1
        if answer:
            self.reap()
            raise ExecFailed(_exec_error(self.name, int(answer)))

    def exited(self) -> bool:
        """True once the child has ended (it stays a zombie until :meth:`reap`)."""
        if self.status is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def peek(self) -> int | None:
        """The exit status the shell's way (:meth:`reap`'s) once the child has ended, still
        without reaping it (``waitid(WNOWAIT)``, waitid(2)); None while it runs."""
        if self.status is not None:
            return self.status
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return None
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else 128 + info.si_status

    def reap(self) -> int:
        """Wait for the child and return its status the shell's way."""
        if self.status is None:
            try:
                _, st = os.waitpid(self.pid, 0)
            except ChildProcessError:
                st = 0
            self.status = os.waitstatus_to_exitcode(st)
            if self.status < 0:  # killed by a signal
                self.status = 128 - self.status
        return self.status

    def abandon(self) -> None:
        """Leave the running command to its own fate: :meth:`kill` spares it (a second
        SIGTERM, or 5 s after the first, ends tiptop while it runs on)."""
        self.abandoned = True

    def kill(self) -> None:
        """End the child (used when attaching failed or tiptop was interrupted), unless
        it was :meth:`abandon`-ed."""
        self.release_closed()
        if self.status is None and not self.abandoned:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.reap()

    def release_closed(self) -> None:
        """Close the gate without releasing: a blocked child then reads EOF and exits."""
        if self._gate >= 0:
            os.close(self._gate)
            self._gate = -1
        if self._report >= 0:
            os.close(self._report)
            self._report = -1


def _read_all(fd: int) -> bytes:
    """What ``fd`` gives until EOF."""
    parts = []
    while chunk := os.read(fd, 64):
        parts.append(chunk)
    return b"".join(parts)


def _exec_error(name: str, code: int) -> str:
    """The one line for a failed exec: "not found" as a shell says it for ENOENT, else the
    errno's text (execve(2): EACCES, ENOEXEC...)."""
    if code == errno.ENOENT:
        return f"{shown(name)}: command not found"
    return f"cannot run '{shown(name)}': {os.strerror(code)}"


def fork_blocked(argv: Sequence[str]) -> Spawned:
    """Fork a child that waits for :meth:`Spawned.release`, then execs ``argv``."""
    if not argv:
        raise ValueError("empty command")
    r, w = os.pipe()
    # os.pipe() makes close-on-exec fds (PEP 446): a successful exec closes ``report_w``.
    report_r, report_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never returns
        try:
            os.close(w)
            os.close(report_r)
            go = os.read(r, 1)
            os.close(r)
            if not go:  # tiptop gave up before releasing us
                os._exit(127)
            # Python ignores SIGPIPE; a command expects the default (as subprocess does).
            for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(argv[0], list(argv))
        except OSError as exc:
            os.write(report_w, str(exc.errno or errno.ENOEXEC).encode())
        finally:
            os._exit(127)
    os.close(r)
    os.close(report_w)
    return Spawned(pid, w, report_r, argv[0])


def changes_credentials(command: Sequence[str], euid: int, egid: int) -> str | None:
    """Why ``command``'s counters will stop at its exec, or None: a set-user-ID (or
    set-group-ID) binary owned by another user (group) changes credentials when exec'd,
    and the kernel then ends the task's perf events (fs/exec.c ``begin_new_exec()``: a
    task no longer dumpable gets ``perf_event_exit_task()``), so they count nothing after."""
    path = shutil.which(command[0]) if command else None
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    setuid = st.st_mode & stat.S_ISUID and st.st_uid != euid
    setgid = st.st_mode & stat.S_ISGID and st.st_gid != egid
    if not (setuid or setgid):
        return None
    kind = "set-user-ID" if setuid else "set-group-ID"
    return (
        f"{command[0]!r} is {kind}: the kernel ends a task's counters when it execs such a "
        "program (fs/exec.c begin_new_exec(), perf_event_exit_task()), so its counter cells "
        "show '?'; run tiptop as root to count it"
    )
