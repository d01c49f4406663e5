# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's judgements (module_utils/common/preflight.py) with the collection's own role argument specs and
defaults, and the run summary's (module_utils/common/summary.py)."""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.roce.fabric.plugins.module_utils.common import preflight, summary
from ansible_collections.roce.fabric.plugins.module_utils.qos.switch import switch_os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


SPECS = dict((os.path.basename(os.path.dirname(os.path.dirname(p))), load(p)["argument_specs"])
             for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))
DEFAULTS = dict((os.path.basename(os.path.dirname(os.path.dirname(p))), load(p))
                for p in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")))
KNOWN = preflight.known_names(SPECS)


def validate(spec, values):
    return ArgumentSpecValidator(spec).validate(values).error_messages


def check(stages, inventory, extra=None, strict=False, ignore=(), mode="lossless", files=()):
    """check_host on plain values: the inventory's and the extra vars win over the role's defaults, as when the
    action templates them (defaults that are templates are left out here: they need Ansible)."""
    given = dict(inventory)
    given.update(extra or {})

    def values_for(role, entry, names):
        values = dict((k, v) for k, v in (DEFAULTS.get(role) or {}).items()
                      if not (isinstance(v, str) and "{{" in v))
        values.update(given)
        return values

    return preflight.check_host("h", stages, values_for, SPECS, list(inventory), list(extra or {}), KNOWN, ignore,
                                strict, mode, switch_os, validate, file_exists=lambda path: path in files)


def test_every_stage_names_roles_and_entry_points_that_exist():
    for stage, (hosts_var, _group, roles) in preflight.STAGES.items():
        assert hosts_var in preflight.PLAYBOOK_VARIABLES, stage
        for role, entry, _runs in roles:
            assert entry in SPECS[role], (stage, role, entry)
    for playbook, stages in preflight.PLAYBOOK_STAGES.items():
        assert os.path.exists(os.path.join(ROOT, "playbooks", playbook + ".yml"))
        assert all(s in preflight.STAGES for s in stages)


def test_a_clean_gpu_node_passes():
    found = check(["host", "validate"], {"nic_qos_interfaces": "auto", "rdma_host_driver": "inbox"})
    assert found == {"stages": ["host", "validate"], "errors": [], "warnings": []}


def test_a_misspelt_variable_is_named_with_the_closest_known_name():
    found = check(["host"], {"nic_firmware_setings": {"SRIOV_EN": True}, "nic_qos_interfaces": "auto"})
    assert found["errors"] == []
    assert found["warnings"] == ["nic_firmware_setings is not a variable of roce.fabric; did you mean "
                                 "nic_firmware_settings?"]
    strict = check(["host"], {"nic_firmware_setings": {}, "nic_qos_interfaces": "auto"}, strict=True)
    assert strict["errors"] == strict["errors"][:1] and "did you mean nic_firmware_settings?" in strict["errors"][0]


def test_the_sites_own_names_are_left_alone_when_ignored():
    found = check(["host"], {"roce_lab_peer": "qemu_vm", "nic_qos_interfaces": "auto"}, ignore=["roce_lab_*"])
    assert found["warnings"] == []
    assert check(["host"], {"roce_lab_peer": "qemu_vm", "nic_qos_interfaces": "auto"})["warnings"]


def test_wrong_types_and_choices_of_a_role_that_runs_are_errors():
    found = check(["host"], {"nic_firmware_settings": "ATS_ENABLED", "rdma_host_driver": "ofed",
                             "nic_qos_interfaces": "auto"})
    assert any(e.startswith("role nic_firmware:") and "nic_firmware_settings" in e for e in found["errors"]), found
    assert any(e.startswith("role rdma_host:") and "rdma_host_driver" in e and "ofed" in e for e in found["errors"])


def test_a_role_that_does_not_run_on_the_host_is_not_checked_for_its_options():
    # nic_firmware runs only where nic_firmware_settings is set (playbooks/host.yml).
    assert check(["host"], {"nic_firmware_tool": "flint", "nic_qos_interfaces": "auto"})["errors"] == []
    assert check(["host"], {"nic_firmware_tool": "flint", "nic_firmware_settings": {"SRIOV_EN": True},
                            "nic_qos_interfaces": "auto"})["errors"]


def test_a_switch_without_its_os_is_an_error_and_a_missing_known_hosts_file_too():
    found = check(["switch"], {"roce_switch_ports": [{"ports": ["swp1"], "mtu": 9216}]})
    assert any("has no ansible_network_os" in e for e in found["errors"])
    missing = check(["switch"], {"ansible_network_os": "nvue", "nvue_transport": "ssh", "ansible_host": "192.0.2.12",
                                 "nvue_known_hosts_file": "/site/known_hosts"})
    assert any(e.startswith("nvue_known_hosts_file /site/known_hosts does not exist") and
               e.endswith("(ssh-keyscan -p 22 192.0.2.12 >> /site/known_hosts)") for e in missing["errors"])
    there = check(["switch"], {"ansible_network_os": "nvue", "nvue_transport": "ssh",
                               "nvue_known_hosts_file": "/site/known_hosts"}, files=["/site/known_hosts"])
    assert there["errors"] == []
    # Over REST the SSH known_hosts file is not read.
    assert check(["switch"], {"ansible_network_os": "nvue", "nvue_known_hosts_file": "/x"})["errors"] == []


def test_the_switches_read_switched_off_is_not_judged():
    # playbooks/validate.yml reads the switches only with roce_validate_switches true (the default): switched off,
    # by -e or in the inventory, a known_hosts file that is not there is no error.
    switch = {"ansible_network_os": "onyx", "onyx_known_hosts_file": "/site/known_hosts", "ansible_host": "192.0.2.11"}
    assert any(e.startswith("onyx_known_hosts_file /site/known_hosts does not exist")
               for e in check(["validate_switches"], switch)["errors"])
    assert check(["validate_switches"], switch, extra={"roce_validate_switches": "false"})["errors"] == []
    assert check(["validate_switches"], dict(switch, roce_validate_switches=False))["stages"] == []
    assert check(["validate_switches"], dict(switch, roce_validate_switches=True))["errors"]
    # The switch stage of roce.yml configures the switch whatever the read before validation does.
    assert check(["switch", "validate_switches"], switch, extra={"roce_validate_switches": False})["errors"]


def test_a_lossless_contract_without_host_nics_is_a_warning_and_auto_is_not():
    found = check(["host"], {"rdma_host_driver": "inbox"})
    assert len(found["warnings"]) == 1 and "nic_qos_interfaces names no NIC" in found["warnings"][0]
    assert check(["host"], {}, mode="lossy")["warnings"] == []
    assert check(["host"], {"nic_qos_interfaces": "auto"})["warnings"] == []


def test_a_bad_nic_list_is_an_error_with_every_problem():
    found = check(["host"], {"nic_qos_interfaces": [{"port": 1}, {"netdev": "ens1", "ecn": "maybe"}]})
    assert len(found["errors"]) == 1
    assert "entry 1" in found["errors"][0] and "netdev" in found["errors"][0] and "entry 2 (ens1)" in found["errors"][0]


def test_a_play_keyword_variable_in_the_inventory_is_named():
    found = check(["host"], {"roce_reboot_serial": 2, "nic_qos_interfaces": "auto"})
    assert any(w.startswith("roce_reboot_serial is set in the inventory") and "-e" in w for w in found["warnings"])
    assert check(["host"], {"nic_qos_interfaces": "auto"}, extra={"roce_reboot_serial": 2})["warnings"] == []


def test_a_secret_that_cannot_be_templated_names_the_variable_not_the_value():
    class Undefined(Exception):
        pass

    exc = Undefined("'vault_switch_password' is undefined in '{{ vault_switch_password }}s3cret'")
    said = preflight.template_error("ansible_password", exc)
    assert said == "'vault_switch_password' is undefined (a vault variable not loaded?)"
    assert "s3cret" not in preflight.template_error("ansible_password", Undefined("bad {{ s3cret"))
    assert preflight.template_error("nvue_ca_path", Undefined("'x' is undefined")) == "'x' is undefined"


def test_the_report_lists_every_host_errors_first():
    text = preflight.report({
        "gpu01": {"stages": ["host"], "errors": [], "warnings": ["w1"]},
        "leaf01": {"stages": ["switch"], "errors": ["e1", "e2"], "warnings": []},
        "gpu02": {"stages": ["host"], "errors": [], "warnings": []},
    })
    assert text.splitlines() == [
        "preflight: 2 error(s) and 1 warning(s) on 2 of 3 hosts; nothing was changed",
        "leaf01 (switch):", "  error: e1", "  error: e2",
        "gpu01 (host):", "  warning: w1"]
    assert preflight.report({"a": {"stages": [], "errors": [], "warnings": []}}) == \
        "preflight: 1 hosts checked, no problem found"


def test_roce_yml_takes_telemetry_only_when_asked():
    assert "telemetry" not in preflight.roce_stages(False)
    stages = preflight.roce_stages(True)
    assert stages.index("telemetry") == stages.index("validate_switches") - 1


def test_every_playbook_variable_is_on_the_operators_page_and_only_those():
    with open(os.path.join(ROOT, "docs", "playbook_variables.md")) as handle:
        page = handle.read()
    documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", page, re.M))
    assert documented == set(preflight.PLAYBOOK_VARIABLES)
    for name, (where, _what) in preflight.PLAYBOOK_VARIABLES.items():
        row = re.search(r"^\| `%s` \|([^|]*)\|" % name, page, re.M).group(1)
        assert ("`-e` only" in row) == (where == "extra"), name


def tasks_in(items):
    for task in items or []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
                yield from tasks_in(task.get(key))


def set_by_the_collection():
    """Names the roles and playbooks set themselves: registered results, set_fact keys, vars of plays and tasks."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) + \
            glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        for task in tasks_in(load(path) if isinstance(load(path), list) else []):
            if task.get("register"):
                names.add(task["register"])
            facts = task.get("ansible.builtin.set_fact")
            if isinstance(facts, dict):
                names.update(facts)
            if isinstance(task.get("vars"), dict):
                names.update(task["vars"])
    return names


def test_every_variable_the_playbooks_read_is_known_to_the_preflight():
    """A name with a collection prefix that a playbook reads is a role option, a playbook variable or one the
    collection sets itself (a registered result, a fact, a var): nothing the preflight would call unknown."""
    set_here = set_by_the_collection()
    read = set()
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(path) as handle:
            text = "\n".join(line for line in handle.read().splitlines() if not line.lstrip().startswith("#"))
        # Role and group names are not variables.
        text = re.sub(r"(roce\.fabric|groups)\.[a-z0-9_]+", "", text)
        read.update(re.findall(r"\b([a-z][a-z0-9_]*)\b", text))
    prefixed = set(n for n in read if n.startswith(preflight.PREFIXES))
    unknown = sorted(n for n in prefixed - set_here - KNOWN if not n.startswith("roce_batch_guard_"))
    assert unknown == []


@pytest.mark.parametrize("variables, expected", [
    ({"roce_switch_result": {"changed": True, "commands": ["nv set qos roce enable on", "nv config apply -y"]}},
     [("switch", "switch", "would change", "nv set qos roce enable on; nv config apply -y")]),
    ({"roce_switch_result": {"failed": True, "unreachable": True, "msg": "The switch at 192.0.2.12:22 did not "
                                                                         "answer over SSH: timed out"}},
     [("switch", "switch", "unreachable", "The switch at 192.0.2.12:22 did not answer over SSH: timed out")]),
    ({"roce_switch_result": {"changed": False, "commands": []}}, [("switch", "switch", "ok", "no change")]),
    ({}, [("switch", "switch", "not reached", "no result: the host was unreachable or failed before this stage's "
                                              "first change (see the run above)")]),
])
def test_the_summary_of_a_switch(variables, expected):
    assert summary.host_summary(["switch"], variables, True) == expected


def test_the_summary_of_a_gpu_node_names_each_nic_and_the_pending_reboot():
    variables = {
        "nic_firmware_result": {"changed": True, "commands": ["mlxconfig -d 0000:3b:00.0 -y set SRIOV_EN=1"]},
        "nic_qos_results": {"changed": True, "results": [
            {"item": {"netdev": "ens1np0"}, "changed": True, "commands": ["mlnx_qos -i ens1np0 --trust dscp"]},
            {"item": {"netdev": "ens2np0"}, "changed": False, "commands": []}]},
        "sriov_kernel_result": {"skipped": True},
        "host_reboot_result": {"skipped": True},
        "host_reboot_pending": {"nic_firmware": "firmware SRIOV_EN waits for a reboot", "rdma_host": ""},
    }
    rows = summary.host_summary(["host"], variables, True)
    assert rows == [
        ("host", "firmware", "would change", "mlxconfig -d 0000:3b:00.0 -y set SRIOV_EN=1"),
        ("host", "NIC QoS", "would change", "ens1np0: mlnx_qos -i ens1np0 --trust dscp"),
        ("host", "reboot", "would change", "reboot for: firmware SRIOV_EN waits for a reboot"),
    ]
    unreachable = summary.host_summary(["host", "validate"], {"roce_reach": {"unreachable": True, "msg": "No route"}},
                                       True)
    assert unreachable == [("host", "connection", "unreachable", "No route")]


def test_the_summary_text_puts_hosts_with_something_to_say_first():
    text = summary.report({
        "gpu01": [("host", "NIC QoS", "ok", "no change")],
        "leaf02": [("switch", "switch", "unreachable", "timed out")],
        "leaf01": [("switch", "switch", "would change", "nv set qos roce enable on")],
    }, True)
    assert text.splitlines() == [
        "summary, what each host would change (check mode): 1 unreachable, 1 would change, 1 ok",
        "leaf02: switch: unreachable: timed out",
        "leaf01: switch: would change: nv set qos roce enable on",
        "gpu01: no change"]


def test_the_summary_text_of_a_real_run_counts_what_changed():
    """A run that is not in check mode counts its hosts as "changed" (or "pending", a reboot left for later), never
    as "would change": the lab's run printed "10 would change, 1 ok" for a run that changed ten hosts."""
    text = summary.report({
        "gpu01": [("host", "firmware", "changed", "mlxconfig -d 0000:3b:00.0 -y set SRIOV_EN=1"),
                  ("host", "reboot", "pending", "reboot for: firmware SRIOV_EN waits for a reboot")],
        "gpu02": [("host", "reboot", "pending", "reboot for: firmware SRIOV_EN waits for a reboot")],
        "leaf01": [("switch", "switch", "changed", "nv set qos roce enable on")],
        "leaf02": [("switch", "switch", "ok", "no change")],
    }, False)
    assert text.splitlines()[0] == "summary, what each host changed: 2 changed, 1 pending, 1 ok", text
