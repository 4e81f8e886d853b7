"""The protocol every counter backend follows: the real kernel one and the fake one.

A backend opens one *group* of events on one task and hands back a :class:`Group`; a group
is read with one ``read()`` giving every member's value plus the group's ``time_enabled``
and ``time_running`` (``PERF_FORMAT_GROUP``, perf_event_open(2) "read_format"). Errors are
``OSError`` carrying the kernel's real errno, never a rewritten one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tiptop.kernel.attr import Attr


@dataclass(frozen=True)
class GroupReading:
    """One read of a group: cumulative values (uint64, members in open order) and times (ns)."""

    values: np.ndarray
    time_enabled: int
    time_running: int


class Group(Protocol):
    """An open group of events on one task (one fd per member)."""

    #: Number of file descriptors the group holds.
    n_fds: int

    def read(self) -> GroupReading:
        """The cumulative counts since the group was opened. Raises ``OSError``."""
        ...

    def close(self) -> None:
        """Release the fds; idempotent."""
        ...


class Backend(Protocol):
    """Opens groups. ``tid`` is a thread id (``0`` = the caller), ``cpu`` is always -1."""

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> Group:
        """Open ``attrs[0]`` as leader and the rest as members on ``tid``.

        Raises ``OSError`` with the errno of the first member that failed; its index is in
        the exception's ``member`` attribute when known. Nothing stays open on failure.
        """
        ...
