# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.sriov_vfs through main(): sysfs VF counts in a temporary tree, ``ip -j -d link show`` answered
with captured output of the lab VMs' igb adapter (fixtures/sriov), every ``ip link set`` recorded."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.module_utils.rdma import host as rdma_host
from ansible_collections.roce.fabric.plugins.modules import sriov_vfs
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module, untimed
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "sriov")
PF = "enp2s0"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


class FakeKernel(object):
    """sriov_totalvfs/sriov_numvfs as files; ip link show answers with a capture for the current VF count."""

    def __init__(self, tmp, total=7, current=0, links=None):
        self.dir = os.path.join(str(tmp), "class", "net", PF, "device")
        os.makedirs(self.dir)
        self.write("sriov_totalvfs", total)
        self.write("sriov_numvfs", current)
        self.links = links or {0: "ip_link_igb_no_vfs.json", 2: "ip_link_igb_2vfs.json"}
        self.set_calls = []
        self.count_writes = []

    def write(self, name, value):
        with open(os.path.join(self.dir, name), "w") as handle:
            handle.write("%d\n" % value)

    def numvfs(self):
        with open(os.path.join(self.dir, "sriov_numvfs")) as handle:
            return int(handle.read())

    def __call__(self, argv, **kwargs):
        argv = untimed(argv)
        assert kwargs.get("environ_update", {}).get("LC_ALL") == "C"
        if argv[1:4] == ["-j", "-d", "link"]:
            return 0, fixture(self.links[self.numvfs()]), ""
        if argv[1:3] == ["link", "set"]:
            self.set_calls.append(argv[1:])
            return 0, "", ""
        raise AssertionError("unexpected command %s" % argv)


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    fake = FakeKernel(tmp_path)
    install(monkeypatch, tmp_path, fake)
    return fake


def install(monkeypatch, tmp_path, fake):
    monkeypatch.setattr(rdma_host, "SYSFS", str(tmp_path))
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: "/usr/sbin/" + name)
    real_open = open

    def count_writes(path, mode="r", *args, **kwargs):
        if "w" in mode and path.endswith("sriov_numvfs"):
            handle = real_open(path, mode, *args, **kwargs)
            original = handle.write

            def write(text):
                fake.count_writes.append(int(text))
                return original(text)
            handle.write = write
            return handle
        return real_open(path, mode, *args, **kwargs)
    monkeypatch.setattr("builtins.open", count_writes)


def run(args, **kwargs):
    return run_module(sriov_vfs.main, dict(dict(netdev=PF), **args), **kwargs)


VF0 = dict(index=0, mac="02:00:00:00:00:01", trust=True, spoofchk=False, vlan=10)


def test_vfs_created_then_settings_of_vf0(kernel):
    result = run(dict(num_vfs=2, vfs=[VF0]), diff=True)
    assert result["failed"] is False and result["changed"] is True
    assert kernel.count_writes == [2] and kernel.numvfs() == 2, "a count from 0 is written directly"
    assert kernel.set_calls == [["link", "set", "dev", PF, "vf", "0", "mac", "02:00:00:00:00:01", "trust", "on",
                                 "spoofchk", "off", "vlan", "10"]]
    assert result["commands"][0].endswith("/class/net/enp2s0/device/sriov_numvfs: 2")
    assert result["num_vfs"] == dict(before=0, after=2) and result["total_vfs"] == 7
    assert result["removes_vfs"] is False, "a first count takes no VF away"
    assert result["diff"]["before"]["num_vfs"] == 0 and result["diff"]["after"]["vfs"]["0"]["vlan"] == 10


def test_converged_port_changes_nothing(tmp_path, monkeypatch):
    fake = FakeKernel(tmp_path, current=2, links={2: "ip_link_igb_2vfs_vf0_set.json"})
    install(monkeypatch, tmp_path, fake)
    result = run(dict(num_vfs=2, vfs=[VF0]), diff=True)
    assert result["changed"] is False and result["commands"] == []
    assert fake.count_writes == [] and fake.set_calls == []
    assert result["diff"] == dict(before={}, after={})
    assert result["vfs"]["0"] == dict(mac="02:00:00:00:00:01", trust=True, spoofchk=False, vlan=10)


def test_changed_count_goes_through_zero(tmp_path, monkeypatch):
    fake = FakeKernel(tmp_path, current=2, links={2: "ip_link_igb_2vfs.json", 4: "ip_link_igb_2vfs.json"})
    install(monkeypatch, tmp_path, fake)
    result = run(dict(num_vfs=4))
    assert fake.count_writes == [0, 4] and result["changed"] is True and len(result["commands"]) == 2
    assert result["removes_vfs"] is True


def test_check_mode_says_a_count_change_removes_the_vfs(tmp_path, monkeypatch):
    """What a rolling playbook plans with: a count change on a device with VFs is named before anything happens."""
    fake = FakeKernel(tmp_path, current=2, links={2: "ip_link_igb_2vfs.json"})
    install(monkeypatch, tmp_path, fake)
    result = run(dict(num_vfs=1), check_mode=True)
    assert result["changed"] is True and result["removes_vfs"] is True and fake.count_writes == []
    assert run(dict(num_vfs=2), check_mode=True)["removes_vfs"] is False


def test_check_mode_writes_nothing_and_names_every_change(kernel):
    result = run(dict(num_vfs=2, vfs=[VF0]), check_mode=True, diff=True)
    assert result["changed"] is True and kernel.count_writes == [] and kernel.set_calls == []
    assert kernel.numvfs() == 0
    assert result["commands"][1] == "/usr/sbin/ip link set dev enp2s0 vf 0 mac 02:00:00:00:00:01 trust on spoofchk off vlan 10"
    assert result["num_vfs"] == dict(before=0, after=2)


def test_only_the_differing_setting_is_sent(tmp_path, monkeypatch):
    fake = FakeKernel(tmp_path, current=2, links={2: "ip_link_igb_2vfs_vf0_set.json"})
    install(monkeypatch, tmp_path, fake)
    result = run(dict(num_vfs=2, vfs=[dict(VF0, vlan=20)]))
    assert fake.set_calls == [["link", "set", "dev", PF, "vf", "0", "vlan", "20"]] and result["changed"] is True


@pytest.mark.parametrize("args, message", [
    (dict(netdev="enp2s0;reboot", num_vfs=2), "is not an interface name"),
    (dict(num_vfs=2, vfs=[dict(index=2, trust=True)]), "VF 2 is outside 0..1"),
    (dict(num_vfs=2, vfs=[dict(index=0, mac="02:00:00:00:00:01\nvf 1")]), "is not a MAC address"),
    (dict(num_vfs=2, vfs=[dict(index=0, vlan=4095)]), "VLAN 4095 is outside 0-4094"),
    (dict(num_vfs=2, vfs=[dict(index=0), dict(index=0)]), "VF 0 is given twice"),
    (dict(num_vfs=-1), "num_vfs must not be negative"),
    (dict(num_vfs=8), "offers 7 VFs (sriov_totalvfs), 8 asked"),
])
def test_bad_input_changes_nothing(kernel, args, message):
    result = run(args)
    assert result["failed"] is True and message in result["msg"], result["msg"]
    assert kernel.count_writes == [] and kernel.set_calls == [] and kernel.numvfs() == 0


def test_waiting_for_the_firmware_changes_nothing(kernel):
    result = run(dict(num_vfs=8, wait_for_firmware=True))
    assert result["failed"] is False and result["pending"] is True and result["changed"] is False
    assert kernel.count_writes == [] and kernel.set_calls == [] and result["removes_vfs"] is False


def test_no_sriov_capability(tmp_path, monkeypatch):
    fake = FakeKernel(tmp_path)
    os.unlink(os.path.join(fake.dir, "sriov_totalvfs"))
    install(monkeypatch, tmp_path, fake)
    result = run(dict(num_vfs=2))
    assert result["failed"] is True and "has no SR-IOV capability" in result["msg"] and result["kind"] == "no_sriov"


def test_parse_vfs_of_the_capture():
    from ansible_collections.roce.fabric.plugins.module_utils.rdma import sriov
    vfs = sriov.parse_vfs(fixture("ip_link_igb_2vfs_vf0_set.json"))
    assert sorted(vfs) == [0, 1]
    assert vfs[0] == dict(mac="02:00:00:00:00:01", trust=True, spoofchk=False, vlan=10)
    assert vfs[1]["vlan"] == 0 and vfs[1]["trust"] is False
    assert sriov.parse_vfs(fixture("ip_link_igb_no_vfs.json")) == {}
    json.loads(fixture("ip_link_igb_2vfs.json"))
