# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The reasons a host waits a reboot for (module_utils/common/reboot_record.py), as roce.fabric.host_reboot keeps them."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.common.drain import cordon_plan, disruptions, pods_left, uncordon_plan
from ansible_collections.roce.fabric.plugins.module_utils.common.reboot_record import all_reasons, with_reason


def reboot_pending(pending, source, reason=""):
    if not isinstance(pending, dict):
        raise AnsibleFilterError("reboot_pending: the pending reasons must be a dict of source to reason")
    return with_reason(pending, source, reason)


def reboot_reasons(pending, extra=None):
    if not isinstance(pending, dict):
        raise AnsibleFilterError("reboot_reasons: the pending reasons must be a dict of source to reason")
    if isinstance(extra, str):
        extra = [extra]
    return all_reasons(pending, extra or [])


def roce_disruptions(pending, image_result=None, openibd_pending=False, vf_removals=None):
    if not isinstance(pending, dict):
        raise AnsibleFilterError("roce_disruptions: the pending reasons must be a dict of source to reason")
    return disruptions(pending, image_result if isinstance(image_result, dict) else {}, bool(openibd_pending),
                       vf_removals if isinstance(vf_removals, list) else [])


def drain_pods_left(pods):
    if not isinstance(pods, list):
        raise AnsibleFilterError("drain_pods_left: expected the node's pods (k8s_info resources)")
    return pods_left(pods)


def drain_cordon(resources, reason=""):
    if not isinstance(resources, list):
        raise AnsibleFilterError("drain_cordon: expected the node (k8s_info resources)")
    return cordon_plan(resources, reason)


def drain_uncordon(resources):
    if not isinstance(resources, list):
        raise AnsibleFilterError("drain_uncordon: expected the node (k8s_info resources)")
    return uncordon_plan(resources)


class FilterModule:

    def filters(self):
        return {"reboot_pending": reboot_pending, "reboot_reasons": reboot_reasons, "roce_disruptions": roce_disruptions,
                "drain_pods_left": drain_pods_left, "drain_cordon": drain_cordon, "drain_uncordon": drain_uncordon}
