"""Which variant of a built-in screen this CPU gets, and why, as data: recorded on the screen
(``ScreenSpec.variant``), said once in the message log when the generic one stands in, and
shown by ``--check`` and the live help window."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.support import host_at
from tests.support.live import ScriptedSampler, keys, text
from tests.support.sampling import fake_env
from tiptop import diagnose
from tiptop.cli.screens import ScreenSet
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.host import Host
from tiptop.live.app import LiveApp
from tiptop.live.services import Services
from tiptop.live.windows.help import session_help
from tiptop.options import Options
from tiptop.screens import builtin_screens
from tiptop.screens.build import RawScreen
from tiptop.screens.gating import model_admits
from tiptop.screens.loader import builtin_variants, choose_variant
from tiptop.screens.model import ScreenSpec, Target

ZEN4 = Target("x86", "19_11")
#: No CPU has family 0x7F: only the generic variant admits it.
UNKNOWN = Target("x86", "7F_01")


def topdown(target: Target) -> ScreenSpec:
    (s,) = [s for s in builtin_screens(target) if s.name == "topdown"]
    return s


def test_a_listed_model_gets_its_variant_and_says_why() -> None:
    v = builtin_variants(ZEN4)["topdown"]
    assert v.picked is not None and len(v.variants) > 1
    desc, arch, model = v.variants[v.picked]
    assert arch == "x86" and model is not None and model_admits(model, "19_11")
    # The first that admits it: no variant before it admits 19_11.
    assert not any(m and model_admits(m, "19_11") for _d, _a, m in v.variants[: v.picked])
    assert v.desc == desc
    assert v.why() == "x86 19_11 is in its model list"
    assert not v.generic and v.note() is None
    s = topdown(ZEN4)
    assert s.variant == v and s.desc == desc


def test_an_unknown_model_falls_back_to_the_generic_variant_with_a_note() -> None:
    v = builtin_variants(UNKNOWN)["topdown"]
    assert v.picked == len(v.variants) - 1
    desc, arch, model = v.variants[-1]
    assert (arch, model) == (None, None)
    assert v.generic
    assert v.why() == "generic: no variant for x86 7F_01"
    others = len(v.variants) - 1
    assert v.note() == (
        f"topdown: no variant for x86 7F_01 ({others} are for other CPUs); "
        f"the generic one is used: {desc}"
    )
    assert topdown(UNKNOWN).desc == desc


def test_names_no_variant_admits_are_recorded_unpicked() -> None:
    choices = builtin_variants(UNKNOWN)
    assert choices["fp"].picked is None
    assert choices["fp"].why() == "no variant for x86 7F_01"
    assert "fp" not in {s.name for s in builtin_screens(UNKNOWN)}
    assert choices["sched"].why() == "its only variant, for any CPU"


def test_arch_gates_and_unknown_targets() -> None:
    raws = [
        RawScreen("s", "for some x86", arch="x86", model="06_2A"),
        RawScreen("s", "any arm64", arch="arm64"),
        RawScreen("s", "anything"),
    ]
    arm = choose_variant("s", raws, Target("arm64", None))
    assert (arm.picked, arm.why(), arm.generic) == (1, "the CPU is arm64", False)
    other = choose_variant("s", raws, Target())
    assert (other.picked, other.why()) == (2, "generic: no variant for an unknown CPU")
    x86 = choose_variant("s", raws[:1], Target("x86", None))
    assert (x86.picked, x86.why()) == (None, "no variant for x86 (model unknown)")


def test_the_choice_does_not_change_screen_equality() -> None:
    s = topdown(ZEN4)
    assert dataclasses.replace(s, variant=None) == s


def test_the_sampler_says_the_fallback_once(tmp_path: Path) -> None:
    fp, b = fake_env(tmp_path)
    host = host_at(str(fp.root), str(tmp_path / "nosys"))
    scr = topdown(UNKNOWN)
    s = Sampler(scr, SamplerConfig(), backend=b, host=host)
    s.reconfigure(screen=scr)  # planned again: not said again
    said = [m for m in s.messages.lines() if m.startswith("topdown: no variant")]
    assert scr.variant is not None and said == [scr.variant.note()]
    s.close()
    _fp, b2 = fake_env(tmp_path / "zen4")
    s = Sampler(topdown(ZEN4), SamplerConfig(), backend=b2, host=host)
    assert not [m for m in s.messages.lines() if "no variant" in m]
    s.close()


def test_check_lists_the_variant_and_the_screens_not_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(diagnose, "screen_status", lambda s, h: "runs here")
    loaded = ScreenSet(entries=builtin_screens(UNKNOWN), variants=builtin_variants(UNKNOWN))
    lines = diagnose.screen_lines(loaded, Host())
    i = next(k for k, line in enumerate(lines) if line.endswith(" topdown: runs here"))
    v = builtin_variants(UNKNOWN)["topdown"]
    n = len(v.variants)
    assert (
        lines[i + 1] == f"       variant {n} of {n}: {v.desc} (generic: no variant for x86 7F_01)"
    )
    (absent,) = [line for line in lines if line.startswith("  not offered: ")]
    assert "fp" in absent.split(": ", 1)[1].split(" (")[0].split(", ")
    assert absent.endswith("(no variant for x86 7F_01)")
    # Each variant says how many counters it takes (Intel's slots and metrics apart).
    assert lines[i + 2] == "       needs 4 hardware counters (on fewer: multiplexed, cells marked)"
    icl = builtin_screens(Target("x86", "06_7E"))
    td = next(s for s in icl if s.name == "topdown")
    assert diagnose.counter_need(td) == (
        "needs slots and 4 top-down metrics (no general counter) and 2 general-purpose "
        "counters (on fewer: multiplexed, cells marked)"
    )
    # A screen with one ungated variant gets no variant line.
    j = next(k for k, line in enumerate(lines) if line.endswith(" sched: runs here"))
    assert not lines[j + 1].startswith("       variant")


@pytest.mark.parametrize("target", [ZEN4, UNKNOWN])
def test_help_window_lists_the_variant_picked(target: Target) -> None:
    screens = [s for s in builtin_screens(target) if s.name in ("default", "topdown")]
    sampler = ScriptedSampler(2)
    app = LiveApp(
        Options(target=target), sampler, screens, Services(host=Host(), exporter=lambda o, s: "")
    )
    sampler.start()
    app.refresh()
    keys(app, "h")
    assert any("Screen variants for this CPU:" in line for line in text(app, (100, 120)))
    lines = [ln for ln in session_help(app.session, ()) if isinstance(ln, str)]
    v = builtin_variants(target)["topdown"]
    start = lines.index("Screen variants for this CPU:")
    assert lines[start + 1] == f"topdown: {v.desc} ({v.why()})"
    assert lines[start + 2] == ""  # default has one variant: nothing to say about it
