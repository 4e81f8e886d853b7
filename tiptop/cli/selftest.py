"""``tiptop --selftest [-S SCREEN] [--format json]``: the screen tiptop would start on (or
``-S``'s), checked by ``tiptop.selftest``; prints the report and returns its exit status."""

from __future__ import annotations

import sys
from collections.abc import Callable

from tiptop.cli.screens import ScreenSet, fallback_screen, pick_screen
from tiptop.host import Host
from tiptop.options import Options


def run_selftest_command(
    opts: Options, loaded: ScreenSet, host: Host, say: Callable[[str], None]
) -> int:
    """Pick the screen as the monitor would, run the self-test, print; 0, 1 or 2."""
    from tiptop.selftest.report import selftest_main

    index, screen = pick_screen(loaded, opts.screen)
    if opts.screen is None:
        index, screen = fallback_screen(loaded, index, screen, say, host)
    text, code = selftest_main(screen, host, opts.format)
    sys.stdout.write(text)
    return code
