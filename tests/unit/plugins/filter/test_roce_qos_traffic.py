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
