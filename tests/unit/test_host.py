"""The Host record: this machine's facts read once, and the unprivileged rules as unit tests
(a ``Host`` that says "uid 1000, paranoid 2"; no ``setpriv``, no processes). Each rule also
has one real system test: tests/system/test_unprivileged.py, tests/system/test_perf_real.py."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from tests.support import host_at
from tests.support.builders import screen
from tests.support.fake_backend import FakeBackend, FakeClock
from tests.support.sampling import FAKE_SCREEN, fake_env, row
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.engine.scan.tasks import TaskScanner
from tiptop.host import CAP_PERFMON, CAP_SYS_ADMIN, Clock, Host
from tiptop.screens.model import ScreenSpec

USER = Host(uid=1000, euid=1000, paranoid=2)


def test_read_matches_this_process(tmp_path: os.PathLike[str]) -> None:
    h = Host.read(raise_fds=False)
    assert (h.uid, h.euid) == (os.getuid(), os.geteuid())
    assert (h.fd_soft, h.fd_hard) == resource.getrlimit(resource.RLIMIT_NOFILE)
    assert h.clk_tck == os.sysconf("SC_CLK_TCK")
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        assert h.paranoid == int(f.read())


def test_read_paranoid_from_another_proc_root(tmp_path: os.PathLike[str]) -> None:
    d = os.path.join(tmp_path, "sys", "kernel")
    os.makedirs(d)
    with open(os.path.join(d, "perf_event_paranoid"), "w") as f:
        f.write("3\n")
    assert Host.read(str(tmp_path), raise_fds=False).paranoid == 3
    assert Host.read(str(tmp_path) + "/missing", raise_fds=False).paranoid is None


def test_read_smt_active_from_sysfs(tmp_path: Path) -> None:
    """``devices/system/cpu/smt/active`` (Documentation/ABI/testing/sysfs-devices-system-cpu):
    1 is SMT on; 0, absent or unreadable is off."""
    smt = tmp_path / "devices" / "system" / "cpu" / "smt"
    smt.mkdir(parents=True)
    for text, active in (("1\n", True), ("0\n", False)):
        (smt / "active").write_text(text)
        assert Host.read(sysfs_root=str(tmp_path), raise_fds=False).smt_active is active
    assert Host.read(sysfs_root=str(tmp_path / "missing"), raise_fds=False).smt_active is False
    if os.path.exists("/sys/devices/system/cpu/smt/active"):
        with open("/sys/devices/system/cpu/smt/active") as f:
            assert Host.read(raise_fds=False).smt_active is (f.read().strip() == "1")


def test_read_tickless_cpus_from_sysfs(tmp_path: Path) -> None:
    """``devices/system/cpu/nohz_full`` (Documentation/timers/no_hz.rst): a CPU list is
    tickless; empty, ``(null)`` (older kernels) or absent is not."""
    cpu = tmp_path / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    for text, tickless in (("2-7\n", True), ("1\n", True), ("\n", False), ("(null)\n", False)):
        (cpu / "nohz_full").write_text(text)
        assert Host.read(sysfs_root=str(tmp_path), raise_fds=False).tickless is tickless, text
    assert Host.read(sysfs_root=str(tmp_path / "missing"), raise_fds=False).tickless is False


def test_read_raises_the_soft_fd_limit() -> None:
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if before[0] > 64:
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, before[1]))
        h = Host.read()
        assert h.fd_soft == h.fd_hard == before[1]
        assert h.fd_budget == max(before[1] - h.fds_in_use - 64, 0)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        (Host(uid=1000, euid=1000, paranoid=2), False),
        (Host(uid=1000, euid=1000, paranoid=1), True),
        (Host(uid=1000, euid=1000, paranoid=-1), True),
        (Host(uid=1000, euid=1000, paranoid=None), False),
        (Host(uid=1000, euid=1000, paranoid=3), False),
        (Host(uid=1000, euid=0, paranoid=2), True),
        (Host(uid=1000, euid=1000, paranoid=2, capabilities=1 << CAP_PERFMON), True),
        (Host(uid=1000, euid=1000, paranoid=2, capabilities=1 << CAP_SYS_ADMIN), True),
    ],
)
def test_kernel_counting_needs_privilege_or_paranoid_below_2(host: Host, allowed: bool) -> None:
    assert host.kernel_counting_allowed is allowed
    refusal = host.kernel_refusal()
    assert (refusal is None) is allowed
    if refusal is not None:
        assert f"perf_event_paranoid is {host.paranoid}" in refusal
        assert "sysctl kernel.perf_event_paranoid=1" in refusal


def test_own_processes_only_unless_root() -> None:
    assert USER.may_watch(1000)
    assert not USER.may_watch(0) and not USER.may_watch(1001)
    assert Host(uid=0, euid=0).may_watch(1001)


def _fake_proc(tmp_path: os.PathLike[str]) -> str:
    """A /proc with one process of uid 1000 (pid 10) and one of root (pid 20)."""
    from tests.fakeproc import FakeProc

    fp = FakeProc(Path(tmp_path) / "proc")
    fp.add(10, "mine", uid=1000)
    fp.add(20, "roots", uid=0)
    return str(fp.root)


def test_scanner_shows_only_own_processes_to_a_user(tmp_path: os.PathLike[str]) -> None:
    root = _fake_proc(tmp_path)
    assert [t.pid for t in TaskScanner(root, euid=USER.euid).scan().tasks] == [10]
    assert sorted(t.pid for t in TaskScanner(root, euid=0).scan().tasks) == [10, 20]


def _sched_screen() -> ScreenSpec:
    return screen(
        "s",
        "sched",
        counters={"CS": "context-switches", "TC": "task-clock"},
        columns=[(" CS", "%3.0f", "CS", "delta(CS)")],
    )


def test_user_mode_only_under_paranoid_2(tmp_path: os.PathLike[str]) -> None:
    """-K is refused with the reason; task-clock opens user mode only (exclude_kernel);
    context switches (kernel-only) are not opened at all, and say why."""
    host = Host(
        proc_root=_fake_proc(tmp_path), sysfs_root=str(tmp_path), uid=1000, euid=1000, paranoid=2
    )
    b = FakeBackend(clock=FakeClock())
    s = Sampler(_sched_screen(), SamplerConfig(kernel=True), host=host, backend=b)
    lines = s.messages.lines()
    assert any("kernel counting (-K) is not allowed: perf_event_paranoid is 2" in m for m in lines)
    assert any(m.startswith("context-switches: happen only in the kernel") for m in lines)
    assert [g.attrs[0].exclude_kernel for g in s.plan.groups] == [True]
    assert s.messages.about("CS") is not None  # the live notice finds why CS shows '?'


def test_kernel_mode_when_privileged(tmp_path: os.PathLike[str]) -> None:
    host = Host(
        proc_root=_fake_proc(tmp_path),
        sysfs_root=str(tmp_path),
        uid=1000,
        euid=1000,
        paranoid=2,
        capabilities=1 << CAP_PERFMON,
    )
    s = Sampler(
        _sched_screen(),
        SamplerConfig(kernel=True),
        host=host,
        backend=FakeBackend(clock=FakeClock()),
    )
    assert not s.messages
    assert all(not a.exclude_kernel for g in s.plan.groups for a in g.attrs)


def test_the_engine_reads_the_hosts_clock(tmp_path: Path) -> None:
    """The scan's interval, the counters' window and a frame's time come from
    ``Host.clock`` (docs/architecture.md): with a fake clock they are its numbers exactly,
    whatever time the test really took."""
    fp, b = fake_env(tmp_path)
    fp.add(10, "app")
    b.script(10, (0, 0), 1e9)
    wall = FakeClock(1_700_000_000.0)
    clock = Clock(monotonic=b.clock, wall=wall)
    host = host_at(str(fp.root), str(tmp_path / "nosys"), clock=clock)
    s = Sampler(FAKE_SCREEN, SamplerConfig(), backend=b, host=host)
    s.start()
    b.clock.advance(3.0)
    wall.advance(3.0)
    f = s.refresh()
    s.close()
    assert (f.timestamp, f.interval) == (1_700_000_003.0, 3.0)
    assert f.window is not None and f.window[row(f, 10)] == 3.0
