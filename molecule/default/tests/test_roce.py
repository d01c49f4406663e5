"""After playbooks/roce.yml on the lab: every GPU node runs the firmware values its inventory asks for,
rebooted at most once, and no adapter was written twice."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
from labcheck import lab_file, query, scenario_hosts  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = scenario_hosts("gpu_nodes")


def printed(value):
    if value is True:
        return "True(1)"
    if value is False:
        return "False(0)"
    return str(value)


def test_inventory_firmware_settings_are_running(host):
    wanted = host.ansible.get_variables()["nic_firmware_settings"]
    adapters = [name for name in host.check_output("ls /sys/bus/pci/devices").split() if name.endswith(".0")]
    assert adapters, "the lab host shows no adapters"
    for pci in adapters:
        rows = query(host, pci, list(wanted))
        for name, value in wanted.items():
            assert rows[name][1:] == [printed(value)] * 2, "%s on %s: default/current/next %s" % (name, pci, rows[name])


def test_at_most_one_reboot_and_one_set_per_adapter(host):
    reboots = lab_file(host, "reboots")
    if os.path.exists(reboots):
        with open(reboots) as handle:
            assert int(handle.read()) == 1
    with open(lab_file(host, "fw", "calls.jsonl")) as handle:
        devices = [json.loads(line)["device"] for line in handle if '"mutating": true' in line]
    assert len(devices) == len(set(devices)), "an adapter was written twice: %s" % devices
