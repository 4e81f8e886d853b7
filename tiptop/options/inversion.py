"""The original's rule that command-line toggles *invert* what the configuration file set
(docs/original.md section 1; kept for compatibility), said where it surprises: a file
that turns ``idle`` on makes ``-i`` turn it off. One line per option so inverted, naming
the flag and the file's option, never more than once a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tiptop.options.argv import Act, Action
from tiptop.options.values import atoi
from tiptop.screens.rcoptions import RC_OPTIONS, How

#: The ``<options>`` ways that switch a field on (``tiptop.screens.rcoptions.HOW``).
SWITCHES = frozenset({How.OR, How.BOOL})


def inverted_by_flags(rc: Mapping[str, str], actions: Sequence[Action]) -> list[str]:
    """One warning per option that the config file's ``<options>`` (``rc``) switches on
    and the command line's toggles (``actions``) leave off: an odd number of them."""
    on = {
        opt.field: name
        for name, opt in RC_OPTIONS.items()
        if opt.how in SWITCHES and name in rc and atoi(rc[name]) != 0
    }
    flips: dict[str, list[str]] = {}
    for act in actions:
        if act.kind is Act.TOGGLE and act.name in on:
            flips.setdefault(act.name, []).append(act.spelled or act.name)
    return [
        f"{spelled[0]} turns '{on[field]}' off: flags invert the configuration file's "
        "value (on there)"
        for field, spelled in flips.items()
        if len(spelled) % 2
    ]
