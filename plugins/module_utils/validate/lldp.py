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


def parse_nv_interface_lldp(text):
    """Cumulus Linux's ``nv show interface lldp`` table (NVUE 5.x): ``{interface: {host, port, speed, type}}`` for
    each interface with a neighbour. The columns are found from the dashes under the header, so a long name that
    fills its column does not shift the others."""
    lines = [line.rstrip("\n") for line in (text or "").splitlines()]
    for number, line in enumerate(lines):
        if line.startswith("Interface") and "Remote Host" in line and number + 1 < len(lines):
            rule = lines[number + 1]
            break
    else:
        raise LldpError("no 'Interface ... Remote Host  Remote Port' header: not nv show interface lldp output")
    spans, start = [], None
    for index, char in enumerate(rule + " "):
        if char == "-" and start is None:
            start = index
        elif char != "-" and start is not None:
            spans.append((start, index))
            start = None
    if len(spans) < 5:
        raise LldpError("the header rule has %d columns, not 5" % len(spans))
    names = ("interface", "speed", "type", "host", "port")
    out = {}
    for line in lines[number + 2:]:
        if not line.strip():
            continue
        cells = []
        for column, (begin, end) in enumerate(spans[:5]):
            stop = spans[column + 1][0] if column + 1 < len(spans) else len(line)
            cells.append(line[begin:stop].strip())
        row = dict(zip(names, cells))
        if row["interface"] and row["host"]:
            out[row["interface"]] = dict(host=row["host"], port=row["port"], speed=row["speed"], type=row["type"])
    return out
