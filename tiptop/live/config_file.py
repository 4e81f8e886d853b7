"""Where the live ``W`` key writes the configuration: the user's configuration file,
``$XDG_CONFIG_HOME/tiptop/tiptoprc`` (``~/.config`` when unset: the XDG Base Directory
specification), one of the places tiptop reads (docs/screens.md, "Where files are looked
for"); or the ``.tiptoprc`` of the directory ``-W`` names. The original wrote
``./.tiptoprc`` in the current directory, which then came before the user's file there,
and, since flags invert the file's values, turned ``tiptop -H -i`` off in that
directory (issue 39)."""

from __future__ import annotations

import os
from collections.abc import Mapping

#: The file's name in a ``-W`` directory (the original's).
RC_NAME = ".tiptoprc"


def write_target(config_dir: str | None, env: Mapping[str, str]) -> str | None:
    """The file ``W`` writes: ``-W DIR``'s ``.tiptoprc``; else the XDG one; None when
    neither ``$XDG_CONFIG_HOME`` nor ``$HOME`` says where (``-W FILE`` is read, not
    written over)."""
    if config_dir is not None and os.path.isdir(os.path.expanduser(config_dir)):
        return os.path.join(os.path.expanduser(config_dir), RC_NAME)
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    return os.path.join(xdg, "tiptop", "tiptoprc") if xdg else None
