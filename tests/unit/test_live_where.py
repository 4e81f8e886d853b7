"""The live ``f`` window (tiptop/live/where.py): the selected task's hottest functions
beside its top-down tree, sampled while the window is open and for that task only; Esc
and ``f`` close it and release the profiler; what cannot be sampled is one line. The
profiler here is a fake (named so) handing made-up profiles: real sampling is
tests/system/test_where.py's."""

from __future__ import annotations

from tests.support.live import keys, text
from tests.unit.test_live_tree import SIZE, tree_app
from tiptop.errors import TiptopError
from tiptop.host import Host
from tiptop.live.app import LiveApp
from tiptop.live.services import Services
from tiptop.where import CPU_CLOCK, Hot, Profile, SampledEvent, event_for

EVENT_LINE = "no hardware PMU here: sampling cpu-clock (time on CPU) at 1000 Hz"


class FakeProfiler:
    """Stands in for ``TaskProfiler``: each refresh, 3 more samples of hot_loop."""

    def __init__(self, pid: int, log: list[str], event: SampledEvent = CPU_CLOCK) -> None:
        self.pid, self.log, self.n, self.event = pid, log, 0, event
        log.append(f"open {pid}")

    def refresh(self) -> Profile:
        self.n += 3
        hot = (Hot("hot_loop", "hotcold", 3 * self.n), Hot("cold_loop", "hotcold", self.n))
        return Profile(self.pid, "chase", self.event.name, 1000, 1.0, 4 * self.n, 0, hot, False)

    def close(self) -> None:
        self.log.append(f"close {self.pid}")


def where_app(log: list[str]) -> LiveApp:
    app = tree_app()
    factory = lambda pid, _node, _delay: FakeProfiler(pid, log)  # noqa: E731
    app.session.services = Services(host=Host(), where=factory, where_event=EVENT_LINE)
    return app


def window_lines(app: LiveApp) -> list[str]:
    lines = text(app, SIZE)
    top = next(i for i, ln in enumerate(lines) if "Hottest functions" in ln)
    return lines[top : top + 6]


def test_f_opens_the_functions_beside_the_tree_and_esc_closes_it() -> None:
    log: list[str] = []
    app = where_app(log)
    keys(app, "f")  # a key refreshes at once: the first profile is there
    assert log == ["open 4242"]
    lines = window_lines(app)
    assert "Top-down tree" in lines[0] and lines[0].index("Top-down") < lines[0].index("Hottest")
    right = [ln[ln.index("│", ln.index("│") + 1) :] for ln in lines[1:]]  # the second box
    assert EVENT_LINE in right[0]
    assert "PID 4242 (chase): 12 samples of cpu-clock at 1000 Hz" in right[1]
    assert " 75.0%  hot_loop  hotcold" in right[2] and " 25.0%  cold_loop  hotcold" in right[3]
    app.refresh()  # refreshes in place
    assert "24 samples" in window_lines(app)[2]
    keys(app, "esc")
    assert log == ["open 4242", "close 4242"]
    assert not any("Hottest functions" in ln for ln in text(app, SIZE))
    keys(app, "f", "f")
    assert log[-2:] == ["open 4242", "close 4242"]


def test_a_task_that_cannot_be_sampled_is_one_line() -> None:
    app = tree_app()

    def refused(pid: int, _node: str | None, _delay: float) -> FakeProfiler:
        raise TiptopError(f"--where {pid}: cpu-clock: EACCES: permission denied")

    app.session.services = Services(host=Host(), where=refused)
    keys(app, "f")
    assert "--where 4242: cpu-clock: EACCES: permission denied" in window_lines(app)[1]


def test_with_a_pmu_the_event_follows_the_tasks_bottleneck() -> None:
    """Where a PMU exists (no no-PMU line), the profiler is asked for the highlighted
    task's bottleneck node and the window names the event it chose and why."""
    asked: list[tuple[int, str | None]] = []

    def factory(pid: int, node: str | None, _delay: float) -> FakeProfiler:
        asked.append((pid, node))
        return FakeProfiler(pid, [], event_for(node))

    app = tree_app()
    app.session.services = Services(host=Host(), where=factory)
    keys(app, "f")
    assert asked == [(4242, "BE/Mem")]
    lines = window_lines(app)
    assert "sampling cache-misses (its bottleneck BE/Mem) at 1000 Hz" in lines[1]
    assert "12 samples of cache-misses at 1000 Hz" in lines[2]


def test_the_bottleneck_chooses_the_event() -> None:
    assert event_for("BE/Mem").name == "cache-misses"
    assert event_for("BE/Mem/DRAM").name == "cache-misses"
    assert event_for("BAD/Misp").name == "branch-misses"
    assert event_for("BAD").name == "branch-misses"
    assert event_for("BAD/Clear").name == "cycles"
    assert event_for("FE/Lat").name == "cycles"
    assert event_for(None).means == "no bottleneck over its threshold"


def test_the_profiler_follows_the_live_delay() -> None:
    """The profiler's buffers are sized for the delay it is opened with: after ``d`` raises
    the delay the window opens it again with the new one (issue 50: sized from the start-up
    delay, a longer one lost samples)."""
    asked: list[float] = []

    def factory(pid: int, _node: str | None, delay: float) -> FakeProfiler:
        asked.append(delay)
        return FakeProfiler(pid, [])

    app = tree_app()
    app.session.services = Services(host=Host(), where=factory)
    keys(app, "f")
    assert asked == [2.0]
    keys(app, "d", "3", "0", "enter")
    assert asked == [2.0, 30.0]
    app.refresh()
    assert asked == [2.0, 30.0]  # opened once per delay
