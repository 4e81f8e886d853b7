"""What docs/prometheus ships works together (issue 31): the screen ``exporter.yaml`` run
for real on this machine exports every metric and label the recording rules and the
Grafana dashboard read (but those marked hardware-only where there is no PMU), and every
counter of the screen (the labels of ``--by comm`` and ``--by cgroup`` together: the
dashboard's ``namespace`` and ``pod`` variables are ``--by cgroup``'s); hardware series are
absent without a PMU; the series summed for ``--by pid`` carry the same labels as the
others."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

from tests.helpers import TIPTOP, hardware_pmu_error
from tests.system.exporter_support import samples
from tiptop import vocab
from tiptop.exporter.aggregate import event_name, metrics_for
from tiptop.screens.loader import builtin_screens, load_file
from tiptop.screens.model import Target

DOCS = Path(__file__).resolve().parents[2] / "docs" / "prometheus"
SCREEN = DOCS / "exporter.yaml"
#: Labels Prometheus itself gives every scraped series (the target's), not the exporter.
TARGET_LABELS = {"instance", "job"}
#: How the dashboard marks a panel that needs a hardware PMU, and the rules a group.
HARDWARE_ONLY, HARDWARE_GROUP = "Hardware-only:", "-hardware"
#: Likewise for a panel or group that needs delay accounting (kernel.task_delayacct=1).
DELAYACCT_ONLY, DELAYACCT_GROUP = "Delay-accounting-only:", "-delayacct"


def run_exporter(tmp_path: Path, *args: str) -> tuple[str, str]:
    """The exposition ``--textfile`` wrote after two refreshes of the shipped screen, and
    tiptop's stderr."""
    out = tmp_path / "shipped.prom"
    argv = [
        *TIPTOP,
        "--textfile",
        str(out),
        "-W",
        str(SCREEN),
        "-S",
        "exporter",
        "-d",
        "0.3",
        "-n",
        "2",
        *args,
    ]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return out.read_text(), r.stderr


def uses(expr: str) -> tuple[set[str], set[str]]:
    """The metric names and the label names a PromQL expression reads (by/without
    clauses, matchers, label_values)."""
    metrics = set(re.findall(r"(?<![:\w])tiptop_[a-z_]+\b", expr))
    labels = set()
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        labels |= {x.strip() for x in group.split(",") if x.strip()}
    labels |= set(re.findall(r"[{,]\s*([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", expr))
    labels |= set(re.findall(r"label_values\(\s*\w+\s*,\s*(\w+)\s*\)", expr))
    return metrics, labels


def shipped_queries() -> list[tuple[str, str, str]]:
    """``(where, needs, expr)`` for every query the dashboard and rules hold; ``needs`` is
    ``hardware``, ``delayacct`` or empty."""
    dash = json.loads((DOCS / "grafana-dashboard.json").read_text())
    out = []
    for panel in dash["panels"]:
        text = panel.get("description", "")
        needs = "hardware" if text.startswith(HARDWARE_ONLY) else ""
        needs = "delayacct" if text.startswith(DELAYACCT_ONLY) else needs
        out += [(f"panel {panel['title']!r}", needs, t["expr"]) for t in panel["targets"]]
    for var in dash["templating"]["list"]:
        if var.get("type") == "query":
            out.append((f"variable {var['name']}", "", var["definition"]))
    rules = yaml.safe_load((DOCS / "tiptop-rules.yml").read_text())
    for group in rules["groups"]:
        name = group["name"]
        needs = "hardware" if name.endswith(HARDWARE_GROUP) else ""
        needs = "delayacct" if name.endswith(DELAYACCT_GROUP) else needs
        out += [(f"rule {r['record']}", needs, r["expr"]) for r in group["rules"]]
    return out


def topdown_metrics() -> set[str]:
    """The metrics of the built-in screen topdown (Intel perf metrics, Icelake and later)."""
    screens = builtin_screens(Target("x86", "06_7E"))
    return {m.name for s in screens if s.name == "topdown" for m in metrics_for(s.counters)}


def test_the_shipped_screen_rules_and_dashboard_work_together(tmp_path: Path) -> None:
    text, err = run_exporter(tmp_path)
    assert "Unused counter" not in err, err  # every counter declared is counted
    exported: dict[str, set[str]] = {}
    # The labels of both groupings: the dashboard's namespace and pod are --by cgroup's,
    # counted per task: the cgroup walk (root's default on cgroup v2) has no wait or I/O
    # series, nor event counts of the root cgroup's processes (docs/exporter.md, "Walking
    # the cgroup tree"); tests/system/test_cgroup_walk.py checks it.
    by_cgroup = run_exporter(tmp_path, "--by", "cgroup", "--task-counters")[0]
    for name, pairs in [*samples(text), *samples(by_cgroup)]:
        exported.setdefault(name, set()).update(k for k, _v in pairs)
    no_pmu = hardware_pmu_error() is not None
    # Every counter of the screen is exported; a hardware one without a PMU is absent.
    (screen,) = load_file(str(SCREEN), Target()).screens
    assert [c.alias for c in screen.counters] == list(
        yaml.safe_load(SCREEN.read_text())["screens"][0]["counters"]
    )
    software = set(vocab.SOFTWARE_NAME.values())
    for spec, family in zip(screen.counters, metrics_for(screen.counters), strict=True):
        if event_name(spec) in software or not no_pmu:
            assert family.name in exported, (spec.alias, family.name, sorted(exported))
        else:
            assert family.name not in exported, family.name  # absent, not zero
    assert "tiptop_page_faults_total" in exported
    # Every metric and label the dashboard and the rules read is exported.
    checked = 0
    no_delayacct = Path("/proc/sys/kernel/task_delayacct").read_text().strip() != "1"
    for where, needs, expr in shipped_queries():
        metrics, labels = uses(expr)
        assert metrics, (where, expr)
        if needs == "delayacct" and no_delayacct:  # absent, not zero, without it
            assert not metrics & exported.keys(), (where, metrics & exported.keys())
            continue
        hardware = needs == "hardware"
        if hardware and no_pmu:
            assert not metrics & exported.keys(), (where, metrics & exported.keys())
            continue
        if hardware and not metrics <= exported.keys():  # the topdown screen's own events
            assert metrics <= topdown_metrics(), (where, metrics - topdown_metrics())
            continue
        for metric in metrics:
            assert metric in exported, (where, metric)
            missing = labels - TARGET_LABELS - exported[metric]
            assert not missing, (where, metric, missing)
            checked += 1
    assert checked >= 6, checked


def test_summed_series_carry_the_labels_of_the_others(tmp_path: Path) -> None:
    text, _err = run_exporter(tmp_path, "--by", "pid", "--top", "3")
    fams: dict[str, list[dict[str, str]]] = {}
    for (name, labels), _value in samples(text).items():
        fams.setdefault(name, []).append(dict(labels))
    assert "tiptop_page_faults_total" in fams
    for name, series in fams.items():
        assert len({tuple(sorted(s)) for s in series}) == 1, name  # the same label names
        for s in series:
            assert all(s.values()), (name, s)  # no empty cgroup, user...
        other = [s for s in series if s.get("pid") == "other"]
        if "pid" in series[0]:  # one summed series (per event for the event gauges)
            assert len(other) == len({s.get("event") for s in series}), (name, other)
            assert {s["cgroup"] for s in other} == {"other"}, (name, other)
