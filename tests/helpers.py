"""Small helpers shared by the tests (no fixtures here; see conftest.py)."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_NR = {"x86_64": 298, "aarch64": 241}


@functools.cache
def hardware_pmu_error() -> str | None:
    """``None`` when ``cycles`` opens on this machine, else the errno name it fails with.

    Uses ctypes on purpose, independently of tiptop's own binding, so a bug in the
    binding cannot make the hardware tests skip themselves.
    """
    nr = _NR.get(platform.machine())
    if nr is None:
        return f"unsupported architecture {platform.machine()}"
    attr = bytearray(128)
    # type=HARDWARE(0), size=128, config=CPU_CYCLES(0), exclude_kernel|exclude_hv bits 5,6.
    struct.pack_into("<IIQ", attr, 0, 0, 128, 0)
    struct.pack_into("<Q", attr, 40, (1 << 5) | (1 << 6))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = (ctypes.c_char * 128).from_buffer(attr)
    fd = libc.syscall(
        ctypes.c_long(nr),
        buf,
        ctypes.c_int(0),
        ctypes.c_int(-1),
        ctypes.c_int(-1),
        ctypes.c_ulong(8),
    )
    if fd < 0:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    os.close(fd)
    return None


#: ``python -m tiptop`` with this interpreter; where ``$TIPTOP_TEST_CPUINFO`` names a
#: cpuinfo file, tiptop as on that CPU (tests/support/as_cpu.py; .ci/run runs the suite so
#: as on QEMU's generic EPYC model).
TIPTOP = [
    sys.executable,
    "-m",
    "tests.support.as_cpu" if os.environ.get("TIPTOP_TEST_CPUINFO") else "tiptop",
]

#: cpuinfo files of CPUs a test needs (tests/data/cpuinfo/): QEMU's generic ``EPYC`` model
#: (family 17h model 01h, no top-down screen) and AMD Zen 4 (19h/11h, top-down with a tree).
GENERIC_EPYC = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "data/cpuinfo/qemu-epyc-17_01"
)
ZEN4 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data/cpuinfo/zen4-19_11")


def run(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m tiptop args`` as a user runs it, stdin closed; ``kw`` go to
    ``subprocess.run`` (``cwd``, ``env``)."""
    return subprocess.run(
        [*TIPTOP, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        **kw,
    )


def run_as_cpu(cpuinfo: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """:func:`run` as on the CPU that the ``cpuinfo`` file describes (the injected Host's
    ``cpuinfo``, tests/support/as_cpu.py): for tests that need that CPU's screens."""
    return subprocess.run(
        [sys.executable, "-m", "tests.support.as_cpu", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TIPTOP_TEST_CPUINFO": cpuinfo},
    )


#: Where the repository lives, for PYTHONPATH in subprocesses.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Top-level modules tiptop needs at run time (and their own dependencies).
_RUNTIME_MODULES = (
    "cffi",
    "_cffi_backend",
    "pycparser",
    "numpy",
    "psutil",
    "yaml",
    "urwid",
    "wcwidth",
    "typing_extensions",
    "prometheus_client",
    "bcrypt",
    "elftools",
)


@functools.cache
def nobody_site() -> str:
    """A world-readable copy (hard links where possible) of tiptop's run-time dependencies.

    The interpreter's site-packages may sit under a 0700 home (``/root/.pyenv``) that uid
    65534 cannot traverse; then ``setpriv --reuid=65534 python3`` finds no numpy. The copy
    lives for the test session (removed at interpreter exit).
    """
    import atexit
    import importlib.util
    import shutil
    import tempfile
    from pathlib import Path

    site = tempfile.mkdtemp(prefix="tiptop-nobody-site-")
    os.chmod(site, 0o755)
    atexit.register(shutil.rmtree, site, True)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    for name in _RUNTIME_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        src = origin.parent if origin.name == "__init__.py" else origin
        dst = os.path.join(site, src.name)
        if src.is_dir():
            shutil.copytree(src, dst, copy_function=link)
            libs = src.parent / f"{src.name}.libs"  # auditwheel's vendored libraries
            if libs.is_dir():
                shutil.copytree(libs, os.path.join(site, libs.name), copy_function=link)
        else:
            link(str(src), dst)
    for root, dirs, files in os.walk(site):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), os.stat(os.path.join(root, f)).st_mode | 0o444)
    return site


def nobody_command(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """``setpriv`` argv running ``python3 args...`` as uid/gid 65534, and its environment
    (PYTHONPATH = the repository + :func:`nobody_site`)."""
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, *args]
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{nobody_site()}", "HOME": "/tmp"}
    return cmd, env


def removed(*cgroups: Path) -> None:
    """Remove cgroups a test made, in the order given (children first), each once the
    tasks killed in it are gone (a cgroup with a task cannot be removed: EBUSY), trying
    for 5 s; one already gone is done."""
    for cgroup in cgroups:
        for _ in range(50):
            try:
                cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
