"""The one boundary of outside text (``tiptop.outside``, issue 52 item 1): what a watched
task controls (comm, command line, cgroup names), user names and every string read back
from a recording are decoded once, never with a traceback, and reach no output with a
character a terminal obeys: C0, DEL, C1 (U+009B CSI, U+009D OSC), escape sequences.

The hostile names are those of the attacker's pass (/work/shared/attacks/term_inject.py,
cgroup_utf8_crash.sh), and a bounded fuzzer of random bytes."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from tests.fakeproc import FakeProc
from tiptop import cli
from tiptop.kernel.cgroup import CgroupCache, shorten
from tiptop.kernel.procfs import parse_stat
from tiptop.options.values import parse_target
from tiptop.outside import decoded, printable, shown
from tiptop.recording.format import facts_from

#: Every character a terminal may obey (C0, DEL, C1) and the line separators.
OBEYED = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}

#: Names an unprivileged user gave its tasks and cgroups in the attacker's pass: title and
#: clipboard (OSC 52) writes, a screen wipe, the C1 forms raw and in UTF-8, bytes that are
#: not UTF-8, a newline that would make one row two.
HOSTILE: list[bytes] = [
    b"\x1b]0;PWN\x07",
    b"\x1b]52;c;cHduZWQ=\x07",
    b"\x1b[2J",
    "\u009b2J\u009b31m".encode(),
    "\u009d0;TITLE\u009c".encode(),
    b"\x9b2J\x9d0;T",
    b"ok\xff",
    b"ok\xfe",
    b"two\nlines\r",
    "sep\u2028arator".encode(),
    b"\xed\xa0\x80lone surrogate",
]


def clean(text: str) -> bool:
    """Nothing a terminal obeys, nothing a decoder made of an error."""
    return not (OBEYED & set(text)) and all(not 0xD800 <= ord(c) < 0xE000 for c in text)


def test_decoded_names_are_clean_apart_and_stable() -> None:
    seen = [decoded(raw) for raw in HOSTILE]
    assert all(clean(s) for s in seen), seen
    assert len(set(seen)) == len(HOSTILE)  # ok\xfe and ok\xff stay two names
    assert decoded(b"ok\xff") == "ok\\xff"
    assert decoded("\u009b2J".encode()) == "\\x9b2J"
    assert [printable(s) for s in seen] == seen  # printable again: unchanged
    assert decoded("caf\u00e9 \u65e5\u672c".encode()) == "caf\u00e9 \u65e5\u672c"


def test_random_bytes_never_raise_and_come_out_clean() -> None:
    """A bounded fuzzer: 3,000 random byte strings, biased to the bytes that matter."""
    rng = random.Random(52)
    alphabet = [*range(0x20), 0x7F, *range(0x80, 0xA0), 0xC2, 0xE2, 0x80, 0xA8, 0xFF, 0x41]
    for _ in range(3000):
        raw = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 24)))
        text = decoded(raw)
        assert clean(text), (raw, text)
        assert len(text.splitlines()) <= 1


def test_every_character_is_escaped_the_same_ascii_or_not() -> None:
    """Each of the first 65,536 code points alone, and after a non-ASCII one: the same
    escape either way (the table for ASCII text is the whole table's ASCII part), a
    character a terminal obeys or a surrogate never left as it is."""
    for c in range(0x10000):
        ch = chr(c)
        alone, among = printable(ch), printable("\u00e9" + ch)[1:]
        assert alone == among, hex(c)
        assert (alone == ch) == (ch not in OBEYED and not 0xD800 <= c < 0xE000), hex(c)


def test_ascii_text_never_makes_the_whole_table() -> None:
    """Text of ASCII alone, the common case, is shown without the table of every escape
    (2,048 surrogates), which the first text that is not ASCII makes."""
    from tiptop.outside import _all_escapes

    _all_escapes.cache_clear()  # as at start-up: not made yet
    assert printable("top\x1b[2J\n") == "top\\x1b[2J\\n"
    assert _all_escapes.cache_info().currsize == 0
    assert printable("caf\u00e9\x9b") == "caf\u00e9\\x9b"
    assert _all_escapes.cache_info().currsize == 1


def test_shown_quotes_a_value_escaped_and_cut() -> None:
    assert shown("\x9b" * 100, 4) == "\\x9b\\x9b\\x9b\\x9b... (100 characters)"


@pytest.mark.parametrize("raw", HOSTILE)
def test_a_comm_from_stat_is_printable(raw: bytes) -> None:
    line = b"42 (" + raw[:15] + b") S " + b" ".join([b"0"] * 49) + b"\n"
    comm = parse_stat(line).comm
    assert clean(comm) and comm == decoded(raw[:15])


def test_a_cgroup_name_that_is_not_utf8_is_a_label_not_a_traceback(tmp_path: Path) -> None:
    """cgroup_utf8_crash.sh: ``mkdir $'ok\\377'`` in a delegated subtree stopped root's
    ``--serve`` and ``-b --by cgroup`` with a UnicodeDecodeError. The label shows the
    byte; the path keeps it, for reading the cgroup's own files."""
    FakeProc(tmp_path).add(7, "victim")
    raw = b"/user.slice/deleg/ok\xff/x\x1b]0;T\x07"
    (tmp_path / "7" / "cgroup").write_bytes(b"0::" + raw + b"\n")
    cache = CgroupCache(str(tmp_path))
    assert cache.label(7) == "deleg/ok\\xff/x\\x1b]0;T\\x07"
    assert os.fsencode(cache.path(7)) == raw
    assert shorten("/system.slice/\u009b2J.service") == "\\x9b2J"


def test_recorded_facts_are_printable() -> None:
    facts = facts_from({"facts": {"1": [1, "\x1b]0;u\x07", "\u009b2J", "a\u009db\nc"]}})
    assert facts == {1: (1, "\\x1b]0;u\\x07", "\\x9b2J", "a\\x9db\\nc")}


def crafted_recording(tmp_path: Path) -> Path:
    """tests/data/recording-v1.jsonl with raw escapes in every task's facts and in the
    screen's name, host and a header, as term_inject.py crafted it."""
    lines = []
    data = Path(__file__).parents[1] / "data" / "recording-v1.jsonl"
    for line in data.read_text().splitlines():
        d = json.loads(line)
        if "tiptop_recording" in d:
            d["host"] = "\x1b]0;PWN\x07"
            d["screen"]["name"] = "\u009b2Jscreen"
            d["screen"]["columns"][0]["header"] = "\x1b]52;c;cHduZWQ=\x07"
        for f in d.get("facts", {}).values():
            f[1] = "\u009d0;T\u009c"
            f[2] = "\x1b]0;PWN\x07\x1b]52;c;cHduZWQ=\x07"
            f[3] = "\u009b2J\x1b[2J \u009d0;T\u009c\udcff\ud800"
        lines.append(json.dumps(d, ensure_ascii=False))
    path = tmp_path / "crafted.jsonl"
    path.write_text("\n".join(lines) + "\n", errors="surrogatepass")
    return path


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
@pytest.mark.parametrize("extra", [[], ["-c"]])
def test_a_crafted_recording_replays_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, extra: list[str]
) -> None:
    """``-b --replay`` of a recording whose facts and screen hold raw ESC and C1
    sequences: every format writes them as escapes (the attacker's pass: title set and 7
    clipboard writes in tmux)."""
    path = crafted_recording(tmp_path)
    rc = cli.main(["-b", "--replay", str(path), "-n", "3", "--format", fmt, *extra])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert ("x9b2J" if extra else "x1b]0;PWN") in out.out, out.out  # shown, as escapes
    assert clean(out.out.replace("\n", "")) and clean(out.err.replace("\n", "")), out


def test_a_name_given_with_p_matches_the_task_as_shown() -> None:
    """``-p $'ok\\xff'`` selects the task whose comm is those bytes, shown ``ok\\xff``."""
    raw = b"ok\xff\x1b"
    assert parse_target(os.fsdecode(raw)) == (None, decoded(raw))
    assert decoded(raw) == parse_stat(b"9 (" + raw + b") S " + b"0 " * 49).comm
