"""``--record`` files, owned by one package: the format and its checks (``format``), the
writer (``writer``), bounded reading (``inflate``; ``reader`` into an ``index``) and the
replay source (``replay``); docs/guide.md, "Recording format"."""

from tiptop.recording.format import FORMAT_VERSION, FormatError
from tiptop.recording.index import Recording
from tiptop.recording.reader import load
from tiptop.recording.replay import ReplaySource, decode
from tiptop.recording.writer import (
    Recorder,
    RecordingSource,
    bare_aliases,
    frame_record,
    numbers,
)

__all__ = [
    "FORMAT_VERSION",
    "FormatError",
    "Recorder",
    "Recording",
    "RecordingSource",
    "ReplaySource",
    "bare_aliases",
    "decode",
    "frame_record",
    "load",
    "numbers",
]
