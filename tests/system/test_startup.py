"""Start-up imports what the mode needs: batch mode imports no urwid, no C parser and,
without a YAML file, no YAML parser; text output no csv/json writer and no top-down tree
(read from ``python -X importtime`` of the real command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def imported(*args: str, **kw: object) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m tiptop args``; the result and every module imported."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tiptop", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        **kw,  # type: ignore[call-overload]
    )
    mods = {
        line.rsplit("|", 1)[1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return r, mods


def python_code(code: str, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code args`` (no stdin, output captured as text)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        **kw,  # type: ignore[call-overload]
    )


def tops(mods: set[str], *names: str) -> list[str]:
    """The modules of ``mods`` that belong to the packages ``names``."""
    return sorted(m for m in mods if m.split(".")[0] in names)


def test_batch_imports_no_urwid_and_no_yaml(tmp_path: Path) -> None:
    r, mods = imported("-b", "-n", "1", "-d", "0.01", cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "tiptop.outputs.batch" in mods  # batch mode ran (and importtime was read)
    assert tops(mods, "urwid", "yaml", "pycparser") == []
    assert "tiptop.screens.yamlrc" not in mods
    assert "tiptop.kernel._perf_cffi" in mods  # the compiled declarations, not cffi's parser
    assert {"tiptop.outputs.records", "tiptop.outputs.why", "tiptop.table.why"} & mods == set()


def test_time_reads_are_imported_by_a_screen_with_time_columns_only(tmp_path: Path) -> None:
    """The readers of where a task's time went (``engine.scan.times``, with the cgroup
    reads it brings) come with a screen that shows it (``state``), not with one that does
    not (``default``, its counters '?' where they do not open)."""
    readers = {"tiptop.engine.scan.times", "tiptop.kernel.cgroup"}
    for screen, wanted in (("default", set()), ("state", readers)):
        args = ("-S", screen, "-b", "-n", "1", "-d", "0.01")
        r, mods = imported(*args, cwd=tmp_path, env=_env(tmp_path))
        assert r.returncode == 0, r.stderr[-2000:]
        assert "tiptop.engine.sampler" in mods  # it sampled (and importtime was read)
        assert readers & mods == wanted, screen


def test_csv_output_brings_its_writer(tmp_path: Path) -> None:
    args = ("-b", "-n", "1", "-d", "0.01", "--format", "csv")
    r, mods = imported(*args, cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("timestamp,iteration,")  # the csv header: the writer ran
    assert {"tiptop.outputs.records", "csv"} <= mods


def test_a_yaml_file_brings_the_yaml_parser(tmp_path: Path) -> None:
    conf = tmp_path / "mine.yaml"
    conf.write_text("options: {delay: 0.01}\n")
    r, mods = imported("-W", str(conf), "-b", "-n", "1", cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "yaml" in mods and "tiptop.screens.yamlrc" in mods
    assert tops(mods, "urwid") == []


_FROZEN = (
    "import gc, sys, tiptop.cli\n"
    "sys.argv = ['tiptop', '-b', '-n', '1', '-d', '0.01']\n"
    "try:\n    tiptop.cli.main()\nexcept SystemExit:\n    pass\n"
    "print('frozen', gc.get_freeze_count(), 'tracked', len(gc.get_objects()))\n"
)


def test_what_start_up_made_is_frozen(tmp_path: Path) -> None:
    """Start-up's objects (modules, classes, screens, the plan: ~29,000) live as long as the
    run: frozen out of the collector's reach (``gc.freeze``), so that neither a collection
    during the run nor those of the interpreter's exit traverse them again."""
    r = python_code(_FROZEN, cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    _, frozen, _, tracked = r.stdout.splitlines()[-1].split()
    assert int(frozen) > 10 * max(int(tracked), 1000)


_NUMPY_PAUSED = (
    "import gc, sys\n"
    "runs = []\n"
    "def seen(phase, info): runs.append(phase == 'start' and 'numpy' in sys.modules)\n"
    "gc.callbacks.append(seen)\n"
    "gc.disable() if sys.argv[1] == 'off' else None\n"
    "import tiptop\n"
    "print(sum(runs), gc.get_freeze_count(), gc.isenabled(), 'numpy' in sys.modules)\n"
)


@pytest.mark.parametrize("before", ["on", "off"])
def test_numpy_is_imported_with_the_collector_paused_then_frozen(before: str) -> None:
    """numpy's import (~30,000 objects that live as long as the process) runs no
    collection (33 here without the pause), leaves its objects frozen, and the collector as
    the importer had it."""
    r = python_code(_NUMPY_PAUSED, before)
    assert r.returncode == 0, r.stderr[-2000:]
    collections, frozen, enabled, numpy_loaded = r.stdout.split()
    assert (collections, enabled, numpy_loaded) == ("0", str(before == "on"), "True")
    assert int(frozen) > 20_000


_CLI_PAUSED = (
    "import gc, tiptop\n"
    "runs = []\n"
    "gc.callbacks.append(lambda phase, info: runs.append(phase))\n"
    "frozen = gc.get_freeze_count()\n"
    "import tiptop.cli\n"
    "print(runs.count('start'), gc.get_freeze_count() - frozen, gc.isenabled())\n"
)


def test_the_commands_modules_are_imported_with_the_collector_paused_then_frozen() -> None:
    """``tiptop.cli``'s imports (every command's own modules) run no collection (about
    ten without the pause), leave what they made frozen, and the collector on again."""
    r = python_code(_CLI_PAUSED)
    assert r.returncode == 0, r.stderr[-2000:]
    collections, frozen, enabled = r.stdout.split()
    assert (collections, enabled) == ("0", "True")
    assert int(frozen) > 3_000


def _env(home: Path) -> dict[str, str]:
    """The environment with no configuration file to find (HOME and XDG in ``home``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIPTOP", "XDG_CONFIG_HOME")}
    return {**env, "HOME": str(home)}


_THREADS = (
    "import os, tiptop.frame; "
    "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))"
)


def test_numpy_brings_no_blas_threads_and_leaves_the_environment_alone() -> None:
    """OpenBLAS starts one thread per core when numpy loads (~80 ms of CPU on 2 cores):
    tiptop's process stays one thread, and the variable it sets for that is put back as the
    user had it (a ``tiptop -- CMD`` child inherits the user's environment)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: OpenBLAS starts no thread pool, so there is nothing to tell apart")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", _THREADS], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split() == ["1", "None"], out.stderr[-2000:]
    out = subprocess.run(
        [sys.executable, "-c", _THREADS],
        env={**env, "OPENBLAS_NUM_THREADS": "4"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.split() == ["1", "4"], out.stderr[-2000:]


def test_live_mode_imports_urwid_without_the_other_event_loops(tmp_path: Path) -> None:
    """urwid's event_loop package imports every other loop's library that is installed
    (trio, Tornado...); tiptop's import of urwid does not, and leaves them importable.
    Stand-ins for those libraries (a fake, named as such: this machine may have none of
    them) record that they were imported."""
    from tiptop.live import FOREIGN_LOOPS

    for name in FOREIGN_LOOPS:
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(
            f"open({str(tmp_path / ('imported-' + name))!r}, 'w').close()\n"
            "raise ImportError('a stand-in')\n"
        )
    code = "import tiptop.live.app\nimport trio\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert "ImportError: a stand-in" in r.stderr  # `import trio` after: still importable
    assert sorted(p.name for p in tmp_path.glob("imported-*")) == ["imported-trio"]
