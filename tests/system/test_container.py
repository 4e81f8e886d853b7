"""A real container by its name (issue 48): a root file system built here from Debian's
``busybox-static`` is imported into podman, a named container runs a CPU loop in it
(Debian's ``runc``: crun refuses systemd's hybrid cgroup layout; the ulimits because the
hard fd limit here is 20000, more than runc grants), and ``tiptop -b --by cgroup`` and
the exporter show the container's name (from containers/storage's ``containers.json``)
with its CPU. Skips, saying why, where podman cannot run a container."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import TIPTOP
from tests.system.exporter_support import samples

BUSYBOX = Path("/bin/busybox")
PODMAN = ["podman", "--runtime", "runc"]
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def _podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)


def _why_not() -> str | None:
    """Why no container can run here, or None."""
    if os.geteuid() != 0:
        return "needs root (podman's rootful storage, whose containers.json tiptop reads)"
    missing = [p for p in ("podman", "runc") if shutil.which(p) is None]
    if missing or not BUSYBOX.exists():
        missing += [] if BUSYBOX.exists() else ["busybox-static"]
        return f"{', '.join(missing)} not installed (Debian packages; .ci/run installs them)"
    return None


@contextmanager
def container(tmp_path: Path) -> Iterator[str]:
    """A running container named ``tiptop-t48-PID`` looping on a CPU; its name."""
    why = _why_not()
    if why:
        pytest.skip(why)
    root = tmp_path / "rootfs"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(BUSYBOX, root / "bin" / "busybox")
    os.symlink("busybox", root / "bin" / "sh")
    archive = tmp_path / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(root, arcname=".")
    name = f"tiptop-t48-{os.getpid()}"
    image = f"localhost/{name}:latest"
    imported = _podman("import", str(archive), image)
    if imported.returncode != 0:
        pytest.skip(f"podman cannot import an image here: {imported.stderr.strip()[-300:]}")
    try:
        ran = _podman(
            "run", "-d", "--name", name, *ULIMITS, image, "/bin/sh", "-c", "while :; do :; done"
        )
        if ran.returncode != 0:
            pytest.skip(f"podman cannot run a container here: {ran.stderr.strip()[-300:]}")
        yield name
    finally:
        _podman("rm", "-f", "-t", "0", name)
        _podman("rmi", "-f", image)


def test_batch_and_the_exporter_show_the_container_by_name(tmp_path: Path) -> None:
    with container(tmp_path) as name:
        run = [*TIPTOP, "-S", "sched", "--by", "cgroup", "-d", "0.5", "-n", "3"]
        batch = subprocess.run(
            [*run, "-b", "--format", "csv"], capture_output=True, text=True, timeout=120
        )
        assert batch.returncode == 0, batch.stderr
        rows = [line.split(",") for line in batch.stdout.splitlines()]
        header = rows[0]
        mine = [dict(zip(header, r, strict=True)) for r in rows[1:] if f"podman:{name}" in r]
        assert len(mine) == 3, batch.stdout[-2000:]  # one row a refresh
        assert {r["kind"] for r in mine} == {"podman"} and {r["container"] for r in mine} == {name}
        assert all(r["container_id"].startswith("podman://") for r in mine)
        assert max(float(r["%CPU"]) for r in mine) > 15, mine  # its loop, shared machine
        text = tmp_path / "t.prom"
        served = subprocess.run(
            [*run, "--textfile", str(text)], capture_output=True, text=True, timeout=120
        )
        assert served.returncode == 0, served.stderr
        cpu = {
            dict(labels)["container"]: v
            for (metric, labels), v in samples(text.read_text()).items()
            if metric == "tiptop_cpu_seconds_total"
        }
        assert cpu.get(name, 0.0) > 0.2, cpu  # of 1.5 s: its loop ran
