"""``tiptop --textfile`` for real (issue 31): a device node or a FIFO at PATH is refused
with one line and left as it was; a write that fails leaves the exporter serving, is said
once, and its end once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import TIPTOP
from tests.system.exporter_support import samples, scrape, serving, wait_for


def _unchanged(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_mode, st.st_rdev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_a_device_node_and_a_fifo_are_refused_and_left_as_they_were(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.prom"
    os.mkfifo(fifo)
    paths = [fifo]
    node = tmp_path / "null.prom"
    try:  # a character device with /dev/null's numbers (mknod(2) needs CAP_MKNOD)
        os.mknod(node, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
        paths.append(node)
    except PermissionError:
        print("mknod(2) not permitted here: the FIFO only")
    kinds = {fifo: "a FIFO", node: "a character device"}
    for path in paths:
        before = _unchanged(os.lstat(path))
        argv = [*TIPTOP, "--textfile", str(path), "-S", "sched", "-d", "0.2", "-n", "2"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert r.stderr.splitlines() == [
            f"tiptop: --textfile {path}: {kinds[path]}, not a regular file: refused"
        ]
        assert _unchanged(os.lstat(path)) == before
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in paths)  # no temporary file
    odd = tmp_path / "metrics.txt"  # written, but node_exporter would not read it
    r = subprocess.run(
        [*TIPTOP, "--textfile", str(odd), "-S", "sched", "-d", "0.2", "-n", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "tiptop_cpu_seconds_total" in odd.read_text()
    assert r.stderr.splitlines() == [
        f"tiptop: --textfile {odd}: node_exporter's textfile collector reads only *.prom files"
    ]
    odd.unlink()
    if len(paths) == 1:
        pytest.skip("the device node part needs mknod(2) (CAP_MKNOD); the FIFO passed")


def test_a_failed_write_keeps_the_exporter_serving(tmp_path: Path) -> None:
    folder = tmp_path / "textfiles"
    folder.mkdir()
    out = folder / "m.prom"
    with serving("-S", "sched", "-d", "0.3", "--textfile", str(out)) as (proc, address):
        lines: list[str] = []
        assert proc.stderr is not None
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        wait_for(address, lambda t: "tiptop_tasks_tracked" in t)
        end = time.monotonic() + 30
        while not out.exists() and time.monotonic() < end:
            time.sleep(0.1)
        assert "tiptop_cpu_seconds_total" in out.read_text()
        shutil.rmtree(folder)
        first = samples(scrape(address))
        time.sleep(2)  # several refreshes, each failing to write
        second = samples(scrape(address))
        cpu = [k for k in second if k[0] == "tiptop_cpu_seconds_total" and k in first]
        assert any(second[k] > first[k] for k in cpu)  # refreshes went on
        assert proc.poll() is None
        folder.mkdir()
        while not out.exists() and time.monotonic() < end + 30:
            time.sleep(0.1)
        assert "tiptop_cpu_seconds_total" in out.read_text()
        time.sleep(1)
    reader.join(timeout=10)  # stderr ends with the process
    assert [line.rstrip("\n") for line in lines] == [
        f"tiptop: --textfile {out}: not written (No such file or directory); carrying on, "
        "trying again at each refresh",
        f"tiptop: --textfile {out}: written again",
    ]
