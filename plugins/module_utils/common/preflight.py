# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight's judgements: every host of every stage against the argument specs of the roles that stage runs.

PRIVATE to the roce.fabric collection: may change without notice.

The ``roce.fabric.preflight`` action gathers, on the controller, each host's variables (inventory and extra vars,
templated) and the roles' argument specs and defaults; everything it concludes is decided here, on plain data:

- which roles a stage runs on a host (``STAGES``, with the conditions the playbooks put on them);
- each role's options against its spec (types, choices, required options that neither the inventory nor the role's
  defaults give), as Ansible would check them when the role starts, but for every host and role at once;
- names with one of the collection's prefixes that are no variable of it (a misspelling is otherwise silently
  ignored: ``nic_firmware_setings``), with the closest known name;
- variables the playbooks read before inventory exists (``hosts:`` and ``serial:``), set in the inventory where they
  have no effect;
- defaults that quietly do nothing on a RoCE fabric (a lossless contract whose GPU nodes name no NIC), and a switch
  whose OS is not named.
"""

from __future__ import annotations

import difflib
import fnmatch
import re

from ansible_collections.roce.fabric.plugins.module_utils.qos.host import InterfacesError
from ansible_collections.roce.fabric.plugins.module_utils.qos.host import interfaces as host_interfaces

# Variable name prefixes of the collection: a name with one of them that is not a known variable is reported.
PREFIXES = (
    "roce_", "nic_firmware_", "rdma_host_", "nic_qos_", "sriov_", "validate_", "k8s_rdma_", "k8s_cluster_",
    "esxi_ats_", "host_reboot_", "nvme_scratch_", "rdma_image_", "rdma_exporter_", "onyx_", "nvue_", "pod_rdma_",
)

# The playbooks' own variables: name -> (where it may be given, what it does). "extra" ones are read by the play
# keywords hosts and serial, which Ansible evaluates before any inventory variable exists: only -e (or a var of
# import_playbook) reaches them. docs/playbook_variables.md lists the same (a unit test holds them together).
PLAYBOOK_VARIABLES = {
    "roce_fabric_qos": ("inventory", "the fabric's RoCE QoS contract, read by every layer"),
    "roce_switch_hosts": ("extra", "host pattern of the switch stage (default the group roce_switches)"),
    "roce_gpu_hosts": ("extra", "host pattern of the host stage (default the group gpu_nodes)"),
    "roce_firmware_hosts": ("extra", "host pattern of playbooks/nic_firmware.yml (default gpu_nodes)"),
    "roce_esxi_hosts": ("extra", "host pattern of the ESXi stage (default the group esxi_hosts)"),
    "k8s_cluster_hosts": ("extra", "host pattern of the Kubernetes stage (default the group k8s_clusters)"),
    "roce_telemetry_hosts": ("extra", "host pattern of the telemetry stage (default gpu_nodes)"),
    "roce_validate_hosts": ("extra", "host pattern of the validation (default gpu_nodes)"),
    "roce_image_builders": ("extra", "host pattern of playbooks/rdma_image.yml (default rdma_image_builders)"),
    "pod_rdma_hosts": ("extra", "host pattern of playbooks/pod_rdma.yml (default gpu_nodes)"),
    "roce_reboot_serial": ("extra", "GPU nodes (or ESXi hosts) rebooted at once, a number or a percentage (default 1)"),
    "roce_switch_serial": ("extra", "switches changed at once (default 1)"),
    "roce_allow_all_at_once": ("inventory", "allow a rolling batch that holds every host of its play"),
    "roce_drain_kubernetes": ("inventory", "drain a host's Kubernetes node before the rolling play disrupts it"),
    "roce_drain_kubeconfig": ("inventory", "the kubeconfig on the controller for the drain"),
    "roce_drain_slurm": ("inventory", "drain a host's Slurm node before the rolling play disrupts it"),
    "roce_drain_slurm_host": ("inventory", "the host whose scontrol reaches the Slurm controller (default the node)"),
    "roce_drain_slurm_conf": ("inventory", "the Slurm cluster's slurm.conf where it is not the default"),
    "roce_drain_command": ("inventory", "a site's drain hook (argv list, run on the controller)"),
    "roce_undrain_command": ("inventory", "a site's undrain hook (argv list, run on the controller)"),
    "roce_drain_timeout": ("inventory", "seconds a drain may take (default 600)"),
    "roce_telemetry": ("inventory", "run the telemetry stage in playbooks/roce.yml"),
    "roce_validate_switches": ("inventory", "read the switches against the contract before validation (default true)"),
    "roce_preflight_strict": ("inventory", "unknown variable names are errors, not warnings"),
    "roce_preflight_ignore": ("inventory", "names or shell patterns of the site's own variables that share a prefix"),
    "roce_preflight_done": ("extra", "set by playbooks/roce.yml for its stages: their own preflight is skipped"),
    "roce_preflight_playbook": ("extra", "set by every playbook on its import of playbooks/preflight.yml"),
    "roce_check_summary": ("inventory", "print the per-host summary at the end of playbooks/roce.yml (default true)"),
    "pod_rdma_pod": ("inventory", "playbooks/pod_rdma.yml: the pod whose namespace gets the device"),
    "pod_rdma_namespace": ("inventory", "playbooks/pod_rdma.yml: the pod's Kubernetes namespace"),
    "pod_rdma_devices": ("inventory", "playbooks/pod_rdma.yml: the RDMA devices to move"),
}

# Connection variables the switch modules' actions read (plugins/action/onyx_roce.py, nvue_roce.py).
CONNECTION_VARIABLES = (
    "onyx_host_key_checking", "onyx_known_hosts_file",
    "nvue_api_port", "nvue_validate_certs", "nvue_ca_path", "nvue_transport", "nvue_host_key_checking",
    "nvue_known_hosts_file",
)

# Facts the collection's modules return (ansible_facts), which a fact cache may hand back as variables.
FACTS = ("roce_rdma",)


def _always(values):
    return True


def _has(name):
    def check(values):
        return bool(values.get(name))
    check.__doc__ = "%s is set and not empty" % name
    return check


def _any(*names):
    def check(values):
        return any(bool(values.get(name)) for name in names)
    check.__doc__ = "one of %s is set and not empty" % ", ".join(names)
    return check


def _nvme(values):
    return bool(values.get("nvme_scratch_drives")) or values.get("nvme_scratch_state") == "absent"


# stage -> (the variable naming its hosts, its default group, [(role, entry point, runs on a host when)]). The
# conditions are the playbooks' own (tests/inventory/test_preflight_stages.py holds each against every playbook's
# when: on every shipped inventory); a role that does not run on a host has only its names checked there.
STAGES = {
    "switch": ("roce_switch_hosts", "roce_switches", [("roce_switch", "main", _always)]),
    "host": ("roce_gpu_hosts", "gpu_nodes", [
        ("nic_firmware", "main", _any("nic_firmware_settings", "nic_firmware_versions")), ("rdma_host", "main", _always),
        ("nic_qos", "main", _always), ("sriov", "main", _always), ("nvme_scratch", "main", _nvme),
        ("host_reboot", "main", _always)]),
    "firmware": ("roce_firmware_hosts", "gpu_nodes", [
        ("nic_firmware", "main", _always), ("host_reboot", "main", _always)]),
    "nvme_scratch": ("roce_gpu_hosts", "gpu_nodes", [("nvme_scratch", "main", _nvme)]),
    "esxi": ("roce_esxi_hosts", "esxi_hosts", [("esxi_ats", "main", _always)]),
    "kubernetes": ("k8s_cluster_hosts", "k8s_clusters", [("k8s_rdma_network", "main", _always)]),
    "k8s_job": ("k8s_cluster_hosts", "k8s_clusters", [("k8s_rdma_job", "main", _always)]),
    "telemetry": ("roce_telemetry_hosts", "gpu_nodes", [("rdma_exporter", "main", _always)]),
    "validate": ("roce_validate_hosts", "gpu_nodes", [("validate", "main", _always)]),
    "validate_switches": ("roce_switch_hosts", "roce_switches", [("roce_switch", "verify", _always)]),
    "image": ("roce_image_builders", "rdma_image_builders", [("rdma_image", "main", _always)]),
}

# What each playbook runs, for its preflight; roce.yml's is the union of its stages.
# A whole stage left out on a host by a variable (the play's own ``when:``): (variable, its default).
STAGE_SWITCHES = {
    "validate_switches": ("roce_validate_switches", True),
}

PLAYBOOK_STAGES = {
    "switch": ["switch"],
    "host": ["host"],
    "nic_firmware": ["firmware"],
    "nvme_scratch": ["nvme_scratch"],
    "esxi_ats": ["esxi"],
    "kubernetes": ["kubernetes"],
    "k8s_nccl_job": ["k8s_job"],
    "telemetry": ["telemetry"],
    "validate": ["validate_switches", "validate"],
    "rdma_image": ["image"],
    "roce": ["switch", "host", "esxi", "kubernetes", "validate_switches", "validate"],
}


def roce_stages(telemetry):
    """playbooks/roce.yml's stages, with the telemetry stage when roce_telemetry asks for it."""
    stages = list(PLAYBOOK_STAGES["roce"])
    if telemetry:
        stages.insert(stages.index("validate_switches"), "telemetry")
    return stages


# Keys of a role argument spec option that ArgumentSpecValidator reads; the rest is documentation.
SPEC_KEYS = ("type", "elements", "choices", "required", "default", "options", "no_log", "aliases", "apply_defaults")


def validator_spec(options):
    """A role's ``options`` (argument_specs.yml) as an argument spec for ArgumentSpecValidator, defaults left out
    (the role's defaults/main.yml is what Ansible uses) and required options left to ``role_findings``."""
    spec = {}
    for name, option in (options or {}).items():
        entry = dict((key, value) for key, value in option.items() if key in SPEC_KEYS and key not in ("default", "required"))
        if isinstance(option.get("options"), dict):
            entry["options"] = nested_spec(option["options"])
        spec[name] = entry
    return spec


def nested_spec(options):
    """Suboptions keep their ``required`` and ``default``: they describe one item, as a module's do."""
    spec = {}
    for name, option in options.items():
        entry = dict((key, value) for key, value in option.items() if key in SPEC_KEYS)
        if isinstance(option.get("options"), dict):
            entry["options"] = nested_spec(option["options"])
        spec[name] = entry
    return spec


def role_findings(role, options, values, validate):
    """Errors of one role's options on one host: ``values`` holds the options that have a value (inventory, extra
    vars or the role's defaults, templated); ``validate(spec, values)`` returns the validator's error messages."""
    errors = []
    for name, option in sorted((options or {}).items()):
        if option.get("required") and values.get(name) in (None, ""):
            errors.append("%s is required by role %s and not set" % (name, role))
    given = dict((name, value) for name, value in values.items() if name in (options or {}))
    for message in validate(validator_spec(options), given):
        errors.append("role %s: %s" % (role, message))
    return errors


def known_names(specs):
    """Every variable name the collection reads: role options, the playbooks' and the connections' variables."""
    names = set(PLAYBOOK_VARIABLES) | set(CONNECTION_VARIABLES) | set(FACTS)
    for entries in specs.values():
        for entry in entries.values():
            names.update((entry or {}).get("options") or {})
    return names


def ignored(name, patterns):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns or ())


def unknown_names(names, known, ignore=()):
    """[(name, closest known name or None)] for the names with a collection prefix that are no variable of it."""
    found = []
    for name in sorted(names):
        if not name.startswith(PREFIXES) or name.startswith("__") or name in known or ignored(name, ignore):
            continue
        family = [k for k in known if k.split("_")[0] == name.split("_")[0]] or list(known)
        close = difflib.get_close_matches(name, family, n=1, cutoff=0.75)
        found.append((name, close[0] if close else None))
    return found


def misplaced_extra_vars(inventory_names):
    """Names set in the inventory that the playbooks read before inventory exists (hosts and serial)."""
    return sorted(name for name in inventory_names if PLAYBOOK_VARIABLES.get(name, ("",))[0] == "extra"
                  and name != "roce_preflight_done")


def _true(value, default=True):
    if value is None:
        return default
    return str(value).strip().lower() in ("true", "yes", "on", "1")


def stage_findings(stage, values, contract_mode, switch_os, file_exists=None, given=None):
    """(errors, warnings) a stage adds beyond the argument specs, from the host's effective ``values``.
    ``contract_mode`` is the RoCE QoS contract's mode (or None when the contract itself is wrong);
    ``switch_os(name)`` raises ValueError for a switch OS the collection does not configure;
    ``file_exists(path)`` tells whether a file is on the controller; ``given`` holds the names the inventory or the
    command line set (a default left as it is can be what quietly does nothing)."""
    errors, warnings = [], []
    if stage in ("switch", "validate_switches"):
        name = values.get("roce_switch_os") or values.get("ansible_network_os")
        family = None
        try:
            family = switch_os(name)
        except ValueError as exc:
            errors.append(str(exc))
        # The switch modules check host keys against the named known_hosts file before logging in: a file that is
        # not there is a run that cannot read the switch.
        if family == "onyx":
            known, checking = "onyx_known_hosts_file", values.get("onyx_host_key_checking")
        elif family == "nvue" and str(values.get("nvue_transport") or "rest").lower() == "ssh":
            known, checking = "nvue_known_hosts_file", values.get("nvue_host_key_checking")
        else:
            known, checking = None, None
        path = values.get(known) if known else None
        if path and _true(checking) and file_exists is not None and not file_exists(path):
            errors.append("%s %s does not exist: the switch's host key cannot be checked. Check the fingerprint on "
                          "the switch's console, then pin it (ssh-keyscan -p %s %s >> %s)"
                          % (known, path, values.get("ansible_port") or 22, values.get("ansible_host") or "<switch>",
                             path))
    if stage == "host":
        interfaces = values.get("nic_qos_interfaces")
        if interfaces not in (None, [], ""):
            try:
                host_interfaces(interfaces, devices=[])
            except InterfacesError as exc:
                errors.append(str(exc))
        if contract_mode == "lossless" and interfaces in (None, [], "") and "nic_qos_interfaces" not in (given or ()):
            warnings.append("the RoCE QoS contract is lossless but nic_qos_interfaces names no NIC: this host's "
                            "NICs keep their own trust, PFC and ECN settings and RoCE traffic from it is not "
                            "lossless; list its RoCE ports, or set nic_qos_interfaces: auto to take every active "
                            "RoCE port rdma_facts finds (nic_qos_interfaces: [] in the inventory says it has none)")
    return errors, warnings


def report(results, strict=False):
    """The preflight's message: every problem of every host at once, errors first. ``results`` maps a host to
    ``{"stages": [...], "errors": [...], "warnings": [...]}``."""
    failing = dict((host, r) for host, r in results.items() if r["errors"])
    warned = dict((host, r) for host, r in results.items() if r["warnings"] and not r["errors"])
    if not failing and not warned:
        return "preflight: %d hosts checked, no problem found" % len(results)
    lines = []
    count_e = sum(len(r["errors"]) for r in results.values())
    count_w = sum(len(r["warnings"]) for r in results.values())
    lines.append("preflight: %d error(s) and %d warning(s) on %d of %d hosts%s" % (
        count_e, count_w, len(set(failing) | set(h for h, r in results.items() if r["warnings"])), len(results),
        "; nothing was changed" if count_e else ""))
    for host in sorted(results, key=lambda h: (not results[h]["errors"], h)):
        entry = results[host]
        if not entry["errors"] and not entry["warnings"]:
            continue
        lines.append("%s (%s):" % (host, ", ".join(entry["stages"])))
        lines.extend("  error: %s" % message for message in entry["errors"])
        lines.extend("  warning: %s" % message for message in entry["warnings"])
    return "\n".join(lines)


# Connection variables templated for every host (a vault variable that is not there fails here, not on the first
# task that connects); their values are never shown.
TEMPLATED = ("ansible_host", "ansible_port", "ansible_user", "ansible_password", "ansible_ssh_private_key_file",
             "ansible_network_os") + CONNECTION_VARIABLES


SECRET_WORDS = ("password", "passwd", "secret", "token", "private_key")


def template_error(name, exc):
    """What to say of a variable that cannot be templated. For a secret, only the undefined variable it names (the
    error's text may quote the template, which may hold the secret)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
    if any(word in name for word in SECRET_WORDS):
        match = re.search(r"'([A-Za-z_][A-Za-z0-9_]*)' is undefined", str(exc))
        return ("'%s' is undefined (a vault variable not loaded?)" % match.group(1)) if match else \
            "%s (the value is not shown)" % exc.__class__.__name__
    return text


def stage_runs(stage, values_for):
    """Whether the stage's play runs on the host at all (``STAGE_SWITCHES``): a stage switched off, such as the
    switches' read before validation with roce_validate_switches false, is not judged there (its known_hosts file
    may not exist). A value that cannot be templated counts as on: the stage's own findings then say why."""
    name, default = STAGE_SWITCHES.get(stage, (None, True))
    if name is None:
        return True
    role, entry, _runs = STAGES[stage][2][0]
    value = values_for(role, entry, [name]).get(name)
    if isinstance(value, Exception):
        return True
    return _true(value, default)


def check_host(host, stages, values_for, specs, inventory_names, extra_names, known, ignore, strict,
               contract_mode, switch_os, validate, file_exists=None):
    """Every finding for one host: ``values_for(role, entry, names)`` gives the templated values of ``names``
    (inventory, extra vars, the role's defaults; a name whose value cannot be templated maps to an Exception)."""
    errors, warnings = [], []
    seen_roles = set()
    stage_values = {}
    stages = [stage for stage in stages if stage_runs(stage, values_for)]
    for stage in stages:
        for role, entry, runs in STAGES[stage][2]:
            options = ((specs.get(role) or {}).get(entry) or {}).get("options") or {}
            values = values_for(role, entry, sorted(options))
            broken = dict((name, value) for name, value in values.items() if isinstance(value, Exception))
            for name, exc in sorted(broken.items()):
                message = "%s cannot be templated: %s" % (name, template_error(name, exc))
                if message not in errors:
                    errors.append(message)
            values = dict((name, value) for name, value in values.items() if not isinstance(value, Exception))
            stage_values.update(values)
            if (role, entry) in seen_roles:
                continue
            seen_roles.add((role, entry))
            if runs(values):
                for message in role_findings(role, options, values, validate):
                    if message not in errors:
                        errors.append(message)
    for stage in stages:
        e, w = stage_findings(stage, stage_values, contract_mode, switch_os, file_exists,
                              given=set(inventory_names) | set(extra_names))
        errors.extend(m for m in e if m not in errors)
        warnings.extend(m for m in w if m not in warnings)
    for name, close in unknown_names(set(inventory_names) | set(extra_names), known, ignore):
        message = "%s is not a variable of roce.fabric%s" % (name, "; did you mean %s?" % close if close else "")
        (errors if strict else warnings).append(message)
    for name in misplaced_extra_vars(inventory_names):
        message = ("%s is set in the inventory, but the playbooks read it before inventory variables exist (play "
                   "keywords hosts/serial): it has no effect there; give it with -e" % name)
        (errors if strict else warnings).append(message)
    return {"stages": list(stages), "errors": errors, "warnings": warnings}
