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
errors (``pcie``, ``pcie.window_reading``). The anchor retests the engine plans are not run by the role: a
suspect stays a suspect, and says so. A fabric of two hosts cannot tell which end of a failing pair is at fault:
the matrix needs three hosts or more.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.validate.locate import locate

RAIL = "roce"
PAIR_BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "rping")


def _endpoint(host, device):
    return "%s/%s" % (host, device or "?")


def run_inputs(tests, hosts):
    """``(fleet, rails, evidence)`` of one run for ``locate``: ``tests`` as merge_results returns them, ``hosts`` as
    build_report takes them (each host's ``checks``)."""
    endpoints, rail = {}, []
    for test in tests:
        if test.get("tool") not in PAIR_BW_TOOLS or test.get("status") not in ("passed", "failed"):
            continue
        server = _endpoint(test["server"], test.get("server_device"))
        client = _endpoint(test["client"], test.get("client_device"))
        for name, host, device in ((server, test["server"], test.get("server_device")),
                                   (client, test["client"], test.get("client_device"))):
            endpoints.setdefault(name, dict(host=host, rail=RAIL, device=device))
        summary = test.get("summary") or {}
        bw = float(summary["value"]) if summary.get("unit") == "Gb/s" and summary.get("value") is not None else None
        rail.append((server, client, test["status"] == "passed", bw))
    readings = {}
    for name, wiring in endpoints.items():
        for check in (hosts.get(wiring["host"]) or {}).get("checks") or []:
            if check.get("device") != wiring["device"] or not (isinstance(check.get("nic"), dict) or check.get("pcie")):
                continue
            readings[name] = dict(nic=check.get("nic") or {})
            wiring["netdev"] = check.get("netdev")
            # The port's PCIe link while its traffic flowed, and the AER errors of the window (traffic_window).
            if isinstance(check.get("pcie"), dict):
                readings[name]["pcie"] = check["pcie"]
                wiring["pci"] = check["pcie"].get("pci")
    fleet = dict(endpoints=endpoints, hosts=sorted(set(w["host"] for w in endpoints.values())))
    return fleet, ({RAIL: rail} if rail else {}), dict(endpoints=readings)


def findings_of(tests, hosts):
    """The report's ``findings`` and ``location`` (what the engine made of the matrix) for one run."""
    fleet, rails, evidence = run_inputs(tests, hosts)
    if not rails:
        return [], dict(pairs=0, note="no pair test ran: nothing to locate")
    result = locate(fleet, rails, evidence)
    summary = result["rails"].get(RAIL) or {}
    note = ""
    if len(fleet["hosts"]) < 3:
        note = "two hosts: a failing pair cannot name its end (the matrix needs three hosts or more)"
    elif summary.get("suspects"):
        note = "the anchor retests were not run: each suspect stays one until a run confirms it"
    return result["findings"], dict(pairs=summary.get("pairs", 0), reference_gbps=summary.get("reference_gbps"),
                                    suspects=[s["endpoint"] for s in summary.get("suspects") or []],
                                    unexplained=summary.get("unexplained", 0), note=note)
