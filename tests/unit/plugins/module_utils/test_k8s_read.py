# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster read of roce.fabric.k8s_objects_info (module_utils/k8s/read.py) on the lab API server's answers."""

from __future__ import annotations

import json

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.k8s import read
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

SELECTOR = ["app.kubernetes.io/part-of=k8s-rdma-network"]


def capture(name):
    """The rendered objects and the server's answers of one captured read (tests/utils/capture_k8s_read.py)."""
    data = json.loads(corpus.read("k8s", name + ".json"))
    asked = []

    def get(path, query):
        key = path + ("?" + "&".join("%s=%s" % pair for pair in query) if query else "")
        asked.append(key)
        return data["answers"][key]
    return data["objects"], get, asked


def names(objects):
    return sorted("%s %s" % (obj["kind"], obj["metadata"]["name"]) for obj in objects)


def test_on_an_empty_cluster_everything_is_pending_and_the_crds_kinds_are_not_asked_for():
    objects, get, asked = capture("empty")
    got = read.read_objects(objects, get, SELECTOR)
    assert got["resources"] == []
    assert names(got["pending"]) == names(objects)
    # No CRD serves k8s.cni.cncf.io or kubeflow.org yet: their kinds are not listed.
    assert not any("k8s.cni.cncf.io" in path or "kubeflow.org" in path for path in asked)
    assert got["kinds"][0] == read.CRD_LIST and "/apis/apps/v1/namespaces/kube-system/daemonsets" in got["kinds"]
    # Each group version's discovery document is asked for once.
    assert asked.count("/api/v1") == 1 and asked.count("/apis/apps/v1") == 1


def test_once_applied_nothing_is_pending_and_every_copy_is_read_with_its_kind():
    objects, get, asked = capture("applied")
    got = read.read_objects(objects, get, SELECTOR)
    assert got["pending"] == []
    # Every rendered object has its copy; list items get the list's apiVersion and kind.
    have = set((obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) for obj in got["resources"])
    assert set((obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) for obj in objects) <= have
    nads = [obj for obj in got["resources"] if obj["kind"] == "NetworkAttachmentDefinition"]
    assert nads and all(obj["apiVersion"] == "k8s.cni.cncf.io/v1" for obj in nads)
    assert "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions?labelSelector=" \
           "app.kubernetes.io/part-of=k8s-rdma-network" in asked
    # Cluster-scoped kinds are listed without a namespace.
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector=app.kubernetes.io/part-of=k8s-rdma-network" in asked


def test_an_edited_object_is_pending_and_only_it():
    objects, get, _asked = capture("edited")
    assert names(read.read_objects(objects, get, SELECTOR)["pending"]) == ["ConfigMap sriovdp-config"]


def test_a_kind_the_api_does_not_serve_and_an_answer_that_is_not_a_list_are_errors():
    objects, get, _asked = capture("applied")
    discovery = get("/apis/apps/v1", [])
    assert read.kind_path(discovery, "apps/v1", "DaemonSet", "kube-system") == "/apis/apps/v1/namespaces/kube-system/daemonsets"
    with pytest.raises(read.ReadError, match="the API does not serve apps/v1 Frobnicator"):
        read.kind_path(discovery, "apps/v1", "Frobnicator", "kube-system")
    # The discovery document names the kind's subresources too (daemonsets/status): the list is the plain one.
    assert "daemonsets/status" in [resource["name"] for resource in discovery["resources"]]
    assert read.kind_path(discovery, "apps/v1", "DaemonSet", "") == "/apis/apps/v1/daemonsets"

    def not_a_list(path, query):
        return {"kind": "Status", "status": "Failure"} if path == read.CRD_LIST else get(path, query)
    with pytest.raises(read.ReadError, match="did not answer with a list"):
        read.read_objects(objects, not_a_list, SELECTOR)


def test_group_version_paths():
    assert read.group_version_path("v1") == "/api/v1"
    assert read.group_version_path("k8s.cni.cncf.io/v1") == "/apis/k8s.cni.cncf.io/v1"
