# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the k8s_rdma_network role: inputs, rendered objects, CNI JSON, node resources."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.k8s import network as k8s

DEEPOPS = {
    "resource_prefix": "intel.com",
    "sriov_vendor": "15b3",
    "sriov_dev_id": "1018",
    "sriov_num_vf": 8,
    "sriov_ipam_type": "dhcp",
    "sriov_resources": [
        {"pf_name": "enp5s0", "vlan_id": 111, "res_name": "sriov_111", "network_name": "sriov111"},
        {"pf_name": "enp6s0", "vlan_id": 112, "res_name": "sriov_112", "network_name": "sriov112"},
    ],
}


def with_change(path, value):
    inputs = copy.deepcopy(DEEPOPS)
    target = inputs
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return inputs


def test_deepops_inputs_are_valid():
    assert k8s.input_errors(DEEPOPS) == []


def test_empty_inputs_are_valid():
    assert k8s.input_errors({"resource_prefix": "intel.com"}) == []


@pytest.mark.parametrize("vlan", [0, 1, 4094])
def test_vlan_in_range(vlan):
    assert k8s.input_errors(with_change(["sriov_resources", 0, "vlan_id"], vlan)) == []


@pytest.mark.parametrize("vlan", [-1, 4095, 5000, "111", True, None])
def test_vlan_out_of_range_or_not_a_number(vlan):
    errors = k8s.input_errors(with_change(["sriov_resources", 0, "vlan_id"], vlan))
    assert len(errors) == 1
    assert errors[0].startswith("sriov_resources[0]: ")
    assert "vlan_id" in errors[0]


@pytest.mark.parametrize("name", ["sriov-111", "sriov 111", "intel.com/sriov", "", "x" * 64])
def test_bad_resource_names(name):
    errors = k8s.input_errors(with_change(["sriov_resources", 0, "res_name"], name))
    assert len(errors) == 1 and ("res_name" in errors[0] or "missing" in errors[0])


@pytest.mark.parametrize("pf", ["enp5s0f0", "ens1f0np0", "enp5s0f0#0-3", "enp5s0f0#0,2-3", ["enp5s0f0", "enp5s0f1"]])
def test_good_pf_names(pf):
    assert k8s.input_errors(with_change(["sriov_resources", 0, "pf_name"], pf)) == []


@pytest.mark.parametrize("pf", ["enp5s0f0/1", "a" * 16, "en p5", "enp5s0#a", ["ok0", "bad/1"]])
def test_bad_pf_names(pf):
    errors = k8s.input_errors(with_change(["sriov_resources", 0, "pf_name"], pf))
    assert len(errors) == 1 and "pf_name" in errors[0]


@pytest.mark.parametrize("field,value", [("sriov_vendor", "15B3"), ("sriov_dev_id", ["101c", "101e"]), ("sriov_dev_id", 1018)])
def test_good_hex_ids(field, value):
    assert k8s.input_errors(with_change([field], value)) == []


@pytest.mark.parametrize("field,value", [("sriov_vendor", "0x15b3"), ("sriov_dev_id", "101"), ("sriov_dev_id", "10gz"), ("sriov_dev_id", [])])
def test_bad_hex_ids(field, value):
    errors = k8s.input_errors(with_change([field], value))
    assert errors and all(e.startswith(field) for e in errors)


def test_duplicate_resource_and_network_names():
    inputs = copy.deepcopy(DEEPOPS)
    inputs["sriov_resources"][1]["res_name"] = "sriov_111"
    inputs["sriov_resources"][1]["network_name"] = "sriov111"
    errors = k8s.input_errors(inputs)
    assert errors == [
        "sriov_resources[1]: resource name 'sriov_111' is already used by sriov_resources[0]",
        "sriov_resources[1]: network name 'sriov111' is already used by sriov_resources[0]",
    ]


def test_duplicate_resource_across_sriov_and_rdma_shared():
    inputs = dict(DEEPOPS, rdma_shared_resources=[{"name": "sriov_112", "ifnames": ["ens192"]}])
    assert k8s.input_errors(inputs) == ["rdma_shared_resources[0]: resource name 'sriov_112' is already used by sriov_resources[1]"]


def test_missing_keys_are_named():
    errors = k8s.input_errors(with_change(["sriov_resources", 1], {"pf_name": "enp6s0"}))
    assert errors == ["sriov_resources[1]: missing vlan_id, res_name, network_name"]


def test_whereabouts_needs_a_cidr():
    inputs = with_change(["sriov_ipam_type"], "whereabouts")
    errors = k8s.input_errors(inputs)
    assert errors == ["sriov_resources[0]: ipam_type whereabouts needs ipam_range", "sriov_resources[1]: ipam_type whereabouts needs ipam_range"]
    inputs["sriov_resources"][0]["ipam_range"] = "10.111.0.0/24"
    inputs["sriov_resources"][1]["ipam_range"] = "10.112.0.300/24"
    assert k8s.input_errors(inputs) == ["sriov_resources[1]: ipam_range '10.112.0.300/24' is not a CIDR range (e.g. 10.111.0.0/24)"]


def test_network_names_are_dns_labels():
    errors = k8s.input_errors(with_change(["sriov_resources", 0, "network_name"], "SRIOV_111"))
    assert len(errors) == 1 and "DNS-1123" in errors[0]


def test_host_device_and_macvlan():
    inputs = {
        "resource_prefix": "intel.com",
        "host_device_networks": [{"name": "hostdev-ens192", "device": "ens192", "ipam_range": "10.192.0.0/24"},
                                 {"name": "hostdev-pci", "pci_address": "0000:3b:00.1", "ipam_type": "dhcp"}],
        "macvlan_networks": [{"name": "mv", "master": "ens2np0", "ipam_range": "10.0.0.0/24", "mode": "bridge", "mtu": 9000}],
    }
    assert k8s.input_errors(inputs) == []
    inputs["host_device_networks"][1]["device"] = "ens193"
    inputs["macvlan_networks"][0]["mode"] = "l2"
    inputs["macvlan_networks"][0]["mtu"] = 100000
    assert k8s.input_errors(inputs) == [
        "host_device_networks[1]: give exactly one of device or pci_address",
        "macvlan_networks[0]: mtu 100000 is out of range 576-9216",
        "macvlan_networks[0]: mode 'l2' is not one of bridge, private, vepa, passthru",
    ]


def test_rdma_shared_needs_a_selector_and_sane_max():
    errors = k8s.input_errors({"resource_prefix": "rdma", "rdma_shared_resources": [{"name": "hca", "rdma_hca_max": 0}]})
    assert errors == ["rdma_shared_resources[0]: needs at least one selector (ifnames, vendors or device_ids)",
                      "rdma_shared_resources[0]: rdma_hca_max 0 is out of range 1-10000"]


def test_bad_resource_prefix():
    assert k8s.input_errors({"resource_prefix": "Intel.com/"}) == ["resource_prefix 'Intel.com/' is not a DNS subdomain (e.g. intel.com)"]


# --- CNI JSON -----------------------------------------------------------------------------------


def test_cni_config_good_single_and_conflist():
    single = json.dumps({"cniVersion": "0.3.1", "name": "n", "type": "sriov", "vlan": 111, "ipam": {"type": "dhcp"}})
    conflist = json.dumps({"cniVersion": "0.4.0", "name": "n", "plugins": [{"type": "macvlan"}, {"type": "tuning"}]})
    assert k8s.check_cni_config(single, "x") == []
    assert k8s.check_cni_config(conflist, "x") == []


@pytest.mark.parametrize("text,message", [
    ('{"cniVersion": "0.3.1", "type": "sriov",}', "is not valid JSON"),
    ('["sriov"]', "must be a JSON object"),
    ('{"type": "sriov"}', "has no cniVersion"),
    ('{"cniVersion": "0.3.1"}', "has no type"),
    ('{"cniVersion": "0.3.1", "plugins": []}', "'plugins' must be a non-empty list"),
    ('{"cniVersion": "0.3.1", "plugins": [{"name": "x"}]}', "plugin 0 has no type"),
    ('{"cniVersion": "0.3.1", "type": "sriov", "vlan": 4095}', "out of range 0-4094"),
    ('{"cniVersion": "0.3.1", "type": "macvlan", "ipam": "dhcp"}', "ipam must be an object"),
])
def test_cni_config_errors(text, message):
    errors = k8s.check_cni_config(text, "nad")
    assert len(errors) == 1 and message in errors[0] and errors[0].startswith("nad: ")


def test_cni_config_must_be_a_string():
    assert k8s.check_cni_config({"cniVersion": "0.3.1", "type": "x"}, "nad") == ["nad: CNI config must be a JSON string, not dict"]


def test_extra_network_with_malformed_json():
    inputs = {"resource_prefix": "intel.com", "extra_networks": [{"name": "raw", "config": '{"cniVersion": "0.3.1", "type": "sriov"'}]}
    errors = k8s.input_errors(inputs)
    assert len(errors) == 1 and errors[0].startswith("extra_networks[0] (raw): CNI config is not valid JSON")


# --- rendered objects -----------------------------------------------------------------------------


def nad(name, config):
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"config": config}}


def test_objects_good():
    objects = [nad("a", '{"cniVersion": "0.3.1", "type": "sriov"}'),
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sriovdp-config", "namespace": "kube-system"},
                "data": {"config.json": json.dumps({"resourceList": [{"resourceName": "a"}, {"resourceName": "b"}]})}}]
    assert k8s.object_errors(objects) == []


def test_objects_bad():
    objects = [nad("a", "{not json"), nad("a", '{"cniVersion": "0.3.1", "type": "sriov"}'),
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"},
                "data": {"config.json": json.dumps({"configList": [{"resourceName": "a"}, {"resourceName": "a"}]})}},
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm2", "namespace": "ns"}, "data": {"x.json": "{"}},
               {"kind": "ConfigMap", "metadata": {"name": "nover"}}]
    errors = k8s.object_errors(objects)
    assert errors[0].startswith("NetworkAttachmentDefinition default/a: CNI config is not valid JSON")
    assert errors[1] == "NetworkAttachmentDefinition default/a: rendered twice"
    assert errors[2] == "ConfigMap ns/cm: config.json names resources more than once: a"
    assert errors[3].startswith("ConfigMap ns/cm2: x.json is not valid JSON")
    assert errors[4] == "ConfigMap -/nover: apiVersion, kind and metadata.name are required"
    assert len(errors) == 5


# --- nodes ------------------------------------------------------------------------------------------


def node(name, allocatable):
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def test_nodes_missing_resources():
    nodes = [node("w1", {"cpu": "8", "intel.com/sriov_111": "8", "intel.com/sriov_112": "8"}),
             node("w2", {"cpu": "8", "intel.com/sriov_111": "0"}),
             {"metadata": {"name": "w3"}}]
    report = k8s.nodes_missing_resources(nodes, ["intel.com/sriov_111", "intel.com/sriov_112"])
    assert report["nodes"] == ["w1", "w2", "w3"]
    assert report["missing"] == {"w2": ["intel.com/sriov_111", "intel.com/sriov_112"],
                                 "w3": ["intel.com/sriov_111", "intel.com/sriov_112"]}
    assert report["advertised"]["w1"] == {"intel.com/sriov_111": 8, "intel.com/sriov_112": 8}
    assert report["summary"] == ("w2 lacks intel.com/sriov_111, intel.com/sriov_112; "
                                 "w3 lacks intel.com/sriov_111, intel.com/sriov_112")


def test_nodes_minimum_count():
    report = k8s.nodes_missing_resources([node("w1", {"r/a": "4"})], ["r/a"], minimum=8)
    assert report["missing"] == {"w1": ["r/a"]}


def test_no_nodes():
    assert k8s.nodes_missing_resources([], ["r/a"]) == {"missing": {}, "advertised": {}, "nodes": [], "summary": ""}


# --- what an apply would change ---------------------------------------------------------------------


def daemonset(image="img:v1"):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "kube-system", "labels": {"a": "b"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image, "resources": {"limits": {"cpu": 1}}}]}}}}


def as_stored(obj, applied=None):
    """The object as the API returns it after a client-side apply: defaults added, quantities as strings."""
    stored = json.loads(json.dumps(obj))
    stored["metadata"]["annotations"] = {k8s.LAST_APPLIED: json.dumps(applied or obj, sort_keys=True)}
    stored["metadata"]["resourceVersion"] = "42"
    container = stored["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicy"] = "IfNotPresent"
    container["resources"]["limits"]["cpu"] = "1"
    return stored


def test_pending_absent_object():
    assert k8s.pending_objects([daemonset()], []) == [daemonset()]


def test_not_pending_when_stored_with_defaults():
    assert k8s.pending_objects([daemonset()], [as_stored(daemonset())]) == []


def test_pending_when_wanted_config_changed():
    assert k8s.pending_objects([daemonset("img:v2")], [as_stored(daemonset())]) == [daemonset("img:v2")]


def test_pending_when_a_field_was_removed_from_the_inputs():
    wanted = daemonset()
    before = daemonset()
    before["metadata"]["labels"]["extra"] = "x"
    assert k8s.pending_objects([wanted], [as_stored(before)]) == [wanted]


def test_pending_when_edited_on_the_server():
    stored = as_stored(daemonset())
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "other:v9"
    assert k8s.pending_objects([daemonset()], [stored]) == [daemonset()]


def test_pending_without_last_applied_annotation():
    stored = as_stored(daemonset())
    del stored["metadata"]["annotations"]
    assert k8s.pending_objects([daemonset()], [stored]) == [daemonset()]


def test_missing_only():
    other = dict(daemonset(), metadata={"name": "other", "namespace": "kube-system"})
    stored = as_stored(daemonset())
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "other:v9"
    assert k8s.pending_objects([daemonset(), other], [stored], missing_only=True) == [other]


def test_same_name_in_another_group_or_namespace_is_another_object():
    wanted = daemonset()
    elsewhere = as_stored(daemonset())
    elsewhere["metadata"]["namespace"] = "default"
    assert k8s.pending_objects([wanted], [elsewhere]) == [wanted]
    assert k8s.object_key({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}) == ("", "ConfigMap", "", "x")


def test_subset_rules():
    assert k8s.is_subset({"a": [1, {"b": True}]}, {"a": ["1", {"b": True, "c": 0}], "d": 1})
    assert not k8s.is_subset({"a": [1]}, {"a": [1, 2]})
    assert not k8s.is_subset({"b": True}, {"b": "True"})
    assert not k8s.is_subset({"a": {"b": 1}}, {"a": 1})
