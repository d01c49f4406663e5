# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux RDMA hosts: SR-IOV virtual functions of a physical function, compared once.

PRIVATE to the roce.fabric collection: may change without notice.

``parse_vfs`` reads the ``vfinfo_list`` of ``ip -j -d link show dev PF``; ``want_vfs`` checks and
normalises what the task asks for; ``compare`` is the one comparison from which both the commands
(``ip link set dev PF vf N ...``) and the diff are read.
"""

from __future__ import annotations

import json
import re

IFNAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
VLAN_MAX = 4094
# The settings of a VF, in the order ``ip link set ... vf N`` takes them.
VF_KEYS = ("mac", "trust", "spoofchk", "vlan")


class SriovInputError(ValueError):
    """Input that cannot be right, found before anything is changed."""


def parse_vfs(text):
    """``ip -j -d link show dev PF`` -> ``{index: dict(mac, trust, spoofchk, vlan)}`` (no VFs: ``{}``).

    The VLAN is the first entry of ``vlan_list`` (0 when there is none); ``trust`` and ``spoofchk`` are
    None when the driver does not report them.
    """
    data = json.loads(text or "[]")
    links = data if isinstance(data, list) else [data]
    if not links:
        return {}
    vfs = {}
    for entry in links[0].get("vfinfo_list") or []:
        vlans = entry.get("vlan_list") or [{}]
        vfs[int(entry["vf"])] = dict(
            mac=(entry.get("address") or "").lower() or None,
            trust=entry.get("trust"),
            spoofchk=entry.get("spoofchk"),
            vlan=int(vlans[0].get("vlan", 0) or 0),
        )
    return vfs


def want_vfs(netdev, num_vfs, vfs):
    """Check the task's input; return ``{index: {key: value}}`` of the settings given (None left out)."""
    problems = []
    if not IFNAME_RE.match(netdev or ""):
        problems.append("'%s' is not an interface name (1-15 of A-Z a-z 0-9 _ . : -)" % netdev)
    if num_vfs < 0:
        problems.append("num_vfs must not be negative (%d)" % num_vfs)
    wanted = {}
    for vf in vfs or []:
        index = vf.get("index")
        if index is None or not 0 <= index < max(num_vfs, 0):
            problems.append("VF %s is outside 0..%d (num_vfs %d)" % (index, num_vfs - 1, num_vfs))
            continue
        if index in wanted:
            problems.append("VF %d is given twice" % index)
            continue
        settings = dict((key, vf.get(key)) for key in VF_KEYS if vf.get(key) is not None)
        if "mac" in settings:
            if not MAC_RE.match(str(settings["mac"])):
                problems.append("VF %d: '%s' is not a MAC address (six hex pairs with colons)" % (index, settings["mac"]))
            settings["mac"] = str(settings["mac"]).lower()
        if "vlan" in settings and not 0 <= settings["vlan"] <= VLAN_MAX:
            problems.append("VF %d: VLAN %s is outside 0-%d" % (index, settings["vlan"], VLAN_MAX))
        wanted[index] = settings
    if problems:
        raise SriovInputError("; ".join(problems))
    return wanted


def compare(wanted, have):
    """``{index: {key: (before, after)}}`` for every wanted VF setting that differs from ``have``."""
    changes = {}
    for index in sorted(wanted):
        now = have.get(index) or {}
        differ = dict((key, (now.get(key), value)) for key, value in wanted[index].items() if now.get(key) != value)
        if differ:
            changes[index] = differ
    return changes


def set_argv(ip, netdev, index, differ):
    """The one ``ip link set`` argv for the changed settings of one VF."""
    argv = [ip, "link", "set", "dev", netdev, "vf", str(index)]
    for key in VF_KEYS:
        if key in differ:
            value = differ[key][1]
            argv += [key, ("on" if value else "off") if isinstance(value, bool) else str(value)]
    return argv


def diff_of(count_before, count_after, changes):
    before, after = {}, {}
    if count_before != count_after:
        before["num_vfs"], after["num_vfs"] = count_before, count_after
    if changes:
        before["vfs"] = dict((str(i), dict((k, v[0]) for k, v in c.items())) for i, c in sorted(changes.items()))
        after["vfs"] = dict((str(i), dict((k, v[1]) for k, v in c.items())) for i, c in sorted(changes.items()))
    return before, after


def split_deferred(devices, plans, defer):
    """The role's devices split into those whose VFs it sets now and those it leaves to the rolling play: with
    ``defer``, a device whose plan (roce.fabric.sriov_vfs in check mode, one result per device with its ``item``)
    takes VFs away (a count change through 0) waits; ``{"now": [...], "deferred": [...]}``, in the devices' order."""
    devices = list(devices or [])
    if not defer:
        return {"now": devices, "deferred": []}
    removing = set(result["item"].get("netdev") for result in plans or []
                   if isinstance(result, dict) and result.get("removes_vfs") and isinstance(result.get("item"), dict))
    return {"now": [device for device in devices if device.get("netdev") not in removing],
            "deferred": [device for device in devices if device.get("netdev") in removing]}
