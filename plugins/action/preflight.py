# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roce.fabric.preflight: every host of every stage of a playbook against the roles that stage will run.

Runs on the controller and connects to nothing. It gathers what only Ansible has (the inventory's hosts and their
variables, templated as the roles would see them with their defaults, the extra vars) and hands it to
``module_utils/common/preflight.py``, which decides.
"""

from __future__ import annotations

import glob
import os

from ansible import context
from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader
from ansible.utils.vars import load_extra_vars

from ansible_collections.roce.fabric.plugins.module_utils.common import preflight
from ansible_collections.roce.fabric.plugins.module_utils.qos.contract import ContractError, derive
from ansible_collections.roce.fabric.plugins.module_utils.qos.switch import switch_os

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def validate(spec, values):
    return ArgumentSpecValidator(spec).validate(values).error_messages


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def _load(self, path):
        """A role's file as Ansible loads it, its templates trusted (ansible-core 2.19 renders only trusted ones)."""
        if not os.path.exists(path):
            return None
        try:
            return self._loader.load_from_file(path, trusted_as_template=True)
        except TypeError:  # ansible-core before 2.19: every template is rendered
            return self._loader.load_from_file(path)

    def _role_data(self):
        specs, defaults = {}, {}
        for folder in sorted(glob.glob(os.path.join(ROLES, "*", ""))):
            role = os.path.basename(os.path.dirname(folder))
            specs[role] = ((self._load(os.path.join(folder, "meta", "argument_specs.yml")) or {})
                           .get("argument_specs") or {})
            defaults[role] = self._load(os.path.join(folder, "defaults", "main.yml")) or {}
        return specs, defaults

    def _hosts(self, pattern, task_vars, default_group):
        if pattern is None:
            # The stage's default group: a site without it (no ESXi, no Kubernetes) has no host there, silently.
            return list(task_vars.get("groups", {}).get(default_group, []))
        lookup = lookup_loader.get("ansible.builtin.inventory_hostnames", loader=self._loader, templar=self._templar)
        return lookup.run([pattern], variables=task_vars)

    def _stage_hosts(self, stages, task_vars, extra):
        """{host: [stage, ...]} as the stages' plays will have them: the stage's pattern from -e, else its group;
        with --limit, only the limit's hosts."""
        limit = context.CLIARGS.get("subset") if context.CLIARGS else None
        limited = set(self._hosts(limit, task_vars, None)) if limit else None
        host_stages = {}
        for stage in stages:
            hosts_var, group, _roles = preflight.STAGES[stage]
            for host in self._hosts(extra.get(hosts_var), task_vars, group):
                if limited is None or host in limited:
                    host_stages.setdefault(host, []).append(stage)
        return host_stages

    def _stages(self, task_vars):
        """The stages of the task's ``stages`` or ``playbook``; (stages, error message)."""
        args = self._task.args
        playbook = args.get("playbook")
        stages = list(args.get("stages") or preflight.PLAYBOOK_STAGES.get(playbook) or [])
        if playbook == "roce" and not args.get("stages"):
            telemetry = self._templar.template(task_vars.get("roce_telemetry", False))
            stages = preflight.roce_stages(str(telemetry).lower() in ("true", "yes", "1", "on"))
        unknown = [s for s in stages if s not in preflight.STAGES]
        if not stages or unknown:
            return stages, "give stages (%s) or a playbook (%s); unknown: %s" % (
                ", ".join(sorted(preflight.STAGES)), ", ".join(sorted(preflight.PLAYBOOK_STAGES)),
                ", ".join(unknown) or "none")
        return stages, None

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        stages, error = self._stages(task_vars)
        if error:
            result.update(failed=True, msg="preflight: " + error)
            return result
        strict = self._templar.template(args.get("strict", task_vars.get("roce_preflight_strict", False)))
        strict = str(strict).lower() in ("true", "yes", "1", "on")
        ignore = self._templar.template(task_vars.get("roce_preflight_ignore", [])) or []

        extra = load_extra_vars(self._loader) or {}
        host_stages = self._stage_hosts(stages, task_vars, extra)

        specs, defaults = self._role_data()
        known = preflight.known_names(specs)
        hostvars = task_vars.get("hostvars")
        results = {}
        for host in sorted(host_stages):
            raw = dict(hostvars.raw_get(host)) if hostvars is not None else {}
            results[host] = self._check(host, host_stages[host], raw, extra, specs, defaults, known, ignore, strict)

        result["changed"] = False
        result["hosts"] = results
        # A stage switched off on a host (preflight.STAGE_SWITCHES) is not listed for it.
        result["stages"] = dict((stage, sorted(h for h, r in results.items() if stage in r["stages"])) for stage in stages)
        result["msg"] = preflight.report(results, strict=strict)
        result["warnings"] = ["%s: %s" % (host, message) for host, r in sorted(results.items())
                              for message in r["warnings"]]
        if any(r["errors"] for r in results.values()):
            result["failed"] = True
        return result

    def _check(self, host, stages, raw, extra, specs, defaults, known, ignore, strict):
        cache = {}

        def template(role, name):
            key = (role, name)
            if key not in cache:
                variables = dict(defaults.get(role) or {})
                variables.update(raw)
                source = raw[name] if name in raw else (defaults.get(role) or {})[name]
                try:
                    templar = self._templar.copy_with_new_env(available_variables=variables)
                    cache[key] = templar.template(source)
                except (AnsibleError, ValueError, TypeError, KeyError) as exc:
                    cache[key] = exc
            return cache[key]

        def values_for(role, entry, names):
            values = {}
            for name in names + list(preflight.TEMPLATED):
                if name in raw or name in (defaults.get(role) or {}):
                    values[name] = template(role, name)
            return values

        contract_mode, contract_error = None, None
        try:
            contract = template("roce_switch", "roce_fabric_qos") if "roce_fabric_qos" in raw else {}
            if isinstance(contract, Exception):
                raise contract
            # null: the site has no contract (no QoS is set or checked anywhere).
            contract_mode = None if ("roce_fabric_qos" in raw and contract is None) else derive(contract or {})["mode"]
        except (ContractError, AnsibleError, ValueError, TypeError) as exc:
            contract_error = "roce_fabric_qos: %s" % exc
        inventory_names = [name for name in raw if name not in extra]
        found = preflight.check_host(host, stages, values_for, specs, inventory_names, list(extra), known, ignore,
                                     strict, contract_mode, switch_os, validate, os.path.isfile)
        if contract_error:
            found["errors"].insert(0, contract_error)
        return found
