"""The unprivileged path for real: a driver runs the sampler as uid 65534 (setpriv) with
kernel counting asked for, while a root-owned sleeper runs beside its own sleeper."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tiptop.perf.explain import read_paranoid

ROOT = Path(__file__).resolve().parent.parent

DRIVER = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    from tiptop.sampler import Sampler, SamplerConfig
    from tiptop.spec.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec
    token = sys.argv[1]
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", token])
    scr = ScreenSpec("sw", "sw",
        counters=(CounterSpec("PF", NamedEvent("page-faults"), "page-faults"),),
        columns=(ColumnSpec("PF", "%5.0f", "delta(PF)"), ColumnSpec("T", "%5.0f", "PF")))
    s = Sampler(scr, SamplerConfig(kernel=True, only_name=token, match_cmdline=True))
    time.sleep(0.3)
    s.start()
    time.sleep(0.2)
    f = s.refresh()
    out = {
        "mine": mine.pid,
        "self": os.getpid(),
        "rows": [[int(t), u, [int(x) for x in st]] for t, u, st in zip(f.tid, f.user, f.status)],
        "exclude_kernel": [a.exclude_kernel for g in s.plan.groups for a in g.attrs],
        "messages": s.messages,
        "fds": s.fds_used,
    }
    s.close()
    mine.kill()
    print(json.dumps(out))
    """
)


def _world_readable_python() -> tuple[str, str]:
    """An interpreter and a PYTHONPATH that uid 65534 can use.

    Our interpreter and its site-packages may live under a 0700 home (pyenv in /root), so
    the dependencies are copied to a world-readable temporary directory and run with a
    system interpreter of the same version when ours is not reachable.
    """
    tmp = tempfile.mkdtemp(prefix="tiptop-unpriv-", dir="/tmp")
    os.chmod(tmp, 0o755)
    for name in ("numpy", "psutil", "cffi", "_cffi_backend", "pycparser", "yaml"):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        src = origin.parent if origin.name == "__init__.py" else origin
        dst = Path(tmp) / src.name
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy(src, dst)
        libs = src.parent / f"{name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, Path(tmp) / libs.name)
    subprocess.run(["chmod", "-R", "a+rX", tmp], check=True)
    exe = sys.executable
    if not _reachable_by_nobody(exe):
        v = sys.version_info
        exe = shutil.which(f"python{v.major}.{v.minor}", path="/usr/bin:/usr/local/bin") or ""
    return exe, tmp


def _reachable_by_nobody(path: str) -> bool:
    p = Path(path).resolve()
    return all(os.stat(d).st_mode & 0o001 for d in p.parents) and bool(os.stat(p).st_mode & 0o001)


@pytest.mark.usefixtures("root_only")
def test_unprivileged_user_only_and_own_tasks() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    exe, deps = _world_readable_python()
    if not exe:
        shutil.rmtree(deps)
        pytest.skip("no Python interpreter that uid 65534 can run")
    paranoid = read_paranoid()
    if paranoid != 2:
        pytest.skip(f"needs perf_event_paranoid=2 to test its message (it is {paranoid})")
    token = f"tiptop-unpriv-{os.getpid()}"
    root_sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", token])
    try:
        env = dict(os.environ, PYTHONPATH=f"{deps}:{ROOT}", HOME="/tmp")
        r = subprocess.run(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
             exe, "-c", DRIVER, token],
            capture_output=True, text=True, timeout=60, env=env, cwd="/tmp",
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
    finally:
        root_sleeper.kill()
        root_sleeper.wait()
        shutil.rmtree(deps)
    tids = [row[0] for row in out["rows"]]
    # Own process shown and counted; root's sleeper (same token) not shown at all.
    assert out["mine"] in tids
    assert root_sleeper.pid not in tids
    (mine,) = [row for row in out["rows"] if row[0] == out["mine"]]
    assert mine[1] == "nobody" or mine[1] == "65534"
    assert mine[2] == [0, 0]  # Status.OK in both columns
    assert out["self"] in tids  # the driver's command line holds the token too
    assert out["fds"] >= 2, out
    # Counting is user-only, and the one message about -K names paranoid level 2.
    assert out["exclude_kernel"] == [True]
    kmsgs = [m for m in out["messages"] if "-K" in m]
    assert len(kmsgs) == 1 and "perf_event_paranoid is 2" in kmsgs[0], out["messages"]
    assert "user space only" in kmsgs[0]
