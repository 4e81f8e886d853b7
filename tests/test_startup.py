"""Start-up imports what the mode needs: batch mode imports no urwid, no C parser and,
without a YAML file, no YAML parser; the built-in screens and the cffi declarations come
from generated modules that must match what they are generated from."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tiptop.screens import ScreenSpec, Target, builtin_gen, builtin_screens, load_text
from tiptop.screens.loader import BUILTIN_FILES

#: CPUs whose gating picks different variants of the built-in screens.
TARGETS = [
    Target(),
    Target("arm64", None),
    Target("x86", "BF_44"),
    Target("x86", "06_1E"),
    Target("x86", "06_2A"),
    Target("x86", "06_3F"),
    Target("x86", "06_55"),
    Target("x86", "06_8F"),
]


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


def test_a_yaml_file_brings_the_yaml_parser(tmp_path: Path) -> None:
    conf = tmp_path / "mine.yaml"
    conf.write_text("options: {delay: 0.01}\n")
    r, mods = imported("-W", str(conf), "-b", "-n", "1", cwd=tmp_path, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "yaml" in mods and "tiptop.screens.yamlrc" in mods
    assert tops(mods, "urwid") == []


def _env(home: Path) -> dict[str, str]:
    """The environment with no configuration file to find (HOME and XDG in ``home``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIPTOP", "XDG_CONFIG_HOME")}
    return {**env, "HOME": str(home)}


def test_generated_builtin_module_is_fresh() -> None:
    want = builtin_gen.render()
    have = builtin_gen.TARGET.read_text()
    assert have == want, (
        "tiptop/screens/builtin_data.py is stale: run python3 -m tiptop.screens.builtin_gen"
    )


def test_generated_cffi_module_is_fresh() -> None:
    from tiptop.kernel import _ffi, ffi_gen

    assert ffi_gen.TARGET.read_text() == _ffi.generate(), (
        "tiptop/kernel/_perf_cffi.py is stale: run python3 -m tiptop.kernel.ffi_gen"
    )


def from_yaml(target: Target) -> list[ScreenSpec]:
    """The built-in screens read from the YAML files themselves (first variant wins)."""
    out: list[ScreenSpec] = []
    pkg = resources.files("tiptop.screens").joinpath("builtin")
    for name in BUILTIN_FILES:
        path = f"builtin:{name}"
        for s in load_text(pkg.joinpath(name).read_bytes(), target, path=path, yaml=True).screens:
            if s.name not in {o.name for o in out}:
                out.append(s)
    return out


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_builtin_screens_equal_the_yaml_files(target: Target) -> None:
    got = builtin_screens(target)
    want = from_yaml(target)
    assert [s.name for s in got] == [s.name for s in want]
    for g, w in zip(got, want, strict=True):
        assert g.source == "builtin" and w.source.startswith("builtin:")
        assert (g.desc, g.counters, g.columns) == (w.desc, w.counters, w.columns)
