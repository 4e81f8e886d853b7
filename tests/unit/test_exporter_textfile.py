"""``--textfile``'s writer (tiptop/exporter/textfile.py) on the real file system: only a
regular file is ever replaced, no write goes through a symlink (at PATH or as its
directory) nor into an existing file's contents, a FIFO swapped in while writing is never
replaced, every message names PATH, a failed write is said once and its end once."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tiptop.exporter import textfile as textfile_module
from tiptop.exporter.textfile import Textfile, TextfileRefused, TextfileWriter, suffix_warning
from tiptop.kernel._ffi import RENAME_NOREPLACE, renameat2

#: Swaps of a FIFO in and out of PATH while a writer writes.
SWAPS = 1000


@pytest.fixture
def opened() -> Iterator[Callable[[Path], Textfile]]:
    made: list[Textfile] = []

    def open_(path: Path) -> Textfile:
        made.append(Textfile(str(path)))
        return made[-1]

    yield open_
    for target in made:
        target.close()


def char_device(where: Path) -> Path | None:
    """A character device node with /dev/null's numbers, or None where mknod(2) is not
    allowed (it needs CAP_MKNOD)."""
    node = where / "null.prom"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    except PermissionError:
        return None
    return node


def sticky(where: Path) -> Path:
    """A world-writable sticky directory, as /tmp or a shared textfile directory."""
    where.mkdir()
    os.chmod(where, 0o1777)
    return where


def test_only_regular_files_or_nothing_may_be_replaced(
    tmp_path: Path, opened: Callable[[Path], Textfile]
) -> None:
    plain = tmp_path / "a.prom"
    opened(plain)  # absent: made by the first write
    plain.write_text("old")
    opened(plain).replace(b"new 1\n")
    assert plain.read_text() == "new 1\n" and stat.S_IMODE(plain.stat().st_mode) == 0o644
    fifo = tmp_path / "fifo.prom"
    os.mkfifo(fifo)
    (tmp_path / "to-fifo.prom").symlink_to(fifo)
    (tmp_path / "to-nothing.prom").symlink_to(tmp_path / "nowhere")
    (tmp_path / "to-plain.prom").symlink_to(plain)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sublink").symlink_to(tmp_path / "sub")
    refused = {
        "fifo.prom": "a FIFO, not a regular file",
        "to-fifo.prom": "a symlink (never followed), not a regular file",
        "to-nothing.prom": "a symlink (never followed), not a regular file",
        "to-plain.prom": "a symlink (never followed), not a regular file",
        "sub": "a directory, not a regular file",
        ".": "names a directory",
        "sublink/m.prom": f"its directory {tmp_path}/sublink is a symlink (never followed)",
        "missing/m.prom": f"no directory {tmp_path}/missing",
    }
    for name, why in refused.items():
        path = os.path.join(tmp_path, name)  # keeps a last "."; Path would drop it
        with pytest.raises(TextfileRefused) as err:
            Textfile(path)
        assert str(err.value).startswith(f"--textfile {path}: {why}"), str(err.value)
        assert err.value.exit_code == 2
    assert plain.read_text() == "new 1\n"
    assert os.listdir(tmp_path / "sub") == []
    assert suffix_warning(str(plain)) is None
    assert suffix_warning("/x/m.txt") == (
        "--textfile /x/m.txt: node_exporter's textfile collector reads only *.prom files"
    )


def test_a_device_node_is_never_replaced(tmp_path: Path) -> None:
    node = char_device(tmp_path)
    if node is None:
        pytest.skip("mknod(2) not permitted here (CAP_MKNOD)")
    before = os.lstat(node)
    with pytest.raises(TextfileRefused, match="a character device, not a regular file"):
        Textfile(str(node))
    after = os.lstat(node)
    assert (after.st_mode, after.st_rdev, after.st_ino) == (
        before.st_mode,
        before.st_rdev,
        before.st_ino,
    )
    assert sorted(os.listdir(tmp_path)) == ["null.prom"]  # no temporary file left


def precious(where: Path) -> Path:
    """A file another write must never touch."""
    victim = where / "victim"
    victim.write_text("precious\n")
    os.chmod(victim, 0o600)
    return victim


def test_a_symlink_planted_later_is_never_written_through(
    tmp_path: Path, opened: Callable[[Path], Textfile]
) -> None:
    victim = precious(tmp_path)
    path = sticky(tmp_path / "shared") / "node.prom"
    shared = path.parent
    said: list[tuple[str, str]] = []
    writer = TextfileWriter(opened(path), lambda key, line: said.append((key, line)))
    assert writer.write(b"a 1\n")
    path.unlink()
    path.symlink_to(victim)  # planted by another user
    os.lchown(path, 65534, 65534)
    assert not writer.write(b"a 2\n") and not writer.write(b"a 3\n")
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert path.is_symlink() and os.readlink(path) == str(victim)
    assert said == [
        (
            "textfile-failed:1",
            f"--textfile {path}: not written (a symlink (never followed), not a regular "
            "file: refused); carrying on, trying again at each refresh",
        )
    ]
    assert sorted(os.listdir(shared)) == ["node.prom"]  # no temporary file left


def test_writes_stay_in_the_directory_opened(
    tmp_path: Path, opened: Callable[[Path], Textfile]
) -> None:
    shared = sticky(tmp_path / "shared")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    target = opened(shared / "node.prom")
    target.replace(b"a 1\n")
    # The directory path swapped for a link to a private directory after start-up.
    os.rename(shared, tmp_path / "moved")
    shared.symlink_to(private)
    target.replace(b"a 2\n")
    assert os.listdir(private) == []
    assert (tmp_path / "moved" / "node.prom").read_text() == "a 2\n"


def test_a_hard_link_at_path_keeps_its_contents(
    tmp_path: Path, opened: Callable[[Path], Textfile]
) -> None:
    victim = precious(tmp_path)
    path = tmp_path / "node.prom"
    os.link(victim, path)
    opened(path).replace(b"a 1\n")
    assert victim.read_text() == "precious\n" and path.read_text() == "a 1\n"


def swap_a_fifo_in(path: Path, swaps: int, stop: threading.Event) -> int:
    """Move a new FIFO to ``path`` ``swaps`` times, each time taking it away again (to a
    name of its own) once it is at ``path``; the FIFOs a write removed (replaced), known
    by a link count of 0 on an fd held open on each."""
    lost = 0
    spare = path.with_name("fifo.spare")
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    for swap in range(swaps):
        if stop.is_set():
            break
        os.mkfifo(spare)
        fd = os.open(spare, os.O_RDWR | os.O_NONBLOCK)  # O_RDWR: no wait for a writer
        try:
            ino = os.fstat(fd).st_ino
            os.rename(spare, path)
            time.sleep(0.0002)  # the writer's chance to replace it
            for attempt in range(100):  # the writer may hold it a moment under another name
                if os.fstat(fd).st_nlink == 0:
                    break
                try:
                    if os.lstat(path).st_ino != ino:
                        time.sleep(0.001)
                        continue
                    grave = path.with_name(f"fifo.{swap}.{attempt}")
                    renameat2(folder, path.name, grave.name, RENAME_NOREPLACE)
                except FileNotFoundError:
                    time.sleep(0.001)
                    continue
                if os.lstat(grave).st_ino == ino:
                    break
            lost += os.fstat(fd).st_nlink == 0
        finally:
            os.close(fd)
        time.sleep(0.0005)  # PATH free: the writer's chance to write
    os.close(folder)
    return lost


@pytest.mark.parametrize("flags", ["renameat2", "fallback"])
def test_a_fifo_swapped_in_while_writing_is_never_replaced(
    tmp_path: Path,
    opened: Callable[[Path], Textfile],
    monkeypatch: pytest.MonkeyPatch,
    flags: str,
) -> None:
    if flags == "fallback":  # a file system without renameat2 flags: check, then rename(2)

        def no_flags(*_args: object) -> None:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(textfile_module, "renameat2", no_flags)
    path = tmp_path / "node.prom"
    writer = TextfileWriter(opened(path), lambda key, line: None)
    stop = threading.Event()

    def write_until_stopped() -> None:
        while not stop.is_set():
            writer.write(b"a 1\n")

    thread = threading.Thread(target=write_until_stopped)
    thread.start()
    try:
        lost = swap_a_fifo_in(path, SWAPS, stop)
    finally:
        stop.set()
        thread.join()
    print(f"{flags}: FIFO replaced {lost} times in {SWAPS} swaps, {writer.tried} writes")
    assert writer.written > 0
    if flags == "renameat2":
        assert lost == 0
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_a_failed_write_is_said_once_and_its_end_once(
    tmp_path: Path, opened: Callable[[Path], Textfile]
) -> None:
    path = tmp_path / "m.prom"
    said: list[tuple[str, str]] = []
    writer = TextfileWriter(opened(path), lambda key, line: said.append((key, line)))
    assert writer.write(b"a 1\n") and said == []
    path.unlink()
    os.mkfifo(path)  # one made at PATH after start-up: refused at the write, kept
    assert not writer.write(b"a 2\n") and not writer.write(b"a 3\n")
    assert said == [
        (
            "textfile-failed:1",
            f"--textfile {path}: not written (a FIFO, not a regular file: refused); "
            "carrying on, trying again at each refresh",
        ),
    ]
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    path.unlink()
    assert writer.write(b"a 4\n") and writer.write(b"a 5\n")
    assert said[1:] == [("textfile-recovered:1", f"--textfile {path}: written again")]
    assert (writer.tried, writer.written) == (5, 3)
    assert all(str(path) in line and ".tmp" not in line for _k, line in said)
