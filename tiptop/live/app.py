"""The live-mode controller: owns the urwid ``MainLoop``, the refresh alarm and the keys.

Data flow is one way: the controller asks the frame source for a :class:`~tiptop.frame.Frame`,
asks :mod:`tiptop.table` for the rows, and hands finished text to :mod:`.widgets`. It holds
no data logic of its own; key handlers only change the settings record (from which the
table view and the sampler's configuration are made) or the sort, as the original's
``handle_key()`` does (docs/original.md section 5.3). Imports ``table``, ``frame``,
``options``, ``cells``, ``errors``, ``host`` and ``refresh`` only; the frame source is
handed in.
"""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

import urwid

from tiptop import table
from tiptop.cells import Code
from tiptop.errors import printable
from tiptop.frame import Frame, FrameSource
from tiptop.host import Host
from tiptop.live import palette as P
from tiptop.live.drill import Drill
from tiptop.live.keys import KeyActions, Keys, key_help
from tiptop.live.rows import TaskTable, squeezed, user_squeeze
from tiptop.live.services import Services
from tiptop.live.state import LiveState
from tiptop.live.terminal_input import InputFilter
from tiptop.live.where import WhereWindow
from tiptop.live.widgets import (
    LiveScreen,
    footer_markup,
    header_markup,
    tasks_markup,
    tasks_text,
    title_markup,
)
from tiptop.live.windows import Markup, help_lines, target_line, tree_markup, tree_title
from tiptop.options import Options
from tiptop.refresh import drain

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec

#: The original's first refresh comes 200 ms after start-up (docs/original.md 5.2).
FIRST_DELAY = 0.2

#: Keys that only move the view; every other key refreshes at once, like the original's
#: ``select()`` on stdin returning early.
NAV_KEYS = frozenset({"up", "down", "page up", "page down", "home", "end"})

#: Keys that close the open window (``h``, ``e``, ``t`` also close their own).
CLOSE_KEYS = frozenset({"esc"})


class LiveApp:
    """One live session: refresh cycle and drawing. What the keys change is ``state`` (a
    :class:`LiveState`); the keys themselves are ``keys`` (a :class:`Keys`)."""

    def __init__(
        self,
        options: Options,
        source: FrameSource,
        screens: Sequence[ScreenSpec],
        services: Services | None = None,
    ) -> None:
        services = services if services is not None else Services()
        self.services = services
        #: The ``t`` window's data, and the extra source for its task (:mod:`.drill`).
        self.drill = Drill(services.drill)
        #: The ``f`` window's data: the selected task's profiler while open (:mod:`.where`).
        self.where = WhereWindow(services.where, services.where_event)
        #: ``-E``: where each new sampler message is also written, one line each.
        self.error_log = services.error_log
        self._logged = 0
        #: The ``--`` command's exit status once said (said once).
        self.child_status: int | None = None
        self.source = source
        #: What this machine allows (the title's ``[root]``, the ``K`` key); read here when
        #: not given.
        self.host = services.host if services.host is not None else Host.read(raise_fds=False)
        #: What the keys change; the message line starts with what the command line had to
        #: say (e.g. the no-PMU fallback to ``sched``), which would be lost on a cleared
        #: terminal.
        self.state = LiveState.initial(
            options, source, screens, services.screen_index, services.message
        )
        actions = KeyActions(restart=self.restart, quit=self.quit, toggle_window=self._toggle)
        self.keys = Keys(self.state, actions, host=self.host, exporter=services.exporter)
        self.max_iter = options.max_iter
        self.refreshes = 0
        #: False until a frame has told how many tasks are tracked (start-up, restart).
        self.counted = False
        self.frame = Frame.empty(self._headers(), iteration=0)
        self.rows: Sequence[table.Row] = ()
        self.notice: str | None = None
        self.loop: urwid.MainLoop | None = None
        self._alarm: object = None  # urwid's handle of the next refresh's alarm
        self.quit_code: int | None = None
        self.table = TaskTable(self._format_row)
        self.widget = LiveScreen(
            {
                "title": lambda cols: title_markup(cols, self.indicators(), self.source.title()),
                "tasks": self._tasks_line,
                "message": self._message_line,
                "header": lambda cols: header_markup(
                    cols, squeezed(self._header(), self._squeeze(cols))
                ),
                "notice": self._notice_line,
                "footer": self._footer_line,
            },
            self.table,
        )
        self.table.squeeze = self._squeeze
        self._update_help()

    # ------------------------------------------------------------------ state

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
            dead = int(self.frame.dead.sum()) if self.state.options.sticky else None
            left = tasks_text(self.frame.tasks_total, len(self.rows), dead)
        st = self.state
        numbered = self.services.screen_number
        number = st.screen_index if numbered is None else numbered(st.screen)
        return tasks_markup(cols, left, number, st.screen.name)

    def _message_line(self, cols: int) -> Markup:
        text = self.state.prompt.display() if self.state.prompt else self.state.message
        return [(P.MESSAGE, text)] if text else ""  # wrapped by the widget when long

    def _notice_line(self, cols: int) -> Markup | None:
        return [(P.NOTICE, self.notice)] if self.notice else None

    def _footer_line(self, cols: int) -> Markup:
        scaled = any(any(r.multiplexed) for r in self.table.visible())
        return footer_markup(
            cols,
            self.frame.iteration if self.state.options.show_timestamp else None,
            bool(self.source.messages),
            int(self.frame.timestamp) if self.state.options.show_epoch else None,
            scaled,
        )

    def _format_row(self, row: table.Row) -> str:
        return table.format_row(row, self.state.view)

    def _update_help(self) -> None:
        cols = [(c.header, c.desc) for c in self.state.screen.columns]
        target = self.state.options.target
        variants = []
        for s in self.state.screens:
            v = getattr(s, "variant", None)
            if v is not None and len(v.variants) > 1:
                variants.append((s.name, v.desc, v.why()))
        self.widget.help = help_lines(
            target_line(target), self.state.screen.desc, cols, variants=variants, keys=key_help()
        )

    def _update_notice(self) -> None:
        """Say why hardware columns show ``?`` when whole counters could not be read."""
        f = self.frame
        self.notice = None
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
        self.notice = f"{events} not counted" + (f": {why}" if why else "")

    # ------------------------------------------------------------------ refresh

    def rebuild(self) -> None:
        """Recompute the rows from the current frame and view (no sampling)."""
        self.rows = table.rows(self.frame, self.state.screen, self.state.view)
        self.table.set_rows(self.rows, self._format_row)
        self.widget.errors.set_messages(self.source.messages.explained())
        self._update_tree()
        self.widget.changed()

    def refresh(self) -> None:
        """Take one frame from the sampler and show it."""
        self.frame = self.source.refresh()
        self._follow_source_screen()
        if self.widget.window in ("tree", "where"):
            self.drill.refresh()
        if self.widget.window == "where":
            self.where.refresh()
        self.refreshes += 1
        self.counted = True
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
        self._update_help()

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
            self.state.message = f"-E: cannot write the error log: {getattr(exc, 'strerror', exc)}"

    def _say_child_end(self) -> None:
        """Once the ``--`` command has ended, say so and with what status; the session
        goes on, showing its last counts, until ``q``."""
        child = self.services.child
        if child is None or self.child_status is not None:
            return
        self.child_status = child.peek()
        if self.child_status is not None:
            name = (self.state.options.command or ("the command",))[0]
            self.state.message = (
                f"'{printable(name)}' ended, exit status {self.child_status} (q quits)"
            )

    def restart(self) -> None:
        """Reconfigure the sampler (counters reopened, iteration 0 again) and show an empty
        table until the next refresh, 0.2 s later, as at start-up.

        The sampler is primed here, as ``run()`` primes it: ``reconfigure`` leaves it
        unstarted, and a ``refresh()`` of an unstarted sampler is only its priming scan
        (an empty frame, sampler contract), which would show ``0 displayed`` for a whole
        delay and count as one of ``-n``'s refreshes. Primed now, the refresh 0.2 s later
        shows real rows covering those 0.2 s."""
        self.drill.close()
        self.source.reconfigure(self.state.screen, self.state.options.sampler_config())
        self.source.start()
        self.refreshes = 0
        self.counted = False
        self.frame = Frame.empty(self._headers(), threads=self.state.options.show_threads)
        self.notice = None
        self._update_help()
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

    def _toggle(self, window: str) -> None:
        """Open the ``help``, ``errors`` or ``tree`` window, or close it when it is the one
        open."""
        self.widget.window = None if self.widget.window == window else window
        self._update_tree()

    def _update_tree(self) -> None:
        """The ``t`` and ``f`` windows' lines from the current frame while one is open,
        for the highlighted task, which the tree's title names (the extra source of
        :mod:`.drill` and the profiler of :mod:`.where` released when neither is open)."""
        if self.widget.window not in ("tree", "where"):
            self.drill.close()
            self.where.close()
            return
        s = self.state
        row = self.table.selected_row()
        pid = None if row is None else int(row.pid)
        view = self.drill.view(
            s.options, self.frame, s.screen, s.screens, pid, self.source.messages
        )
        self.widget.tree = tree_markup(view)
        self.widget.tree_title = tree_title(row)
        bottleneck = None if view.tree is None else view.tree.bottleneck
        self._update_where(pid, None if bottleneck is None else bottleneck.label)

    def _update_where(self, pid: int | None, node: str | None) -> None:
        """The ``f`` window's lines, sampling the highlighted task (its bottleneck
        ``node`` chooses the event where a PMU exists) while it is open."""
        if self.widget.window != "where":
            self.where.close()
            return
        self.where.follow(pid, node, self.state.delay)
        self.widget.where = self.where.lines()

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

    # ------------------------------------------------------------------ input

    def on_key(self, key: str | tuple[str, int, int, int]) -> bool:
        """Handle one key (urwid's ``unhandled_input``). True when it was used."""
        if not isinstance(key, str):
            return False
        if self.state.prompt is not None:
            self.prompt_key(key)
            self.widget.changed()
            return True
        if key in NAV_KEYS:
            window = self.widget.window
            target = self.widget.scrollers().get(window or "", self.table)
            target.scroll(key)
            if window in ("tree", "where"):  # the tree and functions follow the highlight
                self._update_tree()
            self.widget.changed()
            return True
        if key in CLOSE_KEYS and self.widget.window is not None:
            self._toggle(self.widget.window)  # Esc closes any window
            self.widget.changed()
            return True
        if key == "enter":
            key = "t"  # Enter opens the highlighted task's tree, as t does
        self.state.message = ""
        if self.source.key(key):  # a replay's time travel keys, the cgroup G key
            self.refresh()
            self._arm_next()
            self.widget.changed()
            return True
        restarted = self.keys.dispatch(key)
        if not restarted and self.quit_code is None and self.state.prompt is None:
            # Any key refreshes at once and the next full delay starts from here.
            self.refresh()
            self._arm_next()
        self.widget.changed()
        return True

    def prompt_key(self, key: str) -> None:
        """Feed a key to the open prompt; Enter runs its action, Esc cancels it."""
        assert self.state.prompt is not None
        done = self.state.prompt.feed(key)
        if done is None:
            return
        prompt, self.state.prompt = self.state.prompt, None
        if done:
            restarted = prompt.accept(prompt.text)
            if not restarted and self.state.prompt is None:
                self.refresh()
                self._arm_next()

    # ------------------------------------------------------------------ run

    def run(self, screen: urwid.BaseScreen | None = None) -> int:
        """Run until ``q``, Ctrl-C or ``-n`` refreshes; the terminal is restored on exit.
        The source is started first unless the caller did (``Services.started``)."""
        if not self.services.started:
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
            self.drill.close()
            self.where.close()
            if getattr(self.loop.screen, "_started", False):
                self.loop.screen.stop()
        return self.quit_code or 0
