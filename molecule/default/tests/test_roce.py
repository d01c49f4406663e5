"""After playbooks/roce.yml on the lab: every GPU node runs the firmware values its inventory asks for,
rebooted at most once, and the idempotence run changed nothing on the firmware."""

import json
import os

import testinfra.utils.ansible_runner

# The scenario's inventory directory holds the linked lab inventory (hosts and group_vars).
INVENTORY = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("gpu_nodes")
if not testinfra_hosts:
    raise RuntimeError("no gpu_nodes in %s: nothing would be verified" % INVENTORY)

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LAB_DIR = os.environ.get("ROCE_LAB_DIR", os.path.join(PROJECT, ".lab"))


def lab_file(host, *parts):
    return os.path.join(LAB_DIR, "hosts", host.backend.get_hostname(), *parts)


def printed(value):
    if value is True:
        return "True(1)"
    if value is False:
        return "False(0)"
    return str(value)


def test_inventory_firmware_settings_are_running(host):
    wanted = host.ansible.get_variables()["nic_firmware_settings"]
    tool = "mlxconfig" if host.exists("mlxconfig") else "mstconfig"
    adapters = sorted(set(line.split()[0] for line in host.check_output("ls /sys/bus/pci/devices").split() if line.endswith(".0")))
    assert adapters, "the lab host shows no adapters"
    for pci in adapters:
        out = host.check_output(" ".join(["%s"] * (5 + len(wanted))), tool, "-d", pci, "-e", "query", *sorted(wanted))
        rows = {}
        for line in out.splitlines():
            tokens = line.split()
            while tokens and tokens[0] in ("*", "RO", "*RO"):
                tokens.pop(0)
            if len(tokens) == 4 and tokens[0] in wanted:
                rows[tokens[0]] = tokens[2:]
        assert sorted(rows) == sorted(wanted), out
        for name, value in wanted.items():
            assert rows[name] == [printed(value)] * 2, "%s on %s: current/next %s" % (name, pci, rows[name])


def test_at_most_one_reboot_and_one_set_per_adapter(host):
    reboots = lab_file(host, "reboots")
    assert not os.path.exists(reboots) or int(open(reboots).read()) == 1
    with open(lab_file(host, "fw", "calls.jsonl")) as handle:
        mutating = [json.loads(line) for line in handle if '"mutating": true' in line]
    devices = [c["device"] for c in mutating]
    assert len(devices) == len(set(devices)), "an adapter was written twice: %s" % devices
