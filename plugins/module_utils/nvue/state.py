# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Cumulus Linux (NVUE): the wanted state and one comparison that yields the patch, the commands and the diff.

PRIVATE to the roce.fabric collection: may change without notice.

``compare`` is the only place that decides whether a setting differs. Each change it returns carries its
NVUE object path, the value to PATCH and the ``nv set``/``nv unset`` line an operator would type, so the one
revision the module applies, the commands it reports and the ``--diff`` it shows cannot disagree.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.common.vlans import vlan_claims
from ansible_collections.roce.fabric.plugins.module_utils.nvue.parsers import (
    BRIDGE,
    MTU_MAX,
    MTU_MIN,
    PROFILE,
    QOS_OBJECTS_VERSION,
    RESERVED_VLANS,
    ROCE_MODES,
    SINGLE_IPOOL_VERSION,
    TRUST_MODES,
    NvueInputError,
    compress_ports,
    expand_port_list,
    sort_ports,
    version_at_least,
)

ECN_MAX_BYTES = 100000000


def normalize_want(params):
    """Validate module parameters; the wanted state (the shape ``parsers.parse_config`` returns, partial)."""
    problems = []
    want = dict(roce_mode=params.get("roce_mode"), vlans=[], trust=params.get("trust"), pfc=None, ecn={}, ports={})
    if want["roce_mode"] is not None and want["roce_mode"] not in ROCE_MODES:
        problems.append("unknown RoCE mode '%s' (use %s)" % (want["roce_mode"], ", ".join(ROCE_MODES)))
    if want["trust"] is not None and want["trust"] not in TRUST_MODES:
        problems.append("unknown trust '%s' (use %s)" % (want["trust"], ", ".join(TRUST_MODES)))

    def entry(port):
        return want["ports"].setdefault(port, {})

    vlan_problems, vlans = vlan_claims(params.get("vlans"), expand_port_list, NvueInputError, reserved=RESERVED_VLANS,
                                       reserved_by="Cumulus Linux")
    problems.extend(vlan_problems)
    for vlan in vlans:
        want["vlans"].append(vlan["id"])
        for port in vlan["access"]:
            entry(port)["access"] = vlan["id"]
        for port in vlan["trunk"]:
            entry(port).setdefault("vlans", []).append(vlan["id"])
    want["vlans"].sort()

    seen = set()
    for group in params.get("ports") or []:
        try:
            ports = expand_port_list(group.get("ports"), "ports")
        except NvueInputError as exc:
            problems.append(str(exc))
            continue
        if not ports:
            problems.append("a ports entry names no port")
        for port in ports:
            if port in seen:
                problems.append("%s appears in two ports entries" % port)
                continue
            seen.add(port)
            mtu = group.get("mtu")
            if mtu is not None:
                if not MTU_MIN <= mtu <= MTU_MAX:
                    problems.append("MTU %d of %s is outside %d-%d" % (mtu, port, MTU_MIN, MTU_MAX))
                    continue
                entry(port)["mtu"] = mtu
            if group.get("shutdown") is not None:
                entry(port)["state"] = "down" if group["shutdown"] else "up"

    pfc = params.get("pfc")
    if pfc is not None:
        priorities = sorted(set(pfc.get("priorities") or []))
        bad = [p for p in priorities if not 0 <= p <= 7]
        if bad:
            problems.append("PFC priorities %s are outside 0-7" % ", ".join(str(p) for p in bad))
        flag = "enable" if pfc.get("enabled", True) else "disable"
        want["pfc"] = dict(priorities=priorities, tx=flag, rx=flag)

    for item in params.get("ecn") or []:
        tc = item.get("traffic_class")
        low, high = item.get("min_bytes"), item.get("max_bytes")
        if not isinstance(tc, int) or not 0 <= tc <= 7:
            problems.append("ECN traffic class %s is outside 0-7" % tc)
            continue
        if tc in want["ecn"]:
            problems.append("ECN traffic class %d is listed twice" % tc)
            continue
        if not (isinstance(low, int) and isinstance(high, int) and 0 < low <= high <= ECN_MAX_BYTES):
            problems.append("ECN thresholds of traffic class %d must be 1 <= min_bytes <= max_bytes <= %d (got %s, %s)"
                            % (tc, ECN_MAX_BYTES, low, high))
            continue
        want["ecn"][tc] = dict(ecn="enable", min=low, max=high)

    if problems:
        raise NvueInputError("; ".join(problems))
    return want


def check_release(want, release):
    """Refuse what the switch's release has no NVUE object for; raises NvueInputError naming the release."""
    problems = []
    if not version_at_least(release, QOS_OBJECTS_VERSION):
        for key, what in (("trust", "trust"), ("pfc", "pfc"), ("ecn", "ecn")):
            if want.get(key):
                problems.append("%s needs Cumulus Linux %s or later (NVUE has no %s object before)" % (what, QOS_OBJECTS_VERSION, what))
    if want.get("roce_mode") == "lossless-single-ipool" and not version_at_least(release, SINGLE_IPOOL_VERSION):
        problems.append("RoCE mode lossless-single-ipool needs Cumulus Linux %s or later" % SINGLE_IPOOL_VERSION)
    if problems:
        raise NvueInputError("the switch runs Cumulus Linux %s: %s" % (release, "; ".join(problems)))


# --- the comparison -------------------------------------------------------------------------------------------

def _change(item, path, value, command, before, after):
    return dict(item=item, path=path, value=value, command=command, before=before, after=after)


def compare(want, have):
    """Every managed setting that differs, in the order an operator would type it. Each change is a dict with
    ``item`` (for the diff), ``path`` (NVUE object path), ``value`` (what to PATCH there; None unsets),
    ``command`` and ``before``/``after``."""
    changes = []
    mode = want.get("roce_mode")
    if mode is not None and mode != have["roce_mode"]:
        if mode == "disabled":
            changes.append(_change("roce_mode", ("qos", "roce"), None, "nv unset qos roce", have["roce_mode"], mode))
        else:
            if have["roce_mode"] == "disabled":
                changes.append(_change("roce_mode", ("qos", "roce", "enable"), "on", "nv set qos roce enable on",
                                       have["roce_mode"], mode))
            changes.append(_change("roce_mode", ("qos", "roce", "mode"), mode, "nv set qos roce mode %s" % mode,
                                   have["roce_mode"], mode))
    trust = want.get("trust")
    if trust is not None and trust != have["trust"]:
        changes.append(_change("trust", ("qos", "mapping", PROFILE, "trust"), trust,
                               "nv set qos mapping %s trust %s" % (PROFILE, trust), have["trust"], trust))
    pfc = want.get("pfc")
    if pfc is not None:
        now = have["pfc"]
        for prio in pfc["priorities"]:
            if prio not in now["priorities"]:
                changes.append(_change("pfc", ("qos", "pfc", PROFILE, "switch-priority", str(prio)), {},
                                       "nv set qos pfc %s switch-priority %d" % (PROFILE, prio), now["priorities"], pfc["priorities"]))
        for prio in now["priorities"]:
            if prio not in pfc["priorities"]:
                changes.append(_change("pfc", ("qos", "pfc", PROFILE, "switch-priority", str(prio)), None,
                                       "nv unset qos pfc %s switch-priority %d" % (PROFILE, prio), now["priorities"], pfc["priorities"]))
        for key in ("tx", "rx"):
            if pfc["priorities"] and now.get(key) != pfc[key]:
                changes.append(_change("pfc", ("qos", "pfc", PROFILE, key), pfc[key],
                                       "nv set qos pfc %s %s %s" % (PROFILE, key, pfc[key]), now.get(key), pfc[key]))
    for tc in sorted(want["ecn"]):
        wanted = want["ecn"][tc]
        now = have["ecn"].get(tc) or {}
        base = ("qos", "congestion-control", PROFILE, "traffic-class", str(tc))
        for key, field in (("ecn", "ecn"), ("min", "min-threshold"), ("max", "max-threshold")):
            if now.get(key) != wanted[key]:
                changes.append(_change("ecn", base + (field,), wanted[key],
                                       "nv set qos congestion-control %s traffic-class %d %s %s" % (PROFILE, tc, field, wanted[key]),
                                       now.get(key), wanted[key]))
    for vid in want["vlans"]:
        if vid not in have["vlans"]:
            changes.append(_change("vlans", ("bridge", "domain", BRIDGE, "vlan", str(vid)), {},
                                   "nv set bridge domain %s vlan %d" % (BRIDGE, vid), None, vid))
    for port in sort_ports(want["ports"]):
        wanted = want["ports"][port]
        now = have["ports"].get(port) or dict(mtu=None, state=None, access=None, vlans=[], bridged=False)
        base = ("interface", port)
        if "access" in wanted and now["access"] != wanted["access"]:
            changes.append(_change("ports", base + ("bridge", "domain", BRIDGE, "access"), wanted["access"],
                                   "nv set interface %s bridge domain %s access %d" % (port, BRIDGE, wanted["access"]),
                                   now["access"], wanted["access"]))
        for vid in wanted.get("vlans", []):
            if vid not in now["vlans"]:
                changes.append(_change("ports", base + ("bridge", "domain", BRIDGE, "vlan", str(vid)), {},
                                       "nv set interface %s bridge domain %s vlan %d" % (port, BRIDGE, vid), now["vlans"], vid))
        if "mtu" in wanted and now["mtu"] != wanted["mtu"]:
            changes.append(_change("ports", base + ("link", "mtu"), wanted["mtu"],
                                   "nv set interface %s link mtu %d" % (port, wanted["mtu"]), now["mtu"], wanted["mtu"]))
        if "state" in wanted and now["state"] != wanted["state"]:
            changes.append(_change("ports", base + ("link", "state"), {wanted["state"]: {}},
                                   "nv set interface %s link state %s" % (port, wanted["state"]), now["state"], wanted["state"]))
    return changes


def patch_document(changes):
    """One root PATCH body (``PATCH /nvue_v1/?rev=<id>``) holding every change; None values unset."""
    doc = {}
    for change in changes:
        node = doc
        for key in change["path"][:-1]:
            node = node.setdefault(key, {})
            if node is None:  # a parent unset earlier wins over its children
                break
        else:
            node[change["path"][-1]] = change["value"]
    return doc


def commands_of(changes):
    """The ``nv`` lines of the changes, ports with equal settings folded into one range (``swp1-4``)."""
    folded = []
    by_rest = {}
    for change in changes:
        words = change["command"].split()
        if words[:3] == ["nv", "set", "interface"]:
            rest = " ".join(words[4:])
            if rest in by_rest:
                by_rest[rest].append(words[3])
                continue
            by_rest[rest] = [words[3]]
            folded.append(("port", rest))
        else:
            folded.append(("line", change["command"]))
    out = []
    for kind, text in folded:
        if kind == "line":
            out.append(text)
        else:
            out.append("nv set interface %s %s" % (compress_ports(by_rest[text]), text))
    return out


def diff_of(changes, want, have):
    """Before/after for ``--diff`` of the items ``changes`` (``compare``'s result) touch, and of nothing else: the
    diff comes from the same comparison as the commands and the PATCH, so it cannot show a change they do not make."""
    touched = set(change["item"] for change in changes)
    ports = set(change["path"][1] for change in changes if change["item"] == "ports")
    classes = set(int(change["path"][4]) for change in changes if change["item"] == "ecn")
    before, after = {}, {}
    for key in ("roce_mode", "trust"):
        if key in touched:
            before[key], after[key] = have[key], want[key]
    if "pfc" in touched:
        now = dict(have["pfc"])
        wanted = dict(want["pfc"])
        if not wanted["priorities"]:
            wanted.pop("tx")
            wanted.pop("rx")
            now.pop("tx", None)
            now.pop("rx", None)
        before["pfc"], after["pfc"] = now, wanted
    for tc in sorted(classes):
        before.setdefault("ecn", {})[tc] = have["ecn"].get(tc)
        after.setdefault("ecn", {})[tc] = want["ecn"][tc]
    if "vlans" in touched:
        before["vlans"], after["vlans"] = have["vlans"], sorted(set(have["vlans"]) | set(want["vlans"]))
    for port in sort_ports(ports):
        wanted = want["ports"][port]
        now = have["ports"].get(port) or {}
        b = dict((k, now.get(k)) for k in wanted if k != "vlans")
        a = dict((k, v) for k, v in wanted.items() if k != "vlans")
        if "vlans" in wanted:
            b["vlans"] = now.get("vlans", [])
            a["vlans"] = sorted(set(now.get("vlans", [])) | set(wanted["vlans"]))
        before.setdefault("ports", {})[port] = b
        after.setdefault("ports", {})[port] = a
    return before, after


def disruptions(changes, have):
    """What the change does to traffic: ``(ports whose link flaps, reasons the whole switch pauses)``.

    An MTU change takes an up port's link down and up. A RoCE mode or PFC change reprograms the ASIC's buffers
    (NVUE reloads switchd with a new ``qos_infra.conf``), which the Cumulus guide says may drop packets
    momentarily on every port."""
    toggled = []
    for change in changes:
        if change["path"][0] == "interface" and change["path"][2:] == ("link", "mtu"):
            port = change["path"][1]
            if (have["ports"].get(port) or {}).get("state") != "down":
                toggled.append(port)
    switch_wide = sorted(set(change["item"] for change in changes if change["item"] in ("roce_mode", "pfc")))
    return sort_ports(toggled), switch_wide


def _port_list(ports):
    return compress_ports(ports).split(",") if ports else []


def gathered(have, ports=None):
    """The switch's RoCE configuration in the module's own option shape: what ``state: merged`` is given to change
    nothing (``ports`` limits it to those ports; default every port the applied configuration names)."""
    names = sort_ports(have["ports"] if ports is None else [p for p in ports if p in have["ports"]])
    state = dict((name, have["ports"][name]) for name in names)
    vlans = []
    for vid in sorted(have["vlans"]):
        access = [p for p, s in state.items() if s.get("access") == vid]
        # A port is an access port of one VLAN or a trunk, as the module takes them.
        trunk = [p for p, s in state.items() if s.get("access") is None and vid in (s.get("vlans") or [])]
        vlans.append(dict(id=vid, access_ports=_port_list(access), trunk_ports=_port_list(trunk)))
    groups = {}
    for name, settings in state.items():
        key = (settings.get("mtu"), settings.get("state"))
        if key != (None, None):
            groups.setdefault(key, []).append(name)
    entries = []
    for (mtu, link), members in sorted(groups.items(), key=lambda item: sort_ports(item[1])[0]):
        entry = dict(ports=_port_list(members))
        if mtu is not None:
            entry["mtu"] = mtu
        if link is not None:
            entry["shutdown"] = link == "down"
        entries.append(entry)
    pfc = have.get("pfc") or dict(priorities=[], tx=None, rx=None)
    out = dict(roce_mode=have["roce_mode"], vlans=vlans, ports=entries,
               pfc=dict(enabled=pfc.get("tx") != "disable", priorities=sorted(pfc.get("priorities") or [])),
               ecn=[dict(traffic_class=tc, min_bytes=v["min"], max_bytes=v["max"]) for tc, v in sorted(have["ecn"].items())
                    if v.get("ecn") == "enable" and v.get("min") is not None and v.get("max") is not None])
    if have.get("trust") is not None:
        out["trust"] = have["trust"]
    return out


def applied(want, have):
    """``have`` as it is once ``want`` is applied: what ``compare`` changes, no more (the state ``after`` is
    gathered from)."""
    after = dict(have, vlans=sorted(set(have["vlans"]) | set(want["vlans"])), ecn=dict(have["ecn"]),
                 ports=dict((p, dict(s)) for p, s in have["ports"].items()))
    for key in ("roce_mode", "trust"):
        if want.get(key) is not None:
            after[key] = want[key]
    if want.get("pfc") is not None:
        after["pfc"] = dict(want["pfc"]) if want["pfc"]["priorities"] else dict(have["pfc"], priorities=[])
    after["ecn"].update(want["ecn"])
    for port, wanted in want["ports"].items():
        now = after["ports"].setdefault(port, dict(mtu=None, state=None, access=None, vlans=[], bridged=False))
        for key in ("access", "mtu", "state"):
            if key in wanted:
                now[key] = wanted[key]
        if wanted.get("vlans"):
            now["vlans"] = sorted(set(now.get("vlans") or []) | set(wanted["vlans"]))
    return after


def plan(want, have):
    changes = compare(want, have)
    before, after = diff_of(changes, want, have)
    toggled, switch_wide = disruptions(changes, have)
    ports = sort_ports(want["ports"])
    return dict(changes=changes, patch=patch_document(changes), commands=commands_of(changes),
                diff=dict(before=before, after=after), toggled=toggled, switch_wide=switch_wide,
                before=gathered(have, ports), after=gathered(applied(want, have), ports))


def factory_state():
    """A switch with nothing configured: what ``state: rendered`` compares against."""
    return dict(roce_mode="disabled", vlans=[], trust=None, pfc=dict(priorities=[], tx=None, rx=None), ecn={}, ports={})


def converged(want, have):
    """Whether ``have`` (read back after an apply) holds everything ``want`` asks for."""
    return not compare(want, have)
