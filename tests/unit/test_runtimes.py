"""Who runs in a cgroup (tiptop/runtimes): each layout of the runtimes, the kubelet and
systemd resolved from its path and the runtime's state files, built as each runtime
documents them (tests/support/runtimes.py); the id alone where a state file is absent,
unreadable, crafted or disagrees; the cache by inode, its staleness and its bound."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import runtimes as rt
from tests.support.runtimes import ID_A, ID_B, UID
from tiptop.kernel.cgroup import path_of
from tiptop.runtimes import Workloads
from tiptop.runtimes.layouts import layout
from tiptop.runtimes.state import MAX_STATE, read_json
from tiptop.workload import Workload, WorkloadKind

SYSTEMD_UID = UID.replace("-", "_")
K8S_SYSTEMD = (
    "/kubepods.slice/kubepods-burstable.slice/"
    f"kubepods-burstable-pod{SYSTEMD_UID}.slice/cri-containerd-{ID_A}.scope"
)


def resolve(root: Path, path: str) -> Workload:
    """``path``'s workload with ``root`` standing for ``/`` (no cgroup mount)."""
    return Workloads(None, str(root)).of(path)


# ------------------------------------------------------------ the layouts, named


def test_k8s_containerd_systemd_driver_v2(tmp_path: Path) -> None:
    rt.containerd_k8s(tmp_path, ID_A, "web-7d9f", "shop", "nginx")
    w = resolve(tmp_path, K8S_SYSTEMD)
    assert (w.kind, w.namespace, w.pod, w.uid, w.container) == (
        "k8s",
        "shop",
        "web-7d9f",
        UID,
        "nginx",
    )
    assert w.container_id == f"containerd://{ID_A}"
    assert w.shown() == "shop/web-7d9f/nginx"
    assert w.label == f"k8s/pod{UID}/{ID_A[:12]}"


def test_k8s_containerd_cgroupfs_driver_v1(tmp_path: Path) -> None:
    """The kubelet's cgroupfs driver on cgroup v1: the path read from the ``name=systemd``
    line; the bare id's runtime found by its state (containerd)."""
    rt.containerd_k8s(tmp_path, ID_A, "db-0", "data", "postgres")
    proc = (
        f"12:cpu,cpuacct:/kubepods/besteffort/pod{UID}/{ID_A}\n"
        f"1:name=systemd:/kubepods/besteffort/pod{UID}/{ID_A}\n"
    )
    w = resolve(tmp_path, path_of(proc))
    assert (w.namespace, w.pod, w.container) == ("data", "db-0", "postgres")
    assert w.container_id == f"containerd://{ID_A}"


def test_k8s_guaranteed_pod_has_no_qos_slice(tmp_path: Path) -> None:
    rt.containerd_k8s(tmp_path, ID_A, "api-1", "prod", "api")
    path = f"/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-{ID_A}.scope"
    assert resolve(tmp_path, path).shown() == "prod/api-1/api"


def test_k8s_pod_sandbox_is_the_pod_alone(tmp_path: Path) -> None:
    rt.containerd_k8s(tmp_path, ID_A, "api-1", "prod", "", kind="sandbox")
    w = resolve(tmp_path, K8S_SYSTEMD)
    assert (w.pod, w.container, w.shown()) == ("api-1", "", "prod/api-1")


def test_k8s_crio_systemd_driver(tmp_path: Path) -> None:
    rt.crio_k8s(tmp_path, ID_B, "cache-2", "infra", "redis")
    path = (
        f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SYSTEMD_UID}"
        f".slice/crio-{ID_B}.scope"
    )
    w = resolve(tmp_path, path)
    assert (w.namespace, w.pod, w.container) == ("infra", "cache-2", "redis")
    assert w.container_id == f"cri-o://{ID_B}"


def test_k8s_crio_cgroupfs_driver(tmp_path: Path) -> None:
    rt.crio_k8s(tmp_path, ID_B, "cache-2", "infra", "redis")
    w = resolve(tmp_path, f"/kubepods/burstable/pod{UID}/crio-{ID_B}")
    assert w.shown() == "infra/cache-2/redis" and w.container_id == f"cri-o://{ID_B}"


def test_k8s_cri_dockerd_labels(tmp_path: Path) -> None:
    labels = {
        "io.kubernetes.pod.name": "legacy-0",
        "io.kubernetes.pod.namespace": "old",
        "io.kubernetes.pod.uid": UID,
        "io.kubernetes.container.name": "app",
        "io.kubernetes.docker.type": "container",
    }
    rt.docker(tmp_path, ID_A, "k8s_app_legacy-0_old_x_0", labels)
    w = resolve(tmp_path, f"/kubepods/pod{UID}/{ID_A}")
    assert w.shown() == "old/legacy-0/app" and w.container_id == f"docker://{ID_A}"


def test_docker_systemd_driver(tmp_path: Path) -> None:
    rt.docker(tmp_path, ID_A, "web")
    w = resolve(tmp_path, f"/system.slice/docker-{ID_A}.scope")
    assert (w.kind, w.container, w.shown()) == ("docker", "web", "docker:web")
    assert w.container_id == f"docker://{ID_A}"


def test_docker_cgroupfs_driver(tmp_path: Path) -> None:
    rt.docker(tmp_path, ID_A, "worker")
    assert resolve(tmp_path, f"/docker/{ID_A}").shown() == "docker:worker"


def test_podman_systemd_and_cgroupfs(tmp_path: Path) -> None:
    rt.podman(tmp_path, {ID_A: "api", ID_B: "batch"})
    cache = Workloads(None, str(tmp_path))
    assert cache.of(f"/machine.slice/libpod-{ID_A}.scope").shown() == "podman:api"
    assert cache.of(f"/machine.slice/libpod-{ID_A}.scope/container").shown() == "podman:api"
    w = cache.of(f"/libpod_parent/libpod-{ID_B}")
    assert w.shown() == "podman:batch" and w.container_id == f"podman://{ID_B}"


def test_containerd_without_kubernetes(tmp_path: Path) -> None:
    rt.containerd_nerdctl(tmp_path, ID_A, "nginx-1")
    w = resolve(tmp_path, f"/system.slice/nerdctl-{ID_A}.scope")
    assert (w.kind, w.shown()) == ("containerd", "containerd:nginx-1")


def test_systemd_service(tmp_path: Path) -> None:
    w = resolve(tmp_path, "/system.slice/nginx.service")
    assert (w.kind, w.unit, w.label) == ("systemd", "nginx.service", "nginx")
    assert w.shown() == "nginx.service"
    w = resolve(tmp_path, "/system.slice/system-getty.slice/getty@tty1.service")
    assert w.unit == "getty@tty1.service"
    assert resolve(tmp_path, "/init.scope").unit == "init.scope"


def test_user_session_and_user_units(tmp_path: Path) -> None:
    w = resolve(tmp_path, "/user.slice/user-1000.slice/session-2.scope")
    assert (w.kind, w.unit, w.shown()) == ("session", "session-2.scope", "user-1000/session-2")
    w = resolve(tmp_path, "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service")
    assert (w.kind, w.unit) == ("session", "foo.service")


def test_lxc(tmp_path: Path) -> None:
    assert resolve(tmp_path, "/lxc.payload.web1").shown() == "lxc:web1"
    assert resolve(tmp_path, "/lxc/db2").shown() == "lxc:db2"
    assert resolve(tmp_path, "/lxc.monitor.web1").kind == "lxc"


def test_root_and_other(tmp_path: Path) -> None:
    assert resolve(tmp_path, "/") == Workload(WorkloadKind.OTHER, "/")
    w = resolve(tmp_path, "/batch/job-17")
    assert (w.kind, w.shown()) == ("other", "batch/job-17")


def test_a_cgroup_outside_our_namespace_is_read_past_its_dots(tmp_path: Path) -> None:
    """cgroup_namespaces(7): a process outside ours shows ``/../..`` before its path."""
    rt.docker(tmp_path, ID_A, "web")
    assert resolve(tmp_path, f"/../../system.slice/docker-{ID_A}.scope").shown() == "docker:web"


# ------------------------------------------------------------ the id alone


def test_absent_state_leaves_the_id(tmp_path: Path) -> None:
    w = resolve(tmp_path, K8S_SYSTEMD)
    assert (w.kind, w.uid, w.namespace, w.pod, w.container) == ("k8s", UID, "", "", "")
    assert w.container_id == f"containerd://{ID_A}"
    assert w.shown() == f"k8s/pod{UID}/{ID_A[:12]}"
    assert resolve(tmp_path, f"/system.slice/docker-{ID_A}.scope").shown() == f"docker/{ID_A[:12]}"
    w = resolve(tmp_path, f"/kubepods/burstable/pod{UID}/{ID_A}")  # cgroupfs: runtime unknown
    assert w.container_id == ID_A


def _bundle(root: Path) -> Path:
    return rt.containerd_k8s(root, ID_A, "web-7d9f", "shop", "nginx")


def _as_link(root: Path) -> None:
    real = _bundle(root)
    os.rename(real, real.with_name("real.json"))
    os.symlink("real.json", real)


def _as_fifo(root: Path) -> None:
    real = _bundle(root)
    real.unlink()
    os.mkfifo(real)


def _not_roots(root: Path) -> None:
    os.chown(_bundle(root), 65534, 65534)


def _too_large(root: Path) -> None:
    real = _bundle(root)
    real.write_text(real.read_text() + " " * MAX_STATE)


def _not_json(root: Path) -> None:
    _bundle(root).write_bytes(b'{"annotations": {"io.kubernetes.cri\xff')


def _too_deep(root: Path) -> None:
    _bundle(root).write_text("[" * 100_000 + "]" * 100_000)


def _wrong_types(root: Path) -> None:
    rt.write(
        _bundle(root),
        {
            "annotations": {
                "io.kubernetes.cri.sandbox-name": ["web"],
                "io.kubernetes.cri.sandbox-namespace": 7,
            }
        },
    )


def _another_pods(root: Path) -> None:
    rt.containerd_k8s(root, ID_A, "web-7d9f", "shop", "nginx", uid="0" * 8 + UID[8:])


@pytest.mark.parametrize(
    "spoil",
    [
        _as_link,
        _as_fifo,
        _not_roots,
        _too_large,
        _not_json,
        _too_deep,
        _wrong_types,
        _another_pods,
    ],
)
def test_an_unreadable_or_crafted_state_leaves_the_id(
    tmp_path: Path, spoil: Callable[[Path], None]
) -> None:
    spoil(tmp_path)
    w = resolve(tmp_path, K8S_SYSTEMD)
    assert (w.namespace, w.pod, w.container) == ("", "", "")
    assert w.container_id == f"containerd://{ID_A}" and w.uid == UID


def test_a_fifo_does_not_block_and_a_link_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "fifo"
    os.mkfifo(target)
    assert read_json(str(target)) is None  # returns at once: O_NONBLOCK, then fstat
    os.symlink(target, tmp_path / "link")
    assert read_json(str(tmp_path / "link")) is None


def test_a_delegated_subtree_names_no_container_from_roots_state(tmp_path: Path) -> None:
    """A user's manager (``user@UID.service``) names its cgroups as it likes: a
    ``docker-<ID>.scope`` there is not looked up in root's docker."""
    rt.docker(tmp_path, ID_A, "payments")
    path = f"/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{ID_A}.scope"
    w = resolve(tmp_path, path)
    assert w.kind == "docker" and w.container == "" and "payments" not in w.shown()
    assert layout(path).trusted is False


def test_names_are_made_printable(tmp_path: Path) -> None:
    rt.docker(tmp_path, ID_A, "evil\x1b]52;c;AAAA\x07name")
    shown = resolve(tmp_path, f"/docker/{ID_A}").shown()
    assert "\x1b" not in shown and "\x07" not in shown and shown.startswith("docker:evil")


@pytest.mark.parametrize(
    "path",
    [
        "/user.slice/user-1000.slice/user@1000.service/x\x1b]0;PWN\x07.service",
        "/system.slice/ok\udcff\x9b2J.service",  # a byte not UTF-8 (os.fsdecode), a C1 CSI
        "/lxc.payload.w\x1b[2Jeb",
        "/lxc/d\nb",
    ],
)
def test_names_from_the_path_are_made_printable(tmp_path: Path, path: str) -> None:
    """A cgroup's name is its maker's word (a user names the cgroups of a subtree delegated
    to it): the unit or container a path names is printable, as its label is."""
    w = resolve(tmp_path, path)
    assert w.unit or w.container, w
    for value in (*w.values(), w.label, w.shown()):
        assert value.isprintable(), (value, w)
        value.encode("utf-8")  # no lone surrogate: a byte not UTF-8 is shown as \xNN
    assert "\\x1b" in w.shown() or "\\x9b" in w.shown() or "\\n" in w.shown(), w.shown()


# ------------------------------------------------------------ the cache


def test_cache_by_inode_a_cgroup_made_again_is_resolved_again(tmp_path: Path) -> None:
    mount, root = tmp_path / "cg", tmp_path / "root"
    rt.docker(root, ID_A, "first")
    path = f"/system.slice/docker-{ID_A}.scope"
    where = rt.cgroup_dir(mount, path)
    now = [0.0]
    cache = Workloads(str(mount), str(root), recheck=5.0, clock=lambda: now[0])
    assert cache.of(path).container == "first"
    docker_json = root / "var/lib/docker/containers" / ID_A / "config.v2.json"
    stamp = os.stat(docker_json).st_mtime_ns
    rt.docker(root, ID_A, "secnd")  # renamed, the same size and time: the file looks the same
    os.utime(docker_json, ns=(stamp, stamp))
    now[0] = 10.0
    assert cache.of(path).container == "first" and cache.resolved == 1
    os.rmdir(where)
    (mount / "system.slice" / "filler").mkdir()  # the old inode is not handed out again
    rt.cgroup_dir(mount, path)
    now[0] = 20.0
    assert cache.of(path).container == "secnd" and cache.resolved == 2


def test_a_changed_or_new_state_file_is_read_again_after_the_recheck(tmp_path: Path) -> None:
    now = [0.0]
    cache = Workloads(None, str(tmp_path), recheck=5.0, clock=lambda: now[0])
    path = f"/system.slice/docker-{ID_A}.scope"
    assert cache.of(path).container == ""  # no state yet
    rt.docker(tmp_path, ID_A, "late")
    now[0] = 4.0
    assert cache.of(path).container == ""
    now[0] = 5.5
    assert cache.of(path).container == "late"
    now[0] = 20.0
    cache.of(path)
    assert cache.resolved == 2  # unchanged files: not resolved again
    rt.podman(tmp_path, {ID_B: "x"})
    podman_path = f"/machine.slice/libpod-{ID_B}.scope"
    assert cache.of(podman_path).container == "x"
    rt.podman(tmp_path, {ID_B: "renamed-longer"})
    now[0] = 30.0
    assert cache.of(podman_path).container == "renamed-longer"


def test_the_cache_is_bounded_least_recent_first(tmp_path: Path) -> None:
    cache = Workloads(None, str(tmp_path), capacity=3)
    for i in range(5):
        cache.of(f"/system.slice/s{i}.service")
    assert len(cache._entries) == 3
    cache.of("/system.slice/s0.service")
    assert cache.resolved == 6  # s0 was dropped, resolved again


def test_podman_list_is_parsed_bounded(tmp_path: Path) -> None:
    listed = rt.podman(tmp_path, {ID_A: "ok"})
    data = json.loads(listed.read_text())
    data += [{"id": 5, "names": "x"}, "junk", {"id": ID_B, "names": [{"no": 1}]}]
    listed.write_text(json.dumps(data))
    cache = Workloads(None, str(tmp_path))
    assert cache.of(f"/machine.slice/libpod-{ID_A}.scope").container == "ok"
    assert cache.of(f"/machine.slice/libpod-{ID_B}.scope").container == ""
