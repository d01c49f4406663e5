# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One set of switch variables for every switch OS: what the roce_switch role gives each family's module.

PRIVATE to the roce.fabric collection: may change without notice.

The role's variables (``roce_switch_*``) describe a RoCE switch the same way whatever it runs: the RoCE mode,
VLANs and their ports, per-port MTU and admin state, and the QoS of the RoCE ports (trust, PFC, ECN). Onyx keeps
trust, PFC mode and ECN per port, so they go on every RoCE port entry (one without ``roce: false``); Cumulus Linux
keeps them per switch (the ``default-global`` profiles), so they go to the switch, and ECN thresholds in KB
become bytes (x 1000, as NVIDIA's defaults of 150 KB and 150000 bytes are the same setting). The contract check
runs on the per-port view of either, so one rule holds for both.
"""

from __future__ import annotations

import copy

from ansible_collections.roce.fabric.plugins.module_utils.qos.contract import switch_conflicts

OS_NAMES = {
    "onyx": "onyx", "mellanox.onyx.onyx": "onyx", "mlnxos": "onyx", "mellanox_mlnxos": "onyx",
    "nvue": "nvue", "cumulus": "nvue", "cumulus_linux": "nvue", "nvidia.nvue.httpapi": "nvue", "nvidia.nvue.nvue": "nvue",
}
MODULES = {"onyx": "roce.fabric.onyx_roce", "nvue": "roce.fabric.nvue_roce"}
PORT_QOS_KEYS = ("trust", "pfc", "ecn")
NVUE_MODES = ("lossless", "lossy", "lossless-single-ipool", "disabled")


def switch_os(name):
    """``onyx`` or ``nvue`` for an ``ansible_network_os`` (or role) value; ValueError for another."""
    key = str(name or "").strip().lower()
    if not key:
        raise ValueError("the switch has no ansible_network_os (nor roce_switch_os): set it to onyx (NVIDIA Onyx) or "
                         "nvue (Cumulus Linux); the collection does not guess which CLI a switch speaks")
    if key not in OS_NAMES:
        raise ValueError("the switch OS '%s' is not one this collection configures (Onyx: onyx, mellanox.onyx.onyx; "
                         "Cumulus Linux: nvue, cumulus, nvidia.nvue.httpapi); set ansible_network_os or roce_switch_os" % name)
    return OS_NAMES[key]


def _trust(value, os):
    if value is None:
        return None
    text = str(value).strip()
    if os == "onyx":
        return {"l2": "L2", "l3": "L3", "both": "both"}.get(text.lower(), text)
    return text.lower()


def role_args(contract, os, roce_mode=None, vlans=None, ports=None, pfc=None, trust=None, ecn=None):
    """``{"os", "module", "args", "errors"}``: the family module's QoS and port arguments from the role's variables,
    and why they cannot be used (contradicting the contract, or something the OS cannot take). ``args`` leaves out
    the options that are not set."""
    errors = []
    try:
        os = switch_os(os)
    except ValueError as exc:
        return dict(os=None, module=None, args={}, errors=[str(exc)])
    vlans = copy.deepcopy(vlans or [])
    ports = copy.deepcopy(ports or [])
    ecn = copy.deepcopy(ecn or [])
    pfc_enabled = None if not pfc else pfc.get("enabled", True)
    args = {}
    if roce_mode:
        args["roce_mode"] = roce_mode
    view = []  # the per-port view the contract check reads, for either OS
    if os == "onyx":
        entries = []
        for entry in ports:
            carries_roce = entry.pop("roce", True)
            if carries_roce:
                if trust is not None:
                    entry.setdefault("trust", _trust(trust, os))
                if ecn:
                    entry.setdefault("ecn", ecn)
                if pfc_enabled is not None:
                    entry.setdefault("pfc", pfc_enabled)
            if "trust" in entry:
                entry["trust"] = _trust(entry["trust"], os)
            entries.append(entry)
            view.append(entry)
        args.update(vlans=vlans, ports=entries)
        if pfc:
            args["pfc"] = pfc
    else:
        if roce_mode and roce_mode not in NVUE_MODES:
            errors.append("roce mode %s is Onyx's; Cumulus Linux has %s" % (roce_mode, ", ".join(NVUE_MODES)))
        entries = []
        for entry in ports:
            entry.pop("roce", None)
            own = [key for key in PORT_QOS_KEYS if key in entry]
            if own:
                errors.append("ports %s set %s per port; Cumulus Linux keeps them per switch (the default-global profiles): "
                              "use roce_switch_trust, roce_switch_pfc and roce_switch_ecn"
                              % (", ".join(str(p) for p in entry.get("ports") or []), ", ".join(own)))
            entries.append(dict((k, v) for k, v in entry.items() if k not in PORT_QOS_KEYS))
        for vlan in vlans:
            vlan.pop("name", None)  # NVUE's bridge VLANs have no name
        args.update(vlans=vlans, ports=entries)
        if trust is not None:
            args["trust"] = _trust(trust, os)
        if pfc:
            args["pfc"] = dict(enabled=pfc_enabled, priorities=list(pfc.get("priorities") or []))
        if ecn:
            args["ecn"] = [dict(traffic_class=e.get("traffic_class"), min_bytes=int(e.get("min_kb", 0)) * 1000,
                                max_bytes=int(e.get("max_kb", 0)) * 1000) for e in ecn]
        view = [dict(ports=["every port"], trust=_trust(trust, "onyx"), pfc=pfc_enabled, ecn=ecn)]
    errors.extend(switch_conflicts(contract, roce_mode=roce_mode, ports=view, pfc=pfc, os=os))
    # What a read-only comparison sends per port: the QoS keys only (not VLANs or MTU), ports without one left out.
    qos_ports = []
    for entry in args.get("ports") or []:
        kept = dict((key, value) for key, value in entry.items() if key == "ports" or key in PORT_QOS_KEYS)
        if len(kept) > 1:
            qos_ports.append(kept)
    return dict(os=os, module=MODULES[os], args=args, errors=errors, qos_ports=qos_ports)


VERIFY_COMMANDS = {"onyx": "roce.fabric.onyx_roce (check mode: show roce, show running-config)",
                   "nvue": "roce.fabric.nvue_roce (check mode: GET /nvue_v1/?rev=applied or nv config show)"}


def verify_check(host, os, result, roce_mode, settings, check_mode=False, os_setting=None):
    """The validation report's ``qos switch`` record from the switch module run read-only (check mode).

    ``result``: the registered result of that run (None or a skipped result when the OS is not one this collection
    configures); ``settings``: the contract's settings (contract.derive). A change it would make is a mismatch
    (skipped in a check-mode run: the switch stage of the same run would have set it); an error or an unreachable
    switch is a failed check that says why; ``roce_mode`` null means the switch's QoS is configured by hand.
    """
    result = result or {}
    skipped = not result or bool(result.get("skipped"))
    changed = bool(result.get("changed"))
    error = skipped or ("msg" in result and not changed)
    if error:
        why = ("its OS is not one this collection configures (roce_switch_os: %s)" % os_setting if skipped
               else result.get("msg"))
        status, msg = "failed", "%s: the switch could not be read: %s" % (host, why)
    elif changed:
        status = "skipped" if check_mode else "failed"
        msg = "%s%s differs from the RoCE QoS contract: %s would fix it (run playbooks/switch.yml, role roce.fabric.roce_switch)" % (
            "check mode: what the switch stage of this run would set is not there yet; " if check_mode else "",
            host, "; ".join(result.get("commands") or []))
    elif roce_mode:
        status = "passed"
        msg = "%s agrees with the contract: roce %s (trust L3, DSCP %s on priority %s%s%s)" % (
            host, roce_mode, settings.get("roce_dscp"), settings.get("roce_priority"),
            ", PFC on priority %s" % settings.get("roce_priority") if settings.get("pfc") else ", no PFC",
            ", ECN on its traffic class" if settings.get("ecn") else "")
    else:
        status = "skipped"
        msg = "%s: roce_switch_roce_mode is null, the switch's QoS is configured by hand and not compared" % host
    return {"name": "qos switch", "status": status, "msg": msg,
            "command": "%s on %s" % (VERIFY_COMMANDS.get(os) or VERIFY_COMMANDS["onyx"], host)}


def families(switches, hostvars):
    """``{"onyx": [...], "nvue": [...], "unknown": {switch: why}}``: the switches by the family whose module reads
    them, from each one's ``roce_switch_os`` or ``ansible_network_os`` (``switch_os``); a switch of no family this
    collection reads, or one the inventory does not have, is kept with the reason."""
    out = {"onyx": [], "nvue": [], "unknown": {}}
    for name in switches or []:
        # Ansible's hostvars answers a name it does not have with an undefined value that fails when used.
        variables = hostvars[name] if name in hostvars else None
        if variables is None:
            out["unknown"][name] = "not a host of the inventory"
            continue
        try:
            out[switch_os(variables.get("roce_switch_os") or variables.get("ansible_network_os"))].append(name)
        except ValueError as exc:
            out["unknown"][name] = str(exc)
    return out


def counter_reads(results, unknown=None, earlier=None, phase=None):
    """``{switch: {"ports": {port: counters}}}`` (with ``"lldp"``: ``{port: {host, port}}`` where the module read the
    switch's LLDP table) from the registered loops of the family modules run with state gathered, one item a switch
    (``delegate_to``); a switch that failed or did not answer is ``{"error": why}``, as is one of no known family
    (``unknown``, from ``families``). With ``phase``, ``earlier``'s phases with this one's reads under ``phase``
    (``{"before": ..., "after": ...}``)."""
    if phase:
        return dict(earlier or {}, **{phase: counter_reads(results, unknown)})
    out = dict((name, {"error": why}) for name, why in (unknown or {}).items())
    for registered in results or []:
        for result in (registered or {}).get("results") or []:
            name = result.get("item")
            if not name or result.get("skipped"):
                continue
            if result.get("failed") or result.get("unreachable") or not isinstance(result.get("counters"), dict):
                out[name] = {"error": result.get("msg") or "the switch's module returned no counters"}
            else:
                out[name] = {"ports": result["counters"]}
                # What the switch hears over LLDP (nvue_roce over SSH), or why its table could not be read.
                if isinstance(result.get("lldp"), dict):
                    out[name]["lldp"] = result["lldp"]
                elif result.get("lldp_error"):
                    out[name]["lldp_error"] = result["lldp_error"]
    return out
