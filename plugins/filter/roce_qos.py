# -*- coding: utf-8 -*-
# Copyright: roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the RoCE QoS contract (roce_fabric_qos): every layer's settings, and conflicts with it."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.qos.counters import traffic_check
from ansible_collections.roce.fabric.plugins.module_utils.qos.host import (
    InterfacesError,
    host_args,
    interfaces,
    nccl_tc_check,
    nic_checks,
)
from ansible_collections.roce.fabric.plugins.module_utils.qos.switch import counter_reads, families, role_args, verify_check
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


def roce_switch_check(result, host, os, roce_mode, contract, check_mode=False, os_setting=None):
    """The ``qos switch`` record of a switch's read-only run (module_utils/qos/switch.py verify_check)."""
    if result is not None and not isinstance(result, dict):
        raise AnsibleFilterError("roce_switch_check expects the registered result of the switch's module")
    try:
        settings = derive(contract)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))
    return verify_check(host, os, result, roce_mode or None, settings, check_mode=bool(check_mode),
                        os_setting=os_setting)


def roce_switch_families(switches, hostvars):
    """The switches by the family module that reads them (module_utils/qos/switch.py families)."""
    return families(switches, hostvars)


def roce_switch_counters(results, unknown=None, earlier=None, phase=None):
    """Each switch's port counters, or why it was not read (module_utils/qos/switch.py counter_reads); with
    ``phase``, added under it to ``earlier``'s phases."""
    if not isinstance(results, list):
        raise AnsibleFilterError("roce_switch_counters expects a list of the family modules' registered loops")
    return counter_reads(results, unknown, earlier, phase)


def roce_qos_switch_conflicts(contract, roce_mode=None, ports=None, pfc=None):
    try:
        return switch_conflicts(contract, roce_mode=roce_mode, ports=ports, pfc=pfc)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))


def roce_switch_args(contract, os, roce_mode=None, vlans=None, ports=None, pfc=None, trust=None, ecn=None):
    try:
        return role_args(contract, os, roce_mode=roce_mode or None, vlans=vlans, ports=ports, pfc=pfc or None,
                         trust=trust or None, ecn=ecn)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))


def roce_qos_conflicts(contract, layer, given):
    if not isinstance(given, dict):
        raise AnsibleFilterError("roce_qos_conflicts expects a dict of the layer's settings, got %s" % type(given).__name__)
    try:
        return value_conflicts(contract, layer, given)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))


def roce_qos_traffic(netdev, before, after, contract, capture=None, min_share=0.95, min_bytes=1000000):
    for name, value in (("before", before), ("after", after)):
        if not isinstance(value, dict):
            raise AnsibleFilterError("roce_qos_traffic: %s must be a roce.fabric.rdma_counters result, got %s"
                                     % (name, type(value).__name__))
    try:
        qos = derive(contract)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))
    if capture is not None and not isinstance(capture, dict):
        raise AnsibleFilterError("roce_qos_traffic: capture must be a dict like {packets: N, dscp: {'26': N}}")
    return traffic_check(netdev, before, after, qos["roce_priority"], qos["roce_dscp"], capture=capture or None,
                         min_share=float(min_share), min_bytes=int(min_bytes))


def nic_qos_checks(registered, check_mode=False, nics=None):
    """The ``qos <netdev>`` records of roce.fabric.nic_qos run read-only over a host's NICs (its registered loop);
    none when ``nics`` (the NICs that run read them) is given and empty: a loop registered earlier is not this run's."""
    if nics is not None and not nics:
        return []
    if not isinstance(registered, dict):
        raise AnsibleFilterError("nic_qos_checks expects the registered loop of roce.fabric.nic_qos, got %s"
                                 % type(registered).__name__)
    return nic_checks(registered.get("results") or [], check_mode=bool(check_mode))


def roce_qos_nccl_check(nccl_env, contract):
    """The ``qos nccl`` record: NCCL_IB_TC against the contract's ToS."""
    try:
        qos = derive(contract)
    except ContractError as exc:
        raise AnsibleFilterError(str(exc))
    return nccl_tc_check(nccl_env if isinstance(nccl_env, dict) else {}, qos["roce_tos"])


def nic_qos_args(nic, settings, backend):
    try:
        return host_args(nic, settings, backend)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("nic_qos_args needs a nic_qos_interfaces entry and the contract's settings "
                                 "(roce.fabric.roce_qos): %s missing" % exc)


def nic_qos_interfaces(value, devices=None):
    try:
        return interfaces(value, devices)
    except InterfacesError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule:

    def filters(self):
        return {
            "roce_qos": roce_qos,
            "roce_qos_switch_conflicts": roce_qos_switch_conflicts,
            "roce_qos_conflicts": roce_qos_conflicts,
            "roce_qos_nccl_check": roce_qos_nccl_check,
            "roce_switch_check": roce_switch_check,
            "roce_switch_families": roce_switch_families,
            "roce_switch_counters": roce_switch_counters,
            "nic_qos_checks": nic_qos_checks,
            "roce_qos_traffic": roce_qos_traffic,
            "roce_switch_args": roce_switch_args,
            "nic_qos_interfaces": nic_qos_interfaces,
            "nic_qos_args": nic_qos_args,
        }
