# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Grafana dashboard of the RDMA exporter (roles/rdma_exporter/files/rdma-fabric-dashboard.json).

Checked against the dashboard schema of the version it declares: schemaVersion 36, Grafana's Dashboard kind
(grafana/grafana kinds/dashboard/dashboard_kind.cue, lineage 0.0): the field types and enumerations there
(style, graphTooltip, time, templating variable types and hide values, panel type, id, gridPos bounds,
fieldConfig, options, transformations). Every query names only metrics the exporter writes, and where Debian's
promtool is installed every query parses as PromQL.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.telemetry import rdma_metrics
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
DASHBOARD = os.path.join(REPO, "roles", "rdma_exporter", "files", "rdma-fabric-dashboard.json")
VARIABLE_TYPES = ("query", "adhoc", "constant", "datasource", "interval", "textbox", "custom", "system")


@pytest.fixture(scope="module")
def dashboard():
    with open(DASHBOARD) as handle:
        return json.load(handle)


def test_the_dashboard_follows_the_schema_it_declares(dashboard):
    assert dashboard["schemaVersion"] == 36
    assert dashboard["style"] in ("light", "dark") and isinstance(dashboard["editable"], bool)
    assert dashboard["graphTooltip"] in (0, 1, 2)
    assert isinstance(dashboard["time"]["from"], str) and isinstance(dashboard["time"]["to"], str)
    assert isinstance(dashboard["title"], str) and 8 <= len(dashboard["uid"]) <= 40
    assert all(isinstance(t, str) for t in dashboard["tags"])
    for variable in dashboard["templating"]["list"]:
        assert variable["type"] in VARIABLE_TYPES and variable["name"] and variable["hide"] in (0, 1, 2), variable
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i >= 0 for i in ids)
    for panel in dashboard["panels"]:
        assert isinstance(panel["type"], str) and panel["type"], panel
        grid = panel["gridPos"]
        assert grid["h"] > 0 and 0 < grid["w"] <= 24 and 0 <= grid["x"] < 24 and grid["y"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        assert isinstance(panel["options"], dict) and isinstance(panel["transformations"], list)
        assert isinstance(panel["fieldConfig"]["defaults"], dict) and isinstance(panel["fieldConfig"]["overrides"], list)
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and all(t["expr"] for t in panel["targets"])


def exporter_metric_names():
    """Every sample name the exporter writes for the captured Soft-RoCE tree and the public mlx5 ethtool page."""
    rxe = dict(devices=[dict(name="rxe0", driver="rxe", ports=[dict(
        port=1, netdev="enp1s0", link_layer="Ethernet", state="4: ACTIVE", phys_state="5: LinkUp", rate="2.5 Gb/sec (1X SDR)",
        counters={"port_xmit_data": "1", "port_rcv_data": "1"},
        hw_counters=dict((name, "1") for names in [s for _n, _h, s in rdma_metrics.COMMON_HW_COUNTERS] for name in names),
        gids=2)])], netdevs={"enp1s0": dict(mtu="4200", statistics=dict((s, "1") for s in rdma_metrics.NETDEV_STATISTICS_FILES))})
    # The public mlx5 page has global pause and no RDMA byte counters: add the names the mlx5 kernel documentation
    # (counters.rst) gives them, so every family the exporter can write is known here.
    mlx5 = corpus.read("counters", "ethtool_S_mlx5_6.5_netdev.txt") + "\n".join(
        ["", "     rx_vport_rdma_unicast_bytes: 1", "     rx_prio3_pause: 1", ""])
    families = rdma_metrics.metric_families(rxe, {"enp1s0": mlx5})
    names = set()
    for family in families:
        names.add(family["name"] + ("_total" if family["type"] == "counter" else ""))
    return names | {"rdma_exporter_devices", "rdma_exporter_ethtool_errors", "rdma_exporter_scrape_duration_seconds"}


def expressions(dashboard):
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def test_every_query_names_metrics_the_exporter_writes(dashboard):
    known = exporter_metric_names()
    for expr in expressions(dashboard) + [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]:
        for name in re.findall(r"\b(rdma_[a-z0-9_]+)\b", expr):
            assert name in known, (name, expr)


def test_every_query_parses_as_promql(dashboard, tmp_path):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool (Debian's prometheus package) is not installed here; tests/run setup installs it")
    rules = ["groups:", "  - name: dashboard", "    rules:"]
    for index, expr in enumerate(expressions(dashboard)):
        # Grafana's variables, as Grafana fills them in.
        concrete = expr.replace("$__rate_interval", "1m").replace("$instance", ".*").replace("$roce_priority", "3")
        rules += ["      - record: dashboard:expr%d" % index, "        expr: %s" % json.dumps(concrete)]
    path = tmp_path / "rules.yml"
    path.write_text("\n".join(rules) + "\n")
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
