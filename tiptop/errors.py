"""The exception vocabulary of tiptop; imports only the text boundary (``tiptop.outside``).

One base, :class:`TiptopError`, and a few subclasses that also inherit the builtin they
resemble (the PyNaCl habit), so callers may catch either. Everything a user can cause ends
as one of these and is turned into one line and an exit code by ``cli.main``.
"""

from __future__ import annotations

from tiptop.outside import printable


class TiptopError(Exception):
    """Base of every error tiptop raises on purpose; ``str()`` is always one printable line
    (what a terminal may obey escaped, ``tiptop.outside.printable``)."""

    exit_code = 1

    def __str__(self) -> str:
        return printable(super().__str__())


class UsageError(TiptopError, ValueError):
    """A bad command-line option or value."""

    exit_code = 2


class SpecError(TiptopError, ValueError):
    """A bad configuration file, screen, counter, column or expression.

    ``path``, ``line`` and ``column`` locate the problem (1-based; ``None`` when unknown).
    ``str()`` gives ``path:line:column: message``, the form compilers use.
    """

    def __init__(
        self,
        message: str,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = [str(p) for p in (self.path, self.line, self.column) if p is not None]
        return printable(":".join([*where, " " + self.message]) if where else self.message)


class EventError(TiptopError, LookupError):
    """An event name that cannot be turned into a ``perf_event_attr`` on this machine."""


class CounterError(TiptopError, OSError):
    """The kernel refused to open or read a counter; ``errno`` is the kernel's own.

    Raised at the kernel boundary (``tiptop.kernel.errors.translate``) as one of the kinds
    below, so callers test a kind instead of errno values; ``member`` is the index of the
    group member that failed, when known.
    """

    member: int | None = None


class TaskGone(CounterError, ProcessLookupError):
    """The task vanished (ESRCH, or between two looks at ``/proc``); its row is dropped."""


class AccessDenied(CounterError, PermissionError):
    """EACCES/EPERM: the task belongs to another user, or the paranoid level forbids it."""


class OutOfFds(CounterError):
    """EMFILE/ENFILE: no file descriptor left for one more counter."""


class EventRefused(CounterError):
    """EINVAL/ENOSPC: a bad encoding, an unsupported flag, or a group too large to fit
    the PMU's counters (x86 ``validate_group()``)."""


class GroupChanging(CounterError):
    """ECHILD on a group read: an inherited group was read while one of the task's threads
    was joining or leaving it, so parent and child groups briefly differ
    (kernel/events/core.c ``__perf_read_group_add``, Linux 6.6+). Reading again works."""


class EventUnsupported(CounterError):
    """ENOENT/EOPNOTSUPP/ENODEV and the like: this machine cannot count that event."""
