"""Verify nic_firmware on the lab's GPU nodes: the firmware runs the wanted values, each host rebooted
exactly once (converge), and the idempotence run made no mutating firmware call."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
from labcheck import LAB, peer, query, scenario_hosts  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = scenario_hosts("lab_netns_hosts")

WANTED = {"ATS_ENABLED": "True(1)", "SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}
ADAPTERS = {"gpu1": ["0000:3b:00.0", "0000:86:00.0"], "gpu2": ["0000:5e:00.0"]}


def test_running_firmware_values_are_the_wanted_ones(host):
    for pci in ADAPTERS[host.backend.get_hostname()]:
        rows = query(host, pci, list(WANTED))
        for name, value in WANTED.items():
            assert rows[name][1:] == [value, value], "%s %s: default/current/next %s" % (pci, name, rows[name])


def test_each_host_rebooted_exactly_once(host):
    assert LAB.reboots(peer(host)) == 1
    # The boot id the host reports is the one its last reboot wrote.
    with open(LAB.artifact(peer(host), "boot_id")) as handle:
        assert host.file("/proc/sys/kernel/random/boot_id").content_string.strip() == handle.read().strip()


def test_one_set_per_adapter_and_nothing_mutating_in_check_or_second_run(host):
    calls = LAB.calls(peer(host))
    mutating = [c for c in calls if c["mutating"]]
    assert sorted(c["device"] for c in mutating) == ADAPTERS[host.backend.get_hostname()]
    # Only values that differed were written: NUM_OF_VFS ships as 8 on the ConnectX-7 and ConnectX-6 and as 0 on
    # the ConnectX-6 Dx (the real query the simulator's ConnectX-6 Dx is built from).
    for call in mutating:
        written = set(a.split("=")[0] for a in call["argv"] if "=" in a)
        expected = {"ATS_ENABLED", "SRIOV_EN"} | ({"NUM_OF_VFS"} if call["device"] == "0000:3b:00.0" else set())
        assert written == expected, call
