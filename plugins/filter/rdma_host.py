# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rdma_host role's decisions (module_utils/rdma/sysfs.py): whether the wanted NVIDIA stack is installed."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.rdma.sysfs import ofed_version_installed


def ofed_installed(registered, wanted):
    if not isinstance(registered, dict):
        raise AnsibleFilterError("ofed_installed expects the registered result of ofed_info -s")
    if registered.get("rc") != 0:
        return False
    return ofed_version_installed(registered.get("stdout") or "", wanted)


class FilterModule:

    def filters(self):
        return {"ofed_installed": ofed_installed}
