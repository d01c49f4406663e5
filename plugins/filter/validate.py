# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the validate role's decisions."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.roce.fabric.plugins.module_utils.validate.checks import discovery_check as _discovery_check
from ansible_collections.roce.fabric.plugins.module_utils.validate.gpu import health_check
from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import TrustError, key_options


def mpi_key_options(addresses, host, extra=None, command=""):
    try:
        return key_options(host, addresses, extra or [], command or "")["options"]
    except TrustError as exc:
        raise AnsibleFilterError(str(exc))


def mpi_addresses(hosts, hostvars):
    """The RoCE address mpirun reaches each host on: the first IPv4 address of its active RDMA ports (its
    rdma_facts), '' for a host without one (nccl_test then names it)."""
    out = []
    for host in hosts or []:
        facts = ((hostvars[host].get("ansible_facts") or {}).get("roce_rdma") or {}) if host in hostvars else {}
        out.append(next((port.get("ipv4") for port in facts.get("ports") or [] if port.get("ipv4")), ""))
    return out


def switch_checks(hosts, hostvars):
    """{switch: its "qos switch" record} for the switches of ``hosts`` that playbooks/validate.yml's first play read
    (roce.fabric.roce_switch, tasks_from verify, sets roce_switch_check); the others are left out."""
    out = {}
    for host in hosts or []:
        if host in hostvars and "roce_switch_check" in hostvars[host]:
            out[host] = hostvars[host]["roce_switch_check"]
    return out


def mpi_known_hosts(hosts, hostvars):
    """Every name a host's known_hosts pin may be under: each host's inventory name and the IPv4 addresses of its
    active RDMA ports, each once, in order."""
    names = []
    for host in hosts or []:
        facts = ((hostvars[host].get("ansible_facts") or {}).get("roce_rdma") or {}) if host in hostvars else {}
        for name in [host] + [port.get("ipv4") for port in facts.get("ports") or []]:
            if name and name not in names:
                names.append(name)
    return names


def mpi_key_options_all(hosts, hostvars, extra=None, command=""):
    """{host: options} for every host of ``hosts``, its addresses read from its rdma_facts in ``hostvars``; every
    host that cannot be trusted safely is named in one error."""
    out, errors = {}, []
    for host in hosts:
        facts = (hostvars[host].get("ansible_facts") or {}).get("roce_rdma") or {}
        addresses = [port.get("ipv4") for port in facts.get("ports") or []]
        try:
            out[host] = key_options(host, addresses, extra or [], command or "")["options"]
        except TrustError as exc:
            errors.append(str(exc))
    if errors:
        raise AnsibleFilterError("; ".join(errors) + "; no authorized_keys file was changed")
    return out


def discovery_check(facts, require_rdma=True, check_mode=False):
    """The discovery check record of a host's roce.fabric.rdma_facts (module_utils/validate/checks.py)."""
    if not isinstance(facts, dict):
        raise AnsibleFilterError("discovery_check expects the roce_rdma facts (a dict), got %s" % type(facts).__name__)
    try:
        return _discovery_check(facts, require_rdma=boolean(require_rdma), check_mode=boolean(check_mode))
    except TypeError as exc:
        raise AnsibleFilterError("discovery_check: %s" % exc)


def gpu_health_check(run, h2d_min_gbps, command=None):
    """The gpu_health check record of a registered run of gpu_health.py (module_utils/validate/gpu.py health_check)."""
    if not isinstance(run, dict):
        raise AnsibleFilterError("gpu_health_check takes the registered result of the gpu_health.py task")
    return health_check(run, h2d_min_gbps, " ".join(run.get("cmd") or []) if command is None else command)


class FilterModule:

    def filters(self):
        return {"mpi_key_options": mpi_key_options, "mpi_key_options_all": mpi_key_options_all,
                "mpi_addresses": mpi_addresses, "mpi_known_hosts": mpi_known_hosts, "switch_checks": switch_checks,
                "gpu_health_check": gpu_health_check, "discovery_check": discovery_check}
