"""Golden batch layout (docs/original.md section 6) from hand-built frames: header once,
rows, empty line after each iteration with rows, prefixes, DEAD and <--- markers, - and ?."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.support.builders import SCREEN, frame, task
from tiptop.cells import Status
from tiptop.choices import Format
from tiptop.options import Options
from tiptop.outputs.batch import TextWriter
from tiptop.outputs.records import RecordWriter

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"

FRAMES = [
    frame(
        [
            task(14353, 35.4, 84.21, 1.0, name="bash", user="root"),
            task(2404, 1.0, 3.13, 0, name="python", status=[Status.OK, Status.OK, Status.DIV0]),
        ],
        timestamp=1795291521.7,
    ),
    frame([], timestamp=1795291522.0),  # nothing visible: prints nothing at all
    frame(
        [
            task(
                14353,
                10.0,
                0,
                0,
                name="bash",
                dead=True,
                status=[Status.OK, Status.UNREADABLE, Status.NOT_COUNTED],
            ),
        ],
        timestamp=1795291523.2,
    ),
]


def _text(opts: Options) -> str:
    out = io.StringIO()
    w = TextWriter(out, opts, SCREEN, 0)
    w.begin(0.0)
    for i, f in enumerate(FRAMES):
        w.frame(f, i)
    text = out.getvalue().split("\n")
    # The first two preamble lines hold uptime/load and the date: checked by shape only.
    assert text[0].startswith("tiptop - up ") and ", load average: " in text[0]
    return "\n".join(text[2:])


def test_golden_plain() -> None:
    assert _text(Options(delay=1.0)) == (GOLDEN / "plain.txt").read_text()


def test_golden_prefixes_user_watch() -> None:
    opts = Options(
        delay=0.5,
        show_timestamp=True,
        show_epoch=True,
        show_user=True,
        watch_name="python",
        sticky=True,
        show_idle=True,
        only_pid=14353,
    )
    assert _text(opts) == (GOLDEN / "prefixed.txt").read_text()


def test_csv_and_json_fields() -> None:
    out = io.StringIO()
    w = RecordWriter(out, Options(format=Format.CSV), SCREEN, 0, Format.CSV)
    w.begin(0.0)
    w.frame(FRAMES[0], 0)
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "timestamp,iteration,interval,pid,tid,user,command,dead,%CPU,%CPU_status,Mcycle,"
        "Mcycle_status,IPC,IPC_status,CYCLE_delta,CYCLE_running,INSN_delta,INSN_running"
    )
    assert lines[2] == (
        "1795291521.7,0,1.0,2404,2404,root,python,0,1.0,ok,3.13,ok,,div0,3130000.0,1.0,0.0,1.0"
    )
    out = io.StringIO()
    w = RecordWriter(out, Options(format=Format.JSON), SCREEN, 0, Format.JSON)
    w.frame(FRAMES[2], 5)
    rec = json.loads(out.getvalue())
    assert rec["iteration"] == 5 and rec["dead"] is True
    assert rec["columns"] == {"%CPU": 10.0, "Mcycle": None, "IPC": None}
    assert rec["status"] == {"%CPU": "ok", "Mcycle": "unreadable", "IPC": "not_counted"}
    assert rec["counters"]["CYCLE"] == {"delta": 0.0, "running": 1.0}
