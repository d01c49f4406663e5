# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validation report's findings: one run's pair matrix and the counters of its traffic window, handed to the
fault location engine (``locate.py``). Pure.

PRIVATE to the roce.fabric collection: may change without notice.

The validate role tests one RoCE port per host (the first active one, ``plan.py``): one rail, its endpoints
``host/<device>``. A pair test is bad when it failed or its bandwidth fell below the rail's robust reference
(``locate.rail_outcomes``); the evidence of an endpoint is what its ``traffic <netdev>`` check carries: the
``ethtool -S`` deltas (``qos/counters.py traffic_checks``) and the PCIe link under the traffic with the window's AER
errors (``pcie``, ``pcie.window_reading``). Each suspect of the matrix is retested against an anchor, a host that
passed with others (``retest_pairs``: the role runs them as one more set of rounds, ``retest:`` tests); a suspect
whose retest passed was transient, one whose retest failed is confirmed, one not retested stays a suspect and says
so. A fabric of two hosts cannot tell which end of a failing pair is at fault: the matrix needs three hosts or more.
"""

from __future__ import annotations

import re

from ansible_collections.roce.fabric.plugins.module_utils.validate.locate import locate, rail_retests, unreported

RAIL = "roce"
PAIR_BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "rping")
# Causes of a failed test that say nothing of the fabric between its hosts: the run's own (a host that reached its
# slot too late, a host whose part was lost), a port another process held, a tool not installed. Such a test stays
# failed in the report but is no evidence for the matrix: it would name a NIC for a slow controller.
RUN_CAUSES = {
    "late_start": "a host reached the test's slot too late to run it",
    "peer_lost": "a host's part of the launch never came back",
    "port_in_use": "another process held the test's port",
    "tool_missing": "the tool is not installed",
}


def fabric_evidence(test):
    """True when a pair test's outcome says something of the fabric: passed, or failed for a cause the run's own
    troubles (``RUN_CAUSES``) do not explain."""
    return test.get("status") == "passed" or (test.get("status") == "failed" and test.get("cause") not in RUN_CAUSES)


def left_out(tests):
    """``{cause: count}`` of the failed pair tests ``fabric_evidence`` leaves out of the matrix."""
    counts = {}
    for test in tests or []:
        if test.get("tool") in PAIR_BW_TOOLS and test.get("status") == "failed" and test.get("cause") in RUN_CAUSES:
            counts[test["cause"]] = counts.get(test["cause"], 0) + 1
    return counts


def _endpoint(host, device):
    return "%s/%s" % (host, device or "?")


def switch_port_deltas(switch_counters):
    """``({"switch/port": counter deltas}, {switch: why it was not read})`` of the switches' port counters read before
    and after the traffic: ``{"before": {switch: {"ports": {port: counters}} or {"error": text}}, "after": ...}``
    (the ``counters`` of ``onyx_roce``/``nvue_roce`` state gathered). A counter lower after than before was cleared
    between the reads: its delta is what it counted since. An Onyx port (``1/1``) is also found as LLDP names it
    (``Eth1/1``)."""
    before = (switch_counters or {}).get("before") or {}
    after = (switch_counters or {}).get("after") or {}
    deltas, unread = {}, {}
    for switch in sorted(set(before) | set(after)):
        first, last = before.get(switch) or {}, after.get(switch) or {}
        why = last.get("error") or first.get("error")
        if not why and (switch not in before or switch not in after):
            why = "read only %s the traffic" % ("before" if switch in before else "after")
        if why:
            unread[switch] = why
            continue
        for port, values in (last.get("ports") or {}).items():
            old = (first.get("ports") or {}).get(port) or {}
            delta = dict((name, value - old.get(name, 0) if value >= old.get(name, 0) else value)
                         for name, value in values.items() if isinstance(value, int))
            for name in (port, "Eth" + port) if re.match(r"^\d+/\d+(/\d+)?$", port) else (port,):
                deltas["%s/%s" % (switch, name)] = delta
    return deltas, unread


def switch_lldp_of(switch_counters):
    """``({"switch/port": {host, port}}, [switch whose LLDP table was read], {switch: why its LLDP table was not
    read})``: what each switch heard over LLDP (the ``lldp`` its family module read with its counters, the read after
    the traffic where there is one), for the fault location to compare with the cabling plan. A switch whose table
    was read is listed even when it heard no neighbour: which switches were read does not depend on what else is
    plugged into them. A switch whose module reads no LLDP table (Onyx, NVUE's REST API) is in none."""
    heard, read_ok, unread = {}, set(), {}
    for phase in ("before", "after"):
        for switch, read in sorted(((switch_counters or {}).get(phase) or {}).items()):
            if isinstance((read or {}).get("lldp"), dict):
                unread.pop(switch, None)
                read_ok.add(switch)
                for port, neighbour in read["lldp"].items():
                    # A neighbour without a system name (a NIC's firmware agent sends only its MAC as port ID) is
                    # kept: its port ID is what the cabling check compares.
                    if isinstance(neighbour, dict) and (neighbour.get("host") or neighbour.get("port")):
                        heard["%s/%s" % (switch, port)] = dict(host=neighbour.get("host") or None,
                                                               port=neighbour.get("port") or None)
            elif (read or {}).get("lldp_error") and switch not in read_ok:
                unread[switch] = read["lldp_error"]
    return heard, sorted(read_ok), unread


def cabling_ports(cabling):
    """``{switch: [port, ...]}``: the switch ports a cabling plan (``{host: {netdev: {switch, port}}}``) names, each
    switch's sorted and once, for reading their pause counters with the traffic."""
    out = {}
    for ports in (cabling or {}).values():
        for planned in (ports or {}).values() if isinstance(ports, dict) else ():
            if isinstance(planned, dict) and planned.get("switch") and planned.get("port"):
                out.setdefault(str(planned["switch"]), set()).add(str(planned["port"]))
    return dict((switch, sorted(ports)) for switch, ports in sorted(out.items()))


def host_of(address, addresses, names=()):
    """The inventory host an address NCCL's RAS gives belongs to: the host of that name, the host whose
    ``addresses`` (``{host: [address, ...]}``) list it, else the address itself (a host the run does not know)."""
    address = str(address)
    if address in names or address in (addresses or {}):
        return address
    for host, known in sorted((addresses or {}).items()):
        if address in [str(a) for a in known or []]:
            return host
    return address


def run_inputs(tests, hosts, cabling=None, switch_ports=None, addresses=None, switch_lldp=None):
    """``(fleet, rails, evidence)`` of one run for ``locate``: ``tests`` as merge_results returns them, ``hosts`` as
    build_report takes them (each host's ``checks``), ``cabling`` the site's plan, ``{host: {netdev: {switch,
    port}}}`` (without it the LLDP neighbours are checked for the rail's alignment), ``switch_ports`` the switch
    ports' counter deltas of the traffic (``switch_port_deltas``), ``addresses`` each host's addresses, ``{host:
    [address, ...]}``, to name the host of a rank NCCL's RAS found missing (``host_of``), ``switch_lldp`` what the
    switches heard over LLDP (``switch_lldp_of``)."""
    endpoints, rail = {}, []
    for test in tests:
        if test.get("tool") not in PAIR_BW_TOOLS or not fabric_evidence(test):
            continue
        server = _endpoint(test["server"], test.get("server_device"))
        client = _endpoint(test["client"], test.get("client_device"))
        for name, host, device in ((server, test["server"], test.get("server_device")),
                                   (client, test["client"], test.get("client_device"))):
            endpoints.setdefault(name, dict(host=host, rail=RAIL, device=device))
        summary = test.get("summary") or {}
        bw = float(summary["value"]) if summary.get("unit") == "Gb/s" and summary.get("value") is not None else None
        rail.append((server, client, test["status"] == "passed", bw))
    readings, windows = {}, []
    for name, wiring in endpoints.items():
        for check in (hosts.get(wiring["host"]) or {}).get("checks") or []:
            # The port's traffic check (its name and netdev), or any check of the device with a reading.
            traffic = str(check.get("name") or "").startswith("traffic ") and check.get("netdev")
            if check.get("device") != wiring["device"] or not (traffic or isinstance(check.get("nic"), dict)
                                                               or check.get("pcie") or check.get("lldp")
                                                               or check.get("rdma") or check.get("mtu")
                                                               or check.get("speed_mbps")):
                continue
            readings[name] = dict(nic=check.get("nic") or {}, rdma=check.get("rdma") or {})
            if check.get("mtu"):
                readings[name]["mtu"] = check["mtu"]
            if check.get("speed_mbps"):
                readings[name]["speed_mbps"] = check["speed_mbps"]
            wiring["netdev"] = check.get("netdev")
            if check.get("mac"):
                wiring["mac"] = check["mac"]
            if isinstance(check.get("window_s"), (int, float)):
                windows.append(float(check["window_s"]))
            # The switch port LLDP hears on it (traffic_window), against the plan's.
            # A neighbour that sends no system name comes with its port and chassis ID alone (locate holds the port
            # against the plan).
            if isinstance(check.get("lldp"), dict) and (check["lldp"].get("switch") or check["lldp"].get("port")):
                readings[name]["lldp"] = dict(switch=check["lldp"].get("switch"), port=check["lldp"].get("port"),
                                              chassis_id=check["lldp"].get("chassis_id"))
            planned = ((cabling or {}).get(wiring["host"]) or {}).get(check.get("netdev")) or {}
            if planned.get("switch"):
                wiring.update(switch=planned["switch"], switch_port=planned.get("port"))
            # The port's PCIe link while its traffic flowed, and the AER errors of the window (traffic_window).
            if isinstance(check.get("pcie"), dict):
                readings[name]["pcie"] = check["pcie"]
                wiring["pci"] = check["pcie"].get("pci") or (check["pcie"].get("kernel") or {}).get("pci")
    # The GPUs DCGM's diagnostics failed on (the gpu_health check's dcgm, module_utils/validate/gpu.py dcgm_reading).
    gpus = {}
    for host, entry in sorted((hosts or {}).items()):
        for check in (entry or {}).get("checks") or []:
            failed = (check.get("dcgm") or {}).get("failed_gpus") if isinstance(check.get("dcgm"), dict) else None
            if check.get("name") == "gpu_health" and failed:
                gpus.setdefault(host, {})["dcgm"] = dict(failed_gpus=list(failed))
    # The ranks NCCL's RAS found missing from a hung collective (an nccl check's ras_missing, nccl_test), by the host
    # they ran on: the check is the launching host's, the ranks anyone's.
    for host, entry in sorted((hosts or {}).items()):
        for check in (entry or {}).get("checks") or []:
            for rank in check.get("ras_missing") or [] if isinstance(check.get("ras_missing"), list) else []:
                if not isinstance(rank, dict) or rank.get("host") in (None, ""):
                    continue
                owner = host_of(rank["host"], addresses, hosts or {})
                gpus.setdefault(owner, {}).setdefault("ras_missing", []).append(
                    dict(rank=rank.get("rank"), gpu=rank.get("gpu"), pid=rank.get("pid"), dead=bool(rank.get("dead")),
                         whole_host=bool(rank.get("whole_host")), address=str(rank["host"]),
                         check="%s's %s" % (host, check.get("name"))))
    fleet = dict(endpoints=endpoints, hosts=sorted(set(w["host"] for w in endpoints.values())))
    # The traffic window's length (its longest port), for the rates of pauses.
    return fleet, ({RAIL: rail} if rail else {}), dict(endpoints=readings, switch_ports=switch_ports or {}, hosts=gpus,
                                                       switch_lldp=switch_lldp or {},
                                                       window_s=max(windows) if windows else None)


def retest_pairs(tests):
    """The anchor retests of one run's matrix, as pairs for ``plan.plan``: ``[{server: anchor host, client: suspect
    host, suspect: endpoint, anchor: endpoint}]`` in the engine's order (its rounds: no host twice in one). None with
    fewer than three hosts (no anchor can be told from the suspect) or without a suspect."""
    fleet, rails, _evidence = run_inputs(tests, {})
    if not rails or len(fleet["hosts"]) < 3:
        return []
    endpoints = fleet["endpoints"]
    pairs = []
    for _rail, (_summary, plan) in sorted(rail_retests(endpoints, rails).items()):
        for rnd in plan["rounds"]:
            for suspect, anchor in rnd:
                pairs.append(dict(server=endpoints[anchor]["host"], client=endpoints[suspect]["host"], suspect=suspect,
                                  anchor=anchor))
    return pairs


def retest_outcomes(retest_tests):
    """``{suspect endpoint: passed}`` from the anchor retests as merge_results returns them (a test that did not run
    leaves its suspect one)."""
    outcomes = {}
    for test in retest_tests or []:
        if not fabric_evidence(test):
            continue
        suspect = _endpoint(test["client"], test.get("client_device"))
        outcomes[suspect] = outcomes.get(suspect, True) and test["status"] == "passed"
    return outcomes


def retest_plan_of(given):
    """``(plan, why it could not be planned)`` of what mode=write takes as ``retest_plan``: the plan of mode=retests,
    or that task's whole registered result (its ``plan``; its ``msg`` when it failed; nothing when it was skipped)."""
    given = given or {}
    if "rounds" in given or "assignments" in given:
        return given, None
    if given.get("failed"):
        return None, given.get("msg") or "the anchor retests could not be planned"
    return given.get("plan"), None


def findings_of(tests, hosts, retest_tests=None, cabling=None, switch_counters=None, retest_error=None, loss_rate=None,
                addresses=None):
    """The report's ``findings`` and ``location`` (what the engine made of the matrix, with the anchor retests that
    ran: ``retest_tests`` as merge_results returns them, the LLDP neighbours against ``cabling`` and the switch ports'
    counters of the traffic, ``switch_counters`` as ``switch_port_deltas`` takes them) for one run; ``retest_error``:
    why the retests could not be planned, for the note on suspects left unretested; ``loss_rate``: the share of a
    port's RDMA packets lost that is evidence (``locate.transport_loss``); ``addresses``: see ``run_inputs``."""
    switch_ports, unread = switch_port_deltas(switch_counters)
    heard, lldp_read, lldp_unread = switch_lldp_of(switch_counters)
    fleet, rails, evidence = run_inputs(tests, hosts, cabling, switch_ports, addresses, heard)
    # The switches whose counters were read before and after the traffic, whatever ports they listed.
    phases = [set(((switch_counters or {}).get(phase) or {})) for phase in ("before", "after")]
    switches = dict(read=sorted((phases[0] | phases[1]) - set(unread)), unread=unread, lldp=lldp_read)
    if lldp_unread:
        switches["lldp_unread"] = lldp_unread
    unused = left_out(tests)
    why = dict(left_out=unused, left_out_note="; ".join(
        "%d failed because %s" % (count, RUN_CAUSES[cause]) for cause, count in sorted(unused.items())) + (
        ": not evidence of the fabric, left out of the matrix")) if unused else {}
    if not rails:
        found = locate(fleet, {}, evidence, loss_rate=loss_rate)["findings"] if evidence["hosts"] else []
        return found, dict(dict(pairs=0, note="no pair test ran: nothing to locate" if not unused else
                                "no pair test said anything of the fabric: nothing to locate", switches=switches), **why)
    # What the rules could not read on each endpoint: a driver that does not print a counter says nothing of it.
    not_reported = dict((name, gaps) for name, gaps in sorted(
        (name, unreported(found)) for name, found in (evidence.get("endpoints") or {}).items()) if gaps)
    gaps = dict(not_reported=not_reported) if not_reported else {}
    outcomes = retest_outcomes(retest_tests)
    result = locate(fleet, rails, evidence, retests=outcomes, loss_rate=loss_rate)
    summary = result["rails"].get(RAIL) or {}
    suspects = [s["endpoint"] for s in summary.get("suspects") or []]
    note = ""
    if len(fleet["hosts"]) < 3:
        note = "two hosts: a failing pair cannot name its end (the matrix needs three hosts or more)"
    elif [name for name in suspects if name not in outcomes]:
        note = "not every suspect was retested against an anchor: those stay suspects until a run confirms them"
        if retest_error:
            note += " (the retests could not be planned: %s)" % retest_error
    retested = [dict(suspect=_endpoint(t["client"], t.get("client_device")),
                     anchor=_endpoint(t["server"], t.get("server_device")), status=t.get("status"), msg=t.get("msg"))
                for t in retest_tests or []]
    return result["findings"], dict(dict(pairs=summary.get("pairs", 0), reference_gbps=summary.get("reference_gbps"),
                                         suspects=suspects, transient=result["transient"], retests=retested,
                                         unexplained=summary.get("unexplained", 0), note=note, switches=switches),
                                    **dict(gaps, **why))


def pair_matrix(tests, findings, reference_gbps=None, bw_fraction=0.93, limit=64):
    """The pair tests of one run as a matrix for the report's page, with the findings on it: ``{"rail", "endpoints":
    [{name, part}], "cells": {"a|b": {status, gbps, tests}}, "drawn"}`` per rail (the run has one: ``RAIL``). A pair's
    cell is failed when any of its tests failed, its bandwidth the best its bandwidth tests measured, and ``slow``
    when that is below ``bw_fraction`` of the rail's reference (the engine's rule, ``location.reference_gbps``); an endpoint's
    ``part`` is the part a finding names on it (or on its host). Above ``limit`` endpoints ``drawn`` is False and
    the page lists only the endpoints with a finding."""
    marks = {}
    for finding in findings or []:
        marks.setdefault(str(finding.get("id")), finding.get("part"))
    endpoints, cells = {}, {}
    for test in tests or []:
        if test.get("tool") not in PAIR_BW_TOOLS or test.get("status") not in ("passed", "failed"):
            continue
        pair = []
        for host, device in ((test["server"], test.get("server_device")), (test["client"], test.get("client_device"))):
            name = _endpoint(host, device)
            endpoints.setdefault(name, marks.get(name) or marks.get(host))
            pair.append(name)
        cell = cells.setdefault("|".join(sorted(pair)), dict(status="passed", gbps=None, tests=[]))
        cell["tests"].append(test.get("id"))
        if test["status"] == "failed":
            cell["status"] = "failed"
        summary = test.get("summary") or {}
        if summary.get("unit") == "Gb/s" and summary.get("value") is not None:
            cell["gbps"] = max(float(summary["value"]), cell["gbps"] or 0.0)
    if not endpoints:
        return []
    for cell in cells.values():
        if cell["status"] == "passed" and reference_gbps and cell["gbps"] is not None and (
                cell["gbps"] < bw_fraction * float(reference_gbps)):
            cell["status"] = "slow"
    return [dict(rail=RAIL, endpoints=[dict(name=name, part=endpoints[name]) for name in sorted(endpoints)],
                 cells=cells, drawn=len(endpoints) <= limit)]
