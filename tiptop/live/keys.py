"""What each live key does (docs/original.md section 5.3, ``handle_key()``): one handler per
action, ``handler(session, key) -> Reaction``, bound to its keys and help words in the one
registry (``tiptop.live.registry``).

A handler changes the session's :class:`~tiptop.live.state.LiveState` (the settings
record, the sort, the tags, the filter) and returns what must be redone (a
:class:`~tiptop.live.reaction.Reaction`: reconfigure the sampler, open a prompt, say
something). Fixes of the original: ``u`` really filters, ``k`` reports the real
``strerror``, ``W`` refuses to overwrite and says "written" only when it was, a delay below
the minimum is refused with a message instead of silently becoming 1.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import sys

from tiptop.errors import UsageError
from tiptop.live.config_file import write_target
from tiptop.live.reaction import NOTHING, Effect, Reaction, saying
from tiptop.live.session import Session
from tiptop.live.windows.filter import filter_prompt
from tiptop.live.windows.kill import KillWindow
from tiptop.live.windows.prompt import Prompt
from tiptop.live.windows.search import search_prompt
from tiptop.options import Options, parse_delay, parse_target, parse_user

#: A restart, said.
RESTART = Effect.RESTART


def move(session: Session, key: str) -> Reaction:
    """Up, Down, PgUp, PgDn, Home, End: move the highlight; the windows about it follow.
    A task followed with ``F`` is not any more (htop's rule)."""
    session.table.scroll(key)
    if session.state.follow is not None:
        session.state.follow = None
        return Reaction(Effect.FOLLOW | Effect.REBUILD, says="Not following any more")
    return Reaction(Effect.FOLLOW)


def quit_(session: Session, key: str) -> Reaction:
    """``q``: leave live mode, status 0."""
    return Reaction(Effect.QUIT, code=0)


def close(session: Session, key: str) -> Reaction:
    """Esc: close the window on top (a window takes its Esc itself; none is open here)."""
    return Reaction(Effect.CLOSE)


def from_source(session: Session, key: str) -> Reaction:
    """A key of the source's own (a replay's time travel, the cgroup ``G``): a refresh at
    once when it used it, else a word saying it does nothing here."""
    if session.source.key(key):
        return Reaction(Effect.REFRESH)
    return saying(f"'{key}' does nothing here (a --replay key, or G with live tasks)")


# ------------------------------------------------------------ htop's keys


def search(session: Session, key: str) -> Reaction:
    """``/``, F3: htop's incremental search (``tiptop.live.windows.search``)."""
    return Reaction(opens=search_prompt())


def filter_rows(session: Session, key: str) -> Reaction:
    """``\\``, F4: htop's filter (``tiptop.live.windows.filter``)."""
    return Reaction(opens=filter_prompt(session))


def tag(session: Session, key: str) -> Reaction:
    """Space: tag the highlighted task or untag it, and highlight the next one (htop's
    Space); with ``--replay``, pause or resume instead (the source's key)."""
    if session.source.key(key):
        return Reaction(Effect.REFRESH)
    row = session.selected()
    if row is None:
        return saying("No task to tag")
    tagged = session.state.tagged
    tagged.symmetric_difference_update({int(row.tid)})
    session.table.scroll("down")
    return Reaction(Effect.FOLLOW, says=f"{len(tagged)} tagged: k signals them" if tagged else "")


def signal_tasks(session: Session, key: str) -> Reaction:
    """``k``, F9: choose a signal for the tagged tasks (those still shown), else for the
    highlighted one, then confirm (``tiptop.live.windows.kill``)."""
    table = session.table
    shown = [
        table.rows[p] for p in map(table.position, sorted(session.state.tagged)) if p is not None
    ]
    if not shown and session.selected() is not None:
        shown = [table.rows[table.selected]]
    if not shown:
        return saying("No task to signal: highlight one (Up/Down) or tag some (Space)")
    return Reaction(opens=KillWindow([(int(r.tid), r.command) for r in shown], send_signal))


def send_signal(pid: int, sig: int) -> str | None:
    """Send ``sig`` to ``pid``; None when it was sent, else why not (the original's words,
    the kernel's reason: kill(2))."""
    failed = f"Kill of PID '{pid}' with '{sig}' failed"
    try:
        os.kill(pid, sig)
    except OverflowError:  # past pid_t or int: no such process or signal can exist
        return f"{failed}: {os.strerror(errno.EINVAL)}"
    except OSError as exc:
        return f"{failed}: {os.strerror(exc.errno or 0)}"
    return None


def follow(session: Session, key: str) -> Reaction:
    """``F``: follow the highlighted task (htop's F): it stays highlighted and shown,
    idle or not, until a move or ``F`` again."""
    st = session.state
    row = session.selected()
    if st.follow is not None or row is None:
        st.follow = None
        return Reaction(Effect.REBUILD, says="Not following any more" if row else "No task")
    st.follow = int(row.tid)
    return Reaction(
        Effect.REBUILD, says=f"Following PID {row.tid} ({row.command.strip()}): F or a move stops"
    )


#: The columns of htop's sort keys: a key, what it sorts on, and the header words that
#: name such a column (the first column whose header holds one of them).
SORT_KEYS = {
    "P": ("%CPU", ("%CPU",)),
    "M": ("memory", ("MEM", "MISS")),
}


def sort_on(session: Session, key: str) -> Reaction:
    """``P``: sort on %CPU, ``M``: on the first memory column (a header with MEM or
    MISS), ``N``: on PID (htop's sort keys), largest first (PID: smallest first)."""
    st = session.state
    if key == "N":
        st.sort_column, st.descending = -1, False
        return saying("Sorted on PID (R reverses)")
    what, words = SORT_KEYS[key]
    heads = [c.header.strip() for c in st.screen.columns]
    found = next((j for j, h in enumerate(heads) if any(w in h for w in words)), None)
    if found is None:
        return saying(f"Screen '{st.screen.name}' has no {what} column")
    st.sort_column, st.descending = found, True
    return saying(f"Sorted on {heads[found]} (R reverses)")


# ------------------------------------------------------------ view only


def sort_left(session: Session, key: str) -> Reaction:
    """``<``: the sort column one to the left (PID at the end; the original's clamp)."""
    return _sort(session, -1)


def sort_right(session: Session, key: str) -> Reaction:
    """``>``: the sort column one to the right (COMMAND at the end)."""
    return _sort(session, +1)


def _sort(session: Session, step: int) -> Reaction:
    # Range -1 (PID) .. number of columns (COMMAND), clamped like the original.
    st = session.state
    st.sort_column = max(-1, min(len(st.screen.columns), st.sort_column + step))
    return NOTHING


def reverse(session: Session, key: str) -> Reaction:
    """``R``: the sort the other way round."""
    session.state.descending = not session.state.descending
    return NOTHING


def idle(session: Session, key: str) -> Reaction:
    """``i``: idle tasks shown or not."""
    st = session.state
    st.options = dataclasses.replace(st.options, show_idle=not st.options.show_idle)
    return NOTHING


def user_column(session: Session, key: str) -> Reaction:
    """``U``: the user column shown or not."""
    st = session.state
    st.options = dataclasses.replace(st.options, show_user=not st.options.show_user)
    return NOTHING


# ------------------------------------------------------------ sampler


def previous_screen(session: Session, key: str) -> Reaction:
    """Left, ``-``: the previous screen (wrapping); counters reopened."""
    return _switch(session, -1)


def next_screen(session: Session, key: str) -> Reaction:
    """Right, ``+``: the next screen (wrapping); counters reopened."""
    return _switch(session, +1)


def _switch(session: Session, step: int) -> Reaction:
    # Screens wrap around; counters are reopened and the sort column goes back to 0.
    st = session.state
    st.screen_index = (st.screen_index + step) % len(st.screens)
    st.sort_column = 0
    return Reaction(RESTART)


def _reopen(session: Session, options: Options, said: str) -> Reaction:
    """Take ``options``, say ``said`` and reopen the counters to match them."""
    session.state.options = options
    return Reaction(RESTART, says=said)


def threads(session: Session, key: str) -> Reaction:
    """``H``: a row per thread or per process."""
    on = not session.state.options.show_threads
    options = dataclasses.replace(session.state.options, show_threads=on)
    return _reopen(session, options, f"Show threads {_on_off(on)}")


def kernel(session: Session, key: str) -> Reaction:
    """``K``: kernel mode counted or not, where the host allows it."""
    if not session.host.kernel_counting_allowed:
        return saying("Kernel mode not available (not root and paranoia level too high).")
    on = not session.state.options.show_kernel
    options = dataclasses.replace(session.state.options, show_kernel=on)
    return _reopen(session, options, f"Kernel mode {_on_off(on)}")


def sticky(session: Session, key: str) -> Reaction:
    """``S``: dead tasks stay or go."""
    st = session.state
    st.options = dataclasses.replace(st.options, sticky=not st.options.sticky)
    return Reaction(RESTART)


def cmdline(session: Session, key: str) -> Reaction:
    """``c``: the command line or the name; the sampler again when a ``-p`` name filter
    matches it (docs/original.md 1)."""
    st = session.state
    st.options = dataclasses.replace(st.options, show_cmdline=not st.options.show_cmdline)
    return Reaction(RESTART) if st.options.only_name else NOTHING


# ------------------------------------------------------------ prompts


def ask_delay(session: Session, key: str) -> Reaction:
    """``d``, ``s``: ask for the delay."""
    return Reaction(opens=Prompt(f"Change delay from {session.state.delay:.2f} to: ", _set_delay))


def _set_delay(session: Session, text: str) -> Reaction:
    st = session.state
    try:
        delay = parse_delay(text.strip(), where="")
    except UsageError as exc:
        return saying(f"{exc} (delay stays {st.delay:.2f})")
    st.options = dataclasses.replace(st.options, delay=delay)
    return saying(f"Delay set to {st.delay:.2f}")


def ask_only(session: Session, key: str) -> Reaction:
    """``p``: ask for the PID or name to show alone."""
    return Reaction(opens=Prompt("Only display process: ", _set_only))


def _set_only(session: Session, text: str) -> Reaction:
    try:
        pid, name = _target(text.strip(), "p")
    except UsageError as exc:  # a number past any PID
        return saying(str(exc))
    st = session.state
    st.options = dataclasses.replace(st.options, only_pid=pid, only_name=name)
    # "Changing the filter resets all counters" (man page).
    return Reaction(RESTART)


def ask_user(session: Session, key: str) -> Reaction:
    """``u``: ask for the user whose tasks to show."""
    return Reaction(opens=Prompt("Which user (blank for all): ", _set_user))


def _set_user(session: Session, text: str) -> Reaction:
    text = text.strip()
    uid, name = None, None
    if text:
        try:
            uid, name = parse_user(text, where="u")
        except UsageError:
            return saying("User name does not exist.")
    st = session.state
    st.options = dataclasses.replace(st.options, uid=uid, user_name=name)
    return Reaction(RESTART)


def ask_watch(session: Session, key: str) -> Reaction:
    """``w``: ask for the PID or name to highlight."""
    return Reaction(opens=Prompt("Watch process: ", _set_watch))


def _set_watch(session: Session, text: str) -> Reaction:
    try:
        pid, name = _target(text.strip(), "w")
    except UsageError as exc:  # a number past any PID
        return saying(str(exc))
    st = session.state
    st.options = dataclasses.replace(st.options, watch_pid=pid, watch_name=name)
    return NOTHING


# ------------------------------------------------------------ W


def write_config(session: Session, key: str) -> Reaction:
    """``W``: write the current options and every screen to the user's configuration file
    (``tiptop.live.config_file.write_target``: XDG, or ``-W DIR``'s ``.tiptoprc``), never
    over an existing file, and say where, and "written" only when it was (docs/original.md
    8, defect 13). An exporter refuses a configuration it cannot write with
    ``ValueError``."""
    st = session.state
    path = write_target(st.options.config_dir, os.environ)
    if path is None:
        return saying("configuration not written: neither $XDG_CONFIG_HOME nor $HOME")
    exporter = session.services.exporter
    if exporter is None:
        return saying(f"{path} not written: no configuration writer available")
    try:
        text = exporter(st.options, st.screens)
    except ValueError as exc:  # a configuration the exporter cannot write (SpecError)
        return saying(f"{path} not written: {exc}")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # O_EXCL: refuse to replace a file the user may care about.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return saying(f"{path} not written: it already exists")
    except OSError as exc:
        return saying(f"{path} not written: {os.strerror(exc.errno or 0)}")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
    except OSError as exc:
        return saying(f"{path} not written: {os.strerror(exc.errno or 0)}")
    return saying(f"{path} written")


def _on_off(on: bool) -> str:
    """The original's words for a toggle's new state."""
    return "On" if on else "Off"


def _target(text: str, where: str) -> tuple[int | None, str | None]:
    """A ``-p``/``-w`` style answer: a non-zero number is a PID, other text a name,
    blank clears; UsageError (naming the key ``where``) for a number out of range."""
    return parse_target(text, where) if text else (None, None)


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes ``²`` and other digits int() refuses),
    no more than int() reads (4,300 by default, sys.get_int_max_str_digits); a number past
    pid_t or int is then refused by os.kill (OverflowError, said as EINVAL)."""
    most = sys.get_int_max_str_digits() or len(text)
    return text.isascii() and text.isdigit() and len(text) <= most
