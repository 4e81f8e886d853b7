"""Screens: configuration files (XML ``.tiptoprc`` and YAML) in, :mod:`tiptop.screens.model`
records and compiled expressions out. Pure: no I/O beyond reading the file it is given, no
sysfs; binding counters to this machine is ``tiptop.events``' job.
"""

from __future__ import annotations

from tiptop.screens.expr import ColumnExpr, compile_column, evaluate_config
from tiptop.screens.loader import (
    builtin_screens,
    export_xml,
    export_yaml,
    find_config,
    load_file,
    load_text,
)
from tiptop.screens.model import (
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
from tiptop.screens.variables import BUILTINS, VARIABLES, RowFacts, Variable

__all__ = [
    "BUILTINS",
    "RC_OPTIONS",
    "VARIABLES",
    "ColumnExpr",
    "ColumnSpec",
    "ConfigSpec",
    "CounterSpec",
    "NamedEvent",
    "NumericEvent",
    "RcOption",
    "RowFacts",
    "ScreenSpec",
    "Target",
    "Variable",
    "builtin_screens",
    "compile_column",
    "delta_key",
    "evaluate_config",
    "export_xml",
    "export_yaml",
    "find_config",
    "load_file",
    "load_text",
]
