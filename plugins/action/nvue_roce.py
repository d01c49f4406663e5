# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs roce.fabric.nvue_roce on the controller with the switch's inventory connection variables.

A play can target Cumulus switches themselves: unless the task sets them, ``host``, ``username`` and ``password``
come from ``ansible_host``, ``ansible_user`` and ``ansible_password`` (or ``--ask-pass``); the REST API's ``port``
and ``validate_certs`` from ``nvue_api_port`` and ``nvue_validate_certs``, else from the httpapi connection's
``ansible_httpapi_port`` and ``ansible_httpapi_validate_certs`` (``ansible_httpapi_use_ssl`` false is refused: the
API is HTTPS only); ``ca_path`` and ``transport`` from ``nvue_ca_path`` and ``nvue_transport``; ``timeout`` from
``ansible_command_timeout``; for the SSH transport ``ssh_port`` and ``ssh_key_file`` from ``ansible_port`` and
``ansible_ssh_private_key_file``, ``host_key_checking`` and ``known_hosts_file`` from ``nvue_host_key_checking``
and ``nvue_known_hosts_file``, and a jump host (``proxy_command``) as for Ansible's SSH connections.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.roce.fabric.plugins.action.onyx_roce import ActionModule as SwitchAction


class ActionModule(SwitchAction):

    MODULE = "roce.fabric.nvue_roce"
    CONNECTION_VARS = (
        ("host", ("ansible_host", "inventory_hostname")),
        ("port", ("nvue_api_port", "ansible_httpapi_port")),
        ("username", ("ansible_user",)),
        ("password", ("ansible_password",)),
        ("validate_certs", ("nvue_validate_certs", "ansible_httpapi_validate_certs")),
        ("ca_path", ("nvue_ca_path",)),
        ("transport", ("nvue_transport",)),
        ("ssh_port", ("ansible_port",)),
        ("ssh_key_file", ("ansible_ssh_private_key_file", "ansible_private_key_file")),
        ("host_key_checking", ("nvue_host_key_checking",)),
        ("known_hosts_file", ("nvue_known_hosts_file",)),
        ("timeout", ("ansible_command_timeout",)),
    )

    def _refuse(self, args, task_vars):
        use_ssl = task_vars.get("ansible_httpapi_use_ssl")
        if use_ssl is None or args.get("transport", "rest") != "rest":
            return None
        if not boolean(self._templar.template(use_ssl), strict=False):
            return ("ansible_httpapi_use_ssl is false, but the NVUE REST API is served over HTTPS only: nothing was "
                    "sent (drop the variable, or use nvue_transport: ssh)")
        return None
