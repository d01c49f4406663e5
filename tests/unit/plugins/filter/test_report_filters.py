# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report records' filters as Ansible loads them: the switch's QoS check, NCCL's traffic class, the NICs' QoS
checks, and the MPI run's addresses and known-hosts names."""

from __future__ import annotations


def test_the_switch_s_qos_check_record():
    from ansible_collections.roce.fabric.plugins.filter.roce_qos import FilterModule
    check = FilterModule().filters()["roce_switch_check"]
    same = {"changed": False, "failed": False, "commands": []}
    passed = check(same, "sw1", "onyx", "lossless", {})
    assert passed["status"] == "passed" and passed["msg"] == (
        "sw1 agrees with the contract: roce lossless (trust L3, DSCP 26 on priority 3, PFC on priority 3, ECN on its "
        "traffic class)")
    assert passed["command"] == "roce.fabric.onyx_roce (check mode: show roce, show running-config) on sw1"
    differs = {"changed": True, "failed": False, "commands": ["roce lossless", "interface ethernet 1/1 qos trust L3"]}
    failed = check(differs, "sw1", "onyx", "lossless", {})
    assert failed["status"] == "failed" and failed["msg"] == (
        "sw1 differs from the RoCE QoS contract: roce lossless; interface ethernet 1/1 qos trust L3 would fix it "
        "(run playbooks/switch.yml, role roce.fabric.roce_switch)")
    in_check = check(differs, "leaf1", "nvue", "lossless", {}, True)
    assert in_check["status"] == "skipped" and in_check["msg"].startswith("check mode: what the switch stage")
    assert in_check["command"].startswith("roce.fabric.nvue_roce (check mode: GET /nvue_v1/?rev=applied")
    unreachable = {"unreachable": True, "changed": False, "msg": "timed out connecting to 192.0.2.1:22"}
    assert check(unreachable, "sw1", "onyx", "lossless", {})["msg"] == (
        "sw1: the switch could not be read: timed out connecting to 192.0.2.1:22")
    neither = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    assert check(neither, "sw9", "onyx", "lossless", {}, False, "eos")["msg"] == (
        "sw9: the switch could not be read: its OS is not one this collection configures (roce_switch_os: eos)")
    by_hand = check(same, "sw1", "onyx", None, {"mode": "lossy"})
    assert by_hand["status"] == "skipped" and "configured by hand" in by_hand["msg"]
    lossy = check(same, "sw1", "onyx", "lossy", {"mode": "lossy"})
    assert ", no PFC" in lossy["msg"]


def test_the_nccl_traffic_class_against_the_contract_s_tos():
    from ansible_collections.roce.fabric.plugins.filter.roce_qos import FilterModule  # pylint: disable=import-outside-toplevel

    check = FilterModule().filters()["roce_qos_nccl_check"]
    tos = FilterModule().filters()["roce_qos"]({})["roce_tos"]
    assert check({"NCCL_IB_TC": str(tos)}, {})["status"] == "passed"
    assert check({"NCCL_IB_TC": tos}, {})["msg"] == "NCCL_IB_TC=%s in the NCCL environment; the contract's ToS is %s" % (tos, tos)
    unset = check({}, {})
    assert unset["status"] == "failed" and unset["msg"].startswith("NCCL_IB_TC=unset") and "validate_nccl_env_extra" in unset["msg"]
    assert check({"NCCL_IB_TC": "0"}, {})["status"] == "failed"
    nics = FilterModule().filters()["nic_qos_checks"]
    assert nics({}, False) == [] and nics({"results": [{"item": {"netdev": "x"}, "changed": False, "after": {}}]})[0]["status"] == "passed"
    # No NIC read in this run: a loop registered earlier in the play (the host stage's) gives no check.
    earlier = {"results": [{"item": {"netdev": "x"}, "changed": True, "after": {}}]}
    assert nics(earlier, False, []) == [] and nics(earlier, False, [{"netdev": "x"}])[0]["name"] == "qos x"


def test_mpi_addresses_are_each_host_s_first_roce_address():
    from ansible_collections.roce.fabric.plugins.filter.validate import mpi_addresses  # pylint: disable=import-outside-toplevel

    hostvars = {"node1": {"ansible_facts": {"roce_rdma": {"ports": [{"ipv4": None}, {"ipv4": "10.78.0.1"}]}}},
                "node2": {"ansible_facts": {"roce_rdma": {"ports": []}}}, "node3": {}}
    assert mpi_addresses(["node1", "node2", "node3", "gone"], hostvars) == ["10.78.0.1", "", "", ""]


def test_host_addresses_are_the_rdma_ports_and_gids_then_ansible_host_each_once():
    from ansible_collections.roce.fabric.plugins.filter.validate import validate_host_addresses  # pylint: disable=import-outside-toplevel

    gids = [{"index": 1, "ipv4": None}, {"index": 3, "ipv4": "10.78.0.1"}, {"index": 5, "ipv4": "10.79.0.1"}]
    facts = {"roce_rdma": {"ports": [{"ipv4": "10.78.0.1"}], "devices": [{"ports": [{"gids": gids}]}]}}
    hostvars = {"node1": {"ansible_host": "192.0.2.11", "ansible_facts": facts},
                "node2": {"ansible_host": "192.0.2.12"}, "node3": {}}
    assert validate_host_addresses(["node1", "node2", "node3", "gone"], hostvars) == {
        "node1": ["10.78.0.1", "10.79.0.1", "192.0.2.11"], "node2": ["192.0.2.12"], "node3": []}


def test_mpi_known_hosts_are_names_and_roce_addresses_once():
    from ansible_collections.roce.fabric.plugins.filter.validate import mpi_known_hosts  # pylint: disable=import-outside-toplevel

    hostvars = {"node1": {"ansible_facts": {"roce_rdma": {"ports": [{"ipv4": "10.78.0.1"}, {"ipv4": None},
                                                                    {"ipv4": "10.78.0.1"}]}}},
                "node2": {"ansible_facts": {"roce_rdma": {"ports": [{"ipv4": "10.78.0.2"}]}}}}
    assert mpi_known_hosts(["node1", "node2", "node3"], hostvars) == ["node1", "10.78.0.1", "node2", "10.78.0.2", "node3"]


def test_switch_checks_leave_out_the_switches_that_were_not_read():
    from ansible_collections.roce.fabric.plugins.filter.validate import switch_checks  # pylint: disable=import-outside-toplevel

    record = {"name": "qos switch", "status": "passed", "msg": "sw1 agrees with the contract", "command": "x"}
    hostvars = {"sw1": {"roce_switch_check": record}, "sw2": {"ansible_host": "192.0.2.2"}}
    assert switch_checks(["sw1", "sw2", "sw3"], hostvars) == {"sw1": record}
    assert switch_checks([], hostvars) == {}
