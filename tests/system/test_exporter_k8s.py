"""``tiptop --serve --by cgroup`` speaks Kubernetes' labels (issue 48): a real cgroup laid
out as the kubelet's systemd driver lays a containerd container's (made in the v2
hierarchy), a CPU loop in it, containerd's task bundle written as containerd writes it
under ``--runtime-root``; a real Prometheus scrapes the exporter and a hand-written
``kube_pod_info`` (as kube-state-metrics exports it), and a PromQL join on ``(namespace,
pod)`` returns the pod's CPU with the node kube-state-metrics names. The shipped alerting
rules pass ``promtool check rules`` and their own ``promtool test rules``."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import removed
from tests.support import runtimes as rt
from tests.system.exporter_support import Prometheus, prometheus_missing, samples, serving, wait_for
from tiptop.kernel.cgroup import unified_root

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "prometheus"
ALERTS_TEST = ROOT / "tests" / "data" / "prometheus" / "tiptop-alerts.test.yml"
UID_ = rt.UID.replace("-", "_")
#: The kubelet's systemd driver's cgroup of a Burstable pod's containerd container.
POD_PATH = (
    f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/"
    f"cri-containerd-{rt.ID_A}.scope"
)
KUBE_POD_INFO = (
    "# TYPE kube_pod_info gauge\n"
    f'kube_pod_info{{namespace="shop",pod="web-7d9f",uid="{rt.UID}",node="node-1",'
    'created_by_kind="ReplicaSet"} 1\n'
    f'kube_pod_info{{namespace="shop",pod="idle-0",uid="0",node="node-2"}} 1\n'
)
LOOP = "echo $$ > {procs}; exec python3 -c 'while True: pass'"


def test_promtool_accepts_the_shipped_rules_and_their_tests() -> None:
    if shutil.which("promtool") is None:
        pytest.skip("promtool not installed (Debian package 'prometheus'; .ci/run)")
    rules = [str(DOCS / "tiptop-rules.yml"), str(DOCS / "tiptop-alerts.yml")]
    checked = subprocess.run(["promtool", "check", "rules", *rules], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 4 rules found" in checked.stdout  # the four alerts
    tested = subprocess.run(
        ["promtool", "test", "rules", str(ALERTS_TEST)], capture_output=True, text=True
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


@contextmanager
def pod_cgroup() -> Iterator[Path]:
    """The pod container's cgroup made in the v2 hierarchy (each level), removed after."""
    root = unified_root()
    if os.geteuid() != 0 or root is None:
        pytest.skip("needs root and a cgroup v2 hierarchy to make a cgroup in")
    made: list[Path] = []
    where = Path(root)
    try:
        for part in POD_PATH.split("/"):
            where = where / part
            if not where.exists():
                try:
                    where.mkdir()
                except OSError as exc:
                    pytest.skip(f"cannot make a cgroup here: {exc.strerror}")
                made.append(where)
        yield where
    finally:
        removed(*reversed(made))  # its tasks may take a moment to leave


@contextmanager
def static_metrics(text: str) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering ``text`` (kube-state-metrics' part)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_join_with_kube_pod_info_returns_the_pods_rows(tmp_path: Path) -> None:
    why = prometheus_missing()
    if why:
        pytest.skip(why)
    state = tmp_path / "host"
    rt.containerd_k8s(state, rt.ID_A, "web-7d9f", "shop", "nginx")
    with pod_cgroup() as cgroup:
        loop = subprocess.Popen(["sh", "-c", LOOP.format(procs=cgroup / "cgroup.procs")])
        try:
            args = ("-S", "sched", "--by", "cgroup", "-d", "0.5", "--runtime-root", str(state))
            with (
                serving(*args) as (_proc, address),
                static_metrics(KUBE_POD_INFO) as ksm,
            ):
                text = wait_for(address, lambda t: 'pod="web-7d9f"' in t)
                pod = {
                    labels: v
                    for (name, labels), v in samples(text).items()
                    if name == "tiptop_cpu_seconds_total" and ("pod", "web-7d9f") in labels
                }
                assert len(pod) == 1, pod
                labels = dict(next(iter(pod)))
                assert labels == {
                    "namespace": "shop",
                    "pod": "web-7d9f",
                    "container": "nginx",
                    "container_id": f"containerd://{rt.ID_A}",
                    "uid": rt.UID,
                    "unit": "",
                    "cgroup": f"k8s/pod{rt.UID}/{rt.ID_A[:12]}",
                }
                prom = Prometheus(address, tmp_path, {"kube-state-metrics": ksm})
                try:
                    join = (
                        "sum by (namespace, pod) (rate(tiptop_cpu_seconds_total[15s]))"
                        " * on (namespace, pod) group_left (node) kube_pod_info"
                    )
                    result = _until(prom, join, lambda r: len(r) == 1 and _value(r) > 0.1)
                    assert len(result) == 1, result
                    assert result[0]["metric"] == {
                        "namespace": "shop",
                        "pod": "web-7d9f",
                        "node": "node-1",
                    }
                    # one loop: at most a core, some of one on a shared machine
                    assert 0.1 < _value(result) < 1.2, result
                finally:
                    prom.close()
        finally:
            loop.kill()
            loop.wait()


def _value(result: list[dict]) -> float:
    return float(result[0]["value"][1]) if result else 0.0


def _until(
    prom: Prometheus,
    promql: str,
    ok: Callable[[list[dict[str, Any]]], bool],
    timeout: float = 40,
) -> list[dict[str, Any]]:
    """The query's result once ``ok`` holds for it, or the last one after ``timeout``."""
    end = time.monotonic() + timeout
    while True:
        result = prom.query(promql)
        if ok(result) or time.monotonic() > end:
            return result
        time.sleep(1)
