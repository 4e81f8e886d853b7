"""Names of containers from their runtimes' own state on disk, read as untrusted.

Where each runtime keeps what names a container (all written by root's daemons):

* containerd: each task's bundle, ``/run/containerd/io.containerd.runtime.v2.task/<NS>/<ID>/
  config.json`` (``io.containerd.runtime.v1.linux`` before), an OCI runtime spec whose
  ``annotations`` hold, for a Kubernetes container, ``io.kubernetes.cri.sandbox-name``,
  ``-sandbox-namespace``, ``-sandbox-uid``, ``-container-name`` and ``-container-type``
  (containerd's ``pkg/cri/annotations``), and for nerdctl's ``nerdctl/name``;
* CRI-O: ``/run/containers/storage/overlay-containers/<ID>/userdata/config.json`` (or under
  ``/var/lib/containers/storage``), annotations ``io.kubernetes.pod.name``,
  ``.pod.namespace``, ``.pod.uid``, ``io.kubernetes.container.name``;
* docker: ``/var/lib/docker/containers/<ID>/config.v2.json``: ``Name`` (``/web``) and, for a
  container of cri-dockerd, the labels ``Config.Labels`` named as CRI-O's annotations;
* podman: containers/storage's ``/var/lib/containers/storage/overlay-containers/
  containers.json``, a list of ``{"id", "names"}``, one file for every container.

Every file is opened as an attacker's could be (a daemon's file may be crafted, or swapped
for something else): ``O_NOFOLLOW`` (a symbolic link at its name is refused),
``O_NONBLOCK`` (a FIFO does not block the open), then ``fstat``: only a regular file owned
by root and no larger than :data:`MAX_STATE` (:data:`MAX_LIST` for podman's list) is read,
and its JSON parsed within Python's bounds (a nesting too deep is a ``RecursionError``,
caught). Whatever fails leaves the name unknown: :func:`annotations_at` and the readers
return nothing, never raise, and never return a value that is not a short string.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from tiptop.outside import printable

#: The largest state file of one container read (an OCI spec is some 10-40 KB).
MAX_STATE = 1 << 20
#: The largest list of every container read (podman's ``containers.json``).
MAX_LIST = 16 << 20
#: The longest name kept (a Kubernetes name is at most 253 characters).
MAX_NAME = 253
#: The most containerd namespaces looked in.
MAX_NAMESPACES = 32

#: containerd's task bundles, newest runtime first.
CONTAINERD_TASKS = (
    "run/containerd/io.containerd.runtime.v2.task",
    "run/containerd/io.containerd.runtime.v1.linux",
)
#: CRI-O's (and containers/storage's) per-container directories.
CRIO_CONTAINERS = (
    "run/containers/storage/overlay-containers",
    "var/lib/containers/storage/overlay-containers",
)
DOCKER_CONTAINERS = "var/lib/docker/containers"
PODMAN_LIST = "var/lib/containers/storage/overlay-containers/containers.json"

#: A file's identity and version: device, inode, size, modification time (ns); None when
#: absent or unreadable. A cache of what a file said is stale when this changes.
Signature = tuple[int, int, int, int] | None


@dataclass(frozen=True, slots=True)
class Names:
    """What a runtime's state says of one container; empty strings where it says nothing."""

    runtime: str
    namespace: str = ""
    pod: str = ""
    uid: str = ""
    container: str = ""
    #: A pod's sandbox (its ``pause`` container), not one of its containers.
    sandbox: bool = False
    #: The name of a container without Kubernetes (docker, podman, nerdctl).
    name: str = ""


def signature(path: str) -> Signature:
    """``path``'s :data:`Signature`, without following a link at its name."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_untrusted(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` owned by root, at most ``limit`` of them; None
    for anything else (absent, a link, a FIFO, a device, a directory, another owner's, too
    large, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_size > limit:
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_json(path: str, limit: int = MAX_STATE) -> object:
    """The JSON value of the untrusted file ``path`` (:func:`read_untrusted`), None where
    it cannot be had or parsed."""
    data = read_untrusted(path, limit)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def text(value: object) -> str:
    """A name out of a state file: a short string made printable, else ``""``."""
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        return ""
    return printable(value)


def annotations_at(path: str) -> dict[str, str]:
    """The string ``annotations`` of the OCI runtime spec at ``path`` (empty when none)."""
    spec = read_json(path)
    found = spec.get("annotations") if isinstance(spec, dict) else None
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def _kubernetes(runtime: str, notes: dict[str, str], keys: tuple[str, ...]) -> Names:
    """The names under the annotation (or label) ``keys``: namespace, pod, uid, container,
    container type."""
    namespace, pod, uid, container, kind = (text(notes.get(k)) for k in keys)
    return Names(runtime, namespace, pod, uid, container, sandbox=kind == "sandbox")


#: containerd's annotations for a Kubernetes container (``pkg/cri/annotations``).
CONTAINERD_KEYS = (
    "io.kubernetes.cri.sandbox-namespace",
    "io.kubernetes.cri.sandbox-name",
    "io.kubernetes.cri.sandbox-uid",
    "io.kubernetes.cri.container-name",
    "io.kubernetes.cri.container-type",
)
#: CRI-O's annotations (``pkg/annotations``) and cri-dockerd's labels.
CRIO_KEYS = (
    "io.kubernetes.pod.namespace",
    "io.kubernetes.pod.name",
    "io.kubernetes.pod.uid",
    "io.kubernetes.container.name",
    "io.kubernetes.cri-o.ContainerType",
)


def containerd_files(root: str, cid: str) -> Iterator[str]:
    """The paths where containerd's task bundle of ``cid`` may be, in any namespace
    (``k8s.io`` first), at most :data:`MAX_NAMESPACES` of them per runtime."""
    for tasks in CONTAINERD_TASKS:
        where = os.path.join(root, tasks)
        try:
            with os.scandir(where) as entries:
                spaces = sorted(
                    (e.name for e in entries if e.is_dir(follow_symlinks=False)),
                    key=lambda n: (n != "k8s.io", n),
                )[:MAX_NAMESPACES]
        except OSError:
            continue
        for space in spaces:
            yield os.path.join(where, space, cid, "config.json")


def containerd(root: str, cid: str) -> tuple[Names | None, list[str]]:
    """What containerd's task bundle says of ``cid``, and the paths looked at."""
    looked = []
    for path in containerd_files(root, cid):
        looked.append(path)
        if signature(path) is None:
            continue
        notes = annotations_at(path)
        if "io.kubernetes.cri.sandbox-name" in notes:
            return _kubernetes("containerd", notes, CONTAINERD_KEYS), looked
        return Names("containerd", name=text(notes.get("nerdctl/name"))), looked
    return None, looked


def crio(root: str, cid: str) -> tuple[Names | None, list[str]]:
    """What CRI-O's ``config.json`` says of ``cid``, and the paths looked at."""
    looked = []
    for base in CRIO_CONTAINERS:
        path = os.path.join(root, base, cid, "userdata", "config.json")
        looked.append(path)
        if signature(path) is None:
            continue
        notes = annotations_at(path)
        if "io.kubernetes.pod.name" not in notes:
            return Names("cri-o"), looked
        names = _kubernetes("cri-o", notes, CRIO_KEYS)
        if names.sandbox or names.container == "POD":
            names = Names("cri-o", names.namespace, names.pod, names.uid, sandbox=True)
        return names, looked
    return None, looked


def docker(root: str, cid: str) -> tuple[Names | None, list[str]]:
    """What docker's ``config.v2.json`` says of ``cid``, and the path looked at."""
    path = os.path.join(root, DOCKER_CONTAINERS, cid, "config.v2.json")
    if signature(path) is None:
        return None, [path]
    config = read_json(path)
    if not isinstance(config, dict):
        return Names("docker"), [path]
    inner = config.get("Config")
    labels = inner.get("Labels") if isinstance(inner, dict) else None
    labels = labels if isinstance(labels, dict) else {}
    if isinstance(labels.get("io.kubernetes.pod.name"), str):
        names = _kubernetes("docker", labels, (*CRIO_KEYS[:4], "io.kubernetes.docker.type"))
        if (
            names.sandbox
            or names.container == "POD"
            or labels.get("io.kubernetes.docker.type") == "podsandbox"
        ):
            names = Names("docker", names.namespace, names.pod, names.uid, sandbox=True)
        return names, [path]
    name = config.get("Name")
    return Names("docker", name=text(name.lstrip("/") if isinstance(name, str) else None)), [path]


class PodmanList:
    """podman's names of every container, from containers/storage's ``containers.json``:
    read again only when its :func:`signature` changed (the owner of this cache is the
    :class:`~tiptop.runtimes.resolve.Workloads` that made it)."""

    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, PODMAN_LIST)
        self._signature: Signature = None
        self._names: dict[str, str] = {}

    def names(self) -> tuple[dict[str, str], Signature]:
        """Container id -> its first name, and the file's signature they were read at."""
        now = signature(self.path)
        if now != self._signature:
            self._signature, self._names = now, self._read() if now is not None else {}
        return self._names, now

    def _read(self) -> dict[str, str]:
        listed = read_json(self.path, MAX_LIST)
        out: dict[str, str] = {}
        for entry in listed if isinstance(listed, list) else ():
            if not isinstance(entry, dict):
                continue
            cid, names = entry.get("id"), entry.get("names")
            if isinstance(cid, str) and isinstance(names, list) and names:
                name = text(names[0])
                if name:
                    out[cid] = name
        return out


__all__ = [
    "MAX_LIST",
    "MAX_NAME",
    "MAX_STATE",
    "Names",
    "PodmanList",
    "Signature",
    "annotations_at",
    "containerd",
    "crio",
    "docker",
    "read_json",
    "read_untrusted",
    "signature",
    "text",
]
