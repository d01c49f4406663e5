# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the validate role's decisions."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.roce.fabric.plugins.module_utils.qos.contract import ContractError, value_conflicts
from ansible_collections.roce.fabric.plugins.module_utils.validate.checks import discovery_check as _discovery_check
from ansible_collections.roce.fabric.plugins.module_utils.validate.checks import nccl_environment, traffic_ports
from ansible_collections.roce.fabric.plugins.module_utils.validate.findings import cabling_ports
from ansible_collections.roce.fabric.plugins.module_utils.validate.gpu import health_check
from ansible_collections.roce.fabric.plugins.module_utils.validate.nccl import first_address, host_addresses, mpi_run
from ansible_collections.roce.fabric.plugins.module_utils.validate.nccl import mpi_run_checks, rdma_addresses
from ansible_collections.roce.fabric.plugins.module_utils.validate.plan import part_of_fleet, partial_refusal, side_outcome
from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import TrustError, key_options, settings_problems, trust_peers


def mpi_key_options(addresses, host, extra=None, command=""):
    try:
        return key_options(host, addresses, extra or [], command or "")["options"]
    except TrustError as exc:
        raise AnsibleFilterError(str(exc))


def _facts(hostvars, host):
    return ((hostvars[host].get("ansible_facts") or {}).get("roce_rdma") or {}) if host in hostvars else {}


def validate_mpi_run(play_hosts, hostvars, wanted=None, mpi_ssh=True, gpus_per_host=None, numa_nodes=None,
                     benchmark="nccl_tests", user="root", refuse=False):
    hosts = list(play_hosts or []) + [host for host in wanted or [] if host not in (play_hosts or [])]
    facts = dict((host, _facts(hostvars, host)) for host in hosts)
    run = mpi_run(play_hosts, facts, wanted or [], boolean(mpi_ssh, strict=False), gpus_per_host, numa_nodes,
                  str(benchmark), str(user))
    if run["problems"] and boolean(refuse, strict=False):
        raise AnsibleFilterError("validate_nccl_launcher=mpi: %s; nothing was run" % "; ".join(run["problems"]))
    return run


def validate_side_outcome(part, server=None, client=None, collect=None):
    if not isinstance(part, dict):
        raise AnsibleFilterError("validate_side_outcome expects this host's part of the round ({role, test, args})")
    return side_outcome(part, server if isinstance(server, dict) else {}, client if isinstance(client, dict) else {},
                        collect if isinstance(collect, dict) else {})


def validate_mpi_checks(result):
    return mpi_run_checks(result if isinstance(result, dict) else {})


def mpi_addresses(hosts, hostvars):
    """The RoCE address mpirun reaches each host on: the first IPv4 address of its active RDMA ports (its
    rdma_facts), '' for a host without one (nccl_test then names it)."""
    return [first_address(_facts(hostvars, host)) for host in hosts or []]


def validate_host_addresses(hosts, hostvars):
    """Each host's addresses (its RDMA ports' IPv4 addresses, then its ansible_host), for the report to name the host
    of a rank NCCL's RAS gives by address."""
    hosts = [host for host in hosts or [] if host in hostvars]
    extra = dict((host, [hostvars[host].get("ansible_host")]) for host in hosts)
    return host_addresses(dict((host, _facts(hostvars, host)) for host in hosts), extra)


def validate_cabling_ports(cabling):
    """The switch ports the cabling plan names, by switch."""
    if not isinstance(cabling, dict):
        raise AnsibleFilterError("validate_cabling_ports expects the cabling plan, {host: {netdev: {switch, port}}}")
    return cabling_ports(cabling)


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
        for name in [host] + rdma_addresses(_facts(hostvars, host), gids=False):
            if name not in names:
                names.append(name)
    return names


def mpi_trust_peers(hosts, hostvars, register="validate_mpi_key", extra=None, command="", keyed=True):
    """The peers of roce.fabric.mpi_ssh_trust: each host of ``hosts`` whose registered state=key result
    (``register`` in ``hostvars``) holds its public key, with its RoCE addresses (its rdma_facts), keys and
    authorized_keys options; ``keyed`` false: every host, names and addresses only (removal). One error names every
    host that cannot be trusted safely."""
    keys, facts = {}, {}
    for host in hosts or []:
        registered = hostvars[host].get(register) if host in hostvars else None
        keys[host] = registered if isinstance(registered, dict) else {}
        facts[host] = _facts(hostvars, host)
    try:
        return trust_peers(hosts or [], keys, facts, extra or [], command or "", boolean(keyed, strict=False))
    except TrustError as exc:
        raise AnsibleFilterError(str(exc))


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


def validate_traffic_ports(facts, capture="auto"):
    try:
        return traffic_ports(facts if isinstance(facts, dict) else {}, str(capture))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def validate_mpi_ssh_problems(mpi_ssh, user, command="", extra=None, allow_root=False):
    """What in the MPI SSH settings would break authorized_keys or trust root too far (module_utils/validate/ssh.py
    settings_problems)."""
    return settings_problems(mpi_ssh, user, command, extra if extra is not None else [], boolean(allow_root, strict=False))


def validate_nccl_env(discovered, tos=None, extra=None, contract=None):
    """NCCL's environment for the tests; with the RoCE QoS ``contract``, an NCCL_IB_TC in ``extra`` that contradicts
    it is refused before anything runs."""
    if extra is not None and not isinstance(extra, dict):
        raise AnsibleFilterError("validate_nccl_env_extra must be a dict of NCCL variables, not %s" % type(extra).__name__)
    if contract is not None:
        try:
            conflicts = value_conflicts(contract, "validate (NCCL)", {"nccl_ib_tc": (extra or {}).get("NCCL_IB_TC")})
        except ContractError as exc:
            raise AnsibleFilterError(str(exc))
        if conflicts:
            raise AnsibleFilterError("%s (validate_nccl_env_extra); nothing was run" % "; ".join(conflicts))
    return nccl_environment(discovered if isinstance(discovered, dict) else {}, tos, extra)


def validate_partial_problem(cabling, play_hosts, partial="refuse"):
    """Why a play that holds only part of the fleet its cabling plan names is refused (module_utils/validate/plan.py
    part_of_fleet), or "" when it holds all of it, none of it, or ``partial`` is ``plan``."""
    if cabling is not None and not isinstance(cabling, dict):
        raise AnsibleFilterError("validate_cabling must be a dict of hosts, not %s" % type(cabling).__name__)
    part = part_of_fleet(cabling or {}, [str(host) for host in play_hosts or []])
    return partial_refusal(part) if part and str(partial) != "plan" else ""


class FilterModule:

    def filters(self):
        return {"validate_traffic_ports": validate_traffic_ports, "validate_nccl_env": validate_nccl_env,
                "validate_mpi_run": validate_mpi_run, "validate_mpi_checks": validate_mpi_checks,
                "validate_mpi_ssh_problems": validate_mpi_ssh_problems, "validate_partial_problem": validate_partial_problem,
                "validate_side_outcome": validate_side_outcome, "validate_host_addresses": validate_host_addresses,
                "validate_cabling_ports": validate_cabling_ports,
                "mpi_key_options": mpi_key_options, "mpi_trust_peers": mpi_trust_peers,
                "mpi_addresses": mpi_addresses, "mpi_known_hosts": mpi_known_hosts, "switch_checks": switch_checks,
                "gpu_health_check": gpu_health_check, "discovery_check": discovery_check}
