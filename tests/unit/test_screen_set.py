"""The screens a run can show (tiptop/cli/screens.py ``ScreenSet``): built-in screens built
when first asked for, one each, and the same screens as building every file at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiptop.cli.screens import ScreenSet, fallback_screen, load_screens, pick_screen
from tiptop.host import Host
from tiptop.screens import ScreenSpec, Target
from tiptop.screens.build import build_config
from tiptop.screens.builtin_data import SCREENS
from tiptop.screens.loader import BUILTIN_FILES, BuiltinScreen, builtin_entries

TARGETS = [
    Target(),
    Target("arm64", "41_D40"),
    Target("x86", "06_1E"),
    Target("x86", "06_2A"),
    Target("x86", "06_8F"),
    Target("x86", "19_11"),
]


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_each_screen_built_alone_is_its_file_built_whole(target: Target) -> None:
    """Built one by one, the built-in screens are what building each file whole gives:
    the same names in the same order (the first variant of a name that admits the CPU),
    and equal screens."""
    whole: list[ScreenSpec] = []
    for file in BUILTIN_FILES:
        for s in build_config([], list(SCREENS[file]), target, f"builtin:{file}").screens:
            if s.name not in {w.name for w in whole}:
                whole.append(s)
    alone = [entry.build() for entry in builtin_entries(target)]
    assert [s.name for s in alone] == [s.name for s in whole]
    for a, w in zip(alone, whole, strict=True):
        assert (a.desc, a.counters, a.columns, a.breakdown) == (
            w.desc,
            w.counters,
            w.columns,
            w.breakdown,
        )
        assert a.source == "builtin" and a.variant is not None and a.variant.name == a.name


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The names of the built-in screens built from now on, in order; no config file."""
    for var in ("HOME", "XDG_CONFIG_HOME", "TIPTOP"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    names: list[str] = []
    build = BuiltinScreen.build

    def counted(self: BuiltinScreen) -> object:
        names.append(self.name)
        return build(self)

    monkeypatch.setattr(BuiltinScreen, "build", counted)
    return names


def test_a_run_builds_only_the_screen_it_shows(built: list[str]) -> None:
    """Loading builds nothing; ``-S`` builds the screen picked, once; every screen asked
    for (live mode, ``--export``) is built then, the picked one not again."""
    loaded = load_screens(None, target=Target("x86", "06_8F"))
    assert built == []
    assert loaded.names[:2] == ["default", "branch"] and "topdown2" in loaded.names
    index, screen = pick_screen(loaded, "topdown2")
    assert built == ["topdown2"] and loaded.names[index] == "topdown2"
    assert pick_screen(loaded, str(index))[1] is screen and built == ["topdown2"]
    every = loaded.screens
    assert [s.name for s in every] == loaded.names and every[index] is screen
    assert sorted(built) == sorted(loaded.names)


def test_the_fallback_builds_only_itself(built: list[str]) -> None:
    """Without a PMU, a run on ``default`` falls back to ``state``: the two screens built,
    no other (the host is this machine; skipped where ``default``'s events count)."""
    host = Host.read(raise_fds=False)
    loaded = load_screens(None, target=Target())
    index, screen = pick_screen(loaded, None)
    said: list[str] = []
    index, fell = fallback_screen(loaded, index, screen, said.append, host)
    if fell is screen:
        pytest.skip("default's events count here: no fallback to see")
    assert fell.name == "state" and loaded.names[index] == "state"
    assert built == ["default", "state"] and len(said) == 1


def test_config_screens_are_there_unbuilt() -> None:
    """A screen from a config file is a built screen: asking for it builds nothing."""
    (screen,) = [e.build() for e in builtin_entries(Target()) if e.name == "cache"]
    loaded = ScreenSet(entries=[screen])
    assert loaded.names == ["cache"] and loaded.screen(0) is screen
    assert loaded.screens == [screen] and pick_screen(loaded, "ca") == (0, screen)
