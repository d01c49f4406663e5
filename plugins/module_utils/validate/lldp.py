# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: LLDP neighbours as lldpd's ``lldpcli -f json0 show neighbors details`` prints them. Pure parser.

PRIVATE to the roce.fabric collection: may change without notice.

``json0`` keeps one shape whatever the number of interfaces and neighbours (every value a list of objects, the
scalars under ``value``), which ``json`` does not (lldpcli(8)). A neighbour's port is its port ID when the sender
gives the interface name as ID (subtype ``ifname``, as switches do), else its port description (lldpd's own default
sends the MAC address as ID and the interface name as description).
"""

from __future__ import annotations

import json


class LldpError(ValueError):
    """Output that is not lldpcli's json0."""


def _first(items, key="value"):
    for item in items or []:
        if isinstance(item, dict) and item.get(key) not in (None, ""):
            return item[key]
    return None


def parse_neighbors(text):
    """``{local interface: {switch, port, chassis_id, port_id, port_id_type, port_descr, descr}}``, one neighbour an
    interface (the first when a port hears several)."""
    try:
        data = json.loads(text or "{}")
    except ValueError as exc:
        raise LldpError("not lldpcli json0 output: %s" % exc)
    out = {}
    for block in (data.get("lldp") or []) if isinstance(data, dict) else []:
        for interface in block.get("interface") or []:
            name = interface.get("name")
            if not name or name in out:
                continue
            chassis = (interface.get("chassis") or [{}])[0]
            port = (interface.get("port") or [{}])[0]
            port_ids = port.get("id") or [{}]
            port_id, port_id_type = port_ids[0].get("value"), port_ids[0].get("type")
            port_descr = _first(port.get("descr"))
            out[name] = dict(switch=_first(chassis.get("name")), chassis_id=_first(chassis.get("id")),
                             descr=_first(chassis.get("descr")), port_id=port_id, port_id_type=port_id_type,
                             port_descr=port_descr,
                             port=port_id if port_id_type == "ifname" else (port_descr or port_id))
    return out
