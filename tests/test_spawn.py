"""``tiptop -- cmd``: exact page faults of a spawned program, exit status, exec failure."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import textwrap

import pytest

import tiptop.sampler

TIPTOP = [sys.executable, "-m", "tiptop"]
needs_sampler = pytest.mark.skipif(
    not hasattr(tiptop.sampler, "Sampler"), reason="tiptop.sampler.Sampler not implemented yet"
)

RC = """<tiptop><screen name="faults" desc="page faults">
<counter alias="PF" config="page-faults"/>
<column header="    PF" format="%6.0f" expr="delta(PF)"/>
</screen></tiptop>
"""

# Start-up faults vary by a few pages between runs, so the program sleeps before and
# after touching N fresh pages: the touch lands in intervals of its own, and the faults
# of the non-zero run between quiet intervals are exactly N.
PROG = textwrap.dedent("""
    import mmap, time
    n = {n}
    m = mmap.mmap(-1, n * 4096)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    time.sleep(1.0)
    for i in range(0, n * 4096, 4096):
        m[i] = 1
    time.sleep(1.0)
""")


@needs_sampler
@pytest.mark.parametrize("n", [500, 3000])
def test_page_faults_exact(tmp_path, n: int) -> None:
    (tmp_path / ".tiptoprc").write_text(RC)
    r = subprocess.run(
        [
            *TIPTOP,
            "-b",
            "-W",
            str(tmp_path),
            "-S",
            "faults",
            "--format",
            "csv",
            "-d",
            "0.1",
            "--",
            sys.executable,
            "-c",
            PROG.format(n=n),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    deltas = [float(x["PF_delta"] or 0) for x in csv.DictReader(io.StringIO(r.stdout))]
    first_quiet = deltas.index(0.0)
    run = []
    for d in deltas[first_quiet:]:
        if d == 0 and run:
            break
        if d:
            run.append(d)
    assert sum(run) == n, deltas


def test_exec_failure_is_one_line() -> None:
    from tiptop import spawn

    child = spawn.fork_blocked(["/nonexistent/prog-zz"])
    child.release()
    assert child.reap() == 127


def test_exit_status_and_signal() -> None:
    from tiptop import spawn

    child = spawn.fork_blocked(["sh", "-c", "exit 7"])
    assert not child.exited()
    child.release()
    assert child.reap() == 7
    child = spawn.fork_blocked(["sh", "-c", "kill -TERM $$"])
    child.release()
    assert child.reap() == 128 + 15


@needs_sampler
def test_cli_exit_status_passthrough() -> None:
    r = subprocess.run(
        [*TIPTOP, "-b", "-d", "0.1", "-S", "sched", "--", "sh", "-c", "exit 3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 3, r.stderr
