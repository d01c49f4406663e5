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


# The annotation that marks a cordon as this collection's, set in the same request as the cordon itself: undrain
# returns only a node that carries it. Its value says why.
CORDON_ANNOTATION = "roce.fabric/cordoned"


def _node(resources):
    """The one Node of a kubernetes.core.k8s_info answer (its ``resources``), or None."""
    nodes = [r for r in resources or [] if isinstance(r, dict)]
    return nodes[0] if len(nodes) == 1 else None


def cordon_plan(resources, reason):
    """What a drain does about the node's cordon (``resources``: kubernetes.core.k8s_info of the Node):

    - ``by``: who cordoned it: ``roce.fabric`` (its spec says unschedulable and our annotation is on it: an earlier
      run of ours that did not return it), ``other`` (unschedulable without it: an admin's, left as it is, and undrain
      does not uncordon it), ``none`` (schedulable), or ``missing`` (no such node: the drain says so);
    - ``patch``: the merge patch that cordons it and marks it ours in one request, with the resourceVersion read (the
      server refuses it if the node changed since), or None."""
    node = _node(resources)
    if node is None:
        return dict(by="missing", patch=None)
    metadata = node.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if (node.get("spec") or {}).get("unschedulable"):
        return dict(by="roce.fabric" if CORDON_ANNOTATION in annotations else "other", patch=None)
    patch = dict(apiVersion="v1", kind="Node",
                 metadata=dict(name=metadata.get("name"), resourceVersion=metadata.get("resourceVersion"),
                               annotations={CORDON_ANNOTATION: " ".join(str(reason or "roce.fabric").split())}),
                 spec=dict(unschedulable=True))
    return dict(by="none", patch=patch)


def uncordon_plan(resources):
    """What undrain does: ``{"by", "patch"}`` - the merge patch that uncordons the node and takes our annotation away
    (with the resourceVersion read), only where our annotation is on it; a node someone else cordoned (``by:
    other``), or one already schedulable, is left as it is (``patch`` None)."""
    node = _node(resources)
    if node is None:
        return dict(by="missing", patch=None)
    metadata = node.get("metadata") or {}
    ours = CORDON_ANNOTATION in (metadata.get("annotations") or {})
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    if not ours:
        return dict(by="other" if unschedulable else "none", patch=None)
    patch = dict(apiVersion="v1", kind="Node",
                 metadata=dict(name=metadata.get("name"), resourceVersion=metadata.get("resourceVersion"),
                               annotations={CORDON_ANNOTATION: None}),
                 spec=dict(unschedulable=False))
    return dict(by="roce.fabric", patch=patch)
