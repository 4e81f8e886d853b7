"""One-line explanations of open failures."""

from __future__ import annotations

import errno
import os

import pytest

from tiptop.kernel.explain import NO_PMU, explain_open_error


def err(code: int) -> OSError:
    return OSError(code, os.strerror(code))


def explain(code: int, event: str = "cycles", **kw: object) -> str:
    args = {"paranoid": 2, "privileged": False, "kernel": False, **kw}
    return explain_open_error(err(code), event, **args)  # type: ignore[arg-type]


def test_enoent_names_errno_and_no_pmu() -> None:
    line = explain(errno.ENOENT)
    # Without the core PMUs known, both usual causes, and where to look.
    assert line.startswith("cycles: ENOENT: ")
    assert "no hardware PMU here (tiptop --check says which)" in line
    assert "\n" not in line


@pytest.mark.parametrize(
    ("code", "needles"),
    [
        (errno.ENODEV, ["ENODEV", "not supported by this CPU"]),
        (errno.EOPNOTSUPP, ["EOPNOTSUPP", "hardware feature"]),
        (errno.ESRCH, ["ESRCH", "no longer exists"]),
        (errno.EINVAL, ["EINVAL", "encoding", "group too large"]),
        (errno.E2BIG, ["E2BIG", "size"]),
        (errno.EBUSY, ["EBUSY", "exclusive"]),
        (errno.EMFILE, ["EMFILE", "ulimit -n"]),
        (errno.EIO, ["EIO", "Input/output error"]),
    ],
)
def test_each_errno(code: int, needles: list[str]) -> None:
    line = explain(code)
    for n in needles:
        assert n in line
    assert "\n" not in line


def test_eacces_kernel_counting_names_paranoid_level() -> None:
    line = explain(errno.EACCES, "task-clock", kernel=True, paranoid=2)
    assert "EACCES" in line and "perf_event_paranoid is 2" in line
    assert "CAP_PERFMON" in line and "paranoid < 2" in line


def test_eacces_other_users_task() -> None:
    line = explain(errno.EACCES, kernel=False, paranoid=2)
    assert "another user" in line and "not dumpable" in line


def test_paranoid_3_debian() -> None:
    line = explain(errno.EACCES, paranoid=3)
    assert "perf_event_paranoid is 3" in line and "disabled for unprivileged" in line


def test_eperm_privileged_points_at_seccomp() -> None:
    line = explain(errno.EPERM, privileged=True, paranoid=2)
    assert "EPERM" in line and "seccomp" in line


def test_emfile_names_the_host_limits() -> None:
    line = explain(errno.EMFILE, fd_limits=(1024, 4096))
    assert "limit 1024, hard 4096" in line


def test_eperm_in_a_container_points_at_seccomp() -> None:
    assert "seccomp" in explain(errno.EPERM, in_container=True)
    assert "seccomp" not in explain(errno.EPERM, in_container=False)


@pytest.mark.parametrize(
    ("pmu", "cores", "needles", "not_in"),
    [
        # A type no sysfs PMU has: never blamed on a missing hardware PMU.
        ("", ["cpu"], ["ENOENT", "no PMU of this machine has that event type"], "hardware PMU"),
        ("", [], ["no PMU of this machine has that event type"], "hardware PMU"),
        # A core event on a machine that has the core PMU: the CPU lacks the event.
        ("cpu", ["cpu"], ["PMU (cpu) does not support this event"], "no hardware PMU"),
        (
            "cpu_atom",
            ["cpu_atom", "cpu_core"],
            ["(cpu_atom, cpu_core) does not support"],
            "no hardware PMU",
        ),
        # A core event and no core PMU in sysfs: the VM case.
        ("cpu", [], [NO_PMU], "does not support"),
        (None, [], [NO_PMU], "does not support"),
        # Another PMU (msr, software, uncore...): that PMU lacks the config.
        ("msr", ["cpu"], ["the msr PMU does not support this event"], "hardware PMU"),
    ],
)
def test_enoent_names_the_right_cause(
    pmu: str | None, cores: list[str], needles: list[str], not_in: str
) -> None:
    line = explain(errno.ENOENT, "ev", event_pmu=pmu, core_pmus=cores)
    assert line.startswith("ev: ENOENT: ")
    for n in needles:
        assert n in line
    assert not_in not in line
    assert "\n" not in line
