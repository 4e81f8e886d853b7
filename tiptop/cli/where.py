"""``--where PID``: one process sampled, its hottest functions printed per refresh in the
batch format asked (``tiptop.outputs.where``), under the batch loop; a process that exits
ends the run with one line, as does one that cannot be sampled (the errno and what would
allow it)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

from tiptop.cli.run import open_output
from tiptop.errors import TiptopError
from tiptop.files import open_regular
from tiptop.host import Host
from tiptop.options import Options
from tiptop.outside import printable

__all__ = ["run_where"]


def run_where(opts: Options, host: Host, say: Callable[[str], None]) -> int:
    """Sample process ``opts.where`` until ``-n``, Ctrl-C or its end; 0 when done."""
    from tiptop.outputs.batch import drive
    from tiptop.outputs.folded import FoldedFile
    from tiptop.outputs.where import WhereWriter
    from tiptop.refresh import Stop
    from tiptop.where import TaskProfiler
    from tiptop.where.calltree import View
    from tiptop.where.report import TreeCut

    pid = opts.where
    assert pid is not None
    view = View.TOP_DOWN if opts.where_top_down else View.BOTTOM_UP
    cut = TreeCut(view, opts.where_depth, opts.where_min_share)
    with contextlib.ExitStack() as held:  # closed in the reverse order of opening
        out = open_output(opts.output, "-o")
        if out is not None:
            held.callback(out.close)
        profiler = TaskProfiler(pid, host, opts.delay)
        held.callback(profiler.close)
        folded = None
        if opts.folded:
            folded = FoldedFile(_open_folded(opts.folded), opts.folded)
            held.callback(folded.close)
        stop = Stop()
        held.callback(stop.close)
        writer = WhereWriter(out or sys.stdout, opts.format, pid, cut, folded)
        with stop.on_signals():
            drive(profiler, writer, opts, out or sys.stdout, sys.stderr, stop=stop, child=profiler)
        if profiler.exited() and not stop.requested:
            say(f"--where {pid}: the process exited")
    return 0


def _open_folded(path: str) -> int:
    """``--folded``'s file, opened as tiptop's other output files are (never through a
    symbolic link, a regular file only: ``tiptop.files``)."""
    try:
        return open_regular(path, os.O_WRONLY, 0o666, "--folded")
    except OSError as exc:
        raise TiptopError(f"--folded: cannot open '{printable(path)}': {exc.strerror}") from None
