"""The batch loop's wait between refreshes: one poll(2), woken by a stop request (from a
signal handler too), a gone reader, or its deadline; no CPU spent while it waits."""

from __future__ import annotations

import os
import resource
import select
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tiptop.outputs import batch
from tiptop.refresh import Stop


@pytest.fixture
def stop() -> Iterator[Stop]:
    s = Stop()
    yield s
    s.close()


def test_a_wait_costs_no_cpu(stop: Stop) -> None:
    """The wait sleeps once, as a bare poll(2) of the same second does: its thread's
    voluntary context switches (getrusage(2) ``RUSAGE_THREAD``, ``ru_nvcsw``: each time it
    gave up its CPU to sleep) are a bare poll's, where a loop waking every 50 ms to look
    would add 20. Switches, not CPU time: this VM charges a sleeping thread 0.1-3.4 ms a
    second of its own, as much as such a loop costs (a full run failed once on 0.64 ms)."""
    r, w = os.pipe()
    try:
        t0, n0 = time.monotonic(), _sleeps()
        batch._wait_until(time.monotonic() + 1.0, stop, w, None)
        waited = _sleeps() - n0
        took = time.monotonic() - t0
        n0 = _sleeps()
        select.poll().poll(1000)
        bare = _sleeps() - n0
    finally:
        os.close(r)
        os.close(w)
    # Ends at its deadline: never before; after, only by how late a loaded machine runs us.
    assert 0.99 <= took < 3
    assert waited <= bare + 1, f"{waited} sleeps in a 1 s wait, {bare} in a bare poll"


def _sleeps() -> int:
    """The calling thread's voluntary context switches so far."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw


def test_a_stop_request_ends_the_wait_at_once(stop: Stop) -> None:
    threading.Timer(0.1, stop.request).start()
    t0 = time.monotonic()
    batch._wait_until(time.monotonic() + 10, stop, None, None)
    # At once, not at the 10 s deadline (half of it leaves room for a loaded machine).
    assert stop.requested and time.monotonic() - t0 < 5


def test_a_signal_handler_s_request_ends_the_wait_at_once(stop: Stop) -> None:
    """Python resumes an interrupted poll(2) for the time left once the handler has run
    (PEP 475): the handler's request must wake it."""
    old = signal.signal(signal.SIGALRM, lambda *_: stop.request())
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        t0 = time.monotonic()
        batch._wait_until(time.monotonic() + 10, stop, None, None)
        took = time.monotonic() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert stop.requested and took < 5  # not the 10 s deadline


def test_a_gone_reader_ends_the_wait(stop: Stop) -> None:
    r, w = os.pipe()
    threading.Timer(0.1, os.close, (r,)).start()
    t0 = time.monotonic()
    try:
        with pytest.raises(BrokenPipeError):
            batch._wait_until(time.monotonic() + 10, stop, w, None)
    finally:
        os.close(w)
    assert time.monotonic() - t0 < 1


def test_a_file_output_waits_for_the_deadline(stop: Stop, tmp_path: Path) -> None:
    with open(tmp_path / "out", "w") as f:
        t0 = time.monotonic()
        batch._wait_until(time.monotonic() + 0.3, stop, f.fileno(), None)
    assert 0.29 <= time.monotonic() - t0 < 1


def test_stop_wait_sleeps_until_a_request(stop: Stop) -> None:
    """The exporter's wait (``Stop.wait``): the whole time without a request, at once
    with one from another thread."""
    t0 = time.monotonic()
    assert stop.wait(0.2) is False and time.monotonic() - t0 >= 0.19
    threading.Timer(0.1, stop.request).start()
    t0 = time.monotonic()
    assert stop.wait(10) is True and time.monotonic() - t0 < 5
