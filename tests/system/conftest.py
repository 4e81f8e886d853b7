"""Fixtures of the system tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.system.scripted_child import Child


@pytest.fixture
def child() -> Iterator[Child]:
    """The scripted child of tests/system/scripted_child.py, killed after the test."""
    c = Child()
    yield c
    c.close()
