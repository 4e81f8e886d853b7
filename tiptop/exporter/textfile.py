"""``--textfile PATH``: the exposition written to a regular file after each refresh, for
node_exporter's textfile collector, without ever replacing anything else.

A write goes to a new temporary file in the same directory (``mkstemp``: a fresh name,
O_EXCL, never a file someone else made), then rename(2) puts it in place atomically, so a
reader sees the old file or the new one. rename(2) replaces whatever directory entry is at
PATH, a device node included (``--textfile /dev/null`` once made /dev/null a regular
file): so PATH must be a regular file, or absent, or a symlink to a regular file (then the
file it names is replaced and the link kept). Anything else is refused with one line at
start-up (:func:`check_path`, exit code 2) and, should it appear later, at each write.

A write that fails (a full disk, a directory removed) does not stop the exporter: the
HTTP server goes on, the next refresh tries again, and :class:`TextfileWriter` says so
once per failing spell and once when a write succeeds again. Every message names PATH,
never the temporary file. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable

from tiptop.errors import UsageError

#: node_exporter's textfile collector reads only files whose names end so
#: (node_exporter's README, "Textfile Collector").
SUFFIX = ".prom"
#: Mode of the written file: node_exporter usually runs as a user of its own.
MODE = 0o644

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


class TextfileRefused(UsageError):
    """PATH is not a file ``--textfile`` may replace (exit code 2); ``why`` says what it is."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"--textfile {path}: {why}")
        self.why = why


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_path(path: str) -> str:
    """The file a write replaces: ``path``, or the regular file the symlink at ``path``
    names. Raises :class:`TextfileRefused` naming ``path`` when that is a directory, a
    device, a FIFO, a socket, or a symlink to one of them or to nothing."""
    if not path:
        raise TextfileRefused(path, "empty path")
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise TextfileRefused(path, f"a symlink to nothing ({real})") from None
        return real  # made by the first write
    except OSError as err:
        raise TextfileRefused(path, str(err.strerror)) from None
    if not stat.S_ISREG(mode):
        link = f" (a symlink to {real})" if real != os.path.abspath(path) else ""
        raise TextfileRefused(path, f"{_kind(mode)}{link}, not a regular file: refused")
    return real


def suffix_warning(path: str) -> str | None:
    """The warning for a name node_exporter would not read, or None."""
    if path.endswith(SUFFIX):
        return None
    return f"--textfile {path}: node_exporter's textfile collector reads only *{SUFFIX} files"


def replace_file(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary file beside the file :func:`check_path` names and
    rename it over that file. Raises TextfileRefused, or OSError naming ``path``."""
    real = check_path(path)
    folder, base = os.path.split(real)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise OSError(err.errno, err.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), MODE)
            f.write(data)
        os.replace(tmp, real)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OSError(err.errno, err.strerror, path) from None


class TextfileWriter:
    """Writes each refresh's exposition to PATH; a failure is said once per spell (and its
    end once) through ``say(key, line)``, the message log's, and never raised."""

    def __init__(self, path: str, say: Callable[[str, str], object]) -> None:
        self.path = path
        self.say = say
        self.failing = False
        #: Failing spells so far: each spell's two messages have keys of their own.
        self.spells = 0

    def write(self, data: bytes) -> bool:
        """Write ``data``; whether it was written."""
        try:
            replace_file(self.path, data)
        except (OSError, TextfileRefused) as err:
            if not self.failing:
                self.failing = True
                self.spells += 1
                why = err.why if isinstance(err, TextfileRefused) else err.strerror
                self.say(
                    f"textfile-failed:{self.spells}",
                    f"--textfile {self.path}: not written ({why}); carrying on, "
                    "trying again at each refresh",
                )
            return False
        if self.failing:
            self.failing = False
            self.say(f"textfile-recovered:{self.spells}", f"--textfile {self.path}: written again")
        return True


__all__ = ["TextfileRefused", "TextfileWriter", "check_path", "replace_file", "suffix_warning"]
