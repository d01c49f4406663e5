# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which host NICs get the RoCE QoS contract: the nic_qos role's ``nic_qos_interfaces``, listed or ``auto``.

PRIVATE to the roce.fabric collection: may change without notice.

``auto`` takes every port that carries RoCE on the host's own adapters, as ``roce.fabric.rdma_facts`` reads them:
link layer Ethernet, state ACTIVE, a network interface, on a physical function of a PCI adapter. Software devices
(Soft-RoCE, siw) have no DCB or DCQCN to set, and a virtual function's QoS is its physical function's, so neither
is taken. A listed entry is checked against the same suboptions the role documents.
"""

from __future__ import annotations

import json

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

INTERFACE_SPEC = dict(
    netdev=dict(type="str", required=True),
    rdma_device=dict(type="str"),
    port=dict(type="int", default=1),
    dcb=dict(type="bool", default=True),
    ecn=dict(type="bool", default=True),
    roce_tos=dict(type="bool", default=True),
    traffic_class=dict(type="bool", default=False),
)


class InterfacesError(ValueError):
    """nic_qos_interfaces cannot be used; nothing was changed."""


def auto_interfaces(devices):
    """Every active RoCE port of the host's physical adapters, as nic_qos_interfaces entries, in device order."""
    found = []
    for device in devices or []:
        if device.get("software") or device.get("virtual_function"):
            continue
        for port in device.get("ports") or []:
            netdev = (port.get("netdev") or {}).get("name")
            if port.get("link_layer") != "Ethernet" or port.get("state") != "ACTIVE" or not netdev:
                continue
            entry = dict((name, option.get("default")) for name, option in INTERFACE_SPEC.items())
            entry.update(netdev=netdev, rdma_device=device.get("name"), port=port.get("port", 1))
            found.append(entry)
    return found


def interfaces(value, devices=None):
    """nic_qos_interfaces as a list of complete entries. ``value`` is a list of entries or ``auto`` (then
    ``devices`` is rdma_facts' device list). Raises InterfacesError naming what is wrong."""
    if isinstance(value, str):
        if value.strip().lower() != "auto":
            raise InterfacesError("nic_qos_interfaces must be a list of NICs ({netdev: ...}) or auto, not '%s'" % value)
        if devices is None:
            raise InterfacesError("nic_qos_interfaces: auto needs the host's RDMA devices (roce.fabric.rdma_facts)")
        return auto_interfaces(devices)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InterfacesError("nic_qos_interfaces must be a list of NICs ({netdev: ...}) or auto, not a %s"
                              % type(value).__name__)
    out, errors = [], []
    validator = ArgumentSpecValidator(INTERFACE_SPEC)
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            errors.append("entry %d is a %s, not {netdev: ...}" % (index + 1, type(entry).__name__))
            continue
        result = validator.validate(entry)
        if result.error_messages:
            errors.extend("entry %d (%s): %s" % (index + 1, entry.get("netdev", "?"), message)
                          for message in result.error_messages)
            continue
        out.append(result.validated_parameters)
    netdevs = [entry["netdev"] for entry in out]
    twice = sorted(set(n for n in netdevs if netdevs.count(n) > 1))
    if twice:
        errors.append("listed more than once: %s" % ", ".join(twice))
    if errors:
        raise InterfacesError("nic_qos_interfaces cannot be used, nothing was changed: %s" % "; ".join(errors))
    return out


def host_args(nic, settings, backend):
    """The arguments of ``roce.fabric.nic_qos`` for one NIC of nic_qos_interfaces (a complete entry) under the
    contract's host settings (``qos.contract.derive``): the contract's route to the host NIC, beside
    ``qos.switch.role_args`` for the switch. A NIC without DCB (``dcb: false``: a virtio NIC, a cloud VF) gets no
    trust, PFC or DSCP map and the ``none`` backend; without ECN files (``ecn: false``) no ECN or CNP settings; the
    RDMA-CM ToS unless ``roce_tos: false``, and the traffic class only with ``traffic_class: true``. Keys whose value
    would be left out are not in the result."""
    dcb, ecn = nic.get("dcb", True), nic.get("ecn", True)
    args = dict(netdev=nic["netdev"], rdma_device=nic.get("rdma_device") or None, port=nic.get("port") or 1,
                backend=backend if dcb else "none")
    if dcb:
        args.update(trust=settings["trust"], pfc=settings["pfc_priorities"])
        if settings.get("dscp2prio"):
            args["dscp2prio"] = settings["dscp2prio"]
    if ecn:
        if settings.get("ecn"):
            args["ecn"] = settings["ecn_priorities"]
        args.update(cnp_dscp=settings["cnp_dscp"], cnp_priority=settings["cnp_priority"])
    if nic.get("roce_tos", True):
        args["roce_tos"] = settings["roce_tos"]
    if nic.get("traffic_class", False):
        args["traffic_class"] = settings["roce_tos"]
    return dict((key, value) for key, value in args.items() if value is not None)


def nic_checks(results, check_mode=False):
    """The report's ``qos <netdev>`` records from the registered loop results of roce.fabric.nic_qos run read-only
    (check mode) on each NIC: a change it would make is a mismatch with the contract, an error is reported as such.
    In a check-mode run a mismatch is skipped, not failed: the host stage of the same run would have set it."""
    checks = []
    for result in results or []:
        netdev = (result.get("item") or {}).get("netdev")
        differs = "msg" in result or bool(result.get("changed"))
        if "msg" in result:
            msg = "%s: %s" % (netdev, result["msg"])
        elif differs:
            msg = ("%s differs from the RoCE QoS contract: %s would fix it (run playbooks/host.yml, role "
                   "roce.fabric.nic_qos)" % (netdev, "; ".join(result.get("commands") or [])))
        else:
            msg = "%s agrees with the contract: %s" % (netdev, json.dumps(result.get("after"), sort_keys=True))
        if check_mode and differs:
            msg = "check mode: what the host stage of this run would set is not there yet; " + msg
        checks.append({"name": "qos %s" % netdev,
                       "status": ("skipped" if check_mode else "failed") if differs else "passed",
                       "msg": msg, "command": "roce.fabric.nic_qos (check mode) on %s" % netdev})
    return checks


def nccl_tc_check(nccl_env, roce_tos):
    """The ``qos nccl`` record: does the NCCL environment's NCCL_IB_TC carry the contract's ToS?"""
    given = (nccl_env or {}).get("NCCL_IB_TC")
    passed = given is not None and str(given) == str(roce_tos)
    return {"name": "qos nccl", "status": "passed" if passed else "failed",
            "msg": "NCCL_IB_TC=%s in the NCCL environment; the contract's ToS is %s%s" % (
                "unset" if given is None else given, roce_tos,
                "" if passed else ": set validate_nccl_env_extra.NCCL_IB_TC (or leave it unset) so NCCL rides the "
                                  "RoCE class"),
            "command": "NCCL environment (rdma_facts nccl_env + contract + validate_nccl_env_extra)"}
