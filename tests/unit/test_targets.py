"""The suite's named targets (Makefile) are the ones the README names and CI runs, and the CPU
models CI runs the CPU-dependent tests as on are every cpuinfo file of tests/data/cpuinfo."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text()
TARGETS = ("lint", "typecheck", "unit", "system", "slow", "mutate")


def variable(name: str) -> list[str]:
    """The words of a Makefile variable (continued lines joined)."""
    m = re.search(rf"^{name} = ((?:.*\\\n)*.*)$", MAKEFILE, re.M)
    assert m is not None, name
    return m.group(1).replace("\\\n", " ").split()


def test_the_issues_targets_exist_and_the_readme_names_them() -> None:
    readme = (ROOT / "README.md").read_text()
    for target in (*TARGETS, "test", "cpus", "ci"):
        assert re.search(rf"^{target}:", MAKEFILE, re.M), target
        assert f"`make {target}`" in readme, target


def test_ci_runs_every_step() -> None:
    assert "make ci" in (ROOT / ".ci" / "run").read_text()
    (ci,) = re.findall(r"^ci: (.*)$", MAKEFILE, re.M)
    assert set(ci.split()) >= {"lint", "typecheck", "test", "slow", "mutate", "cpus"}


def test_the_cpus_are_the_cpuinfo_files() -> None:
    """make cpus runs every file of tests/data/cpuinfo, which its README lists; issue 50's
    four among them: Intel 06_A7 without PMU, AMD 17_01 and 19_11, Arm 41_D49."""
    assert " ".join(variable("CPUS")) == (
        "$(filter-out README.md,$(notdir $(wildcard tests/data/cpuinfo/*)))"
    )
    folder = ROOT / "tests" / "data" / "cpuinfo"
    files = {p.name for p in folder.iterdir()} - {"README.md"}
    assert {"intel-06_A7", "qemu-epyc-17_01", "zen4-19_11", "neoverse-n2-41_D49"} <= files
    listed = set(re.findall(r"^\| `([^`]+)` \|", (folder / "README.md").read_text(), re.M))
    assert listed == files


def test_the_cpu_dependent_tests_exist() -> None:
    tests = variable("CPU_TESTS")
    assert tests and all((ROOT / t).is_file() for t in tests), tests
