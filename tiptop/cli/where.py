"""``--where PID``: one process sampled, its hottest functions printed per refresh in the
batch format asked (``tiptop.outputs.where``), under the batch loop; a process that exits
ends the run with one line, as does one that cannot be sampled (the errno and what would
allow it)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from tiptop.cli.run import open_output
from tiptop.host import Host
from tiptop.options import Options

__all__ = ["run_where"]


def run_where(opts: Options, host: Host, say: Callable[[str], None]) -> int:
    """Sample process ``opts.where`` until ``-n``, Ctrl-C or its end; 0 when done."""
    from tiptop.outputs.batch import drive
    from tiptop.outputs.where import WhereWriter
    from tiptop.refresh import Stop
    from tiptop.where import TaskProfiler

    pid = opts.where
    assert pid is not None
    out = open_output(opts.output, "-o")
    profiler = TaskProfiler(pid, host, opts.delay)
    stop = Stop()
    try:
        writer = WhereWriter(out or sys.stdout, opts.format, pid)
        with stop.on_signals():
            drive(profiler, writer, opts, out or sys.stdout, sys.stderr, stop=stop, child=profiler)
        if profiler.exited() and not stop.requested:
            say(f"--where {pid}: the process exited")
    finally:
        stop.close()
        profiler.close()
        if out is not None:
            out.close()
    return 0
