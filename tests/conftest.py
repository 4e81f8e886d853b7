"""Shared fixtures and the markers that make tests skip, saying why, on machines that lack
what they need (a hardware PMU, the msr PMU, root)."""

from __future__ import annotations

import os

import pytest

# Subprocesses (``python -m tiptop``) import the tiptop of this checkout, not whichever one
# pip installed in editable mode (a second worktree would otherwise test the first's code).
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_REPO, os.environ.get("PYTHONPATH", "")) if p
)

# The suite as on another CPU (tests/support/as_cpu.py): in-process Host.read() too.
if os.environ.get("TIPTOP_TEST_CPUINFO"):
    from tests.support.as_cpu import pretend_cpu

    pretend_cpu(os.path.abspath(os.environ["TIPTOP_TEST_CPUINFO"]))
    os.environ["TIPTOP_TEST_CPUINFO"] = os.path.abspath(os.environ["TIPTOP_TEST_CPUINFO"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``hwpmu`` run only where a hardware PMU answers."""
    from tests.helpers import hardware_pmu_error

    err = hardware_pmu_error()
    if err is None:
        return
    skip = pytest.mark.skip(reason=f"no hardware PMU here: cycles gives {err}")
    for item in items:
        if "hwpmu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def root_only() -> None:
    """Skip unless running as root (needed to switch to uid 65534)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to test the unprivileged path with setpriv")
