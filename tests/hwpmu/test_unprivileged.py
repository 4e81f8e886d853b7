"""Unprivileged use: a plain user counts its own processes and does not see root's.

In the guest ``perf_event_paranoid`` is 1 (run.sh); on a host it is usually 2, which still lets
a user count its own tasks in user mode (perf_event_open(2), "perf_event_paranoid"). Both a
uid-65534 loop and a root loop run; ``tiptop -b`` run as uid 65534 must show the first with
its instructions and not list the second.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from tests.helpers import nobody_command
from tests.hwpmu import runner
from tests.hwpmu.conftest import IN_GUEST, REAL_PMU_RTOL, LoopMaker, tiptop_env
from tests.hwpmu.runner import run_counted

pytestmark = pytest.mark.hwpmu

NOBODY = 65534


def _nobody_can_run_tiptop(argv: list[str], env: dict[str, str], user: int | None) -> str | None:
    """Why ``argv -c 'import ...'`` (run as ``user``) cannot import tiptop and its
    dependencies as uid 65534 (None when it can)."""
    try:
        r = subprocess.run(
            [*argv, "-c", "import os, numpy, psutil, cffi, yaml, tiptop.cli; print(os.getuid())"],
            capture_output=True,
            text=True,
            env=env,
            user=user,
            group=user,
            extra_groups=[] if user is not None else None,
            cwd="/",
            timeout=120,
        )
    except OSError as exc:
        return f"{argv[0]}: {exc.strerror}"
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or ["?"])[-1]
    return None if r.stdout.strip() == str(NOBODY) else f"ran as uid {r.stdout.strip()}"


def _tiptop_for_nobody(monkeypatch: pytest.MonkeyPatch) -> tuple[str | None, int | None]:
    """Make ``run_around`` run tiptop as uid 65534: ``(why not, user= for run_around)``.

    In the guest the dependencies are Debian packages and plain ``python3`` works. On a
    host whose interpreter sits under a 0700 home (pyenv in /root), this interpreter runs
    through ``setpriv`` (as ``tests.helpers.nobody_command`` does) with a world-readable
    copy of the dependencies (``tests.helpers.nobody_site``).
    """
    why = _nobody_can_run_tiptop(["python3"], tiptop_env(), NOBODY)
    if why is None or IN_GUEST:
        return why, NOBODY
    argv, env = nobody_command([])
    env = {**tiptop_env(), "PYTHONPATH": env["PYTHONPATH"], "HOME": "/tmp"}
    if _nobody_can_run_tiptop(argv, env, None) is not None:
        return why, NOBODY
    monkeypatch.setattr(runner, "tiptop_cmd", lambda *a: [*argv, "-m", "tiptop", *a])
    monkeypatch.setattr(runner, "tiptop_env", lambda: env)
    return None, None


def test_unprivileged_counts_own_not_roots(
    root_only: None,
    loop_children: LoopMaker,
    report: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    why, user = _tiptop_for_nobody(monkeypatch)
    if why is not None:
        assert not IN_GUEST, why
        pytest.skip(f"uid 65534 cannot run this Python's tiptop here: {why}")
    k, n = 4, 2_000_000
    (mine, roots), out, _ = run_counted(
        lambda: [loop_children(k, n, user=NOBODY), loop_children(k, n)],
        lambda cs: ["-b", "-i", "--format", "json", "-p", "tiptop-kloop", "-n", "3", "-d", "1"],
        user=user,
    )
    recs = [json.loads(line) for line in out.splitlines() if line.strip()]
    pids = {r["pid"] for r in recs}
    first = [r for r in recs if r["pid"] == mine.pid and r["iteration"] == 0]
    assert len(first) == 1, out  # counted from start-up: a row in iteration 0 already
    assert first[0]["counters"]["INSN"]["delta"] == 0, first  # released only after it
    assert roots.pid not in pids, "root's process shown to uid 65534"
    ins = sum(r["counters"]["INSN"]["delta"] for r in recs if r["pid"] == mine.pid)
    report(f"uid 65534, K={k} N={n}: own INSN={int(ins)}; root's pid shown: {roots.pid in pids}")
    if IN_GUEST:
        assert 0 < ins - k * n < 2000
    else:
        assert ins == pytest.approx(k * n, rel=REAL_PMU_RTOL)
