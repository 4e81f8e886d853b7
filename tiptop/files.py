"""Files a user names to be written (``--record``, ``--export``, ``--textfile``): opened only
when they are regular files, never through a symbolic link; and directories reached without
following a link in any component (:func:`open_directory`).

A symbolic link is refused rather than followed, so a name planted in a shared directory
cannot make tiptop overwrite its target (O_NOFOLLOW: the open fails with ELOOP, open(2));
anything but a regular file is refused too, before it is opened (``lstat``: opening a FIFO
wakes its reader, a device may act on an open); should one be put there after that check,
O_NONBLOCK makes a FIFO without a reader fail at once (ENXIO) instead of blocking the
program, and ``fstat`` refuses it.
"""

from __future__ import annotations

import errno
import os
import stat

from tiptop.errors import TiptopError
from tiptop.outside import printable

#: Each kind of file that is not a regular one, in words (inode(7), "The file type").
_KINDS = (
    (stat.S_ISLNK, "a symlink (never followed)"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) that is not regular is, in words, for a
    refusal: ``a FIFO``, ``a directory``..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str, flags: int, mode: int, option: str, link_hint: str = "") -> int:
    """A blocking descriptor of the regular file ``path``, opened with ``flags`` and created
    with ``mode`` if missing. A symbolic link or anything but a regular file is refused
    with one line naming ``option`` (``link_hint`` ends the link's); any other failure to
    open is the ``OSError``, for the caller to word."""
    shown = printable(path)
    not_regular = f"{option}: '{shown}' is not a regular file: not written"
    is_link = f"{option}: '{shown}' is a symbolic link: not written{link_hint}"
    try:  # refused before it is opened: opening a FIFO or a device acts on it
        kind = os.lstat(path).st_mode
    except FileNotFoundError:
        kind = None
    if kind is not None and stat.S_ISLNK(kind):
        raise TiptopError(is_link)
    if kind is not None and not stat.S_ISREG(kind):
        raise TiptopError(not_regular)
    nofollow = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:  # a link or another file put there since the lstat: refused all the same
        fd = os.open(path, flags | nofollow, mode)
    except OSError:
        if os.path.islink(path):
            raise TiptopError(is_link) from None
        if os.path.exists(path) and not os.path.isfile(path):
            raise TiptopError(not_regular) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TiptopError(not_regular)
    os.set_blocking(fd, True)
    return fd


class LinkInPath(TiptopError):
    """A component of a path is a symbolic link (never followed); ``component`` is the
    path up to it."""

    def __init__(self, component: str) -> None:
        super().__init__(f"{component} is a symbolic link (never followed)")
        self.component = component


def open_directory(path: str) -> int:
    """A descriptor of the directory ``path``, reached one component at a time from ``/``
    (or the working directory), each opened with ``O_DIRECTORY|O_NOFOLLOW`` relative to the
    one before (openat(2)): a symbolic link in ANY component is refused
    (:class:`LinkInPath`), not only in the last, as ``openat2(RESOLVE_NO_SYMLINKS)`` would
    (Python has no openat2). A link planted as an earlier component of a path in a shared
    directory (``/tmp/d -> /root/private``, with ``fs.protected_symlinks`` off) cannot
    lead a write elsewhere. ``OSError`` for anything else (ENOENT, ENOTDIR, EACCES)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open("/" if path.startswith("/") else ".", flags)
    walked = "/" if path.startswith("/") else ""
    for part in [p for p in path.split("/") if p not in ("", ".")]:
        walked = os.path.join(walked, part)
        try:
            step = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as err:
            link = err.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd)
            os.close(fd)
            if link:
                raise LinkInPath(walked) from None
            raise
        os.close(fd)
        fd = step
    return fd


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


__all__ = ["LinkInPath", "open_directory", "open_regular"]
