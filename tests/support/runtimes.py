"""State files of the container runtimes, written as each runtime documents them, under a
test's directory that stands for ``/`` (``tiptop.runtimes.state``'s ``root``).

* containerd: a task bundle's OCI ``config.json`` with the CRI plugin's annotations
  (containerd ``pkg/cri/annotations/annotations.go``);
* CRI-O: ``userdata/config.json`` with its annotations (cri-o ``pkg/annotations``);
* docker: ``containers/<ID>/config.v2.json`` (``Name``, ``Config.Labels``; cri-dockerd's
  labels are CRI-O's names);
* podman: containers/storage's ``overlay-containers/containers.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: Container ids as the runtimes make them: 64 hex digits.
ID_A = "a" * 8 + "0123456789abcdef" * 3 + "a" * 8
ID_B = "b" * 8 + "0123456789abcdef" * 3 + "b" * 8
ID_C = "c" * 8 + "0123456789abcdef" * 3 + "c" * 8
UID = "5f3a1c2e-7b4d-4e8f-9a0b-1c2d3e4f5a6b"


def _spec(annotations: dict[str, str]) -> dict[str, object]:
    """An OCI runtime spec (opencontainers/runtime-spec config.md) with ``annotations``."""
    return {
        "ociVersion": "1.0.2-dev",
        "process": {"args": ["/pause"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
        "root": {"path": "rootfs"},
        "linux": {"cgroupsPath": "kubepods-burstable-pod.slice:cri-containerd:x"},
        "annotations": annotations,
    }


def write(path: Path, value: object) -> Path:
    """``value`` as JSON at ``path``, its directories made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def containerd_k8s(
    root: Path,
    cid: str,
    pod: str,
    namespace: str,
    container: str,
    uid: str = UID,
    kind: str = "container",
) -> Path:
    """A Kubernetes container's task bundle of containerd (namespace ``k8s.io``)."""
    notes = {
        "io.kubernetes.cri.container-type": kind,
        "io.kubernetes.cri.sandbox-id": ID_C,
        "io.kubernetes.cri.sandbox-name": pod,
        "io.kubernetes.cri.sandbox-namespace": namespace,
        "io.kubernetes.cri.sandbox-uid": uid,
        "io.kubernetes.cri.image-name": "docker.io/library/nginx:1.27",
    }
    if kind == "container":
        notes["io.kubernetes.cri.container-name"] = container
    where = root / "run/containerd/io.containerd.runtime.v2.task/k8s.io" / cid / "config.json"
    return write(where, _spec(notes))


def containerd_nerdctl(root: Path, cid: str, name: str) -> Path:
    """A nerdctl container's task bundle (namespace ``default``, annotation ``nerdctl/name``)."""
    where = root / "run/containerd/io.containerd.runtime.v2.task/default" / cid / "config.json"
    return write(where, _spec({"nerdctl/name": name, "nerdctl/platform": "linux/amd64"}))


def crio_k8s(
    root: Path, cid: str, pod: str, namespace: str, container: str, uid: str = UID
) -> Path:
    """A Kubernetes container's ``config.json`` of CRI-O."""
    notes = {
        "io.kubernetes.cri-o.ContainerType": "container",
        "io.kubernetes.pod.name": pod,
        "io.kubernetes.pod.namespace": namespace,
        "io.kubernetes.pod.uid": uid,
        "io.kubernetes.container.name": container,
    }
    where = root / "run/containers/storage/overlay-containers" / cid / "userdata/config.json"
    return write(where, _spec(notes))


def docker(root: Path, cid: str, name: str, labels: dict[str, str] | None = None) -> Path:
    """docker's ``config.v2.json`` of a container named ``name``."""
    config = {
        "ID": cid,
        "Name": f"/{name}",
        "Config": {"Hostname": cid[:12], "Image": "busybox", "Labels": labels or {}},
        "State": {"Running": True, "Pid": 4242},
    }
    return write(root / "var/lib/docker/containers" / cid / "config.v2.json", config)


def podman(root: Path, containers: dict[str, str]) -> Path:
    """containers/storage's ``containers.json``: id -> name."""
    listed = [
        {"id": cid, "names": [name], "image": "f" * 64, "layer": "e" * 64, "metadata": "{}"}
        for cid, name in containers.items()
    ]
    return write(root / "var/lib/containers/storage/overlay-containers/containers.json", listed)


def cgroup_dir(mount: Path, path: str) -> Path:
    """A cgroup's directory under a hierarchy standing at ``mount``."""
    where = mount / path.strip("/")
    os.makedirs(where, exist_ok=True)
    return where


__all__ = [
    "ID_A",
    "ID_B",
    "ID_C",
    "UID",
    "cgroup_dir",
    "containerd_k8s",
    "containerd_nerdctl",
    "crio_k8s",
    "docker",
    "podman",
    "write",
]
