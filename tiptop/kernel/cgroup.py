"""The cgroup of a task, from ``/proc/PID/cgroup`` (proc(5), cgroups(7)), shortened to a
label a person can read (the exporter's labels, the live and batch rows by cgroup).

The file is read once per process while it lives (psutil does not give it); on cgroup v2
the line is ``0::/path``, on v1 the ``name=systemd`` line is taken, else the first one.
:func:`shorten` is the rule docs/exporter.md states:

* Kubernetes: ``.../kubepods...-pod<UID>.slice/cri-containerd-<ID>.scope`` (systemd driver)
  or ``/kubepods/<qos>/pod<UID>/<ID>`` (cgroupfs driver) -> ``k8s/pod<UID>/<ID[:12]>``;
* Docker and podman: ``docker-<ID>.scope``, ``/docker/<ID>``, ``libpod-<ID>.scope`` ->
  ``docker/<ID[:12]>`` (``podman/...``);
* otherwise the path without the ``system.slice`` and ``user.slice`` levels, each part
  without its ``.service``/``.scope``/``.slice`` suffix: ``/system.slice/nginx.service``
  -> ``nginx``, ``/user.slice/user-1000.slice/session-2.scope`` -> ``user-1000/session-2``;
  the root, or an unreadable file, -> ``/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SUFFIXES = (".service", ".scope", ".slice")
_DROP = {"system.slice", "user.slice", "kubepods.slice", "kubepods"}
_POD = re.compile(r"pod([0-9a-fA-F_-]{8,})(?:\.slice)?$")
_CONTAINER = re.compile(r"^(?:cri-containerd-|crio-|docker-|libpod-)?([0-9a-f]{12,})(?:\.scope)?$")
_RUNTIME = re.compile(r"^(docker|libpod)-([0-9a-f]{12,})\.scope$")


def path_of(text: str) -> str:
    """The cgroup path out of a ``/proc/PID/cgroup`` file's text; ``/`` when none."""
    lines = [ln.split(":", 2) for ln in text.splitlines() if ln.count(":") >= 2]
    for hid, _controllers, path in lines:
        if hid == "0":
            return path or "/"
    for _hid, controllers, path in lines:
        if controllers == "name=systemd":
            return path or "/"
    return lines[0][2] if lines and lines[0][2] else "/"


def shorten(path: str) -> str:
    """The label for a cgroup path, by the rule of the module's docstring."""
    parts = [p for p in path.strip("/").split("/") if p]
    if not parts:
        return "/"
    pod = next((m.group(1) for p in parts if (m := _POD.search(p))), None)
    if pod is not None and any(p.startswith("kubepods") for p in parts):
        last = _CONTAINER.match(parts[-1])
        tail = f"/{last.group(1)[:12]}" if last and not _POD.search(parts[-1]) else ""
        return f"k8s/pod{pod.replace('_', '-')}{tail}"
    runtime = _RUNTIME.match(parts[-1])
    if runtime is not None:
        name = "docker" if runtime.group(1) == "docker" else "podman"
        return f"{name}/{runtime.group(2)[:12]}"
    if len(parts) >= 2 and parts[-2] == "docker" and re.fullmatch(r"[0-9a-f]{12,}", parts[-1]):
        return f"docker/{parts[-1][:12]}"
    kept = []
    for p in parts:
        if p in _DROP:
            continue
        for suffix in _SUFFIXES:
            p = p.removesuffix(suffix)
        kept.append(p)
    return "/".join(kept) or "/"


class CgroupCache:
    """Shortened cgroup per process, read once while the process is seen: a PID missing
    from one refresh's rows is forgotten, so a reused PID is read again."""

    def __init__(self, proc_root: str = "/proc") -> None:
        self.proc_root = proc_root
        self._known: dict[int, str] = {}

    def label(self, pid: int) -> str:
        """The shortened cgroup of process ``pid`` (``/`` when unreadable)."""
        known = self._known.get(pid)
        if known is None:
            try:
                with open(f"{self.proc_root}/{pid}/cgroup") as f:
                    known = shorten(path_of(f.read()))
            except OSError:
                known = "/"
            self._known[pid] = known
        return known

    def keep_only(self, pids: Iterable[int]) -> None:
        """Forget every process not in ``pids`` (the rows of the latest refresh)."""
        alive = set(pids)
        for pid in [p for p in self._known if p not in alive]:
            del self._known[pid]


__all__ = ["CgroupCache", "path_of", "shorten"]
