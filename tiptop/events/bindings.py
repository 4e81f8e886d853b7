"""``EventBinding``: an event name bound to one PMU of this machine."""

from __future__ import annotations

from dataclasses import dataclass

from tiptop.kernel.attr import Attr


@dataclass(frozen=True)
class EventBinding:
    """What one event name means here: the PMU, the attr to open, and how to show counts.

    ``scale``/``unit`` come from sysfs ``<alias>.scale``/``.unit`` (count * scale = value in
    unit). The attr has default exclude flags; the sampler sets them with ``Attr.replace``.
    """

    name: str
    pmu: str
    attr: Attr
    scale: float = 1.0
    unit: str = ""
