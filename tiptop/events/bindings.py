"""``EventBinding``: an event name bound to one PMU of this machine, and the attr a
counting session opens it with (:func:`counting_attr`, shared by the sampler's plan and
``--check``/``--list-events`` so that both open an event the same way)."""

from __future__ import annotations

from tiptop.kernel.attr import GROUP_READ_FORMAT, Attr
from tiptop.readonly import by_value

#: PMUs whose events refuse any exclude_* bit with EINVAL (``PERF_PMU_CAP_NO_EXCLUDE``: the
#: ``msr`` PMU, arch/x86/events/msr.c; ``perf_try_init_event()`` in kernel/events/core.c).
NO_EXCLUDE_PMUS = frozenset({"msr"})


@by_value
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


def counting_attr(b: EventBinding, *, kernel: bool, inherit: bool, inherit_thread: bool) -> Attr:
    """The attr ``b`` is counted with: group reads, counting kernel mode when ``kernel``,
    never the hypervisor, ``inherit``/``inherit_thread`` as asked (process rows), and no
    exclude bit at all on the PMUs that refuse them (:data:`NO_EXCLUDE_PMUS`: their counts,
    TSC, APERF..., are not per mode anyway)."""
    exclude = b.pmu not in NO_EXCLUDE_PMUS
    return b.attr.replace(
        read_format=GROUP_READ_FORMAT,
        exclude_kernel=exclude and not kernel,
        exclude_hv=exclude,
        exclude_user=False,
        exclude_idle=False,
        pinned=False,
        disabled=False,
        enable_on_exec=False,
        inherit=inherit,
        inherit_thread=inherit and inherit_thread,
    )
