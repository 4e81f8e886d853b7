"""The live-mode controller: owns the urwid ``MainLoop``, the refresh alarm, the open
windows, and applies what each key asks for.

Data flow is one way: the controller asks the frame source for a :class:`~tiptop.frame.Frame`,
asks :mod:`tiptop.table` for the rows, and hands finished text to :mod:`.widgets`. It holds
no data logic of its own. A key goes to the window on top first (``tiptop.live.window``),
else to its binding in the one key registry (``tiptop.live.registry``); either returns a
:class:`~tiptop.live.reaction.Reaction`, which :meth:`LiveApp.apply` carries out in one
place: close or open a window, say something, reconfigure the sampler, take a frame, lay
the rows out again, quit (the original's ``handle_key()``, docs/original.md section 5.3).
Imports ``table``, ``frame``, ``options``, ``cells``, ``errors``, ``host`` and ``refresh``
only; the frame source is handed in.
"""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

import urwid

from tiptop import table
from tiptop.cells import Code
from tiptop.frame import Frame, FrameSource
from tiptop.host import Host
from tiptop.live import palette as P
from tiptop.live import registry
from tiptop.live.reaction import Effect, Reaction
from tiptop.live.rows import TaskTable, squeezed, user_squeeze
from tiptop.live.services import Services
from tiptop.live.session import Session
from tiptop.live.state import LiveState
from tiptop.live.terminal_input import InputFilter
from tiptop.live.text import Markup
from tiptop.live.widgets import (
    LiveScreen,
    RowKind,
    context_brief,
    first_words,
    footer_markup,
    header_markup,
    tasks_markup,
    tasks_text,
    title_markup,
)
from tiptop.live.window import Window
from tiptop.options import Options
from tiptop.outside import printable
from tiptop.refresh import drain

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec

#: The original's first refresh comes 200 ms after start-up (docs/original.md 5.2).
FIRST_DELAY = 0.2

#: What a key takes at once unless it says otherwise (see :meth:`LiveApp.on_key`).
_NOT_AFTER = Effect.RESTART | Effect.QUIT

#: After a text cut to the status line's width: the key that shows it whole.
MORE = f"\u2026 ({registry.WHOLE_KEY}: more)"


class LiveApp:
    """One live session: the refresh cycle, the windows and the drawing. What the keys
    act on is ``session`` (a :class:`Session`: its ``state`` is what they change)."""

    def __init__(
        self,
        options: Options,
        source: FrameSource,
        screens: Sequence[ScreenSpec],
        services: Services | None = None,
    ) -> None:
        services = services if services is not None else Services()
        #: ``-E``: where each new sampler message is also written, one line each.
        self.error_log = services.error_log
        self._logged = 0
        #: The ``--`` command's exit status once said (said once).
        self.child_status: int | None = None
        self.source = source
        host = services.host if services.host is not None else Host.read(raise_fds=False)
        #: What this machine allows (the title's ``[root]``).
        self.host = host
        #: What the keys change; the message line starts with what the command line had to
        #: say (e.g. the no-PMU fallback to ``sched``), which would be lost on a cleared
        #: terminal.
        state = LiveState.initial(options, source, screens, services.screen_index, services.message)
        self.table = TaskTable(self._format_row)
        #: What the keys and windows act on.
        self.session = Session(state, source, services, host, self.table)
        #: The open windows, bottom first; the top one gets the keys first.
        self.windows: list[Window] = []
        self.max_iter = options.max_iter
        self.refreshes = 0
        #: False until a frame has told how many tasks are tracked (start-up, restart).
        self.counted = False
        self.rows: Sequence[table.Row] = ()
        self.loop: urwid.MainLoop | None = None
        self._alarm: object = None  # urwid's handle of the next refresh's alarm
        self.quit_code: int | None = None
        self.widget = LiveScreen(
            {
                "title": lambda cols: title_markup(cols, self.indicators(), self._title()),
                "tasks": self._tasks_line,
                "message": self._message_line,
                "header": lambda cols: header_markup(
                    cols, squeezed(self._header(), self._squeeze(cols)), self.state.descending
                ),
                "notice": self._notice_line,
                "footer": self._footer_line,
            },
            self.table,
        )
        self.widget.windows = self.windows
        self.table.squeeze = self._squeeze

    @property
    def state(self) -> LiveState:
        """What the keys change (the session's)."""
        return self.session.state

    @property
    def frame(self) -> Frame:
        """The frame on display."""
        return self.session.frame

    @frame.setter
    def frame(self, frame: Frame) -> None:
        self.session.frame = frame

    # ------------------------------------------------------------------ state

    def _title(self) -> str:
        """The title line's words after ``tiptop -``: where frames come from (a replay's
        time), then what the machine did over the refresh, where the screen read it."""
        context = context_brief(self.frame.context) if self.counted else ""
        return "  ".join(x for x in (self.source.title(), context) if x)

    def _header(self) -> str:
        """The table's header; its name column says CGROUP while the rows are cgroups
        (the ``G`` key switches them at the source)."""
        view = self.state.view
        if self.frame.by_cgroup:
            view = dataclasses.replace(view, name_header="CGROUP")
        return table.header(self.state.screen, view)

    def _squeeze(self, cols: int) -> tuple[int, int] | None:
        """What of the ``-U`` column to leave out at ``cols`` so COMMAND stays whole."""
        view = self.state.view
        return user_squeeze(len(self._header()), cols, view.pid_width, view.show_user)

    def _headers(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.state.screen.columns)

    def indicators(self) -> list[str]:
        """The title line's mode indicators, in the original's order, then ours:
        ``[rec]`` while ``--record`` writes every refresh to its file."""
        o = self.state.options
        flags = [
            ("[conf]", o.config_path is not None),
            ("[root]", self.host.root),
            ("[uid]", o.uid is not None),
            ("[pid]", o.only_pid is not None or bool(o.only_name)),
            ("[kernel]", o.show_kernel),
            ("[sticky]", o.sticky),
            ("[threads]", o.show_threads),
            ("[idle]", o.show_idle),
            ("[rec]", o.record is not None),
        ]
        return [name for name, on in flags if on]

    # ------------------------------------------------------------------ lines

    def _tasks_line(self, cols: int) -> Markup:
        # Before the first frame the count is unknown: nothing rather than a wrong 0.
        left = ""
        if self.counted:
            f = self.frame
            dead = int(f.dead.sum()) if self.state.options.sticky else None
            threads = self.state.options.show_threads
            kind = RowKind.CGROUP if f.by_cgroup else RowKind.THREAD if threads else RowKind.PROCESS
            rows = self.rows
            shown = rows.top_level() if isinstance(rows, table.RowList) else len(rows)
            left = tasks_text(len(f), shown, dead, kind)
        st = self.state
        numbered = self.session.services.screen_number
        number = st.screen_index if numbered is None else numbered(st.screen)
        return tasks_markup(cols, left, number, st.screen.name)

    def _message_line(self, cols: int) -> Markup:
        """The status line: an open question, its end in sight; else what was said, its
        first words and the key that shows the whole when it is longer than the line."""
        asked = self.windows[-1].status() if self.windows else None
        if asked is not None:
            text = asked if len(asked) < cols else asked[len(asked) - cols + 1 :]
        else:
            text = first_words(self.state.status.shown(self.session.clock()), cols, MORE)
        return [(P.MESSAGE, text)] if text else ""

    def _notice_line(self, cols: int) -> Markup | None:
        """Why whole counters read ``?``: one line, its first words when it is longer."""
        notice = self.state.notice
        return [(P.NOTICE, first_words(notice, cols, MORE))] if notice else None

    def _footer_line(self, cols: int) -> Markup:
        scaled = any(any(r.multiplexed) for r in self.table.visible())
        return footer_markup(
            cols,
            self.frame.iteration if self.state.options.show_timestamp else None,
            self.source.messages.errors() > 0,  # a notice (no PMU here) is no error
            int(self.frame.timestamp) if self.state.options.show_epoch else None,
            scaled,
        )

    def _format_row(self, row: table.Row) -> str:
        return table.format_row(row, self.state.view)

    def _update_notice(self) -> None:
        """Say why hardware columns show ``?`` when whole counters could not be read."""
        f = self.frame
        self.state.notice = ""
        if len(f) == 0 or not f.counters:
            return
        dead = (f.counter_status == Code.UNREADABLE).all(axis=0)
        aliases = [a for a, d in zip(f.counters, dead, strict=True) if d]
        if not aliases:
            return
        log = self.source.messages
        about = next((m for m in map(log.about, aliases) if m is not None), None)
        first = next(iter(log), None)
        why = about.line if about else first.line if first else ""
        # Events as the user knows them (cycles), not the screen's aliases (CYCLE).
        label = {c.alias: c.event_label for c in self.state.screen.counters}
        events = ", ".join(dict.fromkeys(label.get(a, a) for a in aliases))
        self.state.notice = f"{events} not counted" + (f": {why}" if why else "")

    # ------------------------------------------------------------------ refresh

    def rebuild(self) -> None:
        """Recompute the rows from the current frame and view (no sampling), and the open
        windows' text."""
        self.rows = table.rows(self.frame, self.state.screen, self.state.view)
        self.table.set_rows(self.rows, self._format_row)
        for w in self.windows:
            w.update(self.session)
        self.widget.changed()

    def refresh(self) -> None:
        """Take one frame from the sampler and show it; the open windows take what they
        need from the refresh (their own source's frame, their samples) first."""
        self.frame = self.source.refresh()
        self._follow_source_screen()
        for w in self.windows:
            w.refresh(self.session)
        self.refreshes += 1
        self.counted = True
        self.state.status.refreshed()
        self._log_messages()
        self._say_child_end()
        self._update_notice()
        self.rebuild()
        if self.max_iter and self.refreshes >= self.max_iter:
            self.quit(0)

    def _follow_source_screen(self) -> None:
        """A source may change screen by itself (a replay shows each refresh under the
        screen it was recorded under, found as the file is read): the view follows it, and
        offers a screen it did not have from then on."""
        current = self.source.screen
        if current is None or current is self.state.screen:
            return
        screens = self.state.screens
        known = [i for i, s in enumerate(screens) if s is current] or [
            i for i, s in enumerate(screens) if s == current
        ]
        if not known:
            screens.append(current)
        self.state.screen_index = known[0] if known else len(screens) - 1

    def _log_messages(self) -> None:
        """Append the sampler's new messages to ``-E``'s file; a write error there is
        said once on the message line, never raised (the screen must stay up)."""
        if self.error_log is None:
            return
        log = self.error_log

        def write(line: str) -> None:
            log.write(f"tiptop: {printable(line)}\n")

        try:
            self._logged = drain(self.source.messages, self._logged, write)
            log.flush()
        except (OSError, ValueError) as exc:
            self.error_log = None
            why = getattr(exc, "strerror", exc)
            self.state.status.say(f"-E: cannot write the error log: {why}")

    def _say_child_end(self) -> None:
        """Once the ``--`` command has ended, say so and with what status; the session
        goes on, showing its last counts, until ``q``."""
        child = self.session.services.child
        if child is None or self.child_status is not None:
            return
        self.child_status = child.peek()
        if self.child_status is not None:
            name = (self.state.options.command or ("the command",))[0]
            said = f"'{printable(name)}' ended, exit status {self.child_status} (q quits)"
            self.state.status.say(said)

    def restart(self) -> None:
        """Reconfigure the sampler (counters reopened, iteration 0 again) and show an empty
        table until the next refresh, 0.2 s later, as at start-up.

        The sampler is primed here, as ``run()`` primes it: ``reconfigure`` leaves it
        unstarted, and a ``refresh()`` of an unstarted sampler is only its priming scan
        (an empty frame, sampler contract), which would show ``0 displayed`` for a whole
        delay and count as one of ``-n``'s refreshes. Primed now, the refresh 0.2 s later
        shows real rows covering those 0.2 s."""
        self.source.reconfigure(self.state.screen, self.state.options.sampler_config())
        self.source.start()
        self.refreshes = 0
        self.counted = False
        self.frame = Frame.empty(self._headers(), threads=self.state.options.show_threads)
        self.state.notice = ""
        self.rebuild()
        self._arm(FIRST_DELAY)

    def _terminated(self, signum: int, frame: object) -> None:
        """SIGTERM's handler while the loop runs: quit with 128 + the signal."""
        self.quit(128 + signum)

    def quit(self, code: int = 0) -> None:
        """Leave the main loop (from a key or after ``-n`` refreshes)."""
        self.quit_code = code
        if self.loop is not None:
            raise urwid.ExitMainLoop()

    def _tick(self, loop: urwid.MainLoop | None = None, data: object = None) -> None:
        self._alarm = None
        self.refresh()
        self._arm_next()

    def _arm_next(self) -> None:
        """The next refresh when the source says it is due (the delay, or a replay's pace)."""
        self._arm(self.source.due_in(self.state.delay))

    def _arm(self, seconds: float) -> None:
        if self.loop is None:
            return
        if self._alarm is not None:
            self.loop.remove_alarm(self._alarm)
        self._alarm = self.loop.set_alarm_in(seconds, self._tick)

    # ------------------------------------------------------------------ windows

    def _close_top(self) -> None:
        if self.windows:
            self.windows.pop().close()

    def _open(self, window: Window) -> None:
        """Open ``window`` on top: a window of the same kind on top closes instead (its
        key toggles it); a window that is not modal takes the place of the one open."""
        top = self.windows[-1] if self.windows else None
        if top is not None and top.name == window.name:
            self._close_top()
            return
        if not window.modal:
            while self.windows:
                self._close_top()
        self.windows.append(window)
        window.open(self.session)

    # ------------------------------------------------------------------ input

    def apply(self, reaction: Reaction) -> None:
        """Carry out what a key asked for, in this order: close the window on top, open
        one, say the words, then quit, or reconfigure the sampler, or take a frame, or lay
        the rows out again; the windows follow a moved highlight."""
        e = reaction.effects
        if Effect.CLOSE in e:
            self._close_top()
        if reaction.opens is not None:
            self._open(reaction.opens)
        if reaction.says is not None:
            self._say(reaction.says, reaction.lasting)
        if Effect.QUIT in e:
            self.quit(reaction.code)
        elif Effect.RESTART in e:
            self.restart()
        elif Effect.REFRESH in e:
            self.refresh()
            self._arm_next()
        elif Effect.REBUILD in e:
            self.rebuild()
        elif Effect.FOLLOW in e:
            for w in self.windows:
                w.update(self.session)
        self.widget.changed()

    def _say(self, text: str, lasting: float | None) -> None:
        """``text`` on the status line, for ``lasting`` seconds (then drawn again without
        it) or until the next key."""
        if lasting is None:
            self.state.status.say(text)
            return
        self.state.status.say(text, until=self.session.clock() + lasting)
        if self.loop is not None:
            self.loop.set_alarm_in(lasting, lambda _loop, _data: self.widget.changed())

    def on_key(self, key: str | tuple[str, int, int, int]) -> bool:
        """Handle one key (urwid's ``unhandled_input``). True when it was used."""
        if not isinstance(key, str):
            return False
        top = self.windows[-1] if self.windows else None
        if top is not None:
            used = top.key(key, self.session)
            if used is not None:
                self.apply(used)
                return True
        binding = registry.lookup(key)
        if binding is None:
            self.apply(registry.unknown(key))
            return True
        if binding.refreshes:
            self.state.status.clear()
        reaction = binding.act(self.session, key)
        # Any key takes a frame at once and the next delay starts from there, unless it
        # restarts the sampler, quits, or opens a question (answered first).
        opens_modal = reaction.opens is not None and reaction.opens.modal
        if binding.refreshes and not reaction.effects & _NOT_AFTER and not opens_modal:
            reaction = dataclasses.replace(reaction, effects=reaction.effects | Effect.REFRESH)
        self.apply(reaction)
        return True

    # ------------------------------------------------------------------ run

    def run(self, screen: urwid.BaseScreen | None = None) -> int:
        """Run until ``q``, Ctrl-C or ``-n`` refreshes; the terminal is restored on exit.
        The source is started first unless the caller did (``Services.started``)."""
        if not self.session.services.started:
            self.source.start()
        if screen is None:
            screen = urwid.display.raw.Screen()
            screen.set_terminal_properties(colors=P.colours())
        self.loop = urwid.MainLoop(
            self.widget,
            P.PALETTE,
            screen=screen,
            unhandled_input=self.on_key,
            input_filter=InputFilter(),
            handle_mouse=False,
        )
        self._arm(FIRST_DELAY)
        # SIGTERM ends the session as q does, the terminal restored, status 143 (128 +
        # the signal, as the man page says); without it Python dies with the screen left
        # in the alternate buffer.
        old_term = signal.signal(signal.SIGTERM, self._terminated)
        try:
            self.loop.run()
        except KeyboardInterrupt:
            return 128 + signal.SIGINT
        finally:
            signal.signal(signal.SIGTERM, old_term)
            while self.windows:
                self._close_top()
            if getattr(self.loop.screen, "_started", False):
                self.loop.screen.stop()
        return self.quit_code or 0
