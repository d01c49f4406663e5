"""roce.fabric.mlxconfig against the ConnectX firmware simulator: over SSH on lab hosts (MFT mlxconfig on
gpu1, mstflint mstconfig on gpu2) and locally. Every case reads the simulator's state from outside."""

import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import FWSIM, run_module

MODULE = "roce.fabric.mlxconfig"
CX6DX = "0000:3b:00.0"
CX7 = "0000:86:00.0"
CX6 = "0000:5e:00.0"


def params_of(host, pci):
    return host.firmware()[pci]["params"]


def test_change_then_no_change_then_check_mode_changes_nothing(gpu1):
    wanted = dict(devices=["all"], params=dict(ATS_ENABLED=True, SRIOV_EN=True, NUM_OF_VFS=16))
    first = gpu1.module(MODULE, wanted, diff=True)
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["reboot_required"] is True
    assert first["diff"]["after"][CX6DX] == {"ATS_ENABLED": "True(1)", "SRIOV_EN": "True(1)", "NUM_OF_VFS": "16"}
    for pci in (CX6DX, CX7):
        state = params_of(gpu1, pci)
        assert (state["ATS_ENABLED"]["next"], state["SRIOV_EN"]["next"], state["NUM_OF_VFS"]["next"]) == (1, 1, 16)
        assert state["ATS_ENABLED"]["current"] == 0
    # One set call per device, with every change in it.
    sets = gpu1.mutating_calls()
    assert len(sets) == 2
    assert all(sorted(a for a in c["argv"] if "=" in a) == ["ATS_ENABLED=True", "NUM_OF_VFS=16", "SRIOV_EN=True"] for c in sets)

    before = gpu1.firmware()
    second = gpu1.module(MODULE, wanted)
    assert second["changed"] is False and second["commands"] == []
    assert second["reboot_required"] is True, "the change is pending until the host reboots"
    assert len(gpu1.mutating_calls()) == 2
    assert gpu1.firmware() == before

    check = gpu1.module(MODULE, dict(devices=["ens1f0np0"], params=dict(NUM_OF_VFS=4)), check=True, diff=True)
    assert check["changed"] is True
    assert check["commands"] == ["/usr/sbin/mlxconfig -d %s -y set NUM_OF_VFS=4" % CX6DX]
    assert check["diff"] == {"before": {CX6DX: {"NUM_OF_VFS": "16"}}, "after": {CX6DX: {"NUM_OF_VFS": "4"}}}
    assert len(gpu1.mutating_calls()) == 2
    assert gpu1.firmware() == before


def test_reboot_loads_pending_values(gpu1):
    gpu1.module(MODULE, dict(devices=["ens2np0"], params=dict(ATS_ENABLED=True)))
    reboot = gpu1.module("ansible.builtin.reboot", dict(reboot_timeout=120))
    assert reboot.get("rebooted") is True, reboot
    assert gpu1.reboots() == 1
    assert params_of(gpu1, CX7)["ATS_ENABLED"] == dict(default=0, current=1, next=1)
    after = gpu1.module(MODULE, dict(devices=["ens2np0"], params=dict(ATS_ENABLED=True)))
    assert after["changed"] is False and after["reboot_required"] is False and after["reboot_type"] == "none"


def test_mstflint_host_enum_array_and_netdev(gpu2):
    result = gpu2.module(MODULE, dict(devices=["ens3f1np1"], params={
        "LINK_TYPE_P1": "eth", "LINK_TYPE_P2": 1, "ESWITCH_HAIRPIN_DESCRIPTORS[2]": 64}))
    assert result.get("failed") is not True, result
    assert result["tool"]["kind"] == "mstconfig"
    # Both ports are functions of one adapter: its settings belong to the adapter, keyed by its first function.
    assert list(result["devices"]) == [CX6]
    assert result["devices"][CX6]["selectors"] == ["ens3f1np1"]
    state = params_of(gpu2, CX6)
    assert state["LINK_TYPE_P2"]["next"] == 1
    assert state["ESWITCH_HAIRPIN_DESCRIPTORS"]["next"][2] == 64
    again = gpu2.module(MODULE, dict(devices=["ens3f0np0"], params={
        "LINK_TYPE_P1": "ETH", "LINK_TYPE_P2": "IB", "ESWITCH_HAIRPIN_DESCRIPTORS[2]": "0x40"}))
    assert again["changed"] is False


def test_reset_to_defaults(gpu2):
    gpu2.module(MODULE, dict(devices=["all"], params=dict(SRIOV_EN=True, NUM_OF_VFS=4)))
    one = gpu2.module(MODULE, dict(devices=["all"], state="reset", params=dict(NUM_OF_VFS=None)))
    assert one["changed"] is True
    state = params_of(gpu2, CX6)
    assert state["NUM_OF_VFS"]["next"] == state["NUM_OF_VFS"]["default"] and state["SRIOV_EN"]["next"] == 1
    whole = gpu2.module(MODULE, dict(devices=["all"], state="reset"))
    assert whole["changed"] is True and whole["commands"] == ["/usr/sbin/mstconfig -d %s -y reset" % CX6]
    assert all(p["next"] == p["default"] for p in params_of(gpu2, CX6).values())
    assert gpu2.module(MODULE, dict(devices=["all"], state="reset"))["changed"] is False


def test_power_cycle_is_reported_and_a_reboot_does_not_load_it(gpu1):
    gpu1.fw_admin("flag", "--pci", CX6DX, "reset_level=power_cycle")
    result = gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True)))
    assert result["reboot_type"] == "power_cycle"
    gpu1.module("ansible.builtin.reboot", dict(reboot_timeout=120))
    still = gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True)))
    assert still["changed"] is False and still["reboot_required"] is True


@pytest.mark.parametrize("host, args, message", [
    ("gpu1", dict(devices=["all"], params=dict(NO_SUCH_PARAM=1)), "Unknown Parameter"),
    ("gpu1", dict(devices=[CX6DX], params=dict(LINK_TYPE_P1="ETH")), "doesn't support LINK_TYPE_P1"),
    ("gpu1", dict(devices=[CX7], params=dict(SAFE_MODE_ENABLE=False)), "SAFE_MODE_ENABLE is read-only"),
    ("gpu2", dict(devices=[CX6], params=dict(NUM_VF_MSIX=4, SRIOV_EN=True)), "Read only"),
    ("gpu1", dict(devices=[CX6DX], params=dict(ROCE_CONTROL="ROCE_SOMETIMES", SRIOV_EN=True)), "Unknown value"),
    ("gpu1", dict(devices=[CX6DX], params=dict(NUM_OF_VFS=100000, SRIOV_EN=True)), "out of range"),
    ("gpu1", dict(devices=[CX6DX], params=dict(SRIOV_EN="maybe")), "is not a boolean"),
    ("gpu1", dict(devices=[CX6DX], params={"PCI_DOWNSTREAM_PORT_OWNER[16]": 1}), "out of range"),
    ("gpu1", dict(devices=["0000:3b:00.8"], params=dict(SRIOV_EN=True)), "is not a PCI address"),
    ("gpu1", dict(devices=["0000:d8:00.0"], params=dict(SRIOV_EN=True)), "does not exist on this host"),
    ("gpu1", dict(devices=["eth0"], params=dict(SRIOV_EN=True)), "is not backed by a PCI device"),
    ("gpu1", dict(devices=["ens7"], params=dict(SRIOV_EN=True)), "does not exist on this host"),
    ("gpu2", dict(devices=["all"], tool="mlxconfig", params=dict(SRIOV_EN=True)), "Cannot find mlxconfig"),
    ("gpu2", dict(devices=["/dev/mst/mt4123_pciconf0"], params=dict(SRIOV_EN=True)), "mstconfig takes PCI addresses"),
])
def test_bad_input_fails_clearly_and_changes_nothing(lab, host, args, message):
    peer = lab[host]
    peer.reset()
    before = peer.firmware()
    result = peer.module(MODULE, args)
    assert result.get("failed") is True, result
    assert message in result["msg"]
    assert peer.firmware() == before
    assert peer.mutating_calls() == []


def test_firmware_refusing_changes_nothing(gpu1):
    gpu1.fw_admin("flag", "--pci", CX7, "fail_set=Failed to write the configuration to the NVRAM")
    before = gpu1.firmware()
    result = gpu1.module(MODULE, dict(devices=[CX7], params=dict(SRIOV_EN=True)))
    assert result["failed"] is True and "was refused, nothing was changed" in result["msg"]
    assert "NVRAM" in result["msg"]
    assert gpu1.firmware() == before


def test_livefish_device(gpu1):
    gpu1.fw_admin("flag", "--pci", CX7, "livefish=true")
    result = gpu1.module(MODULE, dict(devices=["all"], params=dict(SRIOV_EN=True)))
    assert result["failed"] is True and "Livefish" in result["msg"]
    # The other adapter was not changed either: every device is read and planned before any is changed.
    assert gpu1.mutating_calls() == []


def test_locally_through_an_mst_path(tmp_path):
    """On the controller itself: MFT device path, tool_path, no sysfs lookup."""
    state = tmp_path / "fw"
    subprocess.run([sys.executable, FWSIM, "admin", "--state-dir", str(state), "init", "--model", "ConnectX7",
                    "--pci", "0000:17:00.0", "--mst", "/dev/mst/mt4129_pciconf0"], check=True, capture_output=True)
    tool = tmp_path / "mlxconfig"
    tool.write_text("#!/bin/sh\nexec %s %s --flavor mft \"$@\"\n" % (sys.executable, FWSIM))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    args = dict(devices=["/dev/mst/mt4129_pciconf0"], tool_path=str(tool), params=dict(ATS_ENABLED=True))
    env = dict(FWSIM_STATE_DIR=str(state))
    inventory = "localhost,"
    first = run_module(inventory, "localhost", MODULE, args, extra_env=env, connection="local")
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["tool"]["kind"] == "mlxconfig"
    with open(os.path.join(str(state), "devices", "0000:17:00.0.json")) as handle:
        assert json.load(handle)["params"]["ATS_ENABLED"]["next"] == 1
    second = run_module(inventory, "localhost", MODULE, args, extra_env=env, connection="local")
    assert second["changed"] is False
