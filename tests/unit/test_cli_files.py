"""What the command does for the user at start-up: ``--export`` never writes through a
symbolic link nor into something that is not a regular file (issue 15, item 9), as the
live ``W`` key never overwrites; ``-p`` of another user's process says why no row shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fakeproc import FakeProc
from tests.support.builders import SCREEN
from tiptop.cli.run import other_users_pid
from tiptop.cli.screens import ScreenSet, export_screens
from tiptop.errors import TiptopError
from tiptop.host import Host
from tiptop.options import Options
from tiptop.screens import Target, load_file

LOADED = ScreenSet(entries=[SCREEN], options={"delay": "3"})


def test_export_writes_and_replaces_a_regular_file(tmp_path: Path) -> None:
    out = tmp_path / "s.yaml"
    out.write_text("x" * 100_000)  # longer than the export: the rest must go
    export_screens(LOADED, str(out))
    cfg = load_file(str(out), Target())
    assert [s.name for s in cfg.screens] == ["default"] and cfg.options == {"delay": "3"}
    assert out.stat().st_size < 2000


def test_export_refuses_a_symbolic_link(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    link = tmp_path / "s.xml"
    link.symlink_to(target)
    with pytest.raises(TiptopError, match="is a symbolic link: not written"):
        export_screens(LOADED, str(link))
    assert target.read_text() == "keep me\n" and link.is_symlink()
    dangling = tmp_path / "d.yaml"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(TiptopError, match="is a symbolic link"):
        export_screens(LOADED, str(dangling))
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_export_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """A FIFO without a reader would block the write forever; a directory cannot be one."""
    out = tmp_path / "s.yaml"
    os.mkfifo(out) if kind == "fifo" else out.mkdir()
    with pytest.raises(TiptopError) as err:
        export_screens(LOADED, str(out))
    assert str(err.value) == f"--export: '{out}' is not a regular file: not written"


def test_p_of_another_users_process_is_said(tmp_path: Path) -> None:
    """``tiptop -b -p 1`` as a user printed no rows and no reason (issue 15, item 12)."""
    proc = FakeProc(tmp_path / "proc")
    proc.add(1, "init", uid=0)
    proc.add(4242, "mine", uid=1000)
    user = Host(proc_root=str(proc.root), uid=1000, euid=1000)
    assert other_users_pid(Options(only_pid=1), user) == (
        "-p 1: that process belongs to another user; without root only your own processes are shown"
    )
    assert other_users_pid(Options(only_pid=4242), user) is None
    assert other_users_pid(Options(only_pid=1), Host(proc_root=str(proc.root))) is None  # root
    assert other_users_pid(Options(only_pid=99), user) is None  # gone: nothing to add
    assert other_users_pid(Options(only_name="init"), user) is None
