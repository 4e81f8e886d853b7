"""Who runs in a cgroup, from its path alone: the layouts the container runtimes, the
kubelet and systemd give their cgroups (pure: no file is read here).

The path is the one ``/proc/PID/cgroup`` gives (cgroups(7)): the ``0::`` line of cgroup v2,
or on v1 the ``name=systemd`` line, which has the same layout. The layouts:

* Kubernetes (the kubelet's ``cgroupDriver``, kubernetes.io "Configuring a cgroup driver";
  the QoS classes' cgroups, kubernetes.io "Pod Quality of Service Classes"):
  systemd driver ``/kubepods.slice/kubepods-burstable.slice/
  kubepods-burstable-pod<UID with _>.slice/<runtime>-<ID>.scope`` (Guaranteed pods sit in
  ``kubepods.slice`` itself: ``kubepods-pod<UID>.slice``), the runtime's prefix being
  ``cri-containerd-`` (containerd), ``crio-`` (CRI-O; ``crio-conmon-`` its monitor) or
  ``docker-`` (cri-dockerd); cgroupfs driver ``/kubepods/burstable/pod<UID>/<ID>`` (CRI-O:
  ``crio-<ID>``), whose runtime the state on disk tells (:mod:`.state`).
* Docker: ``/system.slice/docker-<ID>.scope`` (systemd driver), ``/docker/<ID>`` (cgroupfs).
* Podman: ``/machine.slice/libpod-<ID>.scope`` (and its ``container`` child), cgroupfs
  ``/libpod_parent/libpod-<ID>``; ``libpod-conmon-<ID>.scope`` is its monitor.
* containerd without Kubernetes: ``nerdctl-<ID>.scope``, ``cri-containerd-<ID>.scope``.
* LXC: ``/lxc.payload.<NAME>`` (LXC 4 and later), ``/lxc.payload/<NAME>``, ``/lxc/<NAME>``
  (older); ``lxc.monitor.<NAME>`` its monitor.
* systemd (systemd.unit(5), systemd.slice(5)): ``/system.slice/nginx.service``, any unit
  below a slice (``getty@tty1.service``, ``init.scope``); a user's session
  ``/user.slice/user-1000.slice/session-2.scope`` and the units of the user's manager
  ``user@1000.service/...``.

IDs are 64 hex digits, as every runtime above makes them: a part that is not one names no
container. A cgroup below a user's manager (``user@UID.service``) is delegated to that
user (systemd.resource-control(5), ``Delegate=``), who names its cgroups as they like: a
container's id there is the user's word, so :attr:`Layout.trusted` is False and no state of
root's runtimes is read for it (rootless containers keep theirs in the user's home).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tiptop.kernel.cgroup import shorten
from tiptop.outside import printable
from tiptop.workload import Workload, WorkloadKind

#: A container id: 64 lowercase hex digits (docker, containerd, CRI-O and podman alike).
_ID = "[0-9a-f]{64}"
#: A QoS or pod slice of the kubelet's systemd driver, or its cgroupfs ``pod<UID>``.
_UID = "[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}"
_POD = re.compile(rf"^(?:kubepods(?:-[a-z]+)*-)?pod({_UID})(?:\.slice)?$")
#: A container's cgroup: its runtime's prefix (none with cgroupfs), its id, ``.scope``.
_CONTAINER = re.compile(
    rf"^(cri-containerd-|crio-conmon-|crio-|docker-|libpod-conmon-|libpod-|nerdctl-)?"
    rf"({_ID})(?:\.scope)?$"
)
#: The runtime of each prefix; ``conmon`` marks a runtime's monitor process's cgroup.
_RUNTIME = {
    "cri-containerd-": WorkloadKind.CONTAINERD,
    "crio-": WorkloadKind.CRIO,
    "crio-conmon-": WorkloadKind.CRIO,
    "docker-": WorkloadKind.DOCKER,
    "libpod-": WorkloadKind.PODMAN,
    "libpod-conmon-": WorkloadKind.PODMAN,
    "nerdctl-": WorkloadKind.CONTAINERD,
}
#: kube-state-metrics' prefix of each runtime's container ids (``kube_pod_container_info``).
ID_PREFIX = {
    "containerd": "containerd://",
    "cri-o": "cri-o://",
    "docker": "docker://",
    "podman": "podman://",
}
_LXC = re.compile(r"^lxc\.(?:payload|monitor)\.(.+)$")
_USER_MANAGER = re.compile(r"^user@\d+\.service$")
_UNIT = re.compile(r"\.(?:service|scope|socket|mount|swap)$")


@dataclass(frozen=True, slots=True)
class Layout:
    """What a cgroup's path says: the identity as far as the path tells, the runtime and
    id whose state on disk may name it, and whether that state may be read for it."""

    workload: Workload
    #: The runtime whose state names the container (``containerd``, ``cri-o``, ``docker``,
    #: ``podman``), ``""`` when the path does not say (the kubelet's cgroupfs driver:
    #: any), None when there is nothing to look up.
    runtime: str | None = None
    #: The container's id, ``""`` when none.
    container_id: str = ""
    #: Whether root's runtimes' state may be read for this id (:mod:`tiptop.runtimes`'s
    #: docstring: not below a user's delegated subtree); False for a monitor's cgroup.
    trusted: bool = False


def parts_of(path: str) -> list[str]:
    """The path's parts, without the ``..`` that a cgroup outside tiptop's cgroup namespace
    starts with (cgroup_namespaces(7))."""
    return [p for p in path.split("/") if p and p != ".."]


def layout(path: str) -> Layout:
    """The identity a cgroup's ``path`` tells (module docstring); every name taken from it
    (a unit, an LXC container) made printable, as the label is: a cgroup's name is its
    maker's word (``tiptop.outside``)."""
    parts = parts_of(printable(path))
    label = shorten(path)
    if not parts:
        return Layout(Workload(WorkloadKind.OTHER, "/"))
    delegated = any(_USER_MANAGER.match(p) for p in parts)
    found = _kubernetes(parts, label, delegated) or _container(parts, label, delegated)
    if found is not None:
        return found
    lxc = _lxc(parts)
    if lxc:
        return Layout(Workload(WorkloadKind.LXC, label, container=lxc))
    return _systemd(parts, label)


def _kubernetes(parts: list[str], label: str, delegated: bool) -> Layout | None:
    """A pod's cgroup or one of its containers' (below a ``kubepods`` part)."""
    for i, part in enumerate(parts):
        if "kubepods" not in part:
            continue
        pod_at = next((j for j in range(i, len(parts)) if _POD.match(parts[j])), None)
        if pod_at is None:
            return Layout(Workload(WorkloadKind.K8S, label))  # a QoS class's slice
        match = _POD.match(parts[pod_at])
        assert match is not None
        uid = match.group(1).replace("_", "-")
        if pod_at + 1 == len(parts):
            return Layout(Workload(WorkloadKind.K8S, label, uid=uid))
        container = _CONTAINER.match(parts[pod_at + 1])
        if container is None:
            return Layout(Workload(WorkloadKind.K8S, label, uid=uid))
        runtime = _RUNTIME.get(container.group(1) or "", "")
        cid = container.group(2)
        monitor = "conmon" in (container.group(1) or "")
        full_id = f"{ID_PREFIX[runtime]}{cid}" if runtime else cid
        return Layout(
            Workload(WorkloadKind.K8S, label, uid=uid, container_id=full_id),
            None if monitor else runtime,
            cid,
            not monitor and not delegated,
        )
    return None


def _container(parts: list[str], label: str, delegated: bool) -> Layout | None:
    """A container outside Kubernetes: docker, podman, containerd, CRI-O (the outermost
    part that is one; a cgroup the container made inside its own is the container's)."""
    for i, part in enumerate(parts):
        match = _CONTAINER.match(part)
        if match is None:
            continue
        prefix = match.group(1)
        if prefix is None:  # a bare id: docker's and podman's cgroupfs parents
            parent = parts[i - 1] if i else ""
            prefix = {"docker": "docker-", "libpod_parent": "libpod-"}.get(parent)
            if prefix is None:
                continue
        runtime = _RUNTIME[prefix]
        cid = match.group(2)
        monitor = "conmon" in prefix
        workload = Workload(runtime, label, container_id=f"{ID_PREFIX[runtime]}{cid}")
        return Layout(workload, None if monitor else runtime, cid, not monitor and not delegated)
    return None


def _lxc(parts: list[str]) -> str:
    """An LXC container's name, ``""`` when the path is none."""
    match = _LXC.match(parts[0])
    if match:
        return match.group(1)
    if len(parts) >= 2 and parts[0] in ("lxc", "lxc.payload"):
        return parts[1]
    return ""


def _systemd(parts: list[str], label: str) -> Layout:
    """A systemd unit's cgroup (its innermost unit), a user's session or user units, or
    another cgroup."""
    units = [p for p in parts if _UNIT.search(p)]
    if parts[0] == "user.slice":
        return Layout(Workload(WorkloadKind.SESSION, label, unit=units[-1] if units else ""))
    if units:
        return Layout(Workload(WorkloadKind.SYSTEMD, label, unit=units[-1]))
    return Layout(Workload(WorkloadKind.OTHER, label))


__all__ = ["ID_PREFIX", "Layout", "layout", "parts_of"]
