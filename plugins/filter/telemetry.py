# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the rdma_exporter role's decisions."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.telemetry.listen import ListenError, listen_address


def exporter_listen_address(setting, host="", ssh_connection=None, default_address=None):
    try:
        return listen_address(setting, host=host, ssh_connection=ssh_connection, default_address=default_address)
    except ListenError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule:
    """The rdma_exporter role's judgements."""

    def filters(self):
        return {"exporter_listen_address": exporter_listen_address}
