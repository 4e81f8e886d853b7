"""Files a watched task controls, read by ``--where`` as untrusted (issue 52, item 2): what
the process's user plants at ``/tmp/perf-PID.map`` or at the name of a file it maps (a
FIFO, a link to ``/dev/zero`` or to a file it may not read, garbage, a 33 MB map touched
every refresh) is skipped with one line per rule, read within bounds, never blocked on.
The planted files are real (a FIFO, links, another owner's file); the system tests
(tests/system/test_where_hostile.py) run the same attacks as uid 65534 on root's tiptop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support import spying
from tiptop.where import jitmap
from tiptop.where.elf import SymbolCache
from tiptop.where.jitmap import JitMap
from tiptop.where.untrusted import Budget, Refused, open_untrusted, read_bounded

PID = 4242


class Said:
    """A message log's ``say``: the keys and lines said."""

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}

    def __call__(self, key: str, line: str) -> None:
        self.lines.setdefault(key, line)


def jit(tmp_path: Path, owner: int | None = None) -> tuple[JitMap, Said, Path]:
    said = Said()
    uid = os.geteuid() if owner is None else owner
    return JitMap(PID, uid, said, tmp=str(tmp_path)), said, tmp_path / f"perf-{PID}.map"


def timed_refresh(m: JitMap) -> float:
    began = time.monotonic()
    m.refresh()
    return time.monotonic() - began


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """where_jitmap.sh (1): a FIFO held root's tiptop in open() forever."""
    m, said, path = jit(tmp_path)
    os.mkfifo(path)
    assert timed_refresh(m) < 1.0
    assert m.lookup(0x1000) is None
    assert said.lines == {"where:jit:kind": f"{path} not read: a FIFO, not a regular file"}


@pytest.mark.parametrize("target", ["/dev/zero", "secret"])
def test_a_link_is_never_followed(tmp_path: Path, target: str) -> None:
    """where_jitmap.sh (2): a link to /dev/zero ended in MemoryError; where_jitmap_more.sh
    (a): a link to a root-only file printed its lines as symbol names."""
    m, said, path = jit(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("1000 100 ROOT_ONLY_SECRET\n")
    path.symlink_to(target if target.startswith("/") else secret)
    m.refresh()
    assert m.lookup(0x1010) is None
    assert said.lines == {"where:jit:link": f"{path} not read: a symbolic link (never followed)"}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_map_is_refused(tmp_path: Path) -> None:
    m, said, path = jit(tmp_path, owner=65534)
    path.write_text("1000 100 planted\n")
    os.chown(path, 12345, 12345)
    m.refresh()
    assert m.lookup(0x1010) is None
    assert "owned by uid 12345" in said.lines["where:jit:owner"]
    os.chown(path, 65534, 65534)  # the process's own user's: read, as root reads a JVM's
    m.refresh()
    assert m.lookup(0x1010) == "planted"


def test_garbage_names_nothing_and_names_are_printable(tmp_path: Path) -> None:
    m, said, path = jit(tmp_path)
    path.write_bytes(os.urandom(300_000) + b"\n1000 10 \x1b]52;c;eA==\x07\x9b\xff\n")
    m.refresh()
    assert m.lookup(0x1004) == "\\x1b]52;c;eA==\\x07\\x9b\\xff"
    assert said.lines == {}


def test_appended_lines_are_read_from_where_the_last_read_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m, _said, path = jit(tmp_path)
    path.write_bytes(b"1000 10 first\n2000 10 sec")  # the second line is being written
    m.refresh()
    assert (m.lookup(0x1000), m.lookup(0x2000)) == ("first", None)
    parsed: list[bytes] = []
    parse = jitmap.parse_lines
    monkeypatch.setattr(jitmap, "parse_lines", spying(parse, lambda d, room: parsed.append(d)))
    with open(path, "ab") as f:
        f.write(b"ond\n3000 10 third\n")
    m.refresh()
    assert parsed == [b"2000 10 second\n3000 10 third\n"]  # not the first line again
    assert [m.lookup(a) for a in (0x1000, 0x2000, 0x3000)] == ["first", "second", "third"]
    m.refresh()  # unchanged: nothing read
    assert len(parsed) == 1


def big_map(path: Path, lines: int) -> None:
    path.write_bytes(
        b"".join(b"%x 10 jitted_function_%d\n" % (0x7F0000000000 + i * 16, i) for i in range(lines))
    )


def test_a_huge_map_is_read_within_its_bounds(tmp_path: Path) -> None:
    """where_jitmap.sh (lines): a 138 MB map ended in MemoryError; now at most
    MAX_LINES of it, a bounded time per refresh, a line saying so."""
    m, said, path = jit(tmp_path)
    big_map(path, 1_000_000)  # 33 MB
    spent = [timed_refresh(m) for _ in range(12)]
    assert max(spent) < jitmap.READ_SECONDS + 1.0, spent
    assert m.functions is not None and len(m.functions) == jitmap.MAX_LINES
    assert m.functions.nbytes < 16 << 20
    assert m.lookup(0x7F0000000000 + 16 * 1000 + 4) == "jitted_function_1000"
    assert "where:jit:lines" in said.lines


def test_a_map_touched_in_place_is_read_again_only_after_a_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """where_jitmap_more.sh (b): a 33 MB map touched every 0.5 s was parsed at every
    refresh (0.64 s of CPU each); a whole read again waits FULL_GAP times its cost."""
    m, _said, path = jit(tmp_path)
    big_map(path, 20_000)
    m.refresh()
    reads: list[int] = []
    parse = jitmap.parse_lines
    monkeypatch.setattr(jitmap, "parse_lines", spying(parse, lambda d, room: reads.append(len(d))))
    for i in range(5):
        os.utime(path, ns=(i, 10**18 + i))
        m.refresh()
    assert reads == []  # the last whole read cost ~10 ms: no second one within 5 calls
    monkeypatch.setattr(m, "_next_whole", 0.0)
    os.utime(path, ns=(9, 10**18 + 9))
    m.refresh()
    assert sum(reads) == path.stat().st_size  # read whole again, a chunk at a time


def test_a_read_stops_at_its_budget() -> None:
    r, w = os.pipe()
    os.close(w)
    with pytest.raises(Refused) as refused:
        read_bounded(r, 0, 10, Budget(-1.0))
    assert refused.value.rule == "time"
    os.close(r)


def test_an_elf_name_that_is_not_a_regular_file_is_one_line(tmp_path: Path) -> None:
    """A file the process maps, replaced by a FIFO or a link since: not opened, not
    followed; said once per rule, naming the file printable."""
    said = Said()
    cache = SymbolCache(said)
    fifo = tmp_path / "lib\x1bx.so"
    os.mkfifo(fifo)
    link = tmp_path / "link.so"
    link.symlink_to("/dev/zero")
    assert cache.table(str(fifo)) is None and cache.table(str(link)) is None
    assert said.lines["where:elf:kind"].endswith(
        "lib\\x1bx.so not read: a FIFO, not a regular file"
    )
    assert said.lines["where:elf:link"].endswith(
        "link.so not read: a symbolic link (never followed)"
    )
    with pytest.raises(Refused):
        open_untrusted(str(link))
