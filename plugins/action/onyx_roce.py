# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs roce.fabric.onyx_roce on the controller with the switch's inventory connection variables.

A play can target the switches themselves (``hosts: roce_switches``): the module runs locally (a switch cannot run
Python) and, unless the task sets them, takes its connection options as Ansible's network connections do:
``host``, ``port``, ``username``, ``password`` and ``ssh_key_file`` from ``ansible_host``, ``ansible_port``,
``ansible_user``, ``ansible_password`` (or ``--ask-pass``) and ``ansible_ssh_private_key_file``; ``timeout`` from
``ansible_command_timeout``; ``proxy_command`` (a jump host) from ``ansible_paramiko_proxy_command``, else a
``ProxyCommand`` or ``ProxyJump`` in ``ansible_ssh_common_args`` / ``ansible_ssh_extra_args``; and
``host_key_checking`` and ``known_hosts_file`` from ``onyx_host_key_checking`` and ``onyx_known_hosts_file``.
A switch that does not answer is reported unreachable, as a host is. A task delegated to a switch
(``delegate_to``, as the validate role reads the switches' counters) takes that switch's variables.
"""

from __future__ import annotations

import sys

from ansible.plugins.action import ActionBase
from ansible.plugins.loader import connection_loader

from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import proxy_command

# module option -> inventory variables, first one set wins
CONNECTION_VARS = (
    ("host", ("ansible_host", "inventory_hostname")),
    ("port", ("ansible_port",)),
    ("username", ("ansible_user", "ansible_ssh_user")),
    ("password", ("ansible_password", "ansible_ssh_pass")),
    ("ssh_key_file", ("ansible_ssh_private_key_file", "ansible_private_key_file")),
    ("host_key_checking", ("onyx_host_key_checking",)),
    ("known_hosts_file", ("onyx_known_hosts_file",)),
    ("timeout", ("ansible_command_timeout",)),
)
# The options a rendered task (no switch) takes from nothing.
OFFLINE_STATES = ("rendered",)


class ActionModule(ActionBase):
    """The switch modules' action: the module on the controller, its connection options from inventory."""

    TRANSFERS_FILES = False
    _requires_connection = False
    MODULE = "roce.fabric.onyx_roce"
    CONNECTION_VARS = CONNECTION_VARS
    # Where the module takes a jump host (the SSH transport); None: it takes none.
    PROXY_OPTION = "proxy_command"

    def _connection_args(self, args, task_vars):
        """The task's arguments with the inventory's connection variables filled in where the task gives none: the
        switch's own, also when the task runs for another host and is delegated to the switch (``delegate_to``)."""
        args = dict(args)
        template = self._templar.template
        switch_vars = self._delegated_vars(task_vars)
        if switch_vars is not None:
            # The switch's variables, templated among themselves (a known_hosts path under its inventory_dir).
            task_vars = dict(switch_vars, inventory_hostname=self._task.delegate_to)
            templar = self._templar.copy_with_new_env()
            templar.available_variables = task_vars
            template = templar.template
        for option, names in self.CONNECTION_VARS:
            if args.get(option) is not None:
                continue
            for name in names:
                value = task_vars.get(name)
                if value is not None:
                    args[option] = template(value)
                    break
        if args.get("password") is None and getattr(self._play_context, "password", None):
            args["password"] = self._play_context.password  # --ask-pass
        if self.PROXY_OPTION and args.get(self.PROXY_OPTION) is None:
            command = proxy_command(
                [template(task_vars.get(name)) for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args")
                 if task_vars.get(name)],
                template(task_vars.get("ansible_paramiko_proxy_command")) if task_vars.get(
                    "ansible_paramiko_proxy_command") else None)
            if command:
                args[self.PROXY_OPTION] = command
        return args

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("state", "merged") not in OFFLINE_STATES:
            args = self._connection_args(args, task_vars)
            refused = self._refuse(args, task_vars)
            if refused:
                result.update(failed=True, msg=refused)
                return result
        # The module runs here, on the controller, with the interpreter that runs Ansible (it has netmiko).
        if self._connection.transport != "local":
            self._connection = connection_loader.get("local", self._play_context, None)
        module_vars = dict(task_vars, ansible_python_interpreter=sys.executable)
        switch_vars = self._delegated_vars(task_vars)
        if switch_vars is not None:
            # Delegated, Ansible picks the interpreter from the switch's variables: this one there too.
            module_vars["ansible_delegated_vars"] = dict(task_vars["ansible_delegated_vars"], **{
                self._task.delegate_to: dict(switch_vars, ansible_python_interpreter=sys.executable)})
        result.update(self._execute_module(module_name=self.MODULE, module_args=args, task_vars=module_vars))
        # A switch that does not answer is unreachable, as a host is: Ansible's recap counts it so, and a play can
        # go on without it (ignore_unreachable). The module's message carries the whole cause.
        if result.get("failed") and result.get("failure") == "unreachable":
            result["unreachable"] = True
            del result["failed"]  # Ansible takes a failed result as failed before it looks at unreachable
        return result

    def _delegated_vars(self, task_vars):
        """The variables of the switch the task is delegated to (``delegate_to``); None when it is not delegated."""
        delegated = self._task.delegate_to
        return (task_vars.get("ansible_delegated_vars") or {}).get(delegated) if delegated else None

    def _refuse(self, args, task_vars):
        """A message when the inventory asks for what the module cannot do; None otherwise."""
        return None
