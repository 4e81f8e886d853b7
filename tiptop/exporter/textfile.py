"""``--textfile PATH``: the exposition written to a regular file after each refresh, for
node_exporter's textfile collector, so that no write can be redirected elsewhere.

PATH's directory is opened once, at start-up, one component at a time with
``O_DIRECTORY|O_NOFOLLOW`` (``tiptop.files.open_directory``: a symlink as ANY component is
refused, not only the last: a directory link planted in a shared directory cannot lead the
writes into another directory) and every later call works from that fd (``openat``, ``renameat``):
renaming or replacing the directory path afterwards changes nothing. A write goes to a new
temporary file in that directory (a fresh random name, ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode
0644, ``fsync``), then takes PATH's name atomically, so a reader sees the old file or the
new one and the contents of no existing file are ever written (a hard link planted at
PATH keeps its contents).

PATH must be a regular file or absent. A symlink at PATH is refused (never followed:
``fs.protected_symlinks`` does not cover a path that is resolved first), and so is a
directory, a device, a FIFO or a socket: one line at start-up (:class:`Textfile`, exit
code 2) and, should one appear later, at each write, said once and left as it is. Where
PATH exists the new file is swapped with it (``renameat2(RENAME_EXCHANGE)``) and what was
there is looked at afterwards: a regular file is removed, anything else is swapped back,
so even an entry swapped in between a check and the rename is never replaced; where PATH
is absent ``RENAME_NOREPLACE`` makes sure it still is. On a file system without
renameat2 flags, a check then rename(2) is the fallback (a race window remains there).

A write that fails (a full disk, the directory removed) does not stop the exporter: the
HTTP server goes on, the next refresh tries again, and :class:`TextfileWriter` says so
once per failing spell and once when a write succeeds again. Every message names PATH,
never the temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable

from tiptop.errors import UsageError
from tiptop.files import LinkInPath, file_kind, open_directory
from tiptop.kernel._ffi import RENAME_EXCHANGE, RENAME_NOREPLACE, renameat2

#: node_exporter's textfile collector reads only files whose names end so
#: (node_exporter's README, "Textfile Collector").
SUFFIX = ".prom"
#: Mode of the written file: node_exporter usually runs as a user of its own.
MODE = 0o644
#: errnos of a renameat2 that this kernel or file system cannot do with flags.
_NO_FLAGS = (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP)


class TextfileRefused(UsageError):
    """PATH is not a file ``--textfile`` may replace (exit code 2); ``why`` says what it is."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"--textfile {path}: {why}")
        self.why = why


def _refusal(mode: int) -> str:
    return f"{file_kind(mode)}, not a regular file: refused"


class Textfile:
    """PATH's directory, opened once; the only place writes go."""

    def __init__(self, path: str) -> None:
        """Open PATH's directory and check PATH. Raises :class:`TextfileRefused` naming
        PATH: empty, its directory missing or a symlink, or PATH neither a regular file nor
        absent."""
        self.path = path
        folder, self.name = os.path.split(path)
        if not self.name or self.name in (".", ".."):
            raise TextfileRefused(path, "names a directory, not a file: refused")
        try:
            self.dir_fd = open_directory(folder or ".")
        except LinkInPath as link:
            why = f"its directory {link.component} is a symlink (never followed): refused"
            raise TextfileRefused(path, why) from None
        except OSError as err:
            why = f"no directory {folder}" if err.errno == errno.ENOENT else str(err.strerror)
            raise TextfileRefused(path, why) from None
        try:
            self.check()
        except TextfileRefused:
            self.close()
            raise

    def check(self) -> None:
        """Raises :class:`TextfileRefused` unless PATH is a regular file or absent."""
        mode = self._mode(self.name)
        if mode is not None and not stat.S_ISREG(mode):
            raise TextfileRefused(self.path, _refusal(mode))

    def _mode(self, name: str) -> int | None:
        try:
            return os.stat(name, dir_fd=self.dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return None

    def replace(self, data: bytes) -> None:
        """Put ``data`` at PATH (module docstring). Raises TextfileRefused, or OSError
        naming PATH."""
        self.check()
        temp = f".{self.name}.{secrets.token_hex(8)}.tmp"
        made: list[int] = []  # the temporary file's inode, once made
        try:
            made.append(self._write(temp, data))
            self._put(temp)
        except TextfileRefused:
            self._discard(temp, made)
            raise
        except OSError as err:
            self._discard(temp, made)
            raise OSError(err.errno, err.strerror, self.path) from None

    def _write(self, temp: str, data: bytes) -> int:
        """Write ``data`` to a new file named ``temp``; its inode number."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, MODE, dir_fd=self.dir_fd)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), MODE)  # whatever the umask
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            return os.fstat(f.fileno()).st_ino

    def _put(self, temp: str) -> None:
        """Give ``temp`` PATH's name, replacing only a regular file."""
        try:
            renameat2(self.dir_fd, temp, self.name, RENAME_NOREPLACE)
            return
        except OSError as err:
            if err.errno in _NO_FLAGS:
                return self._put_unflagged(temp)
            if err.errno != errno.EEXIST:
                raise
        renameat2(self.dir_fd, temp, self.name, RENAME_EXCHANGE)
        mode = self._mode(temp)  # what was at PATH, now under the temporary name
        if mode is not None and not stat.S_ISREG(mode):
            try:  # give it back its name
                renameat2(self.dir_fd, temp, self.name, RENAME_EXCHANGE)
            except FileNotFoundError:  # PATH was removed meanwhile
                renameat2(self.dir_fd, temp, self.name, RENAME_NOREPLACE)
            raise TextfileRefused(self.path, _refusal(mode))
        os.unlink(temp, dir_fd=self.dir_fd)
        return None

    def _put_unflagged(self, temp: str) -> None:
        self.check()
        os.rename(temp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)

    def _discard(self, temp: str, made: list[int]) -> None:
        """Remove the temporary file if the name still holds it (never what a failed
        swap left there)."""
        with contextlib.suppress(OSError):
            st = os.stat(temp, dir_fd=self.dir_fd, follow_symlinks=False)
            if made and st.st_ino == made[0] and stat.S_ISREG(st.st_mode):
                os.unlink(temp, dir_fd=self.dir_fd)

    def close(self) -> None:
        """Close the directory's fd."""
        os.close(self.dir_fd)


def suffix_warning(path: str) -> str | None:
    """The warning for a name node_exporter would not read, or None."""
    if path.endswith(SUFFIX):
        return None
    return f"--textfile {path}: node_exporter's textfile collector reads only *{SUFFIX} files"


class TextfileWriter:
    """Writes each refresh's exposition to a :class:`Textfile`; a failure is said once per
    spell (and its end once) through ``say(key, line)``, the message log's, and never
    raised. Counts the writes tried and done (a run that never wrote exits non-zero)."""

    def __init__(self, target: Textfile, say: Callable[[str, str], object]) -> None:
        self.target = target
        self.path = target.path
        self.say = say
        self.failing = False
        #: Failing spells so far: each spell's two messages have keys of their own.
        self.spells = 0
        self.tried = 0
        self.written = 0

    def write(self, data: bytes) -> bool:
        """Write ``data``; whether it was written."""
        self.tried += 1
        try:
            self.target.replace(data)
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
        self.written += 1
        if self.failing:
            self.failing = False
            self.say(f"textfile-recovered:{self.spells}", f"--textfile {self.path}: written again")
        return True


__all__ = ["Textfile", "TextfileRefused", "TextfileWriter", "suffix_warning"]
