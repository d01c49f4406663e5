"""After playbooks/roce.yml on the lab: every GPU node runs the firmware values its inventory asks for and the RoCE QoS contract,
rebooted at most once, and no adapter was written twice."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
from labcheck import LAB, peer, query, scenario_hosts, variables  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = scenario_hosts("lab_netns_hosts")


def printed(value):
    if value is True:
        return "True(1)"
    if value is False:
        return "False(0)"
    return str(value)


def test_inventory_firmware_settings_are_running(host):
    wanted = variables(host)["nic_firmware_settings"]
    adapters = [name for name in host.check_output("ls /sys/bus/pci/devices").split() if name.endswith(".0")]
    assert adapters, "the lab host shows no adapters"
    for pci in adapters:
        rows = query(host, pci, list(wanted))
        for name, value in wanted.items():
            assert rows[name][1:] == [printed(value)] * 2, "%s on %s: default/current/next %s" % (name, pci, rows[name])


def test_at_most_one_reboot_and_one_set_per_adapter(host):
    assert LAB.reboots(peer(host)) in (0, 1)
    devices = [call["device"] for call in LAB.calls(peer(host)) if call.get("mutating") is True]
    assert len(devices) == len(set(devices)), "an adapter was written twice: %s" % devices


def test_switches_run_their_inventory_settings_and_saved_them():
    """The switches are not SSH hosts Ansible can run Python on: their simulator state is read from outside."""
    expected = {"sw1": ("lossless", {"1/1": 111, "1/4": 111}), "sw2": ("lossy", {})}
    for name, (mode, access) in expected.items():
        state = LAB.state(name)
        assert state["running"]["roce"] == mode
        assert state["running"] == state["saved"], "%s: the change was not saved" % name
        for port, vlan in access.items():
            assert state["running"]["ports"][port]["access_vlan"] == vlan
        assert state["running"]["ports"]["1/1"]["mtu"] == 9216
        # converge and the idempotence run: the configuration was sent exactly once.
        assert sum(1 for c in state["commands"] if c["line"] == "configuration write") == 1


def test_cumulus_switches_run_their_inventory_settings_and_saved_them():
    """leaf1 (REST API, Cumulus Linux 5.9.2) and leaf2 (nv over SSH, 5.4.0): the same QoS variables as sw1, applied
    once over the converge and the idempotence run, and in the startup configuration: leaf1's apply saved it by
    itself (auto-save, on by default from 5.9), leaf2 was saved once by the module."""
    for name, ports, saves in (("leaf1", ["swp1", "swp4", "swp31s3"], 0), ("leaf2", ["swp1", "swp3"], 1)):
        state = LAB.state(name)
        qos = state["applied"]["qos"]
        assert qos["roce"] == {"enable": "on", "mode": "lossless"}, name
        assert qos["mapping"]["default-global"]["trust"] == "l3" and qos["pfc"]["default-global"]["switch-priority"] == {"3": {}}
        assert qos["congestion-control"]["default-global"]["traffic-class"]["3"]["max-threshold"] == 1500000
        for port in ports:
            assert state["applied"]["interface"][port]["link"]["mtu"] == 9216, (name, port)
        assert state["applied"]["interface"]["swp1"]["bridge"]["domain"]["br_default"]["access"] == 111
        assert state["applies"] == 1 and state["saves"] == saves and state["startup"] == state["applied"], name


def test_nic_qos_follows_the_contract(host):
    """The RoCE QoS contract (inventories/lab/group_vars/all.yml) on every ConnectX port of nic_qos_interfaces,
    as the host's QoS simulator holds it (read from outside): trust DSCP and PFC on priority 3, after the reboot
    that reset them (the host stage applied them again)."""
    hostvars = variables(host)
    qos = LAB.state(peer(host))["qos"]
    for port in hostvars["nic_qos_interfaces"]:
        state = qos[port["netdev"]]
        assert state["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0], port
        if hostvars["nic_qos_backend"] == "dcb":
            assert state["apptrust"][0] == "dscp", port
        else:
            assert state["trust"] == "dscp", port


def test_the_report_reads_each_switch_against_its_contract():
    """The last run's validation report (the idempotence run) has a "qos switch" check per switch: each agrees with
    its contract, sw1, leaf1 and leaf2 lossless from group_vars/all, sw2 with its own lossy one."""
    with open("/var/tmp/roce-fabric-validation/report.json") as handle:
        report = json.load(handle)
    for name, mode in (("sw1", "lossless"), ("sw2", "lossy"), ("leaf1", "lossless"), ("leaf2", "lossless")):
        [check] = report["hosts"][name]["checks"]
        assert check["name"] == "qos switch" and check["status"] == "passed", check
        assert ("%s agrees with the contract: roce %s" % (name, mode)) in check["msg"], check


def test_the_report_says_which_switches_it_read_around_the_traffic():
    """The same report says which switches' counters were read around the traffic (all four) and whose own LLDP
    table was (leaf2: nv over SSH; leaf1's REST API gives none). leaf2's table is listed whether or not a lab VM is
    cabled into it while the scenario runs (the rdma scenario boots one beside it): the idempotence run's report
    must not change because another server came up on the leaf."""
    with open("/var/tmp/roce-fabric-validation/report.json") as handle:
        report = json.load(handle)
    switches = report["location"]["switches"]
    assert switches["read"] == ["leaf1", "leaf2", "sw1", "sw2"] and switches["unread"] == {}, switches
    assert switches["lldp"] == ["leaf2"] and "lldp_unread" not in switches, switches
