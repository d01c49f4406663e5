# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a host's turn in a rolling play will disrupt, and so whether its jobs must leave first. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

A reboot (every reason roce.fabric.host_reboot holds), a live firmware reset (burnt images waiting for activation),
an openibd restart (a new NVIDIA stack) and VF counts that take the VFs away each stop the RDMA traffic of the host:
the rolling play drains the host from its schedulers before any of them and returns it after its checks.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.common.reboot_record import all_reasons


def disruptions(reboot_pending, image_result=None, openibd_pending=False, vf_removals=None):
    """The reasons, in the order the rolling play meets them; [] when the host's turn disrupts nothing."""
    out = []
    image_result = image_result or {}
    for pci in image_result.get("pending") or []:
        out.append("firmware image waiting on %s (live reset or reboot)" % pci)
    out += ["reboot: %s" % reason for reason in all_reasons(reboot_pending or {}, [])]
    if openibd_pending:
        out.append("openibd restart (a new NVIDIA driver stack)")
    for device in vf_removals or []:
        name = device.get("netdev") if isinstance(device, dict) else device
        out.append("VFs of %s taken away" % name)
    return out


def pods_left(pods):
    """The pods (``namespace/name``) a drain should have moved but that are still on the node: not a DaemonSet's
    (they stay by design), not a static pod's mirror (the kubelet owns it), not finished (Succeeded or Failed)."""
    left = []
    for pod in pods or []:
        metadata = pod.get("metadata") or {}
        owners = [ref.get("kind") for ref in metadata.get("ownerReferences") or []]
        if "DaemonSet" in owners or "kubernetes.io/config.mirror" in (metadata.get("annotations") or {}):
            continue
        if ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed"):
            continue
        left.append("%s/%s" % (metadata.get("namespace"), metadata.get("name")))
    return sorted(left)
