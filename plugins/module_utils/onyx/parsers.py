# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Onyx (Spectrum) switches: release compare, port names and ``show`` output parsers.

PRIVATE to the roce.fabric collection: may change without notice.

Pure functions only: text and data in, data out. ``transport`` reads the switch, ``state``
compares what these parsers return with what the task wants.
"""

from __future__ import annotations

import re

from ansible.module_utils.compat.version import LooseVersion

ROCE_MODES = ("lossless", "semi-lossless", "lossy", "disabled")
TRUST_MODES = ("L2", "L3", "both")
MTU_MIN, MTU_MAX = 1500, 9216
VLAN_MIN, VLAN_MAX = 1, 4094
# From this release on, `show ... | json-print` wraps values in per-interface lists.
JSON_LAYOUT_VERSION = "3.6.6000"
# Releases before this one need a port shut down to change its MTU; later ones take `mtu N force`.
MTU_FORCE_VERSION = "3.6.0000"

PORT_RE = re.compile(r"^(?:eth(?:ernet)?\s*)?(?P<slot>\d+)/(?P<port>\d+)(?:/(?P<sub>\d+))?$", re.IGNORECASE)


class OnyxInputError(ValueError):
    """Input that cannot be right, found before anything is sent to a switch."""


# --- versions -----------------------------------------------------------------------------------------

def version_at_least(release, minimum):
    """Compare Onyx releases numerically (3.10.1000 is newer than 3.6.6000)."""
    return LooseVersion(str(release)) >= LooseVersion(str(minimum))


def new_json_layout(release):
    return version_at_least(release, JSON_LAYOUT_VERSION)


def mtu_needs_shutdown(release):
    return not version_at_least(release, MTU_FORCE_VERSION)


# --- ports ----------------------------------------------------------------------------------------------

def parse_port(name):
    """``'1/4'`` -> ``(1, 4, 0)``; ``'1/1/2'`` (breakout) -> ``(1, 1, 2)``; accepts ``Eth1/4``."""
    match = PORT_RE.match((name or "").strip())
    if not match:
        raise OnyxInputError("'%s' is not an Ethernet port name (expected slot/port such as 1/4, or 1/1/2 for a breakout)" % name)
    slot, port, sub = int(match.group("slot")), int(match.group("port")), int(match.group("sub") or 0)
    if slot < 1 or port < 1 or (match.group("sub") is not None and not 1 <= sub <= 8):
        raise OnyxInputError("'%s' is not an Ethernet port name (numbers start at 1, breakouts go up to 8)" % name)
    return slot, port, sub


def port_name(key):
    slot, port, sub = key
    return "%d/%d/%d" % (slot, port, sub) if sub else "%d/%d" % (slot, port)


def expand_ports(spec):
    """``'1/1-1/4'`` -> ``['1/1', '1/2', '1/3', '1/4']``; single ports and breakout ranges too."""
    text = (spec or "").strip()
    if "-" not in text:
        return [port_name(parse_port(text))]
    first, last = [part.strip() for part in text.split("-", 1)]
    start, end = parse_port(first), parse_port(last)
    if start[0] != end[0] or bool(start[2]) != bool(end[2]) or (start[2] and start[1] != end[1]):
        raise OnyxInputError("'%s' is not a port range: both ends must be on the same slot (and the same split port)" % spec)
    if start > end:
        raise OnyxInputError("'%s' is not a port range: it runs backwards" % spec)
    if start[2]:
        return [port_name((start[0], start[1], sub)) for sub in range(start[2], end[2] + 1)]
    return [port_name((start[0], port, 0)) for port in range(start[1], end[1] + 1)]


def expand_port_list(specs, what="ports"):
    """Expand several specs; a port given twice (overlapping ranges) is an error."""
    if isinstance(specs, str):
        specs = [specs]
    seen = {}
    result = []
    for spec in specs or []:
        for port in expand_ports(str(spec)):
            if port in seen:
                raise OnyxInputError("port %s is given twice in %s ('%s' and '%s')" % (port, what, seen[port], spec))
            seen[port] = spec
            result.append(port)
    return result


def sort_ports(ports):
    return sorted(ports, key=parse_port)


def compress_ports(ports):
    """Port names -> the shortest list of ranges, in port order: ['1/1-1/4', '1/7', '1/1/1-1/1/2']."""
    # Whole ports first, then split ports, so that runs of either kind stay together.
    keys = sorted(set(parse_port(p) for p in ports), key=lambda k: (k[0], 1 if k[2] else 0, k[1], k[2]))
    ranges = []
    for key in keys:
        if ranges:
            first, last = ranges[-1]
            whole_next = not key[2] and not last[2] and key[1] == last[1] + 1
            split_next = key[2] and last[2] and key[1] == last[1] and key[2] == last[2] + 1
            if key[0] == last[0] and (whole_next or split_next):
                ranges[-1] = (first, key)
                continue
        ranges.append((key, key))
    return [port_name(a) if a == b else "%s-%s" % (port_name(a), port_name(b)) for a, b in ranges]


# --- parsers --------------------------------------------------------------------------------------------

def empty_port_state():
    """Settings of a port that the running configuration does not mention (factory defaults)."""
    return dict(mtu=None, shutdown=False, switchport_mode=None, access_vlan=None, allowed_vlans=set(),
                pfc_mode=None, trust=None, ecn={}, description=None, speed=None)


def _vlan_list(text):
    vlans = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            vlans.update(range(int(low), int(high) + 1))
        else:
            vlans.add(int(part))
    return vlans


def parse_running_config(text):
    """Parse Onyx ``show running-config`` (section comments ``##``, one command per line, ranges allowed).

    Returns ``dict(release, hostname, roce, vlans, pfc, ports, lines)``. ``ports`` maps port names to
    their settings; lines the parser does not model are kept in ``lines`` only.
    """
    state = dict(release=None, hostname=None, roce=None, vlans={}, pfc=dict(enabled=False, priorities=set()), ports={}, lines=[])
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("## Product release:"):
            state["release"] = line.split(":", 1)[1].strip()
            continue
        if not line or line.startswith("#"):
            continue
        state["lines"].append(line)
        words = line.split()
        if words[0] == "roce":
            state["roce"] = words[1] if len(words) > 1 else "lossless"
        elif words[0] == "hostname" and len(words) == 2:
            state["hostname"] = words[1]
        elif words[0] == "vlan" and len(words) >= 2 and words[1].isdigit():
            vlan = state["vlans"].setdefault(int(words[1]), dict(name=None))
            if len(words) >= 4 and words[2] == "name":
                vlan["name"] = line.split(" name ", 1)[1].strip().strip('"')
        elif line.startswith("dcb priority-flow-control enable"):
            state["pfc"]["enabled"] = True
        elif line.startswith("dcb priority-flow-control priority ") and words[-1] == "enable":
            state["pfc"]["priorities"].add(int(words[3]))
        elif words[:2] == ["interface", "ethernet"] and len(words) >= 4:
            _parse_port_line(state["ports"], words[2], words[3:], line)
    return state


def _parse_port_line(ports, spec, words, line):
    try:
        names = expand_ports(spec)
    except OnyxInputError:
        return
    for name in names:
        port = ports.setdefault(name, empty_port_state())
        if words[0] == "mtu":
            port["mtu"] = int(words[1])
        elif words == ["shutdown"]:
            port["shutdown"] = True
        elif words == ["no", "shutdown"]:
            port["shutdown"] = False
        elif words[:2] == ["switchport", "mode"]:
            port["switchport_mode"] = words[2]
        elif words[:3] == ["switchport", "access", "vlan"]:
            port["access_vlan"] = int(words[3])
        elif words[:2] == ["switchport", "trunk"] or words[:2] == ["switchport", "hybrid"]:
            rest = words[3:] if len(words) > 3 else []
            if rest[:1] == ["add"]:
                port["allowed_vlans"].update(_vlan_list(rest[1]))
            elif rest[:1] == ["remove"]:
                port["allowed_vlans"].difference_update(_vlan_list(rest[1]))
            elif rest == ["none"]:
                port["allowed_vlans"] = set()
            elif rest and rest[0] != "all":
                port["allowed_vlans"] = _vlan_list(rest[0])
        elif words[:3] == ["dcb", "priority-flow-control", "mode"]:
            port["pfc_mode"] = words[3]
        elif words[:2] == ["qos", "trust"]:
            port["trust"] = words[2]
        elif words[0] == "traffic-class" and "ecn" in words:
            values = dict(zip(words[::2], words[1::2]))
            port["ecn"][int(words[1])] = (int(values["minimum-absolute"]), int(values["maximum-absolute"]))
        elif words[0] == "description":
            port["description"] = line.split(" description ", 1)[1].strip().strip('"')
        elif words[0] == "speed":
            port["speed"] = words[1]


def parse_show_roce(text):
    """``show roce`` -> ``dict(mode, trust, pfc, ecn)``; mode ``disabled`` when it prints ``N/A``."""
    result = dict(mode=None, trust=None, pfc=None, ecn=None)
    ecn = {}
    for raw in (text or "").splitlines():
        if ":" not in raw:
            continue
        label, value = [part.strip() for part in raw.split(":", 1)]
        if label == "RoCE mode":
            result["mode"] = "disabled" if value in ("N/A", "") else value
        elif label == "Port trust mode":
            result["trust"] = value
        elif label == "PFC":
            result["pfc"] = value == "enabled"
        elif label.startswith("Min"):
            ecn["min"] = int(value)
        elif label.startswith("Max"):
            ecn["max"] = int(value)
    if ecn:
        result["ecn"] = ecn
    return result


def parse_show_version_json(data):
    """``show version | json-print`` (a dict, or a one-element list on some releases) -> release string."""
    if isinstance(data, list):
        merged = {}
        for item in data:
            if isinstance(item, dict):
                merged.update(item)
        data = merged
    release = (data or {}).get("Product release")
    if not release:
        raise ValueError("show version | json-print has no 'Product release'")
    return release


def interfaces_from_json(data, release):
    """``show interfaces ethernet | json-print`` in either layout -> ``{'1/1': {attrs}}``.

    Before 3.6.6000 Onyx prints a list of dicts with a ``header`` (``Eth1/1``); from 3.6.6000 on a
    list of ``{'Eth1/1': [{attrs}, ...]}``.
    """
    result = {}
    items = data if isinstance(data, list) else [data]
    if new_json_layout(release):
        for item in items:
            for header, parts in (item or {}).items():
                attrs = {}
                for part in parts if isinstance(parts, list) else [parts]:
                    if isinstance(part, dict):
                        attrs.update(part)
                result[header[3:] if header.startswith("Eth") else header] = attrs
    else:
        for item in items:
            header = (item or {}).get("header", "")
            if header.startswith("Eth"):
                result[header[3:]] = dict((k, v) for k, v in item.items() if k != "header")
    return result


# The counters of ``show interfaces ethernet | json-print`` the validation reads, under the names the host side and
# Cumulus Linux share: (direction, Onyx label) -> name.
PORT_COUNTERS = ((("Rx", "error packets"), "in_errors"), (("Rx", "discard packets"), "in_discards"),
                 (("Rx", "packets"), "in_packets"), (("Tx", "error packets"), "out_errors"),
                 (("Tx", "discard packets"), "out_discards"), (("Tx", "hoq discard packets"), "out_hoq_discards"),
                 (("Tx", "packets"), "out_packets"))


def port_counters(interfaces):
    """``{'1/1': {in_errors, in_discards, in_packets, out_errors, out_discards, out_hoq_discards, out_packets}}``
    from ``interfaces_from_json``'s ports: the ``Rx`` and ``Tx`` objects of each; a counter the release does not
    print is left out, a port without either object too."""
    out = {}
    for port, attrs in (interfaces or {}).items():
        values = {}
        for (direction, label), name in PORT_COUNTERS:
            text = str(((attrs or {}).get(direction) or {}).get(label, "")).strip()
            if text.isdigit():
                values[name] = int(text)
        if values:
            out[port] = values
    return out


def mtu_from_attrs(attrs):
    """``'9216 bytes(Maximum packet size 9238 bytes)'`` -> 9216."""
    value = (attrs or {}).get("MTU", "")
    match = re.match(r"^\s*(\d+)", value)
    return int(match.group(1)) if match else None
