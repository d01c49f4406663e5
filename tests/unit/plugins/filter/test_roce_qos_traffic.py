# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roce_qos_traffic filter as Ansible loads it: the contract in, a report check out."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.filter.roce_qos import FilterModule
from ansible_collections.roce.fabric.plugins.module_utils.qos import counters
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

roce_qos_traffic = FilterModule().filters()["roce_qos_traffic"]


def vm_snapshot(when):
    return dict(driver="virtio_net",
                ethtool=counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_virtio_%s.txt" % when)),
                hw_counters=counters.parse_counter_lines(corpus.read("counters", "hw_counters_rxe_%s.txt" % when)))


def test_the_filter_takes_the_contract_and_refuses_what_is_not_a_snapshot():
    check = roce_qos_traffic("enp1s0", vm_snapshot("before"), vm_snapshot("after"), {},
                             capture=dict(packets=40, dscp={"26": 40}))
    assert check["status"] == "passed" and "DSCP 26" in check["msg"]
    check = roce_qos_traffic("enp1s0", {}, {}, {"roce_dscp": 24, "roce_priority": 3}, capture=dict(packets=40, dscp={"26": 40}))
    assert check["status"] == "failed"
    with pytest.raises(AnsibleFilterError, match="rdma_counters result"):
        roce_qos_traffic("enp1s0", None, {}, {})
    with pytest.raises(AnsibleFilterError):
        roce_qos_traffic("enp1s0", {}, {}, {"roce_dscp": 99})


roce_qos_traffic_checks = FilterModule().filters()["roce_qos_traffic_checks"]


def registered(*results):
    """A registered loop as Ansible returns it: one result per item, the item under "item"."""
    return {"changed": False, "msg": "All items completed", "results": list(results)}


def test_the_window_s_checks_equal_the_single_port_judge_and_a_port_that_was_not_read_fails():
    """What the validate role records per port is what the traffic judge says on the same snapshots (no drift);
    the capture comes from the slurped count file, as base64 JSON."""
    import base64  # pylint: disable=import-outside-toplevel
    import json  # pylint: disable=import-outside-toplevel

    vm = {"netdev": "enp1s0", "device": "rxe0"}
    unread = {"netdev": "enp2s0", "device": "rxe1"}
    before = registered(dict(vm_snapshot("before"), item=vm, failed=False, changed=False),
                        dict(item=unread, failed=True, msg="no such netdev: enp2s0"))
    after = registered(dict(vm_snapshot("after"), item=vm, failed=False, changed=False),
                       dict(item=unread, failed=True, msg="no such netdev: enp2s0"))
    capture = {"packets": 40, "dscp": {"26": 40}}
    captures = registered({"item": vm, "content": base64.b64encode(json.dumps(capture).encode()).decode(), "encoding": "base64"},
                          {"item": unread, "failed": True, "msg": "file not found"})
    checks = roce_qos_traffic_checks(before, after, {}, captures)
    single = roce_qos_traffic("enp1s0", vm_snapshot("before"), vm_snapshot("after"), {}, capture=capture)
    assert [c["name"] for c in checks] == ["traffic enp1s0", "traffic enp2s0"]
    assert (checks[0]["status"], checks[0]["msg"]) == (single["status"], single["msg"]) == ("passed", single["msg"])
    assert checks[0]["command"].endswith("before and after + wire capture of UDP 4791")
    assert checks[1] == {"name": "traffic enp2s0", "status": "failed", "command": "roce.fabric.rdma_counters on enp2s0",
                         "msg": "enp2s0: the counters could not be read: no such netdev: enp2s0"}
    # Without captures (the block that takes them skipped) the port is judged on its counters alone.
    alone = roce_qos_traffic_checks(before, after, {}, None)[0]
    assert alone["status"] == roce_qos_traffic("enp1s0", vm_snapshot("before"), vm_snapshot("after"), {})["status"] == "skipped"
    assert "wire capture" not in alone["command"]
    garbled = registered({"item": vm, "content": "bm90IGpzb24="})  # "not json"
    assert roce_qos_traffic_checks(before, after, {}, garbled)[0]["status"] == "skipped"
    with pytest.raises(AnsibleFilterError, match="registered loop"):
        roce_qos_traffic_checks({}, after, {})
