"""``--textfile``'s writer (tiptop/exporter/textfile.py) on the real file system: only a
regular file is ever replaced, every message names PATH, a failed write is said once and
its end once."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tiptop.exporter.textfile import (
    TextfileRefused,
    TextfileWriter,
    check_path,
    replace_file,
    suffix_warning,
)


def char_device(where: Path) -> Path | None:
    """A character device node with /dev/null's numbers, or None where mknod(2) is not
    allowed (it needs CAP_MKNOD)."""
    node = where / "null.prom"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    except PermissionError:
        return None
    return node


def test_only_regular_files_or_nothing_may_be_replaced(tmp_path: Path) -> None:
    plain = tmp_path / "a.prom"
    assert check_path(str(plain)) == str(plain)  # absent: made by the first write
    plain.write_text("old")
    assert check_path(str(plain)) == str(plain)
    fifo = tmp_path / "fifo.prom"
    os.mkfifo(fifo)
    (tmp_path / "to-fifo.prom").symlink_to(fifo)
    (tmp_path / "to-nothing.prom").symlink_to(tmp_path / "nowhere")
    (tmp_path / "to-plain.prom").symlink_to(plain)
    refused = {
        "fifo.prom": "a FIFO, not a regular file",
        "to-fifo.prom": f"a FIFO (a symlink to {fifo}), not a regular file",
        "to-nothing.prom": "a symlink to nothing",
        ".": "a directory",
    }
    for name, why in refused.items():
        path = str(tmp_path / name)
        with pytest.raises(TextfileRefused) as err:
            check_path(path)
        assert str(err.value).startswith(f"--textfile {path}: {why}"), str(err.value)
        assert err.value.exit_code == 2
    assert check_path(str(tmp_path / "to-plain.prom")) == str(plain)
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
        replace_file(str(node), b"x 1\n")
    after = os.lstat(node)
    assert (after.st_mode, after.st_rdev, after.st_ino) == (
        before.st_mode,
        before.st_rdev,
        before.st_ino,
    )
    assert sorted(os.listdir(tmp_path)) == ["null.prom"]  # no temporary file left


def test_a_symlink_keeps_pointing_at_the_file_it_names(tmp_path: Path) -> None:
    target = tmp_path / "real.prom"
    target.write_text("old\n")
    link = tmp_path / "link.prom"
    link.symlink_to(target)
    replace_file(str(link), b"new 1\n")
    assert link.is_symlink() and target.read_text() == "new 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["link.prom", "real.prom"]


def test_a_failed_write_is_said_once_and_its_end_once(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    path = str(folder / "m.prom")
    said: list[tuple[str, str]] = []
    writer = TextfileWriter(path, lambda key, line: said.append((key, line)))
    assert writer.write(b"a 1\n") and said == []
    os.unlink(path)
    folder.rmdir()
    assert not writer.write(b"a 2\n") and not writer.write(b"a 3\n")
    assert said == [
        (
            "textfile-failed:1",
            f"--textfile {path}: not written (No such file or directory); "
            "carrying on, trying again at each refresh",
        ),
    ]
    folder.mkdir()
    assert writer.write(b"a 4\n") and writer.write(b"a 5\n")
    assert said[1:] == [("textfile-recovered:1", f"--textfile {path}: written again")]
    os.mkfifo(path + ".tmp")  # a FIFO beside it changes nothing
    os.unlink(path)
    os.mkfifo(path)  # one made at PATH after start-up: refused at the write, kept
    assert not writer.write(b"a 6\n")
    assert said[2][0] == "textfile-failed:2" and "a FIFO, not a regular file" in said[2][1]
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert all(path in line and ".tmp" not in line.replace(path, "") for _k, line in said)
