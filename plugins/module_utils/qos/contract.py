# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fabric's RoCE QoS contract (inventory variable ``roce_fabric_qos``) and what each layer derives from it.

PRIVATE to the roce.fabric collection: may change without notice.

One dict says how RoCE traffic is carried: the mode (``lossless`` with PFC, or ``lossy`` with ECN
only), the DSCP and priority of RoCE data and of congestion notification packets (CNPs), PFC and
ECN. ``normalize`` fills the defaults and refuses contradictions; ``derive`` gives every layer its
settings (the IP ToS byte that RDMA-CM, perftest and NCCL put on the wire, the PFC vector that
``mlnx_qos --pfc`` takes, the DSCP-to-priority entries that differ from the NIC's default map);
``switch_conflicts`` and ``value_conflicts`` name each setting of a layer that contradicts it.
All functions are pure.
"""

from __future__ import annotations

MODES = ("lossless", "lossy")

DEFAULTS = {
    "mode": "lossless",
    "roce_dscp": 26,
    "roce_priority": 3,
    "ecn": True,
    "cnp_dscp": 48,
    "cnp_priority": 6,
}

KEYS = ("mode", "roce_dscp", "roce_priority", "pfc", "ecn", "cnp_dscp", "cnp_priority")

# What NVIDIA Onyx's `roce` command configures (its RoCE profile): trust L3, RoCE on switch priority 3
# (PFC when lossless, ECN on its traffic class), CNPs on priority 6 in a strict-priority class. It leaves
# the DSCP-to-priority map at its default (the DSCP's three high bits), so any DSCP 24-31 is RoCE and
# 48-55 is CNP; it cannot move RoCE or CNPs to another priority.
ONYX_ROCE_PRIORITY = 3
ONYX_CNP_PRIORITY = 6

# ECN codepoint ECT(0) in the low two bits of the ToS byte: what NVIDIA's guides put on RoCE traffic
# (ToS 106 = DSCP 26 << 2 | 2).
ECT0 = 2


class ContractError(ValueError):
    """The contract itself is malformed or contradicts itself."""


def _int(contract, key, low, high):
    value = contract[key]
    if isinstance(value, bool):
        raise ContractError("roce_fabric_qos.%s must be an integer %d..%d, got %r" % (key, low, high, value))
    try:
        number = int(str(value).strip(), 0)
    except ValueError:
        raise ContractError("roce_fabric_qos.%s must be an integer %d..%d, got %r" % (key, low, high, value))
    if not low <= number <= high:
        raise ContractError("roce_fabric_qos.%s must be %d..%d, got %d" % (key, low, high, number))
    return number


def _bool(contract, key):
    value = contract[key]
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ContractError("roce_fabric_qos.%s must be true or false, got %r" % (key, value))


def normalize(contract):
    """The contract with every key, typed; ``ContractError`` names what is wrong."""
    if contract is None:
        contract = {}
    if not isinstance(contract, dict):
        raise ContractError("roce_fabric_qos must be a dict, got %s" % type(contract).__name__)
    unknown = sorted(set(contract) - set(KEYS))
    if unknown:
        raise ContractError("roce_fabric_qos has unknown keys %s (known: %s)" % (", ".join(unknown), ", ".join(KEYS)))
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in contract.items() if v is not None))
    mode = str(merged["mode"]).strip().lower()
    if mode not in MODES:
        raise ContractError("roce_fabric_qos.mode must be lossless or lossy, got %r" % merged["mode"])
    merged.setdefault("pfc", mode == "lossless")
    out = {
        "mode": mode,
        "roce_dscp": _int(merged, "roce_dscp", 0, 63),
        "roce_priority": _int(merged, "roce_priority", 0, 7),
        "pfc": _bool(merged, "pfc"),
        "ecn": _bool(merged, "ecn"),
        "cnp_dscp": _int(merged, "cnp_dscp", 0, 63),
        "cnp_priority": _int(merged, "cnp_priority", 0, 7),
    }
    if mode == "lossless" and not out["pfc"]:
        raise ContractError("roce_fabric_qos: mode lossless needs pfc true (PFC is what makes the class lossless)")
    if mode == "lossy" and out["pfc"]:
        raise ContractError("roce_fabric_qos: mode lossy means no PFC; set mode lossless to use pfc true")
    if mode == "lossy" and not out["ecn"]:
        raise ContractError("roce_fabric_qos: mode lossy needs ecn true (without PFC, ECN is the only congestion control)")
    if out["cnp_priority"] == out["roce_priority"]:
        raise ContractError("roce_fabric_qos: cnp_priority and roce_priority are both %d; CNPs need their own priority"
                            % out["roce_priority"])
    if out["cnp_dscp"] == out["roce_dscp"]:
        raise ContractError("roce_fabric_qos: cnp_dscp and roce_dscp are both %d" % out["roce_dscp"])
    return out


def tos(dscp, ecn=True):
    """The IP ToS byte (the IPv6 traffic class) for a DSCP, with ECT(0) when ECN is on."""
    return (int(dscp) << 2) | (ECT0 if ecn else 0)


def default_priority(dscp):
    """The priority a ConnectX NIC (and Linux DCB) maps a DSCP to by default: its three high bits."""
    return int(dscp) >> 3


def pfc_vector(priorities):
    """``0,0,0,1,0,0,0,0`` for ``mlnx_qos --pfc``: 1 for each priority in ``priorities``."""
    wanted = set(int(p) for p in priorities)
    return ",".join("1" if p in wanted else "0" for p in range(8))


def derive(contract):
    """Every layer's settings from the (normalized or raw) contract."""
    c = normalize(contract)
    roce_tos = tos(c["roce_dscp"], c["ecn"])
    dscp2prio = {}
    for dscp, prio in ((c["roce_dscp"], c["roce_priority"]), (c["cnp_dscp"], c["cnp_priority"])):
        if default_priority(dscp) != prio:
            dscp2prio[dscp] = prio
    return dict(c, **{
        "roce_tos": roce_tos,
        "nccl_ib_tc": roce_tos,
        "perftest_tclass": roce_tos,
        "pfc_priorities": [c["roce_priority"]] if c["pfc"] else [],
        "pfc_vector": pfc_vector([c["roce_priority"]] if c["pfc"] else []),
        "ecn_priorities": [c["roce_priority"]] if c["ecn"] else [],
        "dscp2prio": dscp2prio,
        "trust": "dscp",
    })


# The RoCE profile of each switch OS, as the roles use it: Onyx's ``roce`` command and Cumulus Linux's
# ``nv set qos roce`` both carry RoCE on switch priority 3 and CNPs on 6, with the default DSCP map.
PROFILE_NAMES = {"onyx": "Onyx's roce command", "nvue": "Cumulus Linux's RoCE profile (nv set qos roce)"}


def onyx_roce_limits(contract, os="onyx"):
    """What of the contract the switch's RoCE profile cannot express: messages, empty when it can."""
    c = normalize(contract)
    errors = []
    for what, dscp, prio, onyx in (("RoCE", c["roce_dscp"], c["roce_priority"], ONYX_ROCE_PRIORITY),
                                   ("CNP", c["cnp_dscp"], c["cnp_priority"], ONYX_CNP_PRIORITY)):
        if prio != onyx or default_priority(dscp) != onyx:
            errors.append(
                "%s carries %s on switch priority %d, with DSCP %d-%d mapped to it; the contract asks DSCP %d "
                "on priority %d, which it cannot express: choose a DSCP in %d-%d on priority %d, or set roce_switch_roce_mode "
                "to null and configure the switch's QoS by hand"
                % (PROFILE_NAMES.get(os, PROFILE_NAMES["onyx"]), what, onyx, onyx * 8, onyx * 8 + 7, dscp, prio, onyx * 8,
                   onyx * 8 + 7, onyx))
    return errors


def _ranges_of(ports_entry):
    return ", ".join(str(p) for p in ports_entry.get("ports") or [])


def switch_conflicts(contract, roce_mode=None, ports=None, pfc=None, os="onyx"):
    """Why the switch settings contradict the contract: a list of messages, empty when they agree.

    ``roce_mode`` / ``ports`` / ``pfc`` are onyx_roce's options (``ports``: [{ports, trust, pfc, ecn}]); a Cumulus
    switch's global trust, PFC and ECN are given as one such entry (see ``switch.role_args``).
    """
    c = normalize(contract)
    errors = []
    if roce_mode:
        if roce_mode in ("lossless", "lossy") and roce_mode != c["mode"]:
            errors.append("roce mode %s on the switch, the contract says %s (roce_fabric_qos.mode)" % (roce_mode, c["mode"]))
        if roce_mode == "semi-lossless" and c["mode"] != "lossless":
            errors.append("roce mode semi-lossless uses PFC, the contract says %s" % c["mode"])
        if roce_mode == "lossless-single-ipool" and c["mode"] != "lossless":
            errors.append("roce mode lossless-single-ipool uses PFC, the contract says %s" % c["mode"])
        if roce_mode != "disabled":
            errors.extend(onyx_roce_limits(c, os))
    for entry in ports or []:
        where = _ranges_of(entry)
        trust = entry.get("trust")
        if trust and str(trust).upper() not in ("L3", "BOTH"):
            errors.append("ports %s trust %s: the contract classifies RoCE by DSCP, which needs trust L3" % (where, trust))
        if entry.get("pfc") is True and not c["pfc"]:
            errors.append("ports %s pfc on: the contract is %s without PFC" % (where, c["mode"]))
        if entry.get("pfc") is False and c["pfc"]:
            errors.append("ports %s pfc off: the contract is lossless, PFC on priority %d" % (where, c["roce_priority"]))
        for ecn in entry.get("ecn") or []:
            tc = ecn.get("traffic_class")
            if tc is not None and int(tc) != c["roce_priority"]:
                errors.append("ports %s ECN on traffic class %s: RoCE is on priority %d (traffic class %d)"
                              % (where, tc, c["roce_priority"], c["roce_priority"]))
    if pfc:
        enabled = pfc.get("enabled")
        priorities = sorted(int(p) for p in pfc.get("priorities") or [])
        if enabled is True and not c["pfc"]:
            errors.append("global PFC enabled: the contract is %s without PFC" % c["mode"])
        if enabled is False and c["pfc"]:
            errors.append("global PFC disabled: the contract is lossless")
        if pfc.get("priorities") is not None and c["pfc"] and priorities != [c["roce_priority"]]:
            errors.append("global PFC on priorities %s: the contract has PFC on priority %d only" % (priorities, c["roce_priority"]))
    return errors


def value_conflicts(contract, layer, given):
    """Settings of a host-side layer that contradict the contract: ``given`` is {key: value} of
    ``derive``'s keys that the layer was told explicitly; returns messages naming the layer."""
    wanted = derive(contract)
    errors = []
    for key in sorted(given or {}):
        value = given[key]
        if value is None or key not in wanted:
            continue
        if str(value).strip().lower() != str(wanted[key]).strip().lower():
            errors.append("%s: %s is %s, the contract (roce_fabric_qos) gives %s" % (layer, key, value, wanted[key]))
    return errors
