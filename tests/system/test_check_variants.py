"""``tiptop --check`` says, per built-in screen with CPU variants, which one this machine's CPU
got and why, from the same data the loader gated with (``builtin_variants``)."""

from __future__ import annotations

from tests.helpers import run
from tiptop.cli.screens import host_target
from tiptop.screens.loader import builtin_variants


def test_check_names_the_variant_picked_and_why() -> None:
    r = run("--check")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    target = host_target()
    choices = builtin_variants(target)
    v = choices["topdown"]  # several variants, one of them for any CPU: always offered
    assert v.picked is not None and len(v.variants) > 1
    i = next(k for k, line in enumerate(lines) if line.split(":")[0].endswith(" topdown"))
    assert lines[i + 1] == (
        f"       variant {v.picked + 1} of {len(v.variants)}: {v.desc} ({v.why()})"
    ), lines
    cpu = v.cpu()  # "x86 19_11", "arm64 41_D49 r0p3", "x86 (model unknown)"
    assert cpu.startswith(f"{target.arch} {target.model or '(model unknown)'}"), cpu
    assert cpu in v.why() or v.why() == f"the CPU is {target.arch}"
    absent = [name for name, c in choices.items() if c.picked is None]
    if absent:
        (line,) = [x for x in lines if x.startswith("  not offered: ")]
        assert line == f"  not offered: {', '.join(absent)} (no variant for {cpu})"
