"""``--record FILE`` wiring: the sampler wrapped so that every refresh is appended to FILE
(``tiptop.recording``), with a header saying where and how it was recorded."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tiptop import __version__
from tiptop.frame import FrameSource
from tiptop.options import Options

if TYPE_CHECKING:
    from tiptop.recording.format import JsonObject
    from tiptop.recording.writer import Cgroups
    from tiptop.screens.model import ScreenSpec


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


def record_source(
    opts: Options,
    path: str,
    source: FrameSource,
    index: int,
    numbering: Sequence[ScreenSpec] = (),
    cgroups: Cgroups | None = None,
) -> FrameSource:
    """``source`` wrapped so that every refresh is appended to ``path`` (``--record``);
    each screen recorded with its number among ``numbering`` (the screens as numbered
    live); with ``cgroups`` (live, ``--by cgroup``), who runs in each task's cgroup and
    the counts of the cgroups counted whole too, for a replay's rows by cgroup."""
    from tiptop.recording.writer import Recorder, RecordingSource

    header: JsonObject = {
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
            "cgroups": cgroups is not None,
        },
    }
    return RecordingSource(source, Recorder(path, header, numbering, cgroups))


__all__ = ["cpu_model", "record_source"]
