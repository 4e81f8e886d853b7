"""Finding and loading configuration files, the built-in screens, and what a screen needs.

Lookup order (:func:`find_config`, docs/screens.md): ``-W`` (a directory holding
``.tiptoprc`` as in the original, or a file), ``$TIPTOP`` (directory or file),
``./.tiptoprc``, ``$XDG_CONFIG_HOME/tiptop/tiptop.yaml`` then ``.../tiptoprc`` (default
``~/.config``), ``~/.tiptoprc``. Unlike the original (section 4.1), a ``-W``/``$TIPTOP``
directory without the file falls through to the next place instead of silently using none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources

from tiptop.errors import SpecError
from tiptop.screens.model import ConfigSpec, NamedEvent, NumericEvent, ScreenSpec, Target
from tiptop.screens.xmlrc import MAX_BYTES, export_xml, load_xml
from tiptop.screens.yamlrc import export_yaml, load_yaml
from tiptop.vocab import event_name

__all__ = [
    "BUILTIN_FILES",
    "builtin_screens",
    "event_text",
    "export_xml",
    "export_yaml",
    "find_config",
    "load_file",
    "load_text",
    "required_events",
]

#: Package-data files of the built-in screens, in the order they are offered.
BUILTIN_FILES = (
    "default.yaml",
    "branch.yaml",
    "original-x86.yaml",
    "fp.yaml",
    "cache.yaml",
    "topdown.yaml",
    "memory.yaml",
    "sched.yaml",
)


def is_yaml(path: str) -> bool:
    """Whether ``path`` is read as YAML (by suffix; anything else is XML)."""
    return path.lower().endswith((".yaml", ".yml"))


def load_text(
    data: bytes | str, target: Target, *, path: str | None = None, yaml: bool = False
) -> ConfigSpec:
    """Load configuration text (XML unless ``yaml``); ``path`` only names it in messages."""
    return load_yaml(data, target, path) if yaml else load_xml(data, target, path)


def load_file(path: str, target: Target) -> ConfigSpec:
    """Load the file at ``path``, choosing the syntax by suffix; raises SpecError."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise SpecError(f"cannot read: {err.strerror or err}", path) from None
    if len(data) > MAX_BYTES:
        raise SpecError(f"file larger than {MAX_BYTES} bytes: refused", path)
    return load_text(data, target, path=path, yaml=is_yaml(path))


def find_config(
    w_arg: str | None, env: Mapping[str, str], cwd: str, home: str | None
) -> str | None:
    """The configuration file to use, or ``None``; the first existing candidate wins."""
    candidates: list[str] = []
    for place in (w_arg, env.get("TIPTOP") or None):
        if place:
            place = os.path.join(cwd, os.path.expanduser(place))
            candidates.append(os.path.join(place, ".tiptoprc") if os.path.isdir(place) else place)
    candidates.append(os.path.join(cwd, ".tiptoprc"))
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    if xdg:
        candidates += [
            os.path.join(xdg, "tiptop", "tiptop.yaml"),
            os.path.join(xdg, "tiptop", "tiptoprc"),
        ]
    if home:
        candidates.append(os.path.join(home, ".tiptoprc"))
    for c in candidates:
        if os.path.isfile(c):
            return c
    return None


def builtin_screens(target: Target) -> list[ScreenSpec]:
    """The built-in screens for ``target``: ``default``, ``branch``, then the others.

    A file may hold several variants of one screen gated by ``arch``/``model``; the first
    variant that admits ``target`` is kept, the others are skipped.
    """
    out: list[ScreenSpec] = []
    names: set[str] = set()
    pkg = resources.files("tiptop.screens").joinpath("builtin")
    for name in BUILTIN_FILES:
        data = pkg.joinpath(name).read_bytes()
        config = load_yaml(data, target, f"builtin:{name}")
        for s in config.screens:
            if s.name not in names:
                names.add(s.name)
                out.append(_as_builtin(s))
    return out


def _as_builtin(s: ScreenSpec) -> ScreenSpec:
    from dataclasses import replace

    return replace(s, source="builtin")


def event_text(event: NumericEvent | NamedEvent) -> str:
    """A perf-style name for an event (``cycles``, ``L1-dcache-load-misses``, ``r1c2``)."""
    if isinstance(event, NamedEvent):
        return event.name
    t, c = event.type, event.config
    return event_name(t, c) or f"type={t},config={c:#x}"


def required_events(screen: ScreenSpec) -> list[str]:
    """The events ``screen`` needs, perf-style, in counter order (no duplicates)."""
    out: list[str] = []
    for c in screen.counters:
        text = event_text(c.event)
        if text not in out:
            out.append(text)
    return out
