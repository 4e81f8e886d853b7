"""The message log: each key said once, a key said again adds what it is about (the no-PMU
line names every counter it stands for), and a short line keeps its whole explanation for
the live ``e`` window."""

from __future__ import annotations

from tiptop.kernel.explain import NO_PMU, NO_PMU_COLUMNS, NO_PMU_KEY, no_pmu_line
from tiptop.messages import MessageLog


def test_a_key_said_again_adds_its_subjects_not_a_line() -> None:
    log = MessageLog()
    assert log.say(NO_PMU_KEY, no_pmu_line(NO_PMU_COLUMNS), "CYCLE", detail=NO_PMU)
    assert not log.say(NO_PMU_KEY, no_pmu_line(NO_PMU_COLUMNS), "INSN", detail=NO_PMU)
    assert not log.say(NO_PMU_KEY, no_pmu_line(NO_PMU_COLUMNS), "CYCLE")
    assert len(log) == 1
    assert log.about("INSN") is log.about("CYCLE") is not None
    assert log.about("INSN").subjects == ("CYCLE", "INSN")  # type: ignore[union-attr]


def test_the_e_window_gets_the_detail_once_batch_the_line() -> None:
    log = MessageLog()
    log.say("other", "some other problem")
    log.say(NO_PMU_KEY, no_pmu_line(NO_PMU_COLUMNS), "CYCLE", detail=NO_PMU)
    assert log.lines() == ["some other problem", no_pmu_line(NO_PMU_COLUMNS)]
    assert log.explained() == ["some other problem", f"{no_pmu_line(NO_PMU_COLUMNS)}\n{NO_PMU}"]


def test_the_short_line_fits_100_columns_with_the_program_name() -> None:
    for doing in (NO_PMU_COLUMNS, "showing screen 'sched'"):
        assert len(f"tiptop: {no_pmu_line(doing)}") <= 100
