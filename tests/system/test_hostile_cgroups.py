"""Cgroups an unprivileged user names in a subtree delegated to it (as systemd delegates
``user@UID.service``), against root's tiptop (issue 52; /work/shared/attacks/
cgroup_utf8_crash.sh, cgroup_escape_inject.sh): a name that is not UTF-8 stopped
``--serve`` (whatever ``--by``: the cgroup label is always read) and ``-b --by cgroup``
with a UnicodeDecodeError; a name holding escape sequences reached the terminal raw. Real
cgroups in the v2 hierarchy; needs root."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import removed
from tests.system.exporter_support import samples, serving, wait_for
from tests.system.hostile import NOBODY, needs_root, run_measured
from tests.system.test_exporter_cgroup import made_cgroup

#: What the user names its cgroups: a byte that is not UTF-8; a title and a clipboard write.
NOT_UTF8 = b"ok\xff"
ESCAPES = b"x\x1b]0;CGPWN\x07\x1b]52;c;cHduZWQ=\x07\xc2\x9b2J"


#: The victim: a little CPU now and then, so that it has a row.
SPIN = """
import time
while True:
    t = time.time()
    while time.time() - t < 0.01:
        pass
    time.sleep(0.04)
"""

#: Each name as the label shows it.
LABELS = {NOT_UTF8: "ok\\xff", ESCAPES: "x\\x1b]0;CGPWN\\x07\\x1b]52;c;cHduZWQ=\\x07\\x9b2J"}


@contextmanager
def delegated(name: bytes) -> Iterator[tuple[int, Path]]:
    """A victim process of uid 65534 in cgroup ``name``, made by that user in a subtree
    delegated to it; yields its PID and the subtree."""
    needs_root()
    deleg = made_cgroup("tt52-deleg-")
    victim = None
    inner = os.fsdecode(bytes(deleg) + b"/" + name)
    try:
        for f in (deleg, deleg / "cgroup.procs"):
            os.chown(f, 65534, 65534)
        victim = subprocess.Popen([*NOBODY, sys.executable, "-c", SPIN])
        (deleg / "cgroup.procs").write_text(str(victim.pid))
        move = f'mkdir "$1" && echo {victim.pid} > "$1/cgroup.procs"'
        subprocess.run([*NOBODY, "sh", "-c", move, "sh", inner], check=True, timeout=10)
        yield victim.pid, deleg
    finally:
        if victim is not None:
            victim.kill()
            victim.wait()
        removed(Path(inner), deleg)


@pytest.mark.parametrize("name", [NOT_UTF8, ESCAPES], ids=["not-utf8", "escapes"])
def test_batch_by_cgroup(name: bytes) -> None:
    with delegated(name) as (_pid, deleg):
        for fmt in ("text", "csv", "json"):
            r = run_measured(
                ["-b", "--by", "cgroup", "-S", "sched", "-d", "0.5", "-n", "2", "--format", fmt]
            )
            assert r.rc == 0, r
            r.check_clean()
            shown = os.fsdecode(name).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raw = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))} - {"\n"}
            assert not raw & set(r.out), (fmt, r.out)
            label = f"{deleg.name}/" + ("ok\\xff" if name == NOT_UTF8 else "x\\x1b]0;CGPWN\\x07")
            assert label in r.out.replace("\\\\", "\\"), (fmt, shown, r.out)


@pytest.mark.parametrize("name", [NOT_UTF8, ESCAPES], ids=["not-utf8", "escapes"])
@pytest.mark.parametrize("by", ["comm", "cgroup"])
def test_serve_labels_such_cgroups(name: bytes, by: str) -> None:
    """The exposition is served, parsed by prometheus_client's own parser, and carries the
    label as printable text."""
    with (
        delegated(name) as (_pid, deleg),
        serving("-S", "sched", "-d", "0.5", "--by", by) as (proc, address),
    ):
        text = wait_for(address, lambda t: deleg.name in t, timeout=20)
        labels = {dict(labels).get("cgroup", "") for (_name, labels) in samples(text)}
        mine = [lb for lb in labels if lb.startswith(deleg.name)]
        want = (
            "ok\\xff" if name == NOT_UTF8 else "x\\x1b]0;CGPWN\\x07\\x1b]52;c;cHduZWQ=\\x07\\x9b2J"
        )
        assert mine == [f"{deleg.name}/{want}"], mine
        assert proc.poll() is None
