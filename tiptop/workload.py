"""What runs in a cgroup, by name: the record :mod:`tiptop.runtimes` resolves from a cgroup's
path and the container runtimes' own state on disk, and that rows by cgroup, the batch
records and the exporter's labels carry (docs/exporter.md, "Who runs in a cgroup").

A leaf: every layer may import it (a frame's group rows hold these records). Its names are
those of kube-state-metrics and cAdvisor (``namespace``, ``pod``, ``uid``, ``container``,
``container_id`` with its runtime's prefix, as ``kube_pod_container_info`` has it) and
``unit`` for systemd; a field not known is empty, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WorkloadKind(StrEnum):
    """The kinds of cgroup told apart (:attr:`Workload.kind`); the word is the batch
    records' and the exporter's ``kind``."""

    K8S = "k8s"
    DOCKER = "docker"
    PODMAN = "podman"
    CONTAINERD = "containerd"
    CRIO = "cri-o"
    SYSTEMD = "systemd"
    SESSION = "session"
    LXC = "lxc"
    OTHER = "other"


#: The kinds' words, in order.
KINDS = tuple(WorkloadKind)

#: The identity fields, in the order the batch records and the exporter write them.
FIELDS = ("kind", "namespace", "pod", "uid", "container", "container_id", "unit")


@dataclass(frozen=True, slots=True)
class Workload:
    """Who runs in one cgroup. ``label`` is the cgroup's short label (``tiptop.kernel.cgroup
    .shorten``: the exporter's ``cgroup`` label, always set); the other fields are empty
    where not known."""

    kind: WorkloadKind
    label: str
    namespace: str = ""
    pod: str = ""
    #: The pod's uid (``kube_pod_info{uid}``).
    uid: str = ""
    #: The container's name: in its pod (Kubernetes), or the docker, podman, nerdctl or LXC
    #: container's own.
    container: str = ""
    #: The container's id with its runtime's prefix (``containerd://<id>``,
    #: ``cri-o://<id>``, ``docker://<id>``, ``podman://<id>``), as kube-state-metrics
    #: writes it; the bare id where the runtime is not known.
    container_id: str = ""
    #: The systemd unit (``nginx.service``, ``session-2.scope``).
    unit: str = ""

    def shown(self) -> str:
        """The row's name: ``namespace/pod/container`` for Kubernetes (``namespace/pod``
        for a pod's sandbox), ``docker:NAME``, ``podman:NAME``, ``lxc:NAME``, the unit for
        a system service, else the cgroup's label (a user's session: ``user-1000/session-2``)."""
        if self.kind is WorkloadKind.K8S and self.namespace and self.pod:
            return "/".join(p for p in (self.namespace, self.pod, self.container) if p)
        if self.container and self.kind is not WorkloadKind.K8S:
            return f"{self.kind}:{self.container}"
        if self.kind is WorkloadKind.SYSTEMD and self.unit:
            return self.unit
        return self.label

    def values(self) -> tuple[str, ...]:
        """The :data:`FIELDS`' values, in order."""
        return (
            self.kind,
            self.namespace,
            self.pod,
            self.uid,
            self.container,
            self.container_id,
            self.unit,
        )


#: The identity of what could not be read (the root cgroup, an unreadable file).
ROOT = Workload(WorkloadKind.OTHER, "/")


__all__ = ["FIELDS", "KINDS", "ROOT", "Workload", "WorkloadKind"]
