# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every shipped inventory (the lab and the examples) gives the roles variables their argument specs accept."""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INVENTORIES = sorted(glob.glob(os.path.join(ROOT, "inventories", "*", "hosts.yml")) +
                     glob.glob(os.path.join(ROOT, "inventories", "examples", "*", "hosts.yml")))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p))) for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


def role_spec(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    spec = {}
    for name, option in options.items():
        spec[name] = dict((k, v) for k, v in option.items() if k in ("type", "elements", "choices", "required", "default"))
    return spec


def group_vars(inventory):
    merged = {}
    base = os.path.dirname(inventory)
    for path in sorted(glob.glob(os.path.join(base, "group_vars", "*.yml")) + glob.glob(os.path.join(base, "host_vars", "*.yml"))):
        with open(path) as handle:
            merged[os.path.basename(path)] = yaml.safe_load(handle) or {}
    return merged


def test_there_is_something_to_check():
    assert len(INVENTORIES) >= 4 and {"nic_firmware", "roce_switch"} <= set(ROLES)


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: os.path.relpath(os.path.dirname(p), ROOT))
@pytest.mark.parametrize("role", ROLES)
def test_role_variables_match_the_argument_spec(inventory, role):
    spec = role_spec(role)
    prefix = role + "_"
    for source, variables in group_vars(inventory).items():
        given = dict((k, v) for k, v in variables.items() if k.startswith(prefix))
        unknown = sorted(set(given) - set(spec))
        assert not unknown, "%s: %s are not options of role %s" % (source, unknown, role)
        result = ArgumentSpecValidator(spec).validate(given)
        assert not result.error_messages, "%s: %s" % (source, result.error_messages)


SECRET_WORDS = ("password", "passwd", "token", "secret", "private_key")


def secret_options(options, path=""):
    """Every option (nested ones too) whose name says it carries a secret, and whether it is no_log."""
    for name, option in (options or {}).items():
        where = path + name
        if any(word in name for word in SECRET_WORDS) and option.get("type", "str") == "str":
            yield where, bool(option.get("no_log"))
        for key in ("options", "suboptions"):
            yield from secret_options(option.get(key), where + ".")


@pytest.mark.parametrize("role", ROLES)
def test_every_secret_in_a_role_argument_spec_is_no_log(role):
    """Hardening: a role's password or token option is masked wherever Ansible shows the role's arguments."""
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    missing = [where for entry in specs.values() for where, no_log in secret_options(entry.get("options")) if not no_log]
    assert missing == [], "%s: no_log missing on %s" % (role, ", ".join(missing))
