"""Start-up imports what the mode needs: batch mode imports no urwid, no C parser and,
without a YAML file, no YAML parser (read from ``python -X importtime`` of the real
command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
