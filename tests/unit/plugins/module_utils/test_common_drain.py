# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host's turn in a rolling play disrupts (module_utils/common/drain.py), the rolling plays' reason to drain, and
who cordoned a Kubernetes node (Nodes as the lab's kube-apiserver returned them)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.drain import (
    CORDON_ANNOTATION, cordon_plan, disruptions, pods_left, uncordon_plan)
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def test_nothing_pending_disrupts_nothing():
    assert disruptions({}) == [] and disruptions({}, {"pending": []}, False, []) == []


def test_each_disruption_is_named_in_the_order_the_play_meets_it():
    found = disruptions({"nic_firmware": "ConnectX firmware settings pending on 0000:3b:00.0 (ATS_ENABLED=True)",
                         "sriov": ""},
                        {"pending": ["0000:86:00.0"]}, True, [{"netdev": "ens1f0np0"}])
    assert found == ["firmware image waiting on 0000:86:00.0 (live reset or reboot)",
                     "reboot: ConnectX firmware settings pending on 0000:3b:00.0 (ATS_ENABLED=True)",
                     "openibd restart (a new NVIDIA driver stack)", "VFs of ens1f0np0 taken away"]


def test_the_pods_a_drain_leaves_are_a_daemonset_s_a_mirror_and_finished_ones():
    def pod(name, owner=None, phase="Running", mirror=False):
        metadata = dict(name=name, namespace="jobs")
        if owner:
            metadata["ownerReferences"] = [dict(kind=owner, name="x")]
        if mirror:
            metadata["annotations"] = {"kubernetes.io/config.mirror": "abc"}
        return dict(metadata=metadata, status=dict(phase=phase))
    pods = [pod("nccl-1", "Job"), pod("agent", "DaemonSet"), pod("etcd-node", mirror=True), pod("done", "Job", "Succeeded"),
            pod("nccl-0"), pod("crashed", phase="Failed")]
    assert pods_left(pods) == ["jobs/nccl-0", "jobs/nccl-1"]
    assert pods_left([]) == []


def node(name):
    """A Node as kubernetes.core.k8s_info returned it from the lab's kube-apiserver (fixtures/k8s/node_*.json)."""
    return json.loads(corpus.read("k8s", "node_%s.json" % name))


@pytest.mark.parametrize("name", ["schedulable", "cordoned_by_admin", "cordoned_by_roce_fabric"])
def test_who_cordoned_the_node(name):
    assert cordon_plan(node(name), "roce.fabric: x")["by"] == corpus.meta("k8s", "node_%s.json" % name)["expect"][3:]


def test_undrain_uncordons_a_node_only_when_this_collection_cordoned_it():
    """An admin's cordon (a bad GPU held out) is drained around but never lifted; ours is, with its mark, in one
    request that the server refuses if the node changed since it was read."""
    assert cordon_plan(node("cordoned_by_admin"), "roce.fabric: x") == dict(by="other", patch=None)
    assert uncordon_plan(node("cordoned_by_admin")) == dict(by="other", patch=None)
    assert uncordon_plan(node("schedulable")) == dict(by="none", patch=None)
    # Schedulable: cordoned and marked ours in one merge patch, with the resourceVersion read.
    reason = "roce.fabric: firmware image waiting on 0000:3b:00.0 (live reset or reboot)"
    plan = cordon_plan(node("schedulable"), reason)
    assert plan["by"] == "none" and plan["patch"] == {
        "apiVersion": "v1", "kind": "Node", "spec": {"unschedulable": True},
        "metadata": {"name": "gpu-node-7", "resourceVersion": node("schedulable")[0]["metadata"]["resourceVersion"],
                     "annotations": {CORDON_ANNOTATION: reason}}}
    # Ours (an earlier turn that did not return it): drained again without a new cordon, and returned.
    ours = node("cordoned_by_roce_fabric")
    assert cordon_plan(ours, reason) == dict(by="roce.fabric", patch=None)
    back = uncordon_plan(ours)
    assert back["by"] == "roce.fabric" and back["patch"]["spec"] == {"unschedulable": False}
    assert back["patch"]["metadata"]["annotations"] == {CORDON_ANNOTATION: None}
    assert back["patch"]["metadata"]["resourceVersion"] == ours[0]["metadata"]["resourceVersion"]
    # No such node: nothing to send (the drain says so).
    assert cordon_plan([], reason) == dict(by="missing", patch=None) and uncordon_plan([])["patch"] is None
