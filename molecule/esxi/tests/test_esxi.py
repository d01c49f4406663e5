"""Verify esxi_ats on vc1 and esxi_kernel_setting over SSH: settings active, one reboot per host, hosts
rebooted one after the other, VM keys set, and the idempotence run changed nothing."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
from labcheck import LAB, scenario_hosts  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = scenario_hosts("esxi_ssh_hosts")


def vcsim():
    state = LAB.state("vc1")
    assert state is not None, "vc1 does not answer"
    return state


def test_vcenter_hosts_run_ats_after_one_reboot_each_in_turn(host):
    state = vcsim()
    for name, entry in state["hosts"].items():
        assert entry["runtime"]["VMkernel.Boot.atsSupport"] is True, name
        assert entry["reboots"] == 1 and not entry["maintenance_mode"], name
    log = state["reboot_log"]
    assert [r["host"] for r in log] == ["esx-a.lab", "esx-b.lab"]
    assert log[0]["back"] < log[1]["started"], "two hosts were down at once"


def test_gpu_vms_have_p2p_keys_numa_affinity_and_power_state_back(host):
    vms = vcsim()["vms"]
    for name, vm in vms.items():
        assert vm["extra_config"]["pciPassthru.allowP2P"] == "true", name
        assert vm["extra_config"]["pciPassthru.RelaxACSforP2P"] == "true", name
    assert [vms[n]["extra_config"]["numa.nodeAffinity"] for n in ("gpuvm-a1", "gpuvm-a2", "gpuvm-b1", "gpuvm-b2")] == ["0", "1", "0", "1"]
    assert vms["gpuvm-a1"]["power_state"] == "poweredOn" and vms["gpuvm-b2"]["power_state"] == "poweredOff"


def test_esxi_shell_configured_once_runtime_waits_for_reboot(host):
    out = host.check_output("esxcli system settings kernel list -o atsSupport")
    row = out.splitlines()[2].split()
    assert row[:4] == ["atsSupport", "Bool", "TRUE", "FALSE"]
    calls = LAB.calls(host.backend.get_hostname())
    mutating = [c["argv"] for c in calls if c["mutating"]]
    assert mutating == [["system", "settings", "kernel", "set", "-s", "atsSupport", "-v", "TRUE"]]
