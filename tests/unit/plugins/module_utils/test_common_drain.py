# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host's turn in a rolling play disrupts (module_utils/common/drain.py), the rolling plays' reason to drain."""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.common.drain import disruptions, pods_left


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
