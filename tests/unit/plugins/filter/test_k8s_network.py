# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_network filters as Ansible loads them."""

from __future__ import annotations

import glob
import os
import re

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.filter.k8s_network import FilterModule
from ansible_collections.roce.fabric.plugins.module_utils.k8s.network import KIND_RESOURCES


FILTERS = FilterModule().filters()


def test_filters_are_registered():
    assert sorted(FILTERS) == ["k8s_access_denied", "k8s_access_reviews", "k8s_apply_outcome", "k8s_bad_resource_names",
                               "k8s_network_dhcp", "k8s_network_input_errors", "k8s_network_node_resources",
                               "k8s_network_object_errors", "k8s_network_pending", "k8s_network_removal", "k8s_network_sort",
                               "k8s_nodes_missing_resources", "k8s_send_lists"]


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
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_bad_resource_names"]("aliyun/erdma")


def test_nodes_filter_minimum_from_string():
    nodes = [{"metadata": {"name": "w1"}, "status": {"allocatable": {"r/a": "2"}}}]
    assert FILTERS["k8s_nodes_missing_resources"](nodes, ["r/a"], "3")["missing"] == {"w1": ["r/a"]}


def test_bad_resource_names():
    good = ["aliyun/erdma", "nvidia.com/gpu", "intel.com/sriov_111", "rdma/hca_shared_devices_a", "example.com/a.b-c_d",
            "cpu", "x/" + "n" * 63, "a" * 253 + "/r"]
    assert FILTERS["k8s_bad_resource_names"](good) == []
    bad = ["aliyun/erdma\n-x", "a/b/c", "/erdma", "aliyun/", "Aliyun/erdma", "aliyun/-erdma", "aliyun/erdma-",
           "x/" + "n" * 64, "a" * 254 + "/r", "aliyun/erdma; reboot", "", 7]
    assert FILTERS["k8s_bad_resource_names"](good + bad) == bad
    # A dict's keys are the names (a pod's resources.limits).
    assert FILTERS["k8s_bad_resource_names"]({"aliyun/erdma": 1, "LD_PRELOAD=x": 1}) == ["LD_PRELOAD=x"]


def test_access_reviews_one_per_kind_and_namespace():
    objects = [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.example.com"}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "b.example.com"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y", "namespace": "mpi-operator"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "roce-rdma-exporter", "namespace": "kube-system"}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m", "namespace": "kube-system"}},
        {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition", "metadata": {"name": "n", "namespace": "default"}},
    ]
    reviews = FILTERS["k8s_access_reviews"](objects, "create")
    assert [r["spec"]["resourceAttributes"] for r in reviews] == [
        {"group": "apiextensions.k8s.io", "resource": "customresourcedefinitions", "verb": "create"},
        {"group": "", "resource": "configmaps", "verb": "create", "namespace": "kube-system"},
        {"group": "", "resource": "configmaps", "verb": "create", "namespace": "mpi-operator"},
        {"group": "", "resource": "services", "verb": "create", "namespace": "kube-system"},
        {"group": "monitoring.coreos.com", "resource": "servicemonitors", "verb": "create", "namespace": "kube-system"},
        {"group": "k8s.cni.cncf.io", "resource": "network-attachment-definitions", "verb": "create", "namespace": "default"},
    ]
    assert all(r["apiVersion"] == "authorization.k8s.io/v1" and r["kind"] == "SelfSubjectAccessReview" for r in reviews)
    assert FILTERS["k8s_access_reviews"]([], "delete") == []
    with pytest.raises(AnsibleFilterError, match="Widget"):
        FILTERS["k8s_access_reviews"]([{"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}}], "create")
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_access_reviews"](objects, "escalate")


def test_every_kind_the_k8s_roles_render_has_a_resource():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles")
    kinds = set()
    for path in glob.glob(os.path.join(root, "k8s_*", "templates", "*.j2")):
        with open(path) as handle:
            # An object's kind is at the start of a line; indented ones are a CRD's names or a roleRef's.
            kinds.update(re.findall(r"^kind: ([A-Z][A-Za-z]+)\s*$", handle.read(), re.M))
    assert {"Service", "ServiceMonitor", "DaemonSet", "MPIJob"} <= kinds, "templates not read under %s" % root
    assert sorted(kinds - set(KIND_RESOURCES)) == []


def test_access_denied_reads_the_answers():
    def answer(resource, allowed, namespace=None, verb="create"):
        attributes = {"group": "", "resource": resource, "verb": verb}
        if namespace:
            attributes["namespace"] = namespace
        out = {"spec": {"resourceAttributes": attributes}, "status": {}}
        if allowed is not None:
            out["status"]["allowed"] = allowed
        return out
    answers = [answer("configmaps", True, "kube-system"), answer("services", False, "kube-system"),
               answer("clusterroles", None), answer("services", False, "kube-system"),
               answer("daemonsets", False, "kube-system", verb="patch")]
    assert FILTERS["k8s_access_denied"](answers) == ["create services in kube-system", "create clusterroles",
                                                     "patch daemonsets in kube-system"]
    assert FILTERS["k8s_access_denied"]([answer("configmaps", True)]) == []
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_access_denied"]({})


def test_roles_and_bindings_also_ask_escalate_and_bind():
    """Hardening (issue 37, 18): the reviews asked create/patch/delete only. RBAC also wants escalate to write a Role
    or ClusterRole the writer does not hold, and bind to bind one: a writer allowed to create ClusterRoles but not
    to hold their rules passed the review and the apply stopped part way. Those verbs are asked now."""
    objects = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "sriov-plugin"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "sriov-plugin"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sriov-plugin"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "exporter", "namespace": "kube-system"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exporter"}},
    ]
    attributes = [r["spec"]["resourceAttributes"] for r in FILTERS["k8s_access_reviews"](objects, "create")]
    assert attributes[-3:] == [
        {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verb": "escalate", "name": "sriov-plugin"},
        {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verb": "bind", "name": "sriov-plugin"},
        {"group": "rbac.authorization.k8s.io", "resource": "roles", "verb": "bind", "name": "exporter",
         "namespace": "kube-system"},
    ]
    assert [r for r in FILTERS["k8s_access_reviews"](objects, "delete")
            if r["spec"]["resourceAttributes"]["verb"] in ("escalate", "bind")] == []
    denied = FILTERS["k8s_access_denied"]([{"spec": {"resourceAttributes": attributes[-2]}, "status": {"allowed": False}}])
    assert denied == ["bind clusterroles sriov-plugin"]


# A Status as the API server answers a refused write (Kubernetes API conventions, "Response Status Kind": kind,
# apiVersion, metadata, status, message, reason, details, code; kube-apiserver writes it compact), inside the
# message kubernetes.core.k8s fails with ("Failed to patch object: b'<body>'").
STATUS = ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"grafana\\" not found",'
          '"reason":"NotFound","details":{"name":"grafana","kind":"pods"},"code":404}')


def test_apply_outcome_names_applied_unchanged_and_refused_with_the_server_s_words():
    sent = [{"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "kube-system"}},
            {"kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "kube-system"}},
            {"kind": "ClusterRole", "metadata": {"name": "cr"}},
            {"kind": "Service", "metadata": {"name": "svc", "namespace": "default"}},
            {"kind": "Namespace", "metadata": {"name": "late"}}]
    answer = {"changed": True, "result": {"results": [
        {"changed": True, "result": {}},
        {"changed": False, "error": {"msg": "Failed to patch object: b'%s'" % STATUS, "status": 404}},
        {"changed": False, "result": {}},
        {"changed": False, "error": {"msg": "x " * 300}},
    ]}}
    out = FILTERS["k8s_apply_outcome"](sent, answer)
    assert out["applied"] == ["ConfigMap kube-system/cm"] and out["unchanged"] == ["ClusterRole cr"]
    assert out["refused"][0] == 'DaemonSet kube-system/ds (pods "grafana" not found)'
    assert out["refused"][1].startswith("Service default/svc (x x") and out["refused"][1].endswith("...)")
    assert len(out["refused"][1]) < 430
    assert out["refused"][2] == "Namespace late (no answer)"
    # One object: the answer is the result itself.
    single = FILTERS["k8s_apply_outcome"](sent[:1], {"changed": False, "result": {"kind": "ConfigMap"}})
    assert single == {"applied": [], "unchanged": ["ConfigMap kube-system/cm"], "refused": []}
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_apply_outcome"]({}, {})


def _obj(kind, name, api="v1", namespace=None):
    metadata = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


def test_send_lists_sort_the_three_applies_and_check_mode_waits_for_what_does_not_exist():
    crd = _obj("CustomResourceDefinition", "network-attachment-definitions.k8s.cni.cncf.io", "apiextensions.k8s.io/v1")
    role = _obj("ClusterRole", "sriov-device-plugin", "rbac.authorization.k8s.io/v1")
    ds = _obj("DaemonSet", "kube-sriov-device-plugin", "apps/v1", "kube-system")
    in_new_ns = _obj("ServiceAccount", "mpi-operator", namespace="mpi-operator")
    nad = _obj("NetworkAttachmentDefinition", "sriov-111", "k8s.cni.cncf.io/v1", "default")
    job_ns_nad = _obj("NetworkAttachmentDefinition", "sriov-112", "k8s.cni.cncf.io/v1", "jobs")
    builtins, customs = [role, ds, in_new_ns], [nad, job_ns_nad]
    pending = [crd, role, ds, in_new_ns, nad, job_ns_nad]
    send = FILTERS["k8s_send_lists"]
    real = send(pending, builtins, customs, {}, False)
    assert real == {"crds": [crd], "builtins": [role, ds, in_new_ns], "customs": [nad, job_ns_nad], "waiting": []}
    # k8s_info's answers (resources: the objects as the API returns them): no NAD CRD yet, namespaces default and
    # kube-system only.
    existing = {"results": [{"resources": [{"spec": {"group": "sriovnetwork.openshift.io"}}]},
                            {"resources": [{"metadata": {"name": "default"}}, {"metadata": {"name": "kube-system"}}]}]}
    checked = send(pending, builtins, customs, existing, True)
    assert checked["builtins"] == [role, ds] and checked["customs"] == []
    assert checked["waiting"] == ["mpi-operator", "sriov-111", "sriov-112"]
    existing["results"][0]["resources"].append({"spec": {"group": "k8s.cni.cncf.io"}})
    assert send(pending, builtins, customs, existing, True)["customs"] == [nad]
    with pytest.raises(AnsibleFilterError):
        send({}, builtins, customs)


def test_sort_puts_crds_their_groups_resources_and_the_rest_apart_and_drops_a_kind():
    crd = dict(_obj("CustomResourceDefinition", "network-attachment-definitions.k8s.cni.cncf.io", "apiextensions.k8s.io/v1"),
               spec={"group": "k8s.cni.cncf.io"})
    ds = _obj("DaemonSet", "kube-sriov-device-plugin", "apps/v1", "kube-system")
    nad = _obj("NetworkAttachmentDefinition", "sriov-111", "k8s.cni.cncf.io/v1", "default")
    # A kind of an operator installed otherwise (its CRD is not this role's): sent with the built-in kinds.
    monitor = _obj("ServiceMonitor", "roce-rdma-exporter", "monitoring.coreos.com/v1", "kube-system")
    objects = [crd, ds, nad, monitor]
    assert FILTERS["k8s_network_sort"](objects) == {"objects": objects, "crds": [crd], "builtins": [ds, monitor],
                                                    "customs": [nad]}
    assert FILTERS["k8s_network_sort"](objects, ["ServiceMonitor"]) == {"objects": [crd, ds, nad], "crds": [crd],
                                                                        "builtins": [ds], "customs": [nad]}
    # Without the CRD, a NetworkAttachmentDefinition is some other operator's kind.
    assert FILTERS["k8s_network_sort"]([ds, nad])["customs"] == []
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_network_sort"]({"kind": "DaemonSet"})


def test_node_resources_and_the_dhcp_daemon_follow_the_enabled_inputs():
    inputs = {"resource_prefix": "nvidia.com", "sriov_ipam_type": "whereabouts",
              "sriov_resources": [{"res_name": "sriov_rdma_a"}, {"res_name": "sriov_rdma_b", "ipam_type": "static"}],
              "rdma_shared_resources": [{"name": "hca_shared_devices_a"}],
              "host_device_networks": [{"name": "hostdev-a"}], "macvlan_networks": []}
    assert FILTERS["k8s_network_node_resources"](inputs, "rdma", ["aliyun/erdma"]) == [
        "nvidia.com/sriov_rdma_a", "nvidia.com/sriov_rdma_b", "rdma/hca_shared_devices_a", "aliyun/erdma"]
    assert FILTERS["k8s_network_node_resources"](dict(inputs, sriov_resources=[], rdma_shared_resources=[]), "rdma") == []
    assert FILTERS["k8s_network_dhcp"](inputs, False) is False and FILTERS["k8s_network_dhcp"](inputs, "yes") is True
    # The SR-IOV default, one resource's own type, a macvlan network's: each leases by DHCP.
    assert FILTERS["k8s_network_dhcp"](dict(inputs, sriov_ipam_type="dhcp"), False) is True
    assert FILTERS["k8s_network_dhcp"](dict(inputs, sriov_resources=[{"res_name": "x", "ipam_type": "dhcp"}]), False) is True
    assert FILTERS["k8s_network_dhcp"](dict(inputs, macvlan_networks=[{"name": "m", "ipam_type": "dhcp"}]), False) is True
    with pytest.raises(AnsibleFilterError):
        FILTERS["k8s_network_dhcp"]([], False)


def test_removal_deletes_what_the_cluster_has_in_reverse_and_keeps_namespaces_and_crds_unless_asked():
    crd = dict(_obj("CustomResourceDefinition", "network-attachment-definitions.k8s.cni.cncf.io", "apiextensions.k8s.io/v1"),
               spec={"group": "k8s.cni.cncf.io"})
    ns = _obj("Namespace", "mpi-operator")
    ds = _obj("DaemonSet", "kube-sriov-device-plugin", "apps/v1", "kube-system")
    role = _obj("ClusterRole", "sriov-device-plugin", "rbac.authorization.k8s.io/v1")
    nad = _obj("NetworkAttachmentDefinition", "sriov-111", "k8s.cni.cncf.io/v1", "default")
    gone = _obj("NetworkAttachmentDefinition", "sriov-112", "k8s.cni.cncf.io/v1", "default")
    ordered = FILTERS["k8s_network_sort"]([crd, ns, role, ds, nad, gone])
    present = [crd, ns, role, ds, nad]  # the cluster's copies: sriov-112 is not there
    assert FILTERS["k8s_network_removal"](ordered, present, False) == [nad, ds, role]
    assert FILTERS["k8s_network_removal"](ordered, present, "true") == [nad, ds, role, crd]
    assert FILTERS["k8s_network_removal"](ordered, [], True) == []
