"""Screens: configuration files (XML ``.tiptoprc`` and YAML) in, :mod:`tiptop.screens.model`
records and compiled expressions out. Pure: no I/O beyond reading the file it is given, no
sysfs; binding counters to this machine is ``tiptop.events``' job.
"""

from __future__ import annotations

from tiptop.screens.expr import ColumnExpr, compile_column, evaluate_config
from tiptop.screens.loader import (
    builtin_screens,
    event_text,
    export_xml,
    export_yaml,
    find_config,
    load_file,
    load_text,
    required_events,
)
from tiptop.screens.model import (
    BUILTINS,
    ColumnSpec,
    ConfigSpec,
    CounterSpec,
    NamedEvent,
    NumericEvent,
    ScreenSpec,
    Target,
    delta_key,
)
from tiptop.screens.rcoptions import RC_OPTIONS, RcOption

__all__ = [
    "BUILTINS",
    "RC_OPTIONS",
    "ColumnExpr",
    "ColumnSpec",
    "ConfigSpec",
    "CounterSpec",
    "NamedEvent",
    "NumericEvent",
    "RcOption",
    "ScreenSpec",
    "Target",
    "builtin_screens",
    "compile_column",
    "delta_key",
    "evaluate_config",
    "event_text",
    "export_xml",
    "export_yaml",
    "find_config",
    "load_file",
    "load_text",
    "required_events",
]
