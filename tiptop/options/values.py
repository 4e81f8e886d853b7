"""Parsers for option values, shared by the command line, the rc file and live prompts.

Numbers are read strictly: ASCII decimal only, as C's ``strtod``/``atoi`` would (so
``1_000``, ``0x10``, full-width digits and ``infinity`` are refused with one line, where
Python's ``int``/``float`` would quietly accept some of them). Every error is a
:class:`~tiptop.errors.UsageError` whose text names the option (``where``).
"""

from __future__ import annotations

import math
import os
import pwd
import re
from enum import StrEnum
from typing import TypeVar

from tiptop.errors import UsageError
from tiptop.outside import decoded, shown

#: Smallest accepted refresh delay in seconds (the original silently replaced smaller
#: values by 1; we refuse them with a message).
MIN_DELAY = 0.01
#: Largest accepted refresh delay (one week): the event loop's timers (select(2) timeouts)
#: overflow on absurd values, so they are refused instead of ending in a traceback.
MAX_DELAY = 7 * 86400.0
#: Largest uid: ``uid_t`` is 32 bits and ``(uid_t) -1`` means "no uid" (setresuid(2)).
MAX_UID = 2**32 - 2
#: The range of a C ``long`` (strtol(3)): a whole number outside it is refused, which also
#: keeps Python's ``int()`` off its 4,300-digit limit (``sys.int_info``, a ValueError).
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

#: How much of a refused delay its message quotes: a number of seconds is short, and the
#: live message line has one line for it.
DELAY_SHOWN = 20

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_WHOLE = re.compile(r"[+-]?\d+", re.ASCII)


def decimal(text: str) -> float | None:
    """A decimal number (``2``, ``0.5``, ``1e-2``), or None when ``text`` is not one."""
    return float(text) if _DECIMAL.fullmatch(text) else None


def _int(text: str, where: str) -> int | None:
    """A decimal integer (``12``, ``-1``), or None when ``text`` is not one; UsageError
    when it does not fit a C ``long``."""
    if not _WHOLE.fullmatch(text):
        return None
    digits = text.lstrip("+-").lstrip("0")
    value = int(digits or "0", 10) if len(digits) <= len(str(LONG_MAX)) else None
    if text.startswith("-") and value is not None:
        value = -value
    if value is None or not LONG_MIN <= value <= LONG_MAX:
        raise UsageError(f"{where}: '{shown(text)}' is out of range")
    return value


def parse_delay(text: str, where: str = "-d") -> float:
    """A refresh delay in seconds, from :data:`MIN_DELAY` to :data:`MAX_DELAY`: ``-d``,
    the rc file's ``delay`` and the live ``d`` prompt (``where`` empty: no prefix, the
    prompt's message line names no option)."""
    prefix = f"{where}: " if where else ""
    value = decimal(text)
    if value is None:
        raise UsageError(f"{prefix}'{shown(text, DELAY_SHOWN)}' is not a number of seconds")
    if not MIN_DELAY <= value <= MAX_DELAY:
        raise UsageError(
            f"{prefix}delay must be at least {MIN_DELAY} s and at most {MAX_DELAY:.0f} s "
            f"(got '{shown(text, DELAY_SHOWN)}')"
        )
    return value


def parse_float(text: str, where: str) -> float:
    """A finite, non-negative decimal number."""
    value = decimal(text)
    if value is None:
        raise UsageError(f"{where}: '{shown(text)}' is not a number")
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{where}: '{shown(text)}' must be a non-negative number")
    return value


def parse_count(text: str, where: str) -> int:
    """A non-negative decimal integer."""
    value = _int(text, where)
    if value is None:
        raise UsageError(f"{where}: '{shown(text)}' is not a whole number")
    if value < 0:
        raise UsageError(f"{where}: '{shown(text)}' must not be negative")
    return value


def parse_user(text: str, where: str = "-u") -> tuple[int, str]:
    """``(uid, name)`` for a user name or numeric uid; a numeric uid without a passwd
    entry is accepted and shown as its number (the original hit an ``assert``)."""
    if text[:1].isdigit():
        try:
            uid = _int(text, where)
        except UsageError:  # out of a long's range: no uid either
            uid = None
        if uid is None or not 0 <= uid <= MAX_UID:
            raise UsageError(f"{where}: '{shown(text)}' is neither a user name nor a uid")
        try:
            return uid, pwd.getpwuid(uid).pw_name
        except KeyError:
            return uid, str(uid)
    try:
        entry = pwd.getpwnam(text)
    except (KeyError, ValueError):  # ValueError: an embedded NUL
        # The original's message (docs/original.md section 1).
        raise UsageError(f"User name '{shown(text)}' does not exist.") from None
    return entry.pw_uid, entry.pw_name


def parse_target(text: str, where: str = "-p") -> tuple[int | None, str | None]:
    """A ``-p``/``-w`` argument: a PID when it reads as a positive integer (the original's
    ``atoi(arg) != 0`` rule, without atoi's prefix parsing), else a name (:func:`task_name`)."""
    pid = _int(text, where)
    return (pid, None) if pid is not None and pid > 0 else (None, task_name(text))


def task_name(text: str) -> str:
    """A task name given by ``-p``, ``-w`` or the rc file, as the names it is matched with
    are shown (``tiptop.outside.decoded``): its bytes that are not UTF-8 and what a
    terminal obeys as escapes (``-p $'ok\\xff'`` finds the task shown as ``ok\\xff``)."""
    return decoded(os.fsencode(text))


Choice = TypeVar("Choice", bound=StrEnum)


def parse_choice(kind: type[Choice], text: str, where: str) -> Choice:
    """The member of ``kind`` (``tiptop.choices``) whose word is ``text``: the one place
    such a word is read; one line naming the words there are when it is none of them."""
    for member in kind:
        if member.value == text:
            return member
    raise UsageError(f"{where}: '{shown(text)}' is not one of {', '.join(kind)}")


def atoi(text: str) -> int:
    """C ``atoi``: leading integer, 0 when there is none (the rc file's semantics); out of
    range, :data:`LONG_MIN` or :data:`LONG_MAX`, as glibc's ``strtol`` gives (strtol(3))."""
    m = re.match(r"\s*([+-]?)0*(\d+)", text, re.ASCII)
    if m is None:
        return 0
    sign, digits = m.groups()
    if len(digits) > len(str(LONG_MAX)):
        return LONG_MIN if sign == "-" else LONG_MAX
    value = -int(digits) if sign == "-" else int(digits)
    return min(max(value, LONG_MIN), LONG_MAX)
