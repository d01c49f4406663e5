# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The VLANs a switch module is given and the ports each claims, checked once for both switch families.

PRIVATE to the roce.fabric collection: may change without notice.

Onyx and Cumulus Linux (NVUE) take the same ``vlans`` argument (``id``, ``access_ports``, ``trunk_ports``, on Onyx
also ``name``): an ID in 1-4094, outside the OS's reserved range, listed once; a port is the access port of one
VLAN only and never also a trunk port. The port names are the family's own (``expand``, its parser).
"""

from __future__ import annotations

VLAN_MIN, VLAN_MAX = 1, 4094


def vlan_claims(vlans, expand, error, reserved=None, reserved_by=""):
    """``(problems, entries)`` of the given VLANs, in order.

    ``expand(specs, what)``: the family's port-list parser (raises ``error``, the family's input error);
    ``reserved``: ``(low, high)`` IDs the OS keeps for itself (``reserved_by`` names it). Each entry is
    ``{id, name, access: [ports], trunk: [ports]}``; a VLAN or port with a problem is left out of them.
    """
    problems, entries, seen, claimed = [], [], set(), {}
    for vlan in vlans or []:
        vid = vlan.get("id")
        if not isinstance(vid, int) or isinstance(vid, bool) or not VLAN_MIN <= vid <= VLAN_MAX:
            problems.append("VLAN %s is outside %d-%d" % (vid, VLAN_MIN, VLAN_MAX))
            continue
        if reserved and reserved[0] <= vid <= reserved[1]:
            problems.append("VLAN %d is in %d-%d, which %s reserves for itself" % (vid, reserved[0], reserved[1], reserved_by))
            continue
        if vid in seen:
            problems.append("VLAN %d is listed twice" % vid)
            continue
        seen.add(vid)
        try:
            access = expand(vlan.get("access_ports") or [], "the access ports of VLAN %d" % vid)
            trunk = expand(vlan.get("trunk_ports") or [], "the trunk ports of VLAN %d" % vid)
        except error as exc:
            problems.append(str(exc))
            continue
        entry = dict(id=vid, name=vlan.get("name"), access=[], trunk=[])
        for port in access:
            if port in claimed:
                problems.append("port %s is an access port of VLAN %d and of VLAN %d" % (port, claimed[port], vid))
                continue
            claimed[port] = vid
            entry["access"].append(port)
        for port in trunk:
            if port in claimed:
                problems.append("port %s is an access port of VLAN %d and cannot be a trunk port of VLAN %d"
                                % (port, claimed[port], vid))
                continue
            entry["trunk"].append(port)
        entries.append(entry)
    return problems, entries
