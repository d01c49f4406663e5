# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SR-IOV role's split of its devices into now and later (module_utils/rdma/sriov.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.roce.fabric.plugins.module_utils.rdma.sriov import split_deferred


def sriov_split(devices, plans, defer=True):
    if not isinstance(devices, list) or not all(isinstance(device, dict) for device in devices):
        raise AnsibleFilterError("sriov_split: the devices must be a list of sriov_devices entries")
    return split_deferred(devices, plans if isinstance(plans, list) else [], boolean(defer, strict=False))


class FilterModule:

    def filters(self):
        return {"sriov_split": sriov_split}
