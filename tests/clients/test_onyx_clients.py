"""NVIDIA's mellanox.onyx collection (from the 'ansible' 7 package) against the project's Onyx simulator.

mellanox.onyx was written against real switches: if the simulator answers its commands the way a switch does,
the modules configure what the lab's seeds configure, report no change on a second run, and read back what
roce.fabric.onyx_roce wrote (and the other way round)."""

import os

import pytest

from conftest import LAB, client_playbook

SEED_TASKS = ("VLAN 111", "Ports 1/1-1/4 MTU 9216", "Ports 1/1-1/4 access VLAN 111", "ECN on traffic class 3")
# What onyx_seed.yml configures, as roce.fabric.onyx_roce arguments.
SEED = dict(
    vlans=[dict(id=111, name="roce", access_ports=["1/1-1/4"])],
    ports=[dict(ports=["1/1-1/4"], mtu=9216, ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])],
)


def assert_seeded(state):
    running = state["running"]
    assert 111 in running["vlans"] or "111" in running["vlans"]
    for port in ("1/1", "1/2", "1/3", "1/4"):
        entry = running["ports"][port]
        assert entry["mtu"] == 9216 and entry["access_vlan"] == 111 and entry["switchport_mode"] == "access", (port, entry)
    assert running["ports"]["1/5"]["mtu"] == 1500


@pytest.mark.parametrize("switch", ["onyx36", "onyx39"], indirect=True)
def test_mellanox_onyx_configures_the_seed_then_changes_nothing(switch):
    first = client_playbook("onyx_seed.yml", switch.name)[switch.name]
    for task in SEED_TASKS:
        assert first[task].get("failed") is not True, (task, first[task])
        assert first[task]["changed"] is True, (task, first[task])
    facts = first["Facts"]["ansible_facts"]
    assert facts["ansible_net_version"]["Product release"] == switch.state()["version"]
    assert "Eth1/1" in facts["ansible_net_interfaces"]
    assert_seeded(switch.state())
    shown = "\n".join(first["Read back what the switch holds"]["stdout"])
    assert switch.state()["version"] in shown and "roce" in shown

    second = client_playbook("onyx_seed.yml", switch.name)[switch.name]
    for task in SEED_TASKS:
        assert second[task]["changed"] is False, (task, second[task])

    # Our module reads back what NVIDIA's modules wrote: nothing to do.
    ours = switch.module("roce.fabric.onyx_roce", SEED, check=True)
    assert ours.get("failed") is not True, ours
    assert ours["changed"] is False and ours["commands"] == [], ours["commands"]


@pytest.mark.parametrize("switch", ["onyx36", "onyx39"], indirect=True)
def test_mellanox_onyx_reads_back_what_onyx_roce_wrote(switch):
    ours = switch.module("roce.fabric.onyx_roce", dict(SEED, roce_mode="lossless"))
    assert ours.get("failed") is not True and ours["changed"] is True, ours.get("msg")
    before = switch.state()["running"]
    check = client_playbook("onyx_seed.yml", switch.name, check=True)[switch.name]
    for task in SEED_TASKS:
        assert check[task].get("failed") is not True, (task, check[task])
        assert check[task]["changed"] is False, (task, check[task])
    assert switch.state()["running"] == before


@pytest.mark.parametrize("switch", ["onyx310"], indirect=True)
def test_mellanox_onyx_on_3_10_fails_for_its_own_version_compare(switch):
    """mellanox.onyx compares releases as strings ('3.10.4006' < '3.6.6000'), so on Onyx 3.10 it reads the
    JSON of 'show vlan | json-print' with the layout of releases before 3.6.6000 and fails. This is the
    collection's defect, not the simulator's: the same switch answers onyx_facts and onyx_command, and the
    same modules work on 3.6 and 3.9 above. Left out of the fidelity claims; kept here as the evidence."""
    result = client_playbook("onyx_seed.yml", switch.name)[switch.name]
    facts = result["Facts"]
    assert facts.get("failed") is True and "KeyError: 'Mac address'" in facts.get("exception", ""), facts
    vlan = result["VLAN 111"]
    assert vlan.get("failed") is True
    assert "'list' object has no attribute 'get'" in vlan.get("module_stderr", "") + vlan.get("msg", "")
    assert switch.state()["running"]["ports"]["1/1"]["mtu"] == 1500, "nothing was configured"


def test_the_switch_simulators_take_their_password_from_a_file(switches):
    """ps shows a process's argv to any local user: no password there, a file only root reads instead."""
    for name in switches:
        argv = LAB.command_line(name)
        assert "--password" not in argv, argv
        secret = argv[argv.index("--password-file") + 1]
        assert oct(os.stat(secret).st_mode & 0o777) == "0o600"
