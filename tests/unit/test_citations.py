"""Comments cite what a reader of this repository has: kernel documents, man pages, papers,
or files under docs/ (docs/original.md for the original tiptop), never the design notes
that live outside the repository."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tiptop", "tests", "benchmarks", "docs", "config")

#: Notes that are not in this repository (spelled in pieces so this file does not match).
ABSENT = tuple(f"{stem}.md" for stem in ("seeds", "peers", "tiptop-original", "aesthetics", "cpus"))

#: Files allowed to name them: none.
EXEMPT: set[str] = set()


def mentions(path: Path) -> list[str]:
    """``line: text`` for each line of ``path`` that names an absent note."""
    try:
        text = path.read_text(errors="replace")
    except (OSError, UnicodeError):
        return []
    return [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if any(name in line for name in ABSENT)
    ]


def scanned_files() -> list[Path]:
    """Every file under the scanned folders, caches left out."""
    return [
        p
        for top in SCANNED
        for p in sorted((ROOT / top).rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    ]


def test_the_scan_sees_a_mention(tmp_path: Path) -> None:
    planted = tmp_path / "x.py"
    planted.write_text("ok\n# see " + ABSENT[2] + " section 8\n")
    assert mentions(planted) == ["2: # see " + ABSENT[2] + " section 8"]
    assert len(scanned_files()) > 100


def test_no_file_cites_notes_outside_the_repository() -> None:
    found = {
        rel: hits
        for p in scanned_files()
        if (rel := p.relative_to(ROOT).as_posix()) not in EXEMPT and (hits := mentions(p))
    }
    assert found == {}
