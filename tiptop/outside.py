"""Text from outside tiptop, at the one boundary it crosses; imports nothing from tiptop.

Outside text is whatever tiptop did not write itself: what a watched task controls (its
comm and command line, the names of the cgroups it makes in a subtree delegated to it, the
symbols of the files it maps and of its JIT map file), what the system says of it (user
names), every string read back from a recording, and a user's own values quoted in a
message. Such text is decoded once, where it is read, and never with an error
(:func:`decoded`): bytes that are not UTF-8 become escapes (``\\xff``), so that two names
that differ stay apart (two cgroups ``ok\\xfe`` and ``ok\\xff`` are two label values, not
one ``ok\\ufffd``). Then every character a terminal may obey is written as an escape
(:func:`printable`):

* the C0 controls and DEL (ascii(7)): ESC begins every escape sequence (ECMA-48 5.3),
  BEL ends an OSC one in xterm, a newline would make one name two lines;
* the C1 controls U+0080..U+009F: encoded in UTF-8 they are two bytes, but a terminal that
  decodes them obeys U+009B as CSI and U+009D as OSC (ECMA-48 5.3, "C1 set");
* the line and paragraph separators U+2028 and U+2029, which ``str.splitlines`` splits on;
* lone surrogates (a JSON string may hold one; no UTF-8 encoder writes it), those made by
  ``surrogateescape`` shown as the byte they stand for.

Printable text may go anywhere: a terminal (live, batch text, csv to a tty, a replay,
``--where``), a file, a JSON line, an OpenMetrics label value (whose backslashes, quotes
and newlines prometheus_client escapes). Making text printable again changes nothing
(a backslash is kept as it is: systemd writes ``\\x2d`` in unit names).
"""

from __future__ import annotations

from functools import cache

#: Each ASCII character a terminal may obey, as the escape that shows it (module
#: docstring): all that text of ASCII alone can hold.
_ASCII_ESCAPES: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}
_ASCII_ESCAPES |= {ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"}


@cache
def _all_escapes() -> dict[int, str]:
    """Each character a terminal may obey, as the escape that shows it (module docstring):
    made when text that is not ASCII first comes (its 2,048 surrogates cost every start
    that shows none a part of a millisecond), then kept: a constant, never stale."""
    escapes = dict(_ASCII_ESCAPES)
    escapes |= {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
    escapes |= {0x2028: "\\u2028", 0x2029: "\\u2029"}
    escapes |= {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}
    # ``surrogateescape`` keeps byte 0xNN (0x80..0xff) of text that is not UTF-8 as U+DCNN.
    escapes |= {0xDC00 + b: f"\\x{b:02x}" for b in range(0x80, 0x100)}
    return escapes


#: The most characters of a user's value quoted in a message (:func:`shown`).
SHOWN_MAX = 60


def printable(text: str) -> str:
    """``text`` with every character a terminal may obey written as an escape (``\\n``,
    ``\\x1b``, ``\\x9b``): always one line, never a sequence a terminal acts on."""
    # ``isascii`` reads a flag of the string (no scan); ASCII needs the small table only.
    return text.translate(_ASCII_ESCAPES if text.isascii() else _all_escapes())


def decoded(raw: bytes) -> str:
    """Bytes from outside as printable text: UTF-8, each byte that is not shown as
    ``\\xNN``; never an error."""
    return printable(raw.decode("utf-8", "surrogateescape"))


def shown(text: str, limit: int = SHOWN_MAX) -> str:
    """A user's value as a message quotes it: printable and, past ``limit`` characters,
    cut with ``...`` and its length (a 4,301-digit number is not echoed whole)."""
    if len(text) > limit:
        return f"{printable(text[:limit])}... ({len(text)} characters)"
    return printable(text)


__all__ = ["SHOWN_MAX", "decoded", "printable", "shown"]
