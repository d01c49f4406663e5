# -*- coding: utf-8 -*-
# Copyright: roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the RoCE QoS contract (roce_fabric_qos): every layer's settings, and conflicts with it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.qos.contract import (
    ContractError,
    derive,
    switch_conflicts,
    value_conflicts,
)


def roce_qos(contract):
    try:
        return derive(contract)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))


def roce_qos_switch_conflicts(contract, roce_mode=None, ports=None, pfc=None):
    try:
        return switch_conflicts(contract, roce_mode=roce_mode, ports=ports, pfc=pfc)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))


def roce_qos_conflicts(contract, layer, given):
    if not isinstance(given, dict):
        raise AnsibleFilterError("roce_qos_conflicts expects a dict of the layer's settings, got %s" % type(given).__name__)
    try:
        return value_conflicts(contract, layer, given)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):

    def filters(self):
        return {
            "roce_qos": roce_qos,
            "roce_qos_switch_conflicts": roce_qos_switch_conflicts,
            "roce_qos_conflicts": roce_qos_conflicts,
        }
