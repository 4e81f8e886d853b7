"""``python -m tests.support.as_cpu ARGS...``: tiptop as on the CPU that the file named by
``$TIPTOP_TEST_CPUINFO`` describes (a ``/proc/cpuinfo`` text, e.g. tests/data/cpuinfo/), so
that the suite runs as on a hypervisor's generic CPU model (QEMU's ``EPYC``, family 17h
model 01h, which has no top-down screen) or on a CPU it was not written on.

A fake for what this machine cannot be: only the ``cpuinfo`` field of the injected
``tiptop.host.Host`` changes; the counters, /proc and sysfs stay this machine's."""

from __future__ import annotations

import dataclasses
import os
import sys

#: The environment variable naming the cpuinfo file; unset, this machine's CPU.
CPUINFO_VARIABLE = "TIPTOP_TEST_CPUINFO"


def pretend_cpu(cpuinfo: str) -> None:
    """Make every ``Host.read()`` of this process say that ``cpuinfo`` names the CPU."""
    from tiptop.host import Host

    real = Host.read.__func__  # type: ignore[attr-defined]

    def read(cls: type[Host], *args: object, **kw: object) -> Host:
        return dataclasses.replace(real(cls, *args, **kw), cpuinfo=cpuinfo)

    Host.read = classmethod(read)  # type: ignore[method-assign, assignment]


def main() -> int:
    """Run tiptop's command line on ``sys.argv[1:]`` as on the named CPU."""
    cpuinfo = os.environ.get(CPUINFO_VARIABLE)
    if cpuinfo:
        pretend_cpu(os.path.abspath(cpuinfo))
    from tiptop.cli import main as tiptop_main

    return tiptop_main(sys.argv[1:], prog="tiptop")


if __name__ == "__main__":
    sys.exit(main())
