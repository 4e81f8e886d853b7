"""Finding and loading configuration files, and the built-in screens.

PyYAML is imported only when a YAML file is read or written; the built-in screens come
from ``tiptop.screens.builtin_data``, generated from ``builtin/*.yaml`` by
``tiptop.screens.builtin_gen``, so start-up parses no YAML.

Lookup order (:func:`find_config`, docs/screens.md): ``-W`` (a directory holding
``.tiptoprc`` as in the original, or a file), ``$TIPTOP`` (directory or file),
``./.tiptoprc``, ``$XDG_CONFIG_HOME/tiptop/tiptop.yaml`` then ``.../tiptoprc`` (default
``~/.config``), ``~/.tiptoprc``. Unlike the original (docs/original.md 2.1), a ``-W``/``$TIPTOP``
directory without the file falls through to the next place instead of silently using none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from tiptop.errors import SpecError
from tiptop.outside import printable
from tiptop.readonly import readonly
from tiptop.screens.build import RawScreen, build_screen, screen_name
from tiptop.screens.gating import gate
from tiptop.screens.model import ConfigSpec, ScreenSpec, Target, VariantChoice
from tiptop.screens.xmlrc import MAX_BYTES, export_xml, load_xml

__all__ = [
    "BUILTIN_FILES",
    "BuiltinScreen",
    "builtin_entries",
    "builtin_screens",
    "builtin_variants",
    "export_xml",
    "export_yaml",
    "find_config",
    "load_file",
    "load_text",
]

#: Package-data files of the built-in screens, in the order they are offered.
BUILTIN_FILES = (
    "default.yaml",
    "branch.yaml",
    "original-x86.yaml",
    "fp.yaml",
    "cache.yaml",
    "amd.yaml",  # AMD Zen variants: before topdown.yaml, whose generic variant comes last
    "arm.yaml",  # Arm64 variants, gated on arch: before topdown.yaml's generic one
    "topdown.yaml",
    "intel.yaml",
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
    if yaml:
        from tiptop.screens.yamlrc import load_yaml

        return load_yaml(data, target, path)
    return load_xml(data, target, path)


def export_yaml(config: ConfigSpec) -> str:
    """``config`` in the YAML form (:func:`tiptop.screens.yamlrc.export_yaml`)."""
    from tiptop.screens import yamlrc

    return yamlrc.export_yaml(config)


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
    w_arg: str | None,
    env: Mapping[str, str],
    cwd: str,
    home: str | None,
    notes: list[str] | None = None,
) -> str | None:
    """The configuration file to use, or ``None``; the first usable candidate wins.

    A candidate that exists but is not a regular file (``/dev/zero``, a FIFO, a directory)
    is skipped, and so is one the user may not read (another user's mode-000
    ``./.tiptoprc``, skipped as in the original) unless ``-W`` or ``$TIPTOP`` named it
    (then loading it says why it cannot be read); a ``-W``/``$TIPTOP`` directory without
    ``.tiptoprc`` is looked past. Each skip is one line in ``notes``.
    """
    said = notes if notes is not None else []
    candidates: list[str] = []
    for who, place in (("-W", w_arg), ("$TIPTOP", env.get("TIPTOP") or None)):
        if place:
            place = os.path.join(cwd, os.path.expanduser(place))
            if os.path.isdir(place):
                rc = os.path.join(place, ".tiptoprc")
                if not os.path.lexists(rc):
                    said.append(f"{who}: no .tiptoprc in '{place}': looking further")
                place = rc
            candidates.append(place)
    named = len(candidates)  # the ones the user named come first
    candidates.append(os.path.join(cwd, ".tiptoprc"))
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    if xdg:
        candidates += [
            os.path.join(xdg, "tiptop", "tiptop.yaml"),
            os.path.join(xdg, "tiptop", "tiptoprc"),
        ]
    if home:
        candidates.append(os.path.join(home, ".tiptoprc"))
    for i, c in enumerate(candidates):
        if os.path.isfile(c):
            if i < named or os.access(c, os.R_OK):  # access(2): the real uid's permission
                return c
            said.append(f"'{c}': no permission to read it: skipped")
        elif os.path.exists(c):
            said.append(f"'{c}' is not a regular file: skipped")
    return None


@readonly
class BuiltinScreen:
    """A built-in screen as this CPU gets it, not built yet: the first variant of its name
    that admits ``target`` (:func:`choose_variant`), from the package-data file ``file``.
    Building checks the screen and parses its columns (``tiptop.screens.build``), what a
    built-in costs at start-up, so a run builds only the screens it shows
    (``tiptop.cli.screens.ScreenSet``)."""

    name: str
    raw: RawScreen
    file: str
    target: Target
    variant: VariantChoice | None

    def build(self) -> ScreenSpec:
        """The checked screen, as :func:`builtin_screens` lists it."""
        problems: list[SpecError] = []
        screen = build_screen(self.raw, self.target, f"builtin:{self.file}", problems)
        assert screen is not None, "a built-in screen is listed only where its gate admits"
        return replace(screen, source="builtin", variant=self.variant)


def builtin_entries(
    target: Target, variants: Mapping[str, VariantChoice] | None = None
) -> list[BuiltinScreen]:
    """The built-in screens for ``target``, not built: ``default``, ``branch``, then the
    others, each name once. A file may hold several variants of one screen gated by
    ``arch``/``model``; the first variant that admits ``target`` is kept, the others are
    skipped. Each records the choice (``variants``, by default :func:`builtin_variants`)."""
    from tiptop.screens.builtin_data import SCREENS

    choices = builtin_variants(target) if variants is None else variants
    out: list[BuiltinScreen] = []
    names: set[str] = set()
    for file in BUILTIN_FILES:
        for raw in SCREENS[file]:
            name = screen_name(raw)
            if name not in names and gate(raw.arch, raw.model, target) is None:
                names.add(name)
                out.append(BuiltinScreen(name, raw, file, target, choices.get(name)))
    return out


def builtin_screens(target: Target) -> list[ScreenSpec]:
    """The built-in screens for ``target``, built (:func:`builtin_entries`)."""
    return [entry.build() for entry in builtin_entries(target)]


def builtin_variants(target: Target) -> dict[str, VariantChoice]:
    """Per built-in screen name, in order, which of its variants ``target`` gets and why
    (``picked`` is None for a name no variant of which admits ``target``)."""
    from tiptop.screens.builtin_data import SCREENS

    raws: dict[str, list[RawScreen]] = {}
    for name in BUILTIN_FILES:
        for raw in SCREENS[name]:
            raws.setdefault(screen_name(raw), []).append(raw)
    return {name: choose_variant(name, rs, target) for name, rs in raws.items()}


def choose_variant(name: str, raws: list[RawScreen], target: Target) -> VariantChoice:
    """Which of ``raws`` (the variants of screen ``name``, in order) ``target`` gets: the
    first whose gate admits it (:func:`tiptop.screens.gating.gate`), recorded with every
    variant's description and gate."""
    picked = next((i for i, r in enumerate(raws) if gate(r.arch, r.model, target) is None), None)
    variants = tuple((printable(r.desc or "(no desc)"), r.arch, r.model) for r in raws)
    return VariantChoice(name, target, variants, picked)
