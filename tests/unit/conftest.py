"""Fixtures of the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sampling import FakeEnv, fake_env


@pytest.fixture
def env(tmp_path: Path) -> FakeEnv:
    """A fake /proc tree and a fake backend for a sampler (tests/support/sampling.py)."""
    return fake_env(tmp_path)
