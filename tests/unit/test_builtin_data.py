"""The built-in screens and the cffi declarations come from generated modules that must
match what they are generated from (the YAML files, the C declarations)."""

from __future__ import annotations

from importlib import resources

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
        assert (g.counters, g.columns) == (w.counters, w.columns)
        # the generator appends the variant's deviations (tiptop.screens.deviations)
        assert g.desc == w.desc or g.desc.startswith(f"{w.desc} [differs from the kernel's")
