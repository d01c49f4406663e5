# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validation report's host and switch checks: one record shape and the judgements on it, pure.

PRIVATE to the roce.fabric collection: may change without notice.

A check record is ``{name, status, msg, command, ...}`` with ``status`` one of ``passed``, ``failed``, ``skipped``
(the GPU health, NCCL and traffic checks add their own fields). The validate role passes results on; what a
record says and what a host's or the report's verdict is, is decided here.
"""

from __future__ import annotations

STATUSES = ("passed", "failed", "skipped")
DISCOVERY_COMMAND = "rdma_facts (sysfs /sys/class/infiniband, /sys/bus/pci)"


def _port_text(port):
    return "%s/%s %s %s Gb/s netdev %s MTU %s RoCE v2 GID %s %s" % (
        port.get("device"), port.get("port"), port.get("link_layer"), port.get("rate_gbps"), port.get("netdev"),
        port.get("mtu"), port.get("gid_index"), port.get("ipv4"))


def discovery_check(facts, require_rdma=True, check_mode=False):
    """The ``discovery`` record of one host from its roce.fabric.rdma_facts (``ansible_facts.roce_rdma``).

    Passed with an active RDMA port; without one, failed when RDMA is required, skipped when it is not, and skipped
    in check mode (the Soft-RoCE links and VFs a run would create exist only after a real run).
    """
    facts = facts or {}
    ports = facts.get("ports") or []
    if ports:
        status = "passed"
        found = "; ".join(_port_text(port) for port in ports)
    else:
        status = "failed" if require_rdma and not check_mode else "skipped"
        found = "no active RDMA port (%d RDMA devices)" % len(facts.get("devices") or [])
    prefix = ("check mode: no active RDMA port yet; the devices this run would create exist only after a real run. "
              if check_mode and not ports else "")
    return {"name": "discovery", "status": status,
            "msg": "%s%s; %d GPUs" % (prefix, found, len(facts.get("gpus") or [])),
            "command": DISCOVERY_COMMAND}


def status_of(checks):
    """A host's verdict over its checks: failed when one failed (or has no known status), passed when one passed,
    else skipped."""
    statuses = [check.get("status") if check.get("status") in STATUSES else "failed" for check in checks or []]
    if "failed" in statuses:
        return "failed"
    return "passed" if "passed" in statuses else "skipped"


def host_entries(checks_by_host):
    """{host: {status, checks}} from {host: [check, ...]} (a host with no list has no checks)."""
    return dict((name, {"status": status_of(checks or []), "checks": list(checks or [])})
                for name, checks in (checks_by_host or {}).items())


def switch_entries(switch_checks):
    """{switch: {status, checks: [check]}} from {switch: its roce_switch verify record, or None when it was not read}."""
    return dict((name, {"status": status_of([check]), "checks": [check]})
                for name, check in (switch_checks or {}).items() if isinstance(check, dict))


def failed_names(report):
    """What failed in a report, for the run's failure message: failed test ids, then "host check" names."""
    names = [test.get("id") for test in report.get("tests") or [] if test.get("status") == "failed"]
    for name, host in sorted((report.get("hosts") or {}).items()):
        names += ["%s %s" % (name, check.get("name")) for check in host.get("checks") or []
                  if check.get("status") not in ("passed", "skipped")]
    return names


def traffic_ports(facts, capture="auto"):
    """The RoCE ports the traffic window watches (Ethernet ports with a netdev, one per netdev, in discovery order)
    and those a wire capture can see: ``capture`` C(auto) takes the ports of software RDMA devices (Soft-RoCE, whose
    packets go through the netdev), C(always) every watched port, C(never) none. ``{"watch": [{netdev, device,
    port}], "capture": [netdev]}``: the ports and capture options of roce.fabric.traffic_window."""
    if capture not in ("auto", "always", "never"):
        raise ValueError("validate_qos_capture must be auto, always or never, not %r" % (capture,))
    watch, seen = [], set()
    for port in (facts or {}).get("ports") or []:
        if port.get("link_layer") == "Ethernet" and port.get("netdev") and port["netdev"] not in seen:
            seen.add(port["netdev"])
            watch.append(port)
    software = set(device.get("name") for device in (facts or {}).get("devices") or [] if device.get("software"))
    if capture == "auto":
        captured = [port for port in watch if port.get("device") in software]
    else:
        captured = list(watch) if capture == "always" else []
    return {"watch": [dict(netdev=p["netdev"], device=p.get("device"), port=int(p.get("port") or 1)) for p in watch],
            "capture": [port["netdev"] for port in captured]}


def nccl_environment(discovered, tos=None, extra=None):
    """The NCCL environment of a host: what discovery derived (rdma_facts' ``nccl_env``), NCCL_IB_TC set to the
    tests' ToS when one is given, then the operator's own variables (``validate_nccl_env_extra``), which win."""
    env = dict(discovered or {})
    if tos is not None and str(tos) != "":
        env["NCCL_IB_TC"] = str(tos)
    env.update(extra or {})
    return env
