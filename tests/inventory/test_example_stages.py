"""Every shipped inventory reaches every stage of playbooks/roce.yml it should.

For each inventory (the lab and every example) Ansible itself lists the hosts and tasks of each play
of roce.yml (``ansible-playbook --list-hosts --list-tasks``) and the inventory's groups and variables
(``ansible-inventory --list``). The tests assert that every GPU node gets the whole host stack and the
validation, that switches, ESXi hosts and Kubernetes clusters get their stages, and that the
variables of a GPU node agree with each other (firmware that allows VFs has VFs made in the kernel,
Kubernetes SR-IOV pools name ports that get VFs).

Run alone, it prints the stage table:  python tests/inventory/test_example_stages.py
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

for _entry in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep):
    if os.path.isdir(os.path.join(_entry, "ansible_collections", "roce", "fabric")):
        sys.path.insert(0, _entry)
        break
from ansible_collections.roce.fabric.plugins.module_utils.qos import contract as qos  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.roce.fabric.plugins.module_utils.qos import switch as switch_vars  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORIES = [os.path.join(REPO, "inventories", "lab")] + sorted(
    p.rstrip("/") for p in glob.glob(os.path.join(REPO, "inventories", "examples", "*/")))

# The stages of roce.yml by play name, and the roles whose tasks a stage's play must list.
STAGES = [
    ("switch", "RoCE on NVIDIA Spectrum switches (Onyx, Cumulus Linux)", ["roce.fabric.roce_switch"]),
    ("host", "GPU node host stack, no reboot yet",
     ["roce.fabric.nic_firmware", "roce.fabric.rdma_host", "roce.fabric.nic_qos", "roce.fabric.sriov", "roce.fabric.nvme_scratch"]),
    ("reboot", "One rolling reboot per host for everything pending, then checks", []),
    ("esxi", "ESXi PCIe ATS and VM peer-to-peer, one host at a time", ["roce.fabric.esxi_ats"]),
    ("kubernetes", "Kubernetes RDMA networking", ["roce.fabric.k8s_rdma_network"]),
    ("telemetry", "RDMA exporter for Prometheus", ["roce.fabric.rdma_exporter"]),
    ("validate", "Validate the RDMA fabric", ["roce.fabric.validate"]),
]
# Which inventory group each stage is for.
STAGE_GROUP = {"switch": "roce_switches", "host": "gpu_nodes", "reboot": "gpu_nodes", "esxi": "esxi_hosts",
               "kubernetes": "k8s_clusters", "telemetry": "gpu_nodes", "validate": "gpu_nodes"}

PLAY_RE = re.compile(r"^  play #\d+ \((?P<pattern>[^)]*)\): (?P<name>.*?)\tTAGS:")


def name(inventory):
    return os.path.basename(inventory)


class Plays(dict):
    """{play name: {"hosts": [...], "tasks": [...]}}; ``sequence``: every play's name in order, repeats included."""

    def __init__(self):
        super(Plays, self).__init__()
        self.sequence = []


def list_plays(inventory):
    """{play name: {"hosts": [...], "tasks": [...]}} as ansible-playbook lists them for roce.yml (a Plays)."""
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "roce.yml"),
                           "--list-hosts", "--list-tasks"], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    plays, play, section = Plays(), None, None
    for line in proc.stdout.splitlines():
        match = PLAY_RE.match(line)
        if match:
            play = plays.setdefault(match.group("name"), {"hosts": [], "tasks": []})
            plays.sequence.append(match.group("name"))
            section = None
        elif play is None or not line.strip():
            continue
        elif re.match(r"^    hosts \(\d+\):$", line):
            section = "hosts"
        elif line.strip() == "tasks:":
            section = "tasks"
        elif line.startswith("    pattern:"):
            section = None
        elif section == "hosts":
            play["hosts"].append(line.strip())
        elif section == "tasks":
            play["tasks"].append(line.strip().split("\t")[0])
    return plays


def read_inventory(inventory):
    proc = subprocess.run(["ansible-inventory", "-i", inventory, "--list"], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    groups = {}

    def members(group):
        entry = data.get(group, {})
        hosts = list(entry.get("hosts", []))
        for child in entry.get("children", []):
            hosts += members(child)
        return hosts

    for group in data:
        if group != "_meta":
            groups[group] = sorted(set(members(group)))
    return groups, data["_meta"]["hostvars"]


@pytest.fixture(scope="module", params=INVENTORIES, ids=name)
def shipped(request):
    plays = list_plays(request.param)
    groups, hostvars = read_inventory(request.param)
    return request.param, plays, groups, hostvars


def stage_hosts(plays, stage):
    play_name = dict((s, p) for s, p, _roles in STAGES)[stage]
    assert play_name in plays, "roce.yml has no play %r" % play_name
    return sorted(plays[play_name]["hosts"])


def test_every_stage_reaches_its_group(shipped):
    inventory, plays, groups, _hostvars = shipped
    for stage, play_name, roles in STAGES:
        wanted = groups.get(STAGE_GROUP[stage], [])
        assert stage_hosts(plays, stage) == wanted, "%s: stage %s" % (name(inventory), stage)
        for role in roles:
            assert any(task.startswith(role + " : ") for task in plays[play_name]["tasks"]), (stage, role)


def test_gpu_nodes_get_the_whole_host_stack(shipped):
    inventory, plays, groups, _hostvars = shipped
    gpu = groups.get("gpu_nodes", [])
    assert gpu, "%s has no GPU nodes" % name(inventory)
    for stage in ("host", "reboot", "validate"):
        assert set(gpu) <= set(stage_hosts(plays, stage)), (name(inventory), stage)


def test_no_inventory_sets_a_play_keyword_ansible_cannot_read_there(shipped):
    """roce_reboot_serial and roce_switch_serial set the rolling plays' serial, which Ansible evaluates before inventory variables: a value in
    group_vars or host_vars is not used (and the playbooks refuse it), so a shipped inventory must not carry one.
    The rolling plays check their batch first (playbooks/batch_guard.yml)."""
    inventory, plays, _groups, hostvars = shipped
    for keyword in ("roce_reboot_serial", "roce_switch_serial"):
        assert [h for h, v in hostvars.items() if keyword in v] == [], (name(inventory), keyword)
    # Each playbook that takes hosts batch by batch starts with the guard: the switches' and the GPU nodes'.
    names = plays.sequence
    for stage in ("switch", "host"):
        first = names.index(dict((s, p) for s, p, _roles in STAGES)[stage])
        assert names[first - 1] == "Check the rolling batch before anything changes", (stage, names)


def test_firmware_vfs_are_made_in_the_kernel(shipped):
    """Firmware that offers VFs on a GPU node goes with VFs in its kernel (sriov_devices), no more than offered."""
    inventory, _plays, groups, hostvars = shipped
    for host in groups.get("gpu_nodes", []):
        variables = hostvars.get(host, {})
        firmware = variables.get("nic_firmware_settings") or {}
        offered = int(firmware.get("NUM_OF_VFS", 0)) if str(firmware.get("SRIOV_EN", "")).lower() in ("true", "1") else 0
        devices = variables.get("sriov_devices") or []
        if variables.get("roce_lab_peer") == "netns_host":
            continue  # the lab's namespace hosts have simulated firmware only, no kernel to make VFs in
        if offered:
            assert devices, "%s: %s offers %d VFs in firmware but sriov_devices makes none" % (name(inventory), host, offered)
        for device in devices:
            if firmware:
                assert int(device["num_vfs"]) <= max(offered, 0) or "NUM_OF_VFS" not in firmware, (host, device)


def test_kubernetes_sriov_pools_name_ports_with_vfs(shipped):
    inventory, _plays, groups, hostvars = shipped
    for cluster in groups.get("k8s_clusters", []):
        variables = hostvars.get(cluster, {})
        if variables.get("roce_lab_peer") or variables.get("k8s_rdma_network_sriov") is False:
            continue
        pools = set(r["pf_name"] for r in variables.get("k8s_rdma_network_sriov_resources") or [])
        for host in groups.get("gpu_nodes", []):
            ports = set(d["netdev"] for d in hostvars.get(host, {}).get("sriov_devices") or [])
            assert pools <= ports, "%s: %s gets no VFs on %s" % (name(inventory), host, sorted(pools - ports))


def test_contract_stated_and_switches_agree(shipped):
    """Every GPU node and switch has the fabric's RoCE QoS contract, valid, and no switch contradicts it.

    A fabric the site does not control (a cloud's RDMA network, such as Alibaba's eRDMA in a VPC) states null
    instead: no contract, no switches, and no NIC QoS to set."""
    inventory, _plays, groups, hostvars = shipped
    for host in groups.get("gpu_nodes", []) + groups.get("roce_switches", []):
        variables = hostvars.get(host, {})
        assert "roce_fabric_qos" in variables, "%s: %s has no roce_fabric_qos" % (name(inventory), host)
        if variables["roce_fabric_qos"] is None:
            assert not groups.get("roce_switches"), "%s: switches without a QoS contract" % name(inventory)
            assert not variables.get("nic_qos_interfaces"), "%s: %s sets NIC QoS without a contract" % (name(inventory), host)
            continue
        qos.normalize(variables["roce_fabric_qos"])
    for host in groups.get("gpu_nodes", []):
        variables = hostvars.get(host, {})
        if variables.get("roce_lab_peer") == "netns_host" or variables.get("roce_fabric_qos", {}) is None:
            continue  # the lab's namespace hosts: simulated firmware only so far; a cloud fabric: nothing to set
        assert variables.get("nic_qos_interfaces"), "%s: %s gets no NIC QoS (nic_qos_interfaces)" % (name(inventory), host)
    for switch in groups.get("roce_switches", []):
        variables = hostvars[switch]
        mode = variables.get("roce_switch_roce_mode", qos.normalize(variables["roce_fabric_qos"])["mode"])
        found = switch_vars.role_args(variables["roce_fabric_qos"], variables.get("ansible_network_os", "onyx"), roce_mode=mode,
                                      vlans=variables.get("roce_switch_vlans"), ports=variables.get("roce_switch_ports"),
                                      pfc=variables.get("roce_switch_pfc"), trust=variables.get("roce_switch_trust"),
                                      ecn=variables.get("roce_switch_ecn"))
        assert not found["errors"], "%s: %s: %s" % (name(inventory), switch, found["errors"])


def table():
    rows = []
    for inventory in INVENTORIES:
        plays = list_plays(inventory)
        cells = []
        for stage, play_name, _roles in STAGES:
            hosts = plays.get(play_name, {}).get("hosts", [])
            shown = sorted(hosts)[:4] + (["..."] if len(hosts) > 4 else [])
            cells.append("%d: %s" % (len(hosts), " ".join(shown)) if hosts else "-")
        rows.append([name(inventory)] + cells)
    head = ["inventory"] + [s for s, _name, _roles in STAGES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
