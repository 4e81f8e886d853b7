"""Shell completion (tiptop/cli/completion.py): the scripts in completions/ are what the
option table generates today, and bash really completes with them; zsh's is checked with
``zsh -n`` where zsh is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tiptop.cli import completion
from tiptop.options.argv import LONG, SHORT

ROOT = Path(__file__).resolve().parents[2]
BASH = ROOT / "completions" / "bash" / "tiptop"
ZSH = ROOT / "completions" / "zsh" / "_tiptop"


def test_the_scripts_are_generated_from_the_option_table() -> None:
    """Regenerate with ``python3 -m tiptop.cli.completion bash > completions/bash/tiptop``
    (and ``zsh > completions/zsh/_tiptop``) after changing an option."""
    assert BASH.read_text() == completion.bash()
    assert ZSH.read_text() == completion.zsh()
    for spelled in [f"-{k}" for k in SHORT] + [f"--{k}" for k in LONG]:
        assert f"'{spelled}[" in ZSH.read_text(), spelled


def complete(*words: str) -> list[str]:
    """What bash's ``_tiptop`` offers for ``tiptop WORDS`` (the last word being typed)."""
    script = (
        f"source {BASH}\n"
        f"COMP_WORDS=(tiptop {' '.join(repr(w) for w in words)}); "
        f"COMP_CWORD={len(words)}\n"
        '_tiptop; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_options_and_their_values() -> None:
    assert complete("--th") == ["--threads"]
    assert set(complete("--list-")) == {"--list-screens", "--list-events"}
    assert complete("--format", "c") == ["csv"]
    assert complete("-d", "") == []  # a number: nothing to offer
    assert "--" in complete("-b", "")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_parses() -> None:
    r = subprocess.run(["zsh", "-n", str(ZSH)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
