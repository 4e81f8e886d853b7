"""``--record FILE`` wiring: the sampler wrapped so that every refresh is appended to FILE
(``tiptop.recording``), with a header saying where and how it was recorded."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from typing import Any

from tiptop import __version__
from tiptop.options import Options


def cpu_model(path: str = "/proc/cpuinfo") -> str:
    """The CPU's ``model name`` from /proc/cpuinfo (proc(5)); ``?`` when there is none."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def record_source(opts: Options, sampler: Any, index: int, numbering: Sequence[Any] = ()) -> Any:
    """``sampler`` wrapped so that every refresh is appended to ``opts.record``; each
    screen recorded with its number among ``numbering`` (the screens as numbered live)."""
    from tiptop.recording.writer import Recorder, RecordingSource

    header = {
        "version": __version__,
        "host": socket.gethostname(),
        "kernel": os.uname().release,
        "cpu": cpu_model(),
        "interval": opts.delay,
        "threads": opts.show_threads,
        "screen_index": index,
        "pid_width": opts.pid_width,
        # What the recording run watched, applied on replay unless given again: the rows
        # recorded are those tasks only (and ``-- cmd`` turns idle rows on).
        "options": {
            "show_idle": opts.show_idle,
            "only_pid": opts.only_pid,
            "only_name": opts.only_name,
            "uid": opts.uid,
            "user_name": opts.user_name,
        },
    }
    return RecordingSource(sampler, Recorder(opts.record, header, numbering))


__all__ = ["cpu_model", "record_source"]
