"""Event names -> ``perf_event_attr`` for this machine (sysfs, generic tables, libpfm4).

``resolve(name)`` and ``resolve_numeric(type, config)`` give :class:`EventBinding` lists;
``spec`` stays pure and the sampler binds counters through here.
"""

from __future__ import annotations

from tiptop.events.bindings import EventBinding
from tiptop.events.resolver import resolve, resolve_numeric
from tiptop.events.sysfs import core_pmus, is_hybrid

__all__ = ["EventBinding", "core_pmus", "is_hybrid", "resolve", "resolve_numeric"]
