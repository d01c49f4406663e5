# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation report's checks judged in Python (module_utils/validate/checks.py), on real sysfs.

The discovery check reads what roce.fabric.rdma_facts finds in the lab VM's captured Soft-RoCE tree
(fixtures/telemetry/sysfs_rxe0_6.1.txt, rebuilt file by file) and in an empty one; the report module joins the
host checks, the switches' records and the collection's version, and names what failed.
"""

from __future__ import annotations

import os
import re

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.filter.validate import discovery_check as discovery_filter
from ansible_collections.roce.fabric.plugins.module_utils.common.version import COLLECTION_VERSION
from ansible_collections.roce.fabric.plugins.module_utils.validate import checks
from ansible_collections.roce.fabric.plugins.modules import rdma_facts, validation_report
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils.test_telemetry import RXE, build_tree
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


@pytest.fixture
def lab_vm_facts(tmp_path):
    build_tree(str(tmp_path / "sys"), corpus.read("telemetry", RXE))
    return run_module(rdma_facts.main, dict(root=str(tmp_path)))["ansible_facts"]["roce_rdma"]


@pytest.fixture
def bare_facts(tmp_path):
    return run_module(rdma_facts.main, dict(root=str(tmp_path / "bare")))["ansible_facts"]["roce_rdma"]


def test_discovery_of_the_lab_vm_s_soft_roce_port_passes_and_says_what_was_found(lab_vm_facts):
    check = checks.discovery_check(lab_vm_facts, require_rdma=True, check_mode=False)
    assert check["name"] == "discovery" and check["status"] == "passed"
    assert check["msg"] == "rxe0/1 Ethernet 2.5 Gb/s netdev enp1s0 MTU 4200 RoCE v2 GID 1 10.78.0.1; 0 GPUs"
    assert check["command"].startswith("rdma_facts")
    # Check mode changes nothing when a port is there.
    assert checks.discovery_check(lab_vm_facts, check_mode=True) == check


@pytest.mark.parametrize("require,check_mode,status", [(True, False, "failed"), (False, False, "skipped"),
                                                       (True, True, "skipped"), (False, True, "skipped")])
def test_no_port_fails_only_when_required_and_never_in_check_mode(bare_facts, require, check_mode, status):
    check = checks.discovery_check(bare_facts, require_rdma=require, check_mode=check_mode)
    assert check["status"] == status
    assert check["msg"].endswith("no active RDMA port (0 RDMA devices); 0 GPUs")
    assert check["msg"].startswith("check mode: no active RDMA port yet") == check_mode


def test_the_filter_refuses_what_is_not_facts_and_reads_booleans_as_ansible_does(bare_facts):
    with pytest.raises(AnsibleFilterError, match="roce_rdma facts"):
        discovery_filter(None)
    # -e validate_require_rdma=false arrives as a string.
    assert discovery_filter(bare_facts, "false", False)["status"] == "skipped"
    assert discovery_filter(bare_facts, "yes", "no")["status"] == "failed"


@pytest.mark.parametrize("statuses,verdict", [([], "skipped"), (["skipped"], "skipped"), (["passed", "skipped"], "passed"),
                                              (["passed", "failed"], "failed"), (["passed", "bogus"], "failed")])
def test_a_host_s_verdict(statuses, verdict):
    assert checks.status_of([{"name": "c%d" % i, "status": s} for i, s in enumerate(statuses)]) == verdict


def test_the_collection_version_is_galaxy_yml_s():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        declared = re.search(r"^version:\s*(\S+)\s*$", handle.read(), re.M).group(1)
    assert COLLECTION_VERSION == declared


def test_the_report_judges_hosts_adds_switches_and_names_what_failed(tmp_path, lab_vm_facts, bare_facts):
    plan = run_module(validation_report.main, dict(mode="plan", hosts={"node1": {"ports": lab_vm_facts["ports"]},
                                                                       "node2": {"ports": bare_facts["ports"]}},
                                                   tests=["rping"]))["plan"]
    switch = {"name": "qos switch", "status": "failed", "msg": "trust is pcp, the contract says dscp",
              "command": "roce.fabric.onyx_roce (check mode)"}
    args = dict(mode="write", plan=plan, dest=str(tmp_path / "report"), results=[],
                host_checks={"node1": [checks.discovery_check(lab_vm_facts)], "node2": [checks.discovery_check(bare_facts)]},
                switches={"sw1": switch, "sw2": None}, generated={"time": "2026-11-27T21:00:00Z", "inventory": "lab"})
    # node2's Soft-RoCE link deleted (no RDMA device): the full matrix has no pair to test, node2 is named.
    assert plan["tests"] == [] and plan["hosts_without_rdma"] == ["node2"]
    result = run_module(validation_report.main, args)
    hosts = result["report"]["hosts"]
    assert hosts["node1"]["status"] == "passed" and hosts["node2"]["status"] == "failed"
    assert hosts["sw1"] == {"status": "failed", "checks": [switch]} and "sw2" not in hosts
    assert result["report"]["generated"]["collection_version"] == COLLECTION_VERSION
    assert result["passed"] is False
    assert result["failures"] == ["node2 discovery", "sw1 qos switch"]
    assert result["report"]["summary"]["failed"] == 2 and result["report"]["summary"]["passed"] == 1


def test_records_of_the_wrong_shape_are_refused_and_nothing_is_written(tmp_path):
    plan = run_module(validation_report.main, dict(mode="plan", hosts={}, tests=["rping"]))["plan"]
    dest = tmp_path / "report"
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=str(dest),
                                                     host_checks={"node1": "passed"}, switches={"sw1": ["x"]}))
    assert result["failed"] is True and "host_checks.node1, switches.sw1" in result["msg"]
    assert not dest.exists()
