"""Test support, safe for the unit room (no processes): hosts for fake /proc and sysfs trees
(here), the scripted fake backend (fake_backend), the screen and frame builders (builders), a
sampler over the fakes (sampling), live mode over a scripted frame source (live), and the
known-answer validation's planning, fits and perf stat spelling (known_answer; the processes it
counts are started by tests/system/known_runs.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from tiptop.host import Host

P = ParamSpec("P")
R = TypeVar("R")


def spying(real: Callable[P, R], seen: Callable[..., object]) -> Callable[P, R]:
    """``real``, with ``seen`` called first on the same arguments: what a test records of
    each call (``spying(os.listdir, lambda path: listed.append(path))``). The result has
    ``real``'s type; ``seen`` may name the arguments as it likes."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        seen(*args, **kwargs)
        return real(*args, **kwargs)

    return call


def host_at(proc_root: str, sysfs_root: str = "/sys", **facts: object) -> Host:
    """This machine's Host with other /proc and sysfs roots (a fake tree) and ``facts``
    changed (``euid=1000``, ``paranoid=1``...)."""
    return dataclasses.replace(
        Host.read(),
        proc_root=proc_root,
        sysfs_root=sysfs_root,
        **facts,  # type: ignore[arg-type]
    )
