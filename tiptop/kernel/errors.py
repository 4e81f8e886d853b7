"""Kernel errors translated once, at the boundary, into the kinds of ``tiptop.errors``.

``perf_event_open`` and group reads fail with an errno (perf_event_open(2), ERRORS); the
engine tests *kinds* (task gone, access denied, out of fds, event refused or unsupported)
instead of errno values in several places, the way psutil's ``wrap_exceptions`` turns
errnos into ``NoSuchProcess``/``AccessDenied``. The errno stays on the exception, so
``tiptop.kernel.explain`` can still say what it means.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from tiptop.errors import (
    AccessDenied,
    CounterError,
    EventRefused,
    EventUnsupported,
    GroupChanging,
    OutOfFds,
    TaskGone,
)

_KINDS: dict[int, type[CounterError]] = {
    errno.ESRCH: TaskGone,
    errno.EACCES: AccessDenied,
    errno.EPERM: AccessDenied,
    errno.EMFILE: OutOfFds,
    errno.ENFILE: OutOfFds,
    errno.EINVAL: EventRefused,
    errno.ENOSPC: EventRefused,
    errno.ENOENT: EventUnsupported,
    errno.EOPNOTSUPP: EventUnsupported,
    errno.ENODEV: EventUnsupported,
    errno.E2BIG: EventUnsupported,
    errno.ECHILD: GroupChanging,
}


def translate(err: OSError) -> CounterError:
    """``err`` as its kind (a ``CounterError`` subclass), errno, text and member kept."""
    if isinstance(err, CounterError):
        return err
    code = err.errno or 0
    out = _KINDS.get(code, CounterError)(code, err.strerror or str(err))
    out.member = getattr(err, "member", None)
    return out


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Re-raise any ``OSError`` of the block as its kind (see :func:`translate`)."""
    try:
        yield
    except OSError as e:
        raise translate(e) from None
