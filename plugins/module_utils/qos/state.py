# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Host NIC QoS state: what is wanted, one comparison with what is there, and the actions that close the gap.

PRIVATE to the roce.fabric collection: may change without notice.

Settings (all optional; an unset one is left alone):

- ``trust`` (``dscp``/``pcp``), ``pfc`` (the priorities with PFC on; the others are turned off),
  ``dscp2prio`` ({dscp: priority} entries that must hold): through the DCB backend, ``mlnx_qos`` or ``dcb``;
- ``ecn`` (priorities whose DCQCN reaction and notification points are enabled), ``cnp_dscp``,
  ``cnp_priority``: mlx5's ``/sys/class/net/IF/ecn/roce_{rp,np}/...`` files;
- ``roce_tos``: RDMA-CM's default ToS of the RDMA port (configfs, what ``cma_roce_tos`` writes);
- ``traffic_class``: the RDMA device's ``tc/PORT/traffic_class`` (MLNX_OFED's mlx5).

An action is a dict: ``{"run": argv}``, ``{"mkdir": path}`` or ``{"write": path, "value": text}``. All
functions are pure; paths are built from names that ``check_names`` accepted.
"""

from __future__ import annotations

import re

DCB_KEYS = ("trust", "pfc", "dscp2prio")
KEYS = ("trust", "pfc", "dscp2prio", "ecn", "cnp_dscp", "cnp_priority", "roce_tos", "traffic_class")

NETDEV_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}$")
RDMA_DEV_RE = re.compile(r"^[A-Za-z0-9_]{1,63}$")

CONFIGFS_RDMA_CM = "/sys/kernel/config/rdma_cm"


class QosInputError(ValueError):
    """An input that is out of range or malformed; nothing is changed."""


def check_names(netdev, rdma_device=None):
    if not NETDEV_RE.match(netdev or ""):
        raise QosInputError("netdev %r is not an interface name (letters, digits, _ . : -, at most 15)" % netdev)
    if rdma_device is not None and not RDMA_DEV_RE.match(rdma_device):
        raise QosInputError("rdma_device %r is not an RDMA device name (letters, digits, _)" % rdma_device)


def _prio(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 7:
        raise QosInputError("%s: priority %r is not 0..7" % (what, value))
    return value


def want(params):
    """The wanted settings from module parameters: only those given, checked and normalized."""
    out = {}
    if params.get("trust") is not None:
        if params["trust"] not in ("dscp", "pcp"):
            raise QosInputError("trust must be dscp or pcp, got %r" % params["trust"])
        out["trust"] = params["trust"]
    if params.get("pfc") is not None:
        out["pfc"] = sorted(set(_prio(p, "pfc") for p in params["pfc"]))
    if params.get("dscp2prio"):
        table = {}
        for dscp, prio in params["dscp2prio"].items():
            try:
                dscp_n = int(str(dscp), 0)
            except ValueError:
                raise QosInputError("dscp2prio: %r is not a DSCP" % dscp)
            if not 0 <= dscp_n <= 63:
                raise QosInputError("dscp2prio: DSCP %d is not 0..63" % dscp_n)
            table[dscp_n] = _prio(int(prio) if str(prio).isdigit() else prio, "dscp2prio")
        out["dscp2prio"] = table
    if params.get("ecn") is not None:
        out["ecn"] = sorted(set(_prio(p, "ecn") for p in params["ecn"]))
    for key, low, high in (("cnp_dscp", 0, 63), ("cnp_priority", 0, 7), ("roce_tos", 0, 255), ("traffic_class", 0, 255)):
        if params.get(key) is not None:
            value = params[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise QosInputError("%s must be %d..%d, got %r" % (key, low, high, value))
            out[key] = value
    return out


def pfc_priorities(vector):
    """[0,0,0,1,0,0,0,0] -> [3]."""
    return [p for p, on in enumerate(vector or []) if on]


def compare(wanted, have):
    """{key: (before, after)} for every wanted setting that differs from ``have`` (the current state).

    ``have`` holds ``trust``, ``pfc`` (priority list), ``dscp2prio`` ({dscp: prio}), ``ecn`` ({prio: {"np": 0/1,
    "rp": 0/1}}), ``cnp_dscp``, ``cnp_priority``, ``roce_tos``, ``traffic_class``.
    """
    changes = {}
    for key in ("trust", "cnp_dscp", "cnp_priority", "roce_tos", "traffic_class"):
        if key in wanted and have.get(key) != wanted[key]:
            changes[key] = (have.get(key), wanted[key])
    if "pfc" in wanted and sorted(have.get("pfc") or []) != wanted["pfc"]:
        changes["pfc"] = (sorted(have.get("pfc") or []), wanted["pfc"])
    if "dscp2prio" in wanted:
        current = have.get("dscp2prio") or {}
        differ = dict((d, p) for d, p in wanted["dscp2prio"].items() if current.get(d) != p)
        if differ:
            changes["dscp2prio"] = (dict((d, current.get(d)) for d in differ), differ)
    if "ecn" in wanted:
        current = have.get("ecn") or {}
        missing = [p for p in wanted["ecn"] if (current.get(p) or {}) != {"np": 1, "rp": 1}]
        if missing:
            changes["ecn"] = (dict((p, current.get(p)) for p in missing), dict((p, {"np": 1, "rp": 1}) for p in missing))
    return changes


def pfc_vector(priorities):
    wanted = set(priorities)
    return ",".join("1" if p in wanted else "0" for p in range(8))


def dcb_actions(backend, tool, netdev, changes):
    """The DCB tool commands for the trust, pfc and dscp2prio changes."""
    actions = []
    if backend == "mlnx_qos":
        if "trust" in changes:
            actions.append({"run": [tool, "-i", netdev, "--trust", changes["trust"][1]]})
        if "pfc" in changes:
            actions.append({"run": [tool, "-i", netdev, "--pfc", pfc_vector(changes["pfc"][1])]})
        if "dscp2prio" in changes:
            argv = [tool, "-i", netdev]
            for dscp, prio in sorted(changes["dscp2prio"][1].items()):
                argv += ["--dscp2prio", "set,%d,%d" % (dscp, prio)]
            actions.append({"run": argv})
    elif backend == "dcb":
        if "trust" in changes:
            order = ["dscp", "pcp"] if changes["trust"][1] == "dscp" else ["pcp"]
            actions.append({"run": [tool, "apptrust", "set", "dev", netdev, "order"] + order})
        if "pfc" in changes:
            wanted = set(changes["pfc"][1])
            actions.append({"run": [tool, "pfc", "set", "dev", netdev, "prio-pfc"]
                            + ["%d:%s" % (p, "on" if p in wanted else "off") for p in range(8)]})
        if "dscp2prio" in changes:
            actions.append({"run": [tool, "app", "replace", "dev", netdev, "dscp-prio"]
                            + ["%d:%d" % (d, p) for d, p in sorted(changes["dscp2prio"][1].items())]})
    return actions


def ecn_path(netdev, point, leaf):
    return "/sys/class/net/%s/ecn/%s/%s" % (netdev, point, leaf)


def sysfs_actions(netdev, rdma_device, port, changes, configfs_present=True, device_dir_present=True):
    """The sysfs / configfs writes for the ecn, cnp_*, roce_tos and traffic_class changes."""
    actions = []
    if "ecn" in changes:
        for prio in sorted(changes["ecn"][1]):
            for point in ("roce_np", "roce_rp"):
                actions.append({"write": ecn_path(netdev, point, "enable/%d" % prio), "value": "1"})
    if "cnp_dscp" in changes:
        actions.append({"write": ecn_path(netdev, "roce_np", "cnp_dscp"), "value": str(changes["cnp_dscp"][1])})
    if "cnp_priority" in changes:
        actions.append({"write": ecn_path(netdev, "roce_np", "cnp_802p_prio"), "value": str(changes["cnp_priority"][1])})
    if "roce_tos" in changes:
        if not configfs_present:
            actions.append({"run": ["modprobe", "rdma_cm"]})
        device_dir = "%s/%s" % (CONFIGFS_RDMA_CM, rdma_device)
        if not device_dir_present:
            actions.append({"mkdir": device_dir})
        actions.append({"write": "%s/ports/%d/default_roce_tos" % (device_dir, port), "value": str(changes["roce_tos"][1])})
    if "traffic_class" in changes:
        actions.append({"write": "/sys/class/infiniband/%s/tc/%d/traffic_class" % (rdma_device, port),
                        "value": str(changes["traffic_class"][1])})
    return actions


def describe(action):
    """One line for the ``commands`` record."""
    if "run" in action:
        return " ".join(action["run"])
    if "mkdir" in action:
        return "mkdir %s" % action["mkdir"]
    return "write %s: %s" % (action["write"], action["value"])


def boot_actions(backend, tool, netdev, rdma_device, port, wanted):
    """Everything that sets ``wanted`` on a freshly booted host (driver defaults), for the unit run at boot."""
    fresh = {"trust": None, "pfc": None, "dscp2prio": {}, "ecn": {}}
    changes = compare(wanted, fresh)
    for key in ("cnp_dscp", "cnp_priority", "roce_tos", "traffic_class"):
        if key in wanted:
            changes[key] = (None, wanted[key])
    return (dcb_actions(backend, tool, netdev, changes) if backend else []) + sysfs_actions(
        netdev, rdma_device, port, changes, configfs_present=False, device_dir_present=False)


def as_report(state):
    """A state dict for the result and the diff (JSON-friendly keys)."""
    out = {}
    for key in KEYS:
        if key not in state:
            continue
        value = state[key]
        if key in ("dscp2prio", "ecn") and isinstance(value, dict):
            value = dict((str(k), v) for k, v in sorted(value.items()))
        out[key] = value
    return out
