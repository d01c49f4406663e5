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


def test_the_traffic_window_watches_the_lab_vm_s_port_and_captures_it_as_software_rdma(lab_vm_facts):
    from ansible_collections.roce.fabric.plugins.filter.validate import validate_traffic_ports
    ports = validate_traffic_ports(lab_vm_facts, "auto")
    assert ports["watch"] == [{"netdev": "enp1s0", "device": "rxe0", "port": 1}]  # roce.fabric.traffic_window's ports
    assert ports["capture"] == ["enp1s0"]  # rxe0 is Soft-RoCE: its packets go through enp1s0
    assert validate_traffic_ports(lab_vm_facts, "never") == {"watch": ports["watch"], "capture": []}
    # A ConnectX sends its RoCE packets past the kernel: auto does not capture it, always does.
    hardware = dict(lab_vm_facts, devices=[dict(d, software=False) for d in lab_vm_facts["devices"]])
    assert validate_traffic_ports(hardware, "auto")["capture"] == []
    assert validate_traffic_ports(hardware, "always")["capture"] == ["enp1s0"]
    # One entry per netdev (a dual-port device's second port on the same netdev is not watched twice).
    doubled = dict(lab_vm_facts, ports=lab_vm_facts["ports"] * 2)
    assert validate_traffic_ports(doubled, "auto")["watch"] == ports["watch"]
    assert validate_traffic_ports(bare_facts_of(), "auto") == {"watch": [], "capture": []}
    with pytest.raises(AnsibleFilterError, match="auto, always or never"):
        validate_traffic_ports(lab_vm_facts, "sometimes")


def bare_facts_of():
    return {"ports": [], "devices": []}


def test_the_nccl_environment_takes_the_tests_tos_and_the_operator_s_variables_last(lab_vm_facts):
    from ansible_collections.roce.fabric.plugins.filter.validate import validate_nccl_env
    discovered = lab_vm_facts["nccl_env"]
    assert discovered["NCCL_IB_HCA"] == "=rxe0:1"
    assert validate_nccl_env(discovered, None, {}) == discovered
    with_tc = validate_nccl_env(discovered, 106, {})
    assert with_tc == dict(discovered, NCCL_IB_TC="106")
    assert validate_nccl_env(discovered, 106, {"NCCL_IB_TC": "96", "NCCL_DEBUG": "INFO"}) == dict(
        discovered, NCCL_IB_TC="96", NCCL_DEBUG="INFO")
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        validate_nccl_env(discovered, None, ["NCCL_DEBUG=INFO"])
    # With the RoCE QoS contract: its own class passes, another is refused before anything runs.
    contract = {"roce_priority": 3, "roce_dscp": 26}
    assert validate_nccl_env(discovered, 106, {"NCCL_IB_TC": "106"}, contract)["NCCL_IB_TC"] == "106"
    assert validate_nccl_env(discovered, 106, {}, contract) == with_tc
    with pytest.raises(AnsibleFilterError, match=r"^validate \(NCCL\): nccl_ib_tc is 96, the contract \(roce_fabric_qos\) "
                       r"gives 106 \(validate_nccl_env_extra\); nothing was run$"):
        validate_nccl_env(discovered, 106, {"NCCL_IB_TC": "96"}, contract)


def test_the_mpi_run_takes_the_hosts_with_gpus_and_names_what_stops_it(lab_vm_facts):
    from ansible_collections.roce.fabric.plugins.filter.validate import validate_mpi_run
    gpu = {"index": 0, "numa_node": 1}
    with_gpus = dict(lab_vm_facts, gpus=[gpu, dict(gpu, index=1)])
    hostvars = {"node1": {"ansible_facts": {"roce_rdma": with_gpus}},
                "node2": {"ansible_facts": {"roce_rdma": dict(with_gpus, ports=[dict(with_gpus["ports"][0], ipv4="10.78.0.2")])}},
                "node3": {"ansible_facts": {"roce_rdma": lab_vm_facts}}}  # no GPU: not in the run unless named
    run = validate_mpi_run(["node1", "node2", "node3"], hostvars, [], True)
    assert run == {"hosts": ["node1", "node2"], "first": "node1", "addresses": ["10.78.0.1", "10.78.0.2"],
                   "problems": [], "gpus": 2, "numa_nodes": [1, 1], "ifname": "enp1s0"}
    # The lab's run: named hosts without GPUs, ranks and NUMA nodes given.
    named = validate_mpi_run(["node1", "node3"], hostvars, ["node3", "node1"], "yes", 1, [0])
    assert (named["hosts"], named["first"], named["gpus"], named["numa_nodes"]) == (["node3", "node1"], "node3", 1, [0])
    problems = validate_mpi_run(["node1"], dict(hostvars, node4={}), ["node1", "node4", "node5"], "absent",
                                benchmark="pytorch", user="roce-mpi")["problems"]
    assert problems == [
        "validate_nccl_mpi_hosts names hosts that are not in this play (node4, node5): MPI runs on hosts whose "
        "discovery it has",
        "validate_mpi_ssh=true is needed for the SSH trust between the hosts",
        "validate_mpi_ssh_user roce-mpi runs mpirun, which works with validate_nccl_benchmark nccl_tests only "
        "(got pytorch)"]
    without_port = dict(hostvars, node1={"ansible_facts": {"roce_rdma": dict(with_gpus, ports=[])}})
    assert validate_mpi_run(["node1", "node2"], without_port, [], True)["problems"] == [
        "no active RDMA port with an IPv4 address on node1"]
    assert validate_mpi_run(["node3"], hostvars, [], True)["problems"][0].startswith("no host to run on")
    # The role's call: refused, naming the problems.
    with pytest.raises(AnsibleFilterError, match=r"^validate_nccl_launcher=mpi: no host to run on: .*; nothing was run$"):
        validate_mpi_run(["node3"], hostvars, [], True, refuse=True)
    assert validate_mpi_run(["node1", "node2"], hostvars, [], True, refuse=True)["problems"] == []
    # The PyTorch benchmark's ranks need GPUs (and its script, copied to the hosts with GPUs).
    assert validate_mpi_run(["node1", "node3"], hostvars, ["node3", "node1"], True, 1, [0], "auto")["problems"] == [
        "validate_nccl_benchmark auto (the PyTorch benchmark where nccl-tests is missing) needs GPUs on every host of "
        "the MPI run: discovery found none on node3"]


def test_an_mpi_run_that_returned_no_records_is_one_failed_check():
    from ansible_collections.roce.fabric.plugins.filter.validate import validate_mpi_checks
    record = {"name": "nccl all_reduce (mpi, 2 hosts)", "status": "passed", "msg": "x", "command": "mpirun"}
    assert validate_mpi_checks({"checks": [record]}) == [record]
    assert validate_mpi_checks({"failed": True, "msg": "launcher=mpi: malformed MPI host '10.78.0.2;reboot'"}) == [
        {"name": "nccl (mpi)", "status": "failed", "msg": "launcher=mpi: malformed MPI host '10.78.0.2;reboot'",
         "command": ""}]
    assert validate_mpi_checks({"skipped": True})[0]["msg"] == "not run"


def test_mpi_trust_peers_reads_each_host_s_key_result_and_refuses_a_key_from_anywhere():
    from ansible_collections.roce.fabric.plugins.filter.validate import mpi_trust_peers
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5Bw6n6DqXh0vJ2pZP0cW8kq4m0Zz1vYl0sG2l9xJwq roce-fabric-mpi@node1"
    facts = {"roce_rdma": {"ports": [{"ipv4": "10.78.0.1"}, {"ipv4": None}]}}
    hostvars = {"node1": {"ansible_facts": facts, "validate_mpi_key": {"public_key": key, "host_key": key}},
                "node2": {"ansible_facts": {"roce_rdma": {"ports": []}}, "validate_mpi_key": {"changed": True}},
                "node3": {"ansible_facts": {"roce_rdma": {"ports": [{"ipv4": "10.78.0.3"}]}}}}
    # node2 has no key yet (check mode on a fresh host), node3 none registered: left out.
    assert mpi_trust_peers(["node1", "node2", "node3"], hostvars, command="/bin/true") == [
        {"name": "node1", "addresses": ["10.78.0.1"], "public_key": key, "host_key": key,
         "key_options": 'from="10.78.0.1",restrict,command="/bin/true"'}]
    assert mpi_trust_peers(["node1", "node2"], hostvars, keyed=False) == [
        {"name": "node1", "addresses": ["10.78.0.1"]}, {"name": "node2", "addresses": []}]
    hostvars["node2"]["validate_mpi_key"] = {"public_key": key.replace("node1", "node2")}
    with pytest.raises(AnsibleFilterError, match="node2 has no IPv4 address.*no authorized_keys file was changed"):
        mpi_trust_peers(["node1", "node2"], hostvars)
    assert [p["name"] for p in mpi_trust_peers(["node1", "node2"], hostvars, extra=["10.0.0.0/8"])] == ["node1", "node2"]


def test_the_side_outcome_filter_as_ansible_loads_it():
    from ansible_collections.roce.fabric.plugins.filter.validate import FilterModule
    outcome = FilterModule().filters()["validate_side_outcome"]
    part = {"role": "client", "test": {"id": "rping:a->b"}, "args": {}}
    client = {"passed": False, "cause": "timeout", "msg": "stopped at 60 s", "command": "rping -c"}
    assert outcome(part, {"skipped": True}, client, {"skipped": True})[0]["cause"] == "timeout"
    assert outcome({"role": "none", "args": {}}, None, None, None) == []
    with pytest.raises(AnsibleFilterError):
        outcome("client")


def test_a_play_holding_part_of_the_cabled_fleet_is_refused_before_anything_runs():
    """The role's first check (validate_partial_problem): the same judgement as the plan's, on the controller."""
    from ansible_collections.roce.fabric.plugins.filter.validate import validate_partial_problem
    cabling = dict(("gpu%03d" % n, {"ens1f0np0": dict(switch="leaf%d" % (n // 32), port="swp%d" % (n % 32 + 1))})
                   for n in range(256))
    problem = validate_partial_problem(cabling, ["gpu%03d" % n for n in range(64)])
    assert problem.startswith("this play holds 64 of the 256 hosts the cabling plan (validate_cabling) names; "
                              "gpu064, gpu065, gpu066, gpu067, gpu068 and 187 more are not in it")
    assert validate_partial_problem(cabling, ["gpu%03d" % n for n in range(64)], "plan") == ""
    assert validate_partial_problem(cabling, list(cabling) + ["login1"]) == ""
    assert validate_partial_problem({}, ["gpu000"]) == "" and validate_partial_problem(None, ["gpu000"]) == ""
    assert validate_partial_problem(cabling, ["node1", "node2"]) == ""  # another fleet's plan
    with pytest.raises(AnsibleFilterError):
        validate_partial_problem(["gpu000"], ["gpu000"])
