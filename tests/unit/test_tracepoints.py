"""Tracepoints by name through a FAKE tracefs tree, PMUs that refuse exclude bits or count
per CPU only, and the attr ``--check`` probes with (the sampler's)."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support import host_at
from tests.support.builders import screen
from tests.support.fake_backend import FakeBackend, FakeGroup
from tests.support.sampling import fake_env
from tiptop import diagnose
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.errors import EventError
from tiptop.events import resolve, tracefs
from tiptop.events.bindings import EventBinding, counting_attr
from tiptop.kernel import pfm
from tiptop.kernel.attr import Attr
from tiptop.kernel.explain import explain_open_error, kernel_only
from tiptop.vocab import PerfType

SYSFS = Path(__file__).resolve().parents[1] / "data" / "sysfs"


def fake_tracefs(root: Path, where: str = "kernel/tracing", **events: int) -> Path:
    """``root/<where>/events/<sys>/<event>/id`` for each ``sys__event=id``."""
    base = root / where / "events"
    base.mkdir(parents=True)
    for key, ident in events.items():
        sub, _, name = key.partition("__")
        (base / sub / name).mkdir(parents=True)
        (base / sub / name / "id").write_text(f"{ident}\n")
    return base


def test_tracepoint_resolves_to_its_tracefs_id(tmp_path: Path) -> None:
    fake_tracefs(tmp_path, sched__sched_switch=316, syscalls__sys_enter_read=611)
    (b,) = resolve("sched:sched_switch", sysfs_root=str(tmp_path))
    assert (b.name, b.pmu, b.attr.type, b.attr.config) == (
        "sched:sched_switch",
        "tracepoint",
        PerfType.TRACEPOINT,
        316,
    )
    (b,) = resolve("syscalls:sys_enter_read", sysfs_root=str(tmp_path))
    assert b.attr.config == 611
    assert kernel_only(b.attr)  # a tracepoint counts nothing with exclude_kernel=1


def test_tracefs_under_debugfs_is_found_too(tmp_path: Path) -> None:
    fake_tracefs(tmp_path, "kernel/debug/tracing", sched__sched_switch=77)
    (tmp_path / "kernel" / "tracing").mkdir()  # the empty mount point
    (b,) = resolve("sched:sched_switch", sysfs_root=str(tmp_path))
    assert b.attr.config == 77


def test_no_tracefs_says_not_mounted_and_how(tmp_path: Path) -> None:
    (tmp_path / "kernel" / "tracing").mkdir(parents=True)
    with pytest.raises(EventError) as e:
        resolve("sched:sched_switch", sysfs_root=str(tmp_path))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("tracepoint sched:sched_switch: tracefs not mounted at ")
    assert f"{tmp_path}/kernel/tracing or {tmp_path}/kernel/debug/tracing" in msg
    assert msg.endswith("mount it with: mount -t tracefs nodev /sys/kernel/tracing")
    assert "libpfm4" not in msg


def test_unreadable_tracefs_says_root_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tracefs(tmp_path, sched__sched_switch=316)
    real = os.listdir
    refused = str(tmp_path / "kernel" / "tracing" / "events")

    def listdir(path: str) -> list[str]:
        if str(path) == refused:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path)

    monkeypatch.setattr(tracefs.os, "listdir", listdir)
    with pytest.raises(EventError) as e:
        resolve("sched:sched_switch", sysfs_root=str(tmp_path))
    msg = str(e.value)
    assert f"{tmp_path}/kernel/tracing not readable by uid {os.geteuid()} (root only)" in msg
    assert msg.endswith("; run as root")
    assert "mount" not in msg  # the other place is not mentioned when one was refused


def test_missing_subsystem_and_event_are_named(tmp_path: Path) -> None:
    base = fake_tracefs(tmp_path, sched__sched_switch=316)
    with pytest.raises(EventError, match=f"no subsystem 'nosuch' in {base} "):
        resolve("nosuch:x", sysfs_root=str(tmp_path))
    with pytest.raises(EventError, match=f"no event 'sched_nope' in {base}/sched "):
        resolve("sched:sched_nope", sysfs_root=str(tmp_path))
    (base / "sched" / "bad").mkdir()
    (base / "sched" / "bad" / "id").write_text("x\n")
    with pytest.raises(EventError, match="holds 'x', not an id"):
        resolve("sched:bad", sysfs_root=str(tmp_path))


def test_upper_case_event_colon_umask_goes_to_libpfm4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tracefs(tmp_path, sched__sched_switch=316)
    asked: list[str] = []

    def encode(name: str) -> Attr:
        asked.append(name)
        if name == "FP_ASSIST:ANY":
            return Attr(type=4, config=0x1ECA)
        raise EventError(f"libpfm4 does not know {name}")

    monkeypatch.setattr(pfm, "encode", encode)
    (b,) = resolve("FP_ASSIST:ANY", sysfs_root=str(tmp_path))
    assert (b.pmu, b.attr.type, b.attr.config) == ("cpu", 4, 0x1ECA)
    with pytest.raises(EventError, match="libpfm4 does not know NOPE:X"):
        resolve("NOPE:X", sysfs_root=str(tmp_path))
    # A lower-case subsystem unknown to both: tracefs' line, not libpfm4's.
    with pytest.raises(EventError, match="no subsystem 'nope'"):
        resolve("nope:x", sysfs_root=str(tmp_path))
    (b,) = resolve("sched:sched_switch", sysfs_root=str(tmp_path))
    assert asked == ["FP_ASSIST:ANY", "NOPE:X", "nope:x"]  # a tracepoint never asks libpfm4


def test_counting_attr_drops_exclude_bits_on_msr_only() -> None:
    msr = EventBinding("msr/tsc/", "msr", Attr(type=9, config=0))
    cyc = EventBinding("cycles", "cpu", Attr(type=0, config=0))
    a = counting_attr(msr, kernel=False, inherit=True, inherit_thread=True)
    assert (a.exclude_kernel, a.exclude_hv, a.inherit, a.inherit_thread) == (
        False,
        False,
        True,
        True,
    )
    a = counting_attr(cyc, kernel=False, inherit=False, inherit_thread=True)
    assert (a.exclude_kernel, a.exclude_hv, a.inherit, a.inherit_thread) == (
        True,
        True,
        False,
        False,
    )
    assert (
        counting_attr(cyc, kernel=True, inherit=False, inherit_thread=False).exclude_kernel is False
    )


class _RefusesExcludeOnMsr(FakeBackend):
    """The fake PMU of type ``msr``: EINVAL for any exclude bit (PERF_PMU_CAP_NO_EXCLUDE)."""

    def __init__(self, msr_type: int) -> None:
        super().__init__()
        self.msr_type = msr_type

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> FakeGroup:
        a = attrs[0]
        if a.type == self.msr_type and (a.exclude_kernel or a.exclude_hv):
            raise OSError(errno.EINVAL, "Invalid argument")
        return super().open_group(tid, attrs)


def test_diagnose_probe_opens_msr_as_the_sampler_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """--list-events said EINVAL for msr/tsc/ because it opened it with exclude bits, which
    the msr PMU refuses; a screen counted it. Both now use counting_attr."""
    import tiptop.kernel as kernel

    root = SYSFS / "intel"
    msr_type = int((root / "bus/event_source/devices/msr/type").read_text())
    fake = _RefusesExcludeOnMsr(msr_type)
    monkeypatch.setattr(kernel, "PerfBackend", lambda: fake)
    host = host_at("/proc", str(root))
    assert diagnose.probe("msr/tsc/", host) is None
    ((_tid, (a,)),) = fake.opens
    assert (a.type, a.exclude_kernel, a.exclude_hv) == (msr_type, False, False)
    # The old way (the binding's own attr, exclude bits set) is what the kernel refuses.
    (b,) = resolve("msr/tsc/", sysfs_root=str(root))
    with pytest.raises(OSError):
        fake.open_group(0, [b.attr])


def test_per_cpu_pmu_einval_is_explained() -> None:
    line = explain_open_error(
        OSError(errno.EINVAL, "Invalid argument"),
        "power/energy-pkg/",
        paranoid=2,
        privileged=True,
        kernel=False,
        event_pmu="power",
        core_pmus=["cpu"],
        per_cpu_pmu=True,
    )
    assert line.startswith("power/energy-pkg/: EINVAL: the power PMU counts per CPU only")
    assert "tiptop counts per task" in line and "\n" not in line
    plain = explain_open_error(
        OSError(errno.EINVAL, "Invalid argument"),
        "cpu/event=0x3c/",
        paranoid=2,
        privileged=True,
        kernel=False,
        event_pmu="cpu",
        core_pmus=["cpu"],
    )
    assert "per CPU only" not in plain


def test_planner_counts_tracepoints_in_kernel_mode_or_says_why_not(tmp_path: Path) -> None:
    """Root: opened with exclude_kernel=0 even without -K. Unprivileged at paranoid 2: not
    opened, one line (the kernel-only line), cells '?'."""
    sysfs = tmp_path / "sys"
    fake_tracefs(sysfs, sched__sched_switch=316)
    scr = screen(
        "tp",
        counters={"SW": "sched:sched_switch", "PF": "page-faults"},
        columns=[("   SW", "%5.0f", "delta(SW)"), ("   PF", "%5.0f", "delta(PF)")],
    )
    for euid, opens in ((0, True), (1000, False)):
        fp, b = fake_env(tmp_path / f"u{euid}")
        host = host_at(str(fp.root), str(sysfs), euid=euid, uid=euid, capabilities=0)
        s = Sampler(scr, SamplerConfig(), backend=b, host=host)
        attrs = [a for g in s.plan.groups for a in g.attrs]
        tps = [a for a in attrs if a.type == PerfType.TRACEPOINT]
        said = [m for m in s.messages.lines() if "only in the kernel" in m]
        if opens:
            assert [(a.config, a.exclude_kernel) for a in tps] == [(316, False)]
            assert said == []
        else:
            assert tps == []
            assert len(said) == 1 and said[0].startswith("sched:sched_switch: happen only")
        s.close()


def test_list_events_names_subsystems_or_says_why_none(tmp_path: Path) -> None:
    fake_tracefs(tmp_path, sched__sched_switch=316, irq__irq_handler_entry=40)
    lines = diagnose.tracepoint_lines(host_at("/proc", str(tmp_path)))
    assert lines[0].startswith("Tracepoints (name them subsystem:event;")
    assert lines[1] == "  2 subsystems: irq, sched"
    assert lines[2].startswith("  sched:sched_switch ")
    empty = tmp_path / "empty"
    empty.mkdir()
    lines = diagnose.tracepoint_lines(host_at("/proc", str(empty)))
    assert len(lines) == 2
    assert lines[1].startswith("  none listed: tracefs not mounted at ")
    assert lines[1].endswith("mount -t tracefs nodev /sys/kernel/tracing")


def test_planner_explains_a_per_cpu_pmu_refused_per_task(tmp_path: Path) -> None:
    """RAPL's ``power`` PMU resolves (sysfs alias with scale and unit) but the kernel
    refuses its events on a task (EINVAL): the line says why, from its sysfs cpumask."""
    import shutil

    sysfs = tmp_path / "sys"
    shutil.copytree(SYSFS / "intel", sysfs)
    power = sysfs / "bus/event_source/devices/power"
    (power / "cpumask").write_text("0\n")
    (b,) = resolve("power/energy-pkg/", sysfs_root=str(sysfs))
    assert b.pmu == "power" and b.unit == "Joules"
    fp, fake = fake_env(tmp_path)
    fake.event_errors[(b.attr.type, b.attr.config)] = errno.EINVAL
    scr = screen(
        "rapl", counters={"E": "power/energy-pkg/"}, columns=[("  E", "%3.0f", "delta(E)")]
    )
    s = Sampler(scr, SamplerConfig(), backend=fake, host=host_at(str(fp.root), str(sysfs)))
    (line,) = s.messages.lines()
    assert line.startswith("power/energy-pkg/: EINVAL: the power PMU counts per CPU only")
    s.close()
