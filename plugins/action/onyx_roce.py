# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs roce.fabric.onyx_roce on the controller with the switch's inventory connection variables.

A play can target the switches themselves (``hosts: roce_switches``): the module runs locally (a
switch cannot run Python) and, unless the task sets them, takes ``host``, ``port``, ``username``,
``password`` and ``ssh_key_file`` from ``ansible_host``, ``ansible_port``, ``ansible_user``,
``ansible_password`` and ``ansible_ssh_private_key_file``, and ``host_key_checking`` and ``known_hosts_file``
from ``onyx_host_key_checking`` and ``onyx_known_hosts_file``.
"""

from __future__ import annotations

import sys

from ansible.plugins.action import ActionBase
from ansible.plugins.loader import connection_loader

# module option -> inventory variables, first one set wins
CONNECTION_VARS = (
    ("host", ("ansible_host", "inventory_hostname")),
    ("port", ("ansible_port",)),
    ("username", ("ansible_user", "ansible_ssh_user")),
    ("password", ("ansible_password", "ansible_ssh_pass")),
    ("ssh_key_file", ("ansible_ssh_private_key_file", "ansible_private_key_file")),
    ("host_key_checking", ("onyx_host_key_checking",)),
    ("known_hosts_file", ("onyx_known_hosts_file",)),
)


class ActionModule(ActionBase):
    """The switch modules' action: the module on the controller, its connection options from inventory."""

    TRANSFERS_FILES = False
    _requires_connection = False
    MODULE = "roce.fabric.onyx_roce"
    CONNECTION_VARS = CONNECTION_VARS

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("state", "merged") != "rendered":
            for option, names in self.CONNECTION_VARS:
                if args.get(option) is not None:
                    continue
                for name in names:
                    value = task_vars.get(name)
                    if value is not None:
                        args[option] = self._templar.template(value)
                        break
        # The module runs here, on the controller, with the interpreter that runs Ansible (it has netmiko).
        if self._connection.transport != "local":
            self._connection = connection_loader.get("local", self._play_context, None)
        module_vars = dict(task_vars, ansible_python_interpreter=sys.executable)
        result.update(self._execute_module(module_name=self.MODULE, module_args=args, task_vars=module_vars))
        return result
