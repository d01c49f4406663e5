# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Onyx (Spectrum) switches: the wanted state, and one comparison that yields commands and diff.

PRIVATE to the roce.fabric collection: may change without notice.

``compare`` is the only place that decides whether a setting differs: the commands the module
sends and the ``--diff`` it shows are both read off its list of changes, so they cannot disagree.
"""

from __future__ import annotations

import re

from ansible_collections.roce.fabric.plugins.module_utils.common.vlans import vlan_claims
from ansible_collections.roce.fabric.plugins.module_utils.onyx.parsers import (
    MTU_MAX,
    MTU_MIN,
    ROCE_MODES,
    TRUST_MODES,
    OnyxInputError,
    compress_ports,
    empty_port_state,
    expand_port_list,
    interfaces_from_json,
    mtu_from_attrs,
    mtu_needs_shutdown,
    parse_port,
    parse_running_config,
    parse_show_roce,
    parse_show_version_json,
    sort_ports,
)


# --- wanted state ---------------------------------------------------------------------------------------

# VLAN names this collection sends: a safe subset of what Onyx takes (it quotes the name; a quote, a space or a
# control character would end it or start another command).
VLAN_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")


def normalize_want(params):
    """Validate module parameters and return the wanted state keyed by port; raise OnyxInputError."""
    problems = []
    want = dict(roce=params.get("roce_mode"), vlans={}, pfc=None, ports={})
    if want["roce"] is not None and want["roce"] not in ROCE_MODES:
        problems.append("unknown RoCE mode '%s' (use %s)" % (want["roce"], ", ".join(ROCE_MODES)))

    def port_entry(port):
        return want["ports"].setdefault(port, {})

    vlan_problems, vlans = vlan_claims(params.get("vlans"), expand_port_list, OnyxInputError)
    problems.extend(vlan_problems)
    for vlan in vlans:
        vid, name = vlan["id"], vlan["name"]
        if name is not None and not VLAN_NAME_RE.match(str(name)):
            problems.append("VLAN %d name %r is not 1 to 32 letters, digits, '_', '.' or '-'" % (vid, name))
            continue
        want["vlans"][vid] = dict(name=name)
        for port in vlan["access"]:
            entry = port_entry(port)
            entry["switchport_mode"] = "access"
            entry["access_vlan"] = vid
        for port in vlan["trunk"]:
            entry = port_entry(port)
            entry["switchport_mode"] = "trunk"
            entry.setdefault("allowed_vlans", set()).add(vid)

    settings_seen = {}
    for group in params.get("ports") or []:
        try:
            names = expand_port_list(group.get("ports") or [], "a ports entry")
        except OnyxInputError as exc:
            problems.append(str(exc))
            continue
        if not names:
            problems.append("a ports entry names no port")
            continue
        mtu = group.get("mtu")
        if mtu is not None and not MTU_MIN <= mtu <= MTU_MAX:
            problems.append("MTU %s on %s is outside %d-%d" % (mtu, compress_ports(names)[0], MTU_MIN, MTU_MAX))
        trust = group.get("trust")
        if trust is not None and trust not in TRUST_MODES:
            problems.append("trust mode '%s' is not one of %s" % (trust, ", ".join(TRUST_MODES)))
        ecn = {}
        for item in group.get("ecn") or []:
            tc, low, high = item.get("traffic_class"), item.get("min_kb"), item.get("max_kb")
            if not isinstance(tc, int) or not 0 <= tc <= 7:
                problems.append("traffic class %s is outside 0-7" % tc)
            elif low is None or high is None or low < 0 or high < 0:
                problems.append("ECN thresholds of traffic class %d need min_kb and max_kb (KB, not negative)" % tc)
            elif low > high:
                problems.append("ECN minimum %d KB is above the maximum %d KB on traffic class %d" % (low, high, tc))
            else:
                ecn[tc] = (low, high)
        for port in names:
            if port in settings_seen:
                problems.append("port %s is in two ports entries" % port)
                continue
            settings_seen[port] = True
            entry = port_entry(port)
            for key in ("mtu", "trust", "shutdown"):
                if group.get(key) is not None:
                    entry[key] = group[key]
            if group.get("pfc") is not None:
                entry["pfc_mode"] = "on" if group["pfc"] else None
            if ecn:
                entry["ecn"] = dict(ecn)

    pfc = params.get("pfc")
    if pfc:
        priorities = set(pfc.get("priorities") or [])
        bad = sorted(p for p in priorities if not isinstance(p, int) or not 0 <= p <= 7)
        if bad:
            problems.append("PFC priorities %s are outside 0-7" % bad)
        want["pfc"] = dict(enabled=pfc.get("enabled", True), priorities=priorities)
    if problems:
        raise OnyxInputError("; ".join(problems))
    return want


def check_ports_exist(want, existing):
    """Every wanted port must exist on the switch (after breakouts)."""
    missing = [p for p in want["ports"] if p not in existing]
    if missing:
        raise OnyxInputError("the switch has no port %s" % ", ".join(compress_ports(missing)))


# --- one comparison -------------------------------------------------------------------------------------

# Port settings in the order their commands are sent (VLAN membership before L2/L3 settings, links last).
PORT_KEYS = ("switchport_mode", "access_vlan", "allowed_vlans", "mtu", "ecn", "pfc_mode", "trust", "shutdown")


def _port_changes(entry, now):
    """``{key: (before, after)}`` for every wanted port setting that differs from ``now``.

    ``before`` is the setting as the switch applies it (a port without a mode line is an access
    port, one without an MTU line has 1500); ``after`` is what it will be once the commands ran.
    """
    changes = {}
    if entry.get("switchport_mode") and entry["switchport_mode"] != (now["switchport_mode"] or "access"):
        changes["switchport_mode"] = (now["switchport_mode"] or "access", entry["switchport_mode"])
    if entry.get("access_vlan") is not None and entry["access_vlan"] != now["access_vlan"]:
        changes["access_vlan"] = (now["access_vlan"], entry["access_vlan"])
    missing = set(entry.get("allowed_vlans") or ()) - now["allowed_vlans"]
    if missing:
        # VLANs are added to a trunk, never removed from it.
        changes["allowed_vlans"] = (sorted(now["allowed_vlans"]), sorted(now["allowed_vlans"] | missing))
    if entry.get("mtu") is not None and entry["mtu"] != (now["mtu"] or MTU_MIN):
        changes["mtu"] = (now["mtu"] or MTU_MIN, entry["mtu"])
    ecn_before, ecn_after = {}, {}
    for tc, thresholds in sorted((entry.get("ecn") or {}).items()):
        if now["ecn"].get(tc) != thresholds:
            current = now["ecn"].get(tc)
            ecn_before[str(tc)] = list(current) if current else None
            ecn_after[str(tc)] = list(thresholds)
    if ecn_after:
        changes["ecn"] = (ecn_before, ecn_after)
    if "pfc_mode" in entry and entry["pfc_mode"] != now["pfc_mode"]:
        changes["pfc_mode"] = (now["pfc_mode"], entry["pfc_mode"])
    if "trust" in entry and entry["trust"] is not None and entry["trust"] != now["trust"]:
        changes["trust"] = (now["trust"], entry["trust"])
    if entry.get("shutdown") is not None and bool(entry["shutdown"]) != bool(now["shutdown"]):
        changes["shutdown"] = (bool(now["shutdown"]), entry["shutdown"])
    return changes


def wanted_ports(want, have, held_down=()):
    """``want["ports"]`` plus the ports of ``held_down`` to bring back up.

    ``held_down`` names ports that an earlier run shut down for an MTU change (releases before 3.6) and
    could not bring back up (the session dropped). Each one that is still admin-down, and that ``want`` does
    not itself ask to keep shut, is wanted up again.
    """
    ports = dict(want["ports"])
    for port in held_down:
        now = have["ports"].get(port)
        entry = ports.get(port) or {}
        if now is None or not now["shutdown"] or entry.get("shutdown") is not None:
            continue
        ports[port] = dict(entry, shutdown=False)
    return ports


def compare(want, have, roce_mode=None, held_down=()):
    """Every difference between ``want`` and ``have``: the one source of commands and diff.

    Returns ``dict(roce, vlans, pfc, ports)``: ``roce`` a ``(before, after)`` pair or None; ``vlans``
    ``{vid: (before, after)}``; ``pfc`` a pair of ``dict(enabled, priorities)`` or None; ``ports``
    ``{port: {key: (before, after)}}``. Unchanged items are absent. ``held_down``: see ``wanted_ports``.
    """
    changes = dict(roce=None, vlans={}, pfc=None, ports={})
    current_roce = roce_mode or have.get("roce") or "disabled"
    if want["roce"] is not None and want["roce"] != current_roce:
        changes["roce"] = (current_roce, want["roce"])
    for vid in sorted(want["vlans"]):
        vlan = want["vlans"][vid]
        current = have["vlans"].get(vid)
        if current is None or (vlan.get("name") and current.get("name") != vlan["name"]):
            after = dict(current or dict(name=None))
            if vlan.get("name"):
                after["name"] = vlan["name"]
            changes["vlans"][vid] = (current, after)
    if want.get("pfc") is not None:
        pfc, now = want["pfc"], have["pfc"]
        after = dict(enabled=pfc["enabled"], priorities=sorted(pfc["priorities"] | now["priorities"]))
        before = dict(enabled=now["enabled"], priorities=sorted(now["priorities"]))
        if before != after:
            changes["pfc"] = (before, after)
    ports = wanted_ports(want, have, held_down)
    for port in sort_ports(ports):
        port_changes = _port_changes(ports[port], have["ports"].get(port) or empty_port_state())
        if port_changes:
            changes["ports"][port] = port_changes
    return changes


def _grouped(per_port, template):
    """{port: value} -> one command per run of consecutive ports with the same value."""
    by_value = {}
    for port, value in per_port.items():
        by_value.setdefault(value, []).append(port)
    commands = []
    for value, ports in sorted(by_value.items(), key=lambda item: parse_port(sort_ports(item[1])[0])):
        for spec in compress_ports(ports):
            commands.append(template(spec, value))
    return commands


def commands_for(changes, have, release):
    """The commands that make ``changes`` (from ``compare``), safely ordered, and the ports they toggle.

    Returns ``(commands, toggles, shut_for_mtu)``: ``toggles`` names the ports whose link goes down and up
    (RoCE mode and MTU changes); ``shut_for_mtu`` the ports these commands shut down only to change their MTU
    (releases before 3.6) and bring back up later in the same list.
    """
    commands = []
    shut_for_mtu = []
    toggles = set()
    if changes["roce"] is not None:
        wanted = changes["roce"][1]
        commands.append("no roce" if wanted == "disabled" else ("roce" if wanted == "lossless" else "roce %s" % wanted))
        toggles.update(have["ports"].keys())

    # VLANs exist before ports join them.
    for vid in sorted(changes["vlans"]):
        before, after = changes["vlans"][vid]
        if before is None:
            commands.append("vlan %d" % vid)
        if after.get("name") and (before is None or before.get("name") != after["name"]):
            commands.append('vlan %d name "%s"' % (vid, after["name"]))

    def current(port):
        return have["ports"].get(port) or empty_port_state()

    per_key = dict((key, {}) for key in PORT_KEYS)
    ecn = {}
    for port, port_changes in changes["ports"].items():
        for key, (before, after) in port_changes.items():
            if key == "allowed_vlans":
                per_key[key][port] = ",".join(str(v) for v in after if v not in before)
            elif key == "ecn":
                for tc, thresholds in after.items():
                    ecn.setdefault((int(tc), tuple(thresholds)), []).append(port)
            else:
                per_key[key][port] = after
        if "mtu" in port_changes:
            toggles.add(port)

    eth = "interface ethernet %s "
    commands += _grouped(per_key["switchport_mode"], lambda spec, value: (eth + "switchport mode %s") % (spec, value))
    commands += _grouped(per_key["access_vlan"], lambda spec, value: (eth + "switchport access vlan %d") % (spec, value))
    commands += _grouped(per_key["allowed_vlans"], lambda spec, value: (eth + "switchport %s allowed-vlan add %s") % (spec, "trunk", value))
    if per_key["mtu"]:
        if mtu_needs_shutdown(release):
            # Only ports that are up are shut, and only those are brought back up: a port its operator shut
            # stays shut, and one the task itself shuts (shutdown: true) is not brought up in between.
            up = dict((p, True) for p in per_key["mtu"] if not current(p)["shutdown"])
            commands += _grouped(up, lambda spec, value: (eth + "shutdown") % spec)
            commands += _grouped(per_key["mtu"], lambda spec, value: (eth + "mtu %d") % (spec, value))
            shut_for_mtu = sort_ports(p for p in up if per_key["shutdown"].get(p) is not True)
            commands += _grouped(dict((p, True) for p in shut_for_mtu), lambda spec, value: (eth + "no shutdown") % spec)
            for port in up:
                if per_key["shutdown"].get(port) is True:
                    del per_key["shutdown"][port]  # already shut above
        else:
            commands += _grouped(per_key["mtu"], lambda spec, value: (eth + "mtu %d force") % (spec, value))
    for (tc, (low, high)), ports in sorted(ecn.items(), key=lambda item: (item[0][0], parse_port(sort_ports(item[1])[0]))):
        for spec in compress_ports(ports):
            commands.append((eth + "traffic-class %d congestion-control ecn minimum-absolute %d maximum-absolute %d") % (spec, tc, low, high))
    if changes["pfc"] is not None:
        before, after = changes["pfc"]
        if after["enabled"] and not before["enabled"]:
            commands.append("dcb priority-flow-control enable force")
        for prio in sorted(set(after["priorities"]) - set(before["priorities"])):
            commands.append("dcb priority-flow-control priority %d enable" % prio)
        if not after["enabled"] and before["enabled"]:
            commands.append("no dcb priority-flow-control enable force")
    commands += _grouped(per_key["pfc_mode"], lambda spec, value: ((eth + "dcb priority-flow-control mode on force") % spec
                                                                   if value == "on" else (eth + "no dcb priority-flow-control mode force") % spec))
    commands += _grouped(per_key["trust"], lambda spec, value: (eth + "qos trust %s") % (spec, value))
    commands += _grouped(dict((p, v) for p, v in per_key["shutdown"].items() if v), lambda spec, value: (eth + "shutdown") % spec)
    commands += _grouped(dict((p, v) for p, v in per_key["shutdown"].items() if not v), lambda spec, value: (eth + "no shutdown") % spec)
    return commands, sort_ports(toggles), shut_for_mtu


def diff_of(changes):
    """``--diff`` before/after, read off the same ``changes`` the commands come from."""
    before, after = {}, {}
    if changes["roce"] is not None:
        before["roce"], after["roce"] = changes["roce"]
    if changes["vlans"]:
        before["vlans"] = dict((str(vid), pair[0]) for vid, pair in sorted(changes["vlans"].items()))
        after["vlans"] = dict((str(vid), pair[1]) for vid, pair in sorted(changes["vlans"].items()))
    if changes["pfc"] is not None:
        before["pfc"], after["pfc"] = changes["pfc"]
    if changes["ports"]:
        before["ports"], after["ports"] = {}, {}
        for port in sort_ports(changes["ports"]):
            before["ports"][port] = dict((key, pair[0]) for key, pair in changes["ports"][port].items())
            after["ports"][port] = dict((key, pair[1]) for key, pair in changes["ports"][port].items())
    return dict(before=before, after=after)


def gathered(have, roce_mode=None, ports=None):
    """The switch's RoCE configuration in the module's own option shape: what ``state: merged`` is given to change
    nothing (``ports`` limits it to those ports; default every port the switch has).

    A port's settings are its applied ones (no MTU line is 1500, no mode line an access port); ports with the
    same settings are one entry, their names compressed into ranges."""
    names = sort_ports(have["ports"] if ports is None else [p for p in ports if p in have["ports"]])
    state = dict((name, have["ports"][name]) for name in names)
    vlans = []
    for vid in sorted(int(v) for v in have["vlans"]):
        vlan = have["vlans"].get(vid) or have["vlans"].get(str(vid)) or {}
        access = [p for p, s in state.items() if (s["switchport_mode"] or "access") == "access" and s["access_vlan"] == vid]
        trunk = [p for p, s in state.items() if s["switchport_mode"] == "trunk" and vid in s["allowed_vlans"]]
        entry = dict(id=vid, name=vlan.get("name"), access_ports=compress_ports(access) if access else [],
                     trunk_ports=compress_ports(trunk) if trunk else [])
        vlans.append(entry)
    groups = {}
    for name, settings in state.items():
        key = (settings["mtu"] or MTU_MIN, settings["trust"], settings["pfc_mode"] == "on", bool(settings["shutdown"]),
               tuple(sorted((int(tc), tuple(v)) for tc, v in (settings["ecn"] or {}).items())))
        groups.setdefault(key, []).append(name)
    entries = []
    for (mtu, trust, pfc, shutdown, ecn), members in sorted(groups.items(), key=lambda item: parse_port(item[1][0])):
        entry = dict(ports=compress_ports(members), mtu=mtu, pfc=pfc, shutdown=shutdown)
        if trust is not None:
            entry["trust"] = trust
        if ecn:
            entry["ecn"] = [dict(traffic_class=tc, min_kb=low, max_kb=high) for tc, (low, high) in ecn]
        entries.append(entry)
    pfc = have.get("pfc") or dict(enabled=False, priorities=set())
    return dict(roce_mode=roce_mode or have.get("roce") or "disabled", vlans=vlans, ports=entries,
                pfc=dict(enabled=bool(pfc["enabled"]), priorities=sorted(pfc["priorities"])))


def applied(have, changes):
    """``have`` as it is once ``changes`` (from ``compare``) are made: the state ``after`` is gathered from."""
    after = dict(have, vlans=dict(have["vlans"]), ports=dict((p, dict(s)) for p, s in have["ports"].items()))
    if changes["roce"] is not None:
        after["roce"] = changes["roce"][1]
    for vid, (_before, vlan) in changes["vlans"].items():
        after["vlans"][vid] = dict(vlan)
    if changes["pfc"] is not None:
        after["pfc"] = dict(enabled=changes["pfc"][1]["enabled"], priorities=set(changes["pfc"][1]["priorities"]))
    for port, port_changes in changes["ports"].items():
        settings = after["ports"].setdefault(port, empty_port_state())
        for key, (_before, value) in port_changes.items():
            if key == "allowed_vlans":
                settings[key] = set(value)
            elif key == "ecn":
                ecn = dict(settings.get("ecn") or {})
                ecn.update((int(tc), tuple(v)) for tc, v in value.items())
                settings[key] = ecn
            else:
                settings[key] = value
    return after


def plan(want, have, release, roce_mode=None, held_down=()):
    """``dict(commands, toggles, shut_for_mtu, restores, diff)`` from one ``compare`` of ``want`` and ``have``.

    ``restores``: the ports of ``held_down`` that the commands bring back up.
    """
    changes = compare(want, have, roce_mode, held_down)
    commands, toggles, shut_for_mtu = commands_for(changes, have, release)
    restores = sort_ports(p for p in held_down if changes["ports"].get(p, {}).get("shutdown") == (True, False))
    # before and after in the module's option shape, for the wanted ports, from the same comparison.
    ports = sort_ports(set(want["ports"]) | set(changes["ports"]))
    after = applied(have, changes)
    return dict(commands=commands, toggles=toggles, shut_for_mtu=shut_for_mtu, restores=restores, diff=diff_of(changes),
                before=gathered(have, roce_mode, ports), after=gathered(after, after.get("roce"), ports))


def still_down(have, ports):
    """The ports of ``ports`` that ``have`` (a parsed running-config) shows admin-down."""
    return sort_ports(p for p in ports if (have["ports"].get(p) or empty_port_state())["shutdown"])


def generate_commands(want, have, release, roce_mode=None):
    """``(commands, toggles)`` that take the switch from ``have`` to ``want`` (see ``plan``)."""
    result = plan(want, have, release, roce_mode)
    return result["commands"], result["toggles"]


# --- reading the switch ---------------------------------------------------------------------------------

def read_switch(session):
    """Release, parsed running-config (with every port's MTU), RoCE mode and the switch's ports (``{port: attrs}``
    of ``show interfaces ethernet``, their counters with them)."""
    release = parse_show_version_json(session.show_json("show version"))
    have = parse_running_config(session.show("show running-config"))
    roce_mode = parse_show_roce(session.show("show roce"))["mode"]
    interfaces = interfaces_from_json(session.show_json("show interfaces ethernet"), release)
    for name, attrs in interfaces.items():
        port = have["ports"].setdefault(name, empty_port_state())
        if port["mtu"] is None:
            port["mtu"] = mtu_from_attrs(attrs)
    return release, have, roce_mode, interfaces
