"""Screens: configuration files (XML ``.tiptoprc`` and YAML) in, :mod:`tiptop.spec.model`
records and compiled expressions out. Pure: no I/O beyond reading the file it is given, no
sysfs; binding counters to this machine is ``tiptop.events``' job.
"""

from tiptop.spec.model import (
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

__all__ = [
    "BUILTINS",
    "ColumnSpec",
    "ConfigSpec",
    "CounterSpec",
    "NamedEvent",
    "NumericEvent",
    "ScreenSpec",
    "Target",
    "delta_key",
]
