"""The preflight (roce.fabric.preflight, playbooks/preflight.yml) run by ansible-playbook on the shipped inventories.

- every shipped inventory passes with no error and no warning, once the operator has done what its comments ask
  (the vault variables it names exist, the known_hosts files it names are there);
- the README's minimal inventory is the shipped inventories/examples/small_site/hosts.yml, word for word;
- that inventory with five mistakes gives exactly the five findings, every host at once, and fails before any
  play connects; with roce_preflight_strict the misspelling is an error too.

Run alone: python -m pytest tests/inventory/test_preflight.py (after eval "$(tests/run env)").
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORIES = [os.path.join(REPO, "inventories", "lab")] + sorted(
    p.rstrip("/") for p in glob.glob(os.path.join(REPO, "inventories", "examples", "*/")))


def prepared(inventory, tmp_path):
    """A copy of the inventory with what its comments ask the operator to make: the known_hosts and CA files it
    names (empty), and the vault variables it uses (as extra vars)."""
    copy_dir = tmp_path / os.path.basename(inventory)
    shutil.copytree(inventory, copy_dir)
    text = ""
    for path in glob.glob(str(copy_dir / "**" / "*.yml"), recursive=True):
        with open(path) as handle:
            text += handle.read()
    for name in set(re.findall(r"\{\{ inventory_dir \}\}/([A-Za-z0-9_.-]+)", text)):
        (copy_dir / name).write_text("")
    vaults = sorted(set(re.findall(r"\bvault_[a-z0-9_]+", text)))
    extra = []
    for name in vaults:
        extra += ["-e", "%s=not-shown" % name]
    return str(copy_dir), extra


def preflight(inventory, extra, playbook="roce", env=None):
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               **(env or {}))
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "preflight.yml"),
                           "-e", "roce_preflight_playbook=%s" % playbook] + extra,
                          capture_output=True, text=True, cwd=REPO, env=env, check=False, timeout=300)
    out = json.loads(proc.stdout)
    task = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return proc.returncode, task


def findings(task):
    return dict((host, (r["errors"], r["warnings"])) for host, r in task["hosts"].items() if r["errors"] or r["warnings"])


@pytest.mark.parametrize("inventory", INVENTORIES, ids=os.path.basename)
def test_every_shipped_inventory_passes_the_preflight_cleanly(inventory, tmp_path):
    path, extra = prepared(inventory, tmp_path)
    # The lab's switches pin their keys in the lab's own folder (ROCE_LAB_DIR, written by tests/run lab-up).
    (tmp_path / "lab" / "switches").mkdir(parents=True)
    (tmp_path / "lab" / "switches" / "known_hosts").write_text("")
    rc, task = preflight(path, extra, env={"ROCE_LAB_DIR": str(tmp_path / "lab")})
    assert rc == 0 and findings(task) == {}, task.get("msg")
    assert task["stages"]["validate"], "no GPU node is validated"


def test_the_readme_minimal_inventory_is_the_shipped_small_site():
    with open(os.path.join(REPO, "README.md")) as handle:
        readme = handle.read()
    blocks = re.findall(r"```yaml\n(---\n# A small site.*?)```", readme, re.S)
    assert len(blocks) == 1
    with open(os.path.join(REPO, "inventories", "examples", "small_site", "hosts.yml")) as handle:
        assert blocks[0] == handle.read()


def five_mistakes(tmp_path):
    """small_site with five mistakes an operator makes, each in its own place."""
    with open(os.path.join(REPO, "inventories", "examples", "small_site", "hosts.yml")) as handle:
        inventory = yaml.safe_load(handle)
    broken = copy.deepcopy(inventory)
    switches = broken["all"]["children"]["roce_switches"]
    del switches["vars"]["ansible_network_os"]                                  # 1. leaf02 names no OS
    switches["hosts"]["leaf01"]["ansible_network_os"] = "nvue"
    nodes = broken["all"]["children"]["gpu_nodes"]["hosts"]
    nodes["gpu01"]["rdma_host_driver"] = "ofed"                                  # 2. no such driver
    nodes["gpu01"]["nic_qos_interfaces"] = [{"port": 1}]                         # 3. a NIC without its interface
    nodes["gpu02"]["nic_firmware_setings"] = {"SRIOV_EN": True}                  # 4. misspelt
    nodes["gpu03"]["roce_reboot_serial"] = 2                                     # 5. read before inventory exists
    folder = tmp_path / "mysite"
    folder.mkdir()
    (folder / "hosts.yml").write_text(yaml.safe_dump(broken, sort_keys=False))
    (folder / "known_hosts").write_text("")
    return str(folder / "hosts.yml")


EXPECTED = {
    "gpu01": ([
        "role rdma_host: value of rdma_host_driver must be one of: inbox, mlnx_ofed, doca_ofed, none, got: ofed",
        "nic_qos_interfaces cannot be used, nothing was changed: entry 1 (?): missing required arguments: netdev",
    ], []),
    "gpu02": ([], ["nic_firmware_setings is not a variable of roce.fabric; did you mean nic_firmware_settings?"]),
    "gpu03": ([], ["roce_reboot_serial is set in the inventory, but the playbooks read it before inventory variables "
                   "exist (play keywords hosts/serial): it has no effect there; give it with -e"]),
    "leaf02": (["the switch has no ansible_network_os (nor roce_switch_os): set it to onyx (NVIDIA Onyx) or nvue "
                "(Cumulus Linux); the collection does not guess which CLI a switch speaks"], []),
}


def test_five_mistakes_are_reported_at_once_before_anything_connects(tmp_path):
    inventory = five_mistakes(tmp_path)
    rc, task = preflight(inventory, ["-e", "vault_switch_password=not-shown"])
    assert rc != 0 and task["failed"]
    assert findings(task) == EXPECTED
    assert task["msg"].splitlines()[0] == ("preflight: 3 error(s) and 2 warning(s) on 4 of 6 hosts; nothing was "
                                           "changed")
    # The whole roce.yml stops at its preflight: no other play runs, no host is contacted.
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "roce.yml"), "--check",
                           "-e", "vault_switch_password=not-shown"], capture_output=True, text=True, cwd=REPO,
                          env=env, check=False, timeout=300)
    plays = json.loads(proc.stdout)["plays"]
    assert proc.returncode != 0 and [p["play"]["name"] for p in plays] == [
        "Preflight (on the controller, before anything connects)"]


def test_strict_makes_an_unknown_name_an_error(tmp_path):
    inventory = five_mistakes(tmp_path)
    rc, task = preflight(inventory, ["-e", "vault_switch_password=not-shown", "-e", "roce_preflight_strict=true"])
    assert rc != 0
    assert "nic_firmware_setings is not a variable of roce.fabric; did you mean nic_firmware_settings?" in \
        task["hosts"]["gpu02"]["errors"]


def test_a_vault_variable_that_is_not_loaded_is_named_without_its_value(tmp_path):
    folder = tmp_path / "site"
    shutil.copytree(os.path.join(REPO, "inventories", "examples", "small_site"), folder)
    (folder / "known_hosts").write_text("")
    rc, task = preflight(str(folder / "hosts.yml"), [])
    assert rc != 0
    assert task["hosts"]["leaf01"]["errors"] == [
        "ansible_password cannot be templated: 'vault_switch_password' is undefined (a vault variable not loaded?)"]


def test_validation_without_the_switches_read_needs_no_switch_known_hosts(tmp_path):
    # The lab before its switches were ever started: no known_hosts file pinned yet. The switches' read before
    # validation refuses that, unless it is switched off (roce_validate_switches=false), as the validate play skips it.
    lab = os.path.join(REPO, "inventories", "lab")
    env = {"ROCE_LAB_DIR": str(tmp_path / "lab")}
    rc, task = preflight(lab, [], playbook="validate", env=env)
    assert rc != 0 and "known_hosts" in task["msg"]
    assert task["stages"]["validate_switches"]
    rc, task = preflight(lab, ["-e", "roce_validate_switches=false"], playbook="validate", env=env)
    assert rc == 0, task.get("msg")
    assert task["stages"]["validate_switches"] == [] and task["stages"]["validate"]


def test_a_host_that_only_pins_firmware_versions_is_checked(tmp_path):
    """playbooks/host.yml runs nic_firmware where nic_firmware_settings or nic_firmware_versions is set; the preflight
    checked the role only where the first was, so a host pinning firmware versions alone went unchecked and its
    mistake surfaced at the burn. Now it is named before anything connects."""
    inventory, extra = prepared(os.path.join(REPO, "inventories", "examples", "small_site"), tmp_path)
    extra += ["-e", json.dumps(dict(nic_firmware_versions={"MT_0000000436": dict(version="22.43.1014")},
                                    nic_firmware_version_policy="latest"))]
    rc, task = preflight(inventory, extra, playbook="host")
    assert rc != 0 and task["failed"], task
    errors = [message for host, (errs, _warns) in findings(task).items() for message in errs]
    assert errors and all("nic_firmware_version_policy" in message for message in errors), errors
