"""One table of ``<options>`` names (tiptop.screens.rcoptions) for the loader, the options
merge, the ``W`` export and docs/screens.md."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from tiptop.options import Options, apply_rc, to_rc
from tiptop.screens import RC_OPTIONS, Target, load_text
from tiptop.screens.rcoptions import HOW, IGNORED_OPTIONS, How

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screens.md"

#: One text per way of reading a value, and what it sets.
SAMPLES: dict[How, tuple[str, object]] = {
    How.OR: ("1", True),
    How.BOOL: ("7", True),
    How.DELAY: ("0.5", 0.5),
    How.FLOAT: ("3.25", 3.25),
    How.COUNT: ("42", 42),
    How.NAME: ("make", "make"),
    How.USER: ("0", 0),
}


def test_every_option_is_applied_to_its_field() -> None:
    assert set(SAMPLES) == set(HOW)
    for name, opt in RC_OPTIONS.items():
        assert opt.how in HOW, name
        text, want = SAMPLES[opt.how]
        o, warnings = apply_rc(Options(), {name: text})
        assert warnings == [], name
        assert getattr(o, opt.field) == want, name


def test_or_set_cannot_switch_off_but_bool_can() -> None:
    o, _ = apply_rc(Options(show_epoch=True, show_user=True), {"show_epoch": "0", "show_user": "0"})
    assert (o.show_epoch, o.show_user) == (True, False)


def test_export_reads_back_the_same() -> None:
    o = Options(
        delay=0.3,
        cpu_threshold=1.5,
        show_cmdline=True,
        show_idle=True,
        max_iter=7,
        watch_name="ssh",
        uid=0,
    )
    rc = to_rc(o)
    assert list(rc) == list(RC_OPTIONS)  # every name, in the table's order
    assert rc["idle"] == "1" and rc["watch_uid"] == "0" and rc["delay"] == "0.3"
    back, warnings = apply_rc(Options(), rc)
    assert warnings == []
    fields = {opt.field for opt in RC_OPTIONS.values()}
    assert {f: getattr(back, f) for f in fields} == {f: getattr(o, f) for f in fields}
    assert "watch_name" not in to_rc(Options())
    assert "watch_uid" not in to_rc(Options())
    assert fields <= {f.name for f in dataclasses.fields(Options)}


def test_loader_knows_exactly_the_table() -> None:
    names = [*RC_OPTIONS, *IGNORED_OPTIONS, "frobnicate"]
    body = "".join(f'<option name="{n}" value="1"/>' for n in names)
    cfg = load_text(f"<tiptop><options>{body}</options></tiptop>", Target())
    assert list(cfg.options) == list(RC_OPTIONS)
    assert [e.message for e in cfg.problems] == ["Unknown option 'frobnicate' ignored"]


def test_docs_list_exactly_the_table() -> None:
    text = DOCS.read_text()
    start = text.index("### Options")
    section = text[start : text.index("### Errors", start)]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {n for row in rows for n in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    assert listed == set(RC_OPTIONS)
    for row in rows:
        how = row.split("|")[2]
        for n in re.findall(r"`([a-z_]+)`", row.split("|")[1]):
            assert ("OR-set" in how) == (RC_OPTIONS[n].how is How.OR), n
