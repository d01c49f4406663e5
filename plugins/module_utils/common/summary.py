# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The end of a run of playbooks/roce.yml: per host, what each stage changed (or, with --check, would change), or
why the host could not be read.

PRIVATE to the roce.fabric collection: may change without notice.

The roles keep their modules' results in host variables (``RESULTS``); this reads them and nothing else, so the
summary says only what a module reported. A host of a stage with none of them was not reached: it was unreachable
or failed before its first change, which Ansible's output above says.
"""

from __future__ import annotations

# stage -> [(the host variable a role keeps a module's result in, what it is)]
RESULTS = {
    "switch": [("roce_switch_result", "switch")],
    "host": [("nic_firmware_result", "firmware"), ("rdma_host_netns_result", "RDMA namespace mode"),
             ("nic_qos_results", "NIC QoS"), ("sriov_firmware_result", "SR-IOV firmware"),
             ("sriov_kernel_result", "SR-IOV VFs"), ("nvme_scratch_result", "NVMe scratch")],
    "esxi": [("esxi_ats_kernel", "ATS"), ("esxi_ats_vm_results", "VM keys")],
    "validate": [("validate_report", "validation")],
}
MAX_COMMANDS = 6


def _item_label(item, index):
    entry = item.get("item")
    if isinstance(entry, dict):
        for key in ("netdev", "name", "device", "vm"):
            if entry.get(key):
                return str(entry[key])
    if isinstance(entry, str):
        return entry
    return "#%d" % (index + 1)


def _commands(result):
    commands = result.get("commands") or []
    if isinstance(commands, str):
        commands = [commands]
    shown = [str(c) for c in commands[:MAX_COMMANDS]]
    if len(commands) > MAX_COMMANDS:
        shown.append("... %d more" % (len(commands) - MAX_COMMANDS))
    return shown


def describe(result, check_mode):
    """(status, detail) of one registered result: unreachable, failed, changed (would change), ok; None when the
    task was skipped or the variable holds no module result."""
    if not isinstance(result, dict):
        return None
    if result.get("unreachable"):
        return "unreachable", str(result.get("msg") or "unreachable")
    if result.get("failed"):
        return "failed", str(result.get("msg") or "failed")
    if isinstance(result.get("results"), list):
        parts, statuses = [], []
        for index, item in enumerate(result["results"]):
            found = describe(item, check_mode)
            if found is None:
                continue
            statuses.append(found[0])
            if found[0] != "ok":
                parts.append("%s: %s" % (_item_label(item, index), found[1]))
        if not statuses:
            return None
        for status in ("unreachable", "failed", "would change", "changed"):
            if status in statuses:
                return status, "; ".join(parts)
        return "ok", "no change"
    if result.get("skipped"):
        return None
    if "passed" in result and "report" in result:  # the validation report
        summary = (result.get("report") or {}).get("summary") or {}
        files = ", ".join(result.get("files") or [])
        if result["passed"]:
            return "ok", "passed (%s)" % files
        return "failed", "%s failed tests or checks (%s)" % (summary.get("failed", "?"), files)
    if result.get("changed") or result.get("rebooted"):
        commands = _commands(result)
        return ("would change" if check_mode else "changed"), "; ".join(commands) if commands else "changed"
    return "ok", "no change"


def reboot_row(variables, check_mode):
    """(what, status, detail) of the host's reboot: made (or, in check mode, would be made) for the reasons the
    roles recorded, left pending, or failed; None when none was due."""
    reasons = sorted(set(r for r in (variables.get("host_reboot_pending") or {}).values() if r))
    result = variables.get("host_reboot_result") or {}
    detail = "reboot for: %s" % "; ".join(reasons) if reasons else "reboot"
    if isinstance(result, dict) and (result.get("failed") or result.get("unreachable")):
        return "reboot", "unreachable" if result.get("unreachable") else "failed", str(result.get("msg") or "failed")
    if isinstance(result, dict) and (result.get("changed") or result.get("rebooted")):
        return "reboot", "would change" if check_mode else "changed", detail
    if reasons:
        return "reboot", "would change" if check_mode else "pending", detail
    return None


def host_summary(stages, variables, check_mode):
    """[(stage, what, status, detail)] for one host, from its ``variables`` (only the names of RESULTS and
    host_reboot_pending are read); ``stages`` are the stages the host is in."""
    reach = variables.get("roce_reach") or {}
    if isinstance(reach, dict) and reach.get("unreachable"):
        # playbooks/host.yml, validate.yml and telemetry.yml leave out, in check mode, a host they could not reach.
        return [(stages[0] if stages else "host", "connection", "unreachable", str(reach.get("msg") or "unreachable"))]
    rows = []
    for stage in stages:
        found = False
        for name, what in RESULTS.get(stage, []):
            if name not in variables:
                continue
            described = describe(variables[name], check_mode)
            if described is None:
                found = found or isinstance(variables[name], dict)
                continue
            found = True
            rows.append((stage, what, described[0], described[1]))
        if stage == "host":
            row = reboot_row(variables, check_mode)
            if row is not None:
                rows.append((stage,) + row)
                found = True
        if not found and RESULTS.get(stage):
            rows.append((stage, stage, "not reached",
                         "no result: the host was unreachable or failed before this stage's first change "
                         "(see the run above)"))
    return rows


def report(hosts, check_mode):
    """The summary's text: ``hosts`` maps a host to its rows (host_summary). Hosts with something to say first."""
    order = {"unreachable": 0, "failed": 1, "not reached": 2, "would change": 3, "changed": 3, "pending": 3, "ok": 4}
    title = "what each host would change (check mode)" if check_mode else "what each host changed"
    counts = {}
    for rows in hosts.values():
        # Each host counted once, by its most telling status: the first of its own statuses in ``order`` (among
        # equals by name: a real run's "changed" before its "pending" reboot); "ok" for a host without rows.
        key = min(((order.get(r[2], 5), r[2]) for r in rows), default=(4, "ok"))[1]
        counts[key] = counts.get(key, 0) + 1
    lines = ["summary, %s: %s" % (title, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items(),
                                                                                       key=lambda kv: order.get(kv[0], 5))))]
    for host in sorted(hosts, key=lambda h: (min((order.get(r[2], 5) for r in hosts[h]), default=5), h)):
        for stage, what, status, detail in hosts[host]:
            if status == "ok" and detail == "no change":
                continue
            lines.append("%s: %s: %s: %s" % (host, what, status, detail))
        if all(r[2] == "ok" and r[3] == "no change" for r in hosts[host]):
            lines.append("%s: no change" % host)
    return "\n".join(lines)
