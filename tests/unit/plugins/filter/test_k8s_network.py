# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_network filters as Ansible loads them."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.filter.k8s_network import FilterModule


FILTERS = FilterModule().filters()


def test_filters_are_registered():
    assert sorted(FILTERS) == ["k8s_network_input_errors", "k8s_network_object_errors", "k8s_network_pending", "k8s_nodes_missing_resources"]


def test_input_errors_filter():
    inputs = {"resource_prefix": "intel.com", "sriov_vendor": "15b3", "sriov_dev_id": "101c",
              "sriov_resources": [{"pf_name": "enp5s0", "vlan_id": 4095, "res_name": "a", "network_name": "a", "ipam_type": "dhcp"}]}
    assert FILTERS["k8s_network_input_errors"](inputs) == ["sriov_resources[0]: vlan_id 4095 is out of range 0-4094 (0 means untagged)"]


def test_filters_refuse_wrong_types():
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_network_input_errors"]([])
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_network_object_errors"]({})
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_nodes_missing_resources"]({}, ["a"])
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_network_pending"]([], None)


def test_nodes_filter_minimum_from_string():
    nodes = [{"metadata": {"name": "w1"}, "status": {"allocatable": {"r/a": "2"}}}]
    assert FILTERS["k8s_nodes_missing_resources"](nodes, ["r/a"], "3")["missing"] == {"w1": ["r/a"]}
