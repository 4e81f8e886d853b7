"""Files another user may have planted or a file system that cannot lock (issue 52, item
5): ``--record`` refuses a file another user owns (root appended a recording, every task's
command line, to a 0644 file uid 65534 planted in a sticky directory) and a file it cannot
``flock`` (two recorders on NFS without lockd ran unseen, keeping 2-8 of 300 refreshes);
``--textfile`` follows no link in ANY component of its path (one planted as an earlier
component led root's writes into a 0700 directory)."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

from tiptop import recording
from tiptop.errors import TiptopError, UsageError
from tiptop.exporter.textfile import Textfile, TextfileRefused
from tiptop.files import LinkInPath, open_directory


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_file_is_not_recorded_into(tmp_path: Path) -> None:
    planted = tmp_path / "shared.jsonl"
    planted.write_bytes(b"")
    os.chmod(planted, 0o644)
    os.chown(planted, 65534, 65534)
    with pytest.raises(TiptopError) as refused:
        recording.Recorder(str(planted), {})
    assert str(refused.value) == (
        f"--record: '{planted}' belongs to uid 65534, not to this user: not written "
        "(it would hold every task's command line; name a file of your own)"
    )
    assert refused.value.exit_code == 1 and planted.read_bytes() == b""


def test_a_file_system_without_locks_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flock(2) failing with ENOLCK, as on NFS without lockd: faked here (this machine's
    file systems lock; the system test preloads a flock that fails, as the attack did)."""

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    path = tmp_path / "nfs.jsonl.gz"
    with pytest.raises(UsageError) as refused:
        recording.Recorder(str(path), {})
    assert refused.value.exit_code == 2
    assert str(refused.value) == (
        f"--record: '{path}' cannot be locked here (flock: ENOLCK): not written (a second "
        "recorder could not be kept out; record to a local file system)"
    )
    assert path.read_bytes() == b""


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_link_in_any_component_of_the_textfile_path_is_refused(
    tmp_path: Path, depth: int
) -> None:
    """textfile_intermediate_link.sh: sticky/d -> a 0700 directory with a subdirectory;
    ``--textfile sticky/d/sub/planted.prom`` wrote into it. The link as the last, the
    second last or the third last component: refused, nothing written there."""
    victim = tmp_path / "victim"
    (victim / "sub" / "deeper").mkdir(parents=True)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    (sticky / "d").symlink_to(victim)
    folder = sticky / "d" / "/".join(["sub", "deeper"][:depth])
    path = str(folder / "planted.prom").replace("//", "/")
    with pytest.raises(TextfileRefused) as refused:
        Textfile(path)
    assert (
        refused.value.why == f"its directory {sticky / 'd'} is a symlink (never followed): refused"
    )
    assert not list(victim.rglob("*.prom"))


def test_a_directory_reached_without_links_opens(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    fd = open_directory(str(tmp_path / "a" / "b"))
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(tmp_path / "a" / "b"))
    finally:
        os.close(fd)
    (tmp_path / "l").symlink_to(tmp_path / "a")
    with pytest.raises(LinkInPath) as link:
        open_directory(str(tmp_path / "l" / "b"))
    assert link.value.component == str(tmp_path / "l")
    with pytest.raises(FileNotFoundError):
        open_directory(str(tmp_path / "none"))
