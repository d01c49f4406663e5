# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of systemd units: systemd-escape, the device unit of a network interface, an ExecStart argument."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.systemd.escape import escape, exec_argument, netdev_device_unit


def systemd_escape(value, path=False):
    try:
        return escape(value, path=path)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def netdev_unit(value):
    return netdev_device_unit(value)


def systemd_exec_arg(value):
    try:
        return exec_argument(value)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule:

    def filters(self):
        return {"systemd_escape": systemd_escape, "netdev_unit": netdev_unit, "systemd_exec_arg": systemd_exec_arg}
