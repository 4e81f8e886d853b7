"""The words a user picks among on the command line, as enums: ``--format`` and ``--by``.

Each is parsed once, at the edge (``tiptop.options``), into a member; every other module
compares members, never the text (tests/unit/test_discriminators.py walks the code). They
are ``StrEnum``: a member is the word the user typed and the word messages, recordings and
metrics print. Every layer may import this module (tests/unit/test_layers.py).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Format", "SeriesBy"]


class Format(StrEnum):
    """``--format``: how batch output, ``--why``, ``--where`` and ``--selftest`` print."""

    TEXT = "text"
    CSV = "csv"
    JSON = "json"


class SeriesBy(StrEnum):
    """``--by``: what one exporter series (and, for ``cgroup``, one row) stands for."""

    #: By command, user and cgroup.
    COMM = "comm"
    #: Per process for the ``--top`` N busiest, plus one ``other``.
    PID = "pid"
    #: By cgroup alone; batch and live views get one row per cgroup.
    CGROUP = "cgroup"
