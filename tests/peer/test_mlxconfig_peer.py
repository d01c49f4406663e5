"""roce.fabric.mlxconfig against the ConnectX firmware simulator: over SSH on lab hosts (MFT mlxconfig on
gpu1, mstflint mstconfig on gpu2) and locally. Every case reads the simulator's state from outside."""

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from conftest import FWSIM, INVENTORY, LAB, REPO, run_module

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
    """Hardening (issue 15 item 10): the tool asks for a power cycle only in the output of the set that made the
    change; a later run found the value pending and reported a warm reboot, which does not load it. The module's
    record on the host keeps the answer (also in check mode), until the value runs."""
    gpu1.fw_admin("flag", "--pci", CX6DX, "reset_level=power_cycle")
    result = gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True)))
    assert result["reboot_type"] == "power_cycle"
    gpu1.module("ansible.builtin.reboot", dict(reboot_timeout=120))
    still = gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True)))
    assert still["changed"] is False and still["reboot_required"] is True
    assert still["reboot_type"] == "power_cycle" and still["devices"][CX6DX]["reboot_type"] == "power_cycle", still
    check = gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True)), check=True)
    assert check["reboot_type"] == "power_cycle"
    record = LAB.exec("gpu1", ["stat", "-c", "%a %U", "/var/lib/roce-fabric/mlxconfig_power_cycle.json"])
    assert record.stdout.split() == ["600", "root"], record
    # Without the record the answer is lost again (what the option's "" gives).
    assert gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True), power_cycle_record=""))["reboot_type"] == "reboot"
    gpu1.fw_admin("power-cycle")
    done = gpu1.module(MODULE, dict(devices=[CX6DX], params=dict(SRIOV_EN=True)))
    assert done["reboot_required"] is False and done["reboot_type"] == "none"
    gone = LAB.exec("gpu1", ["test", "-e", "/var/lib/roce-fabric/mlxconfig_power_cycle.json"])
    assert gone.returncode == 1, "the record is removed once nothing waits for a power cycle"


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


def test_a_failure_on_the_second_device_reports_the_first_as_changed(gpu1):
    """Issue 15 (9): the first adapter is written, the second refuses. The failed result must say that something
    changed, which device holds a pending value, and the reboot it needs; the message must not say nothing changed."""
    gpu1.fw_admin("flag", "--pci", CX7, "fail_set=Failed to write the configuration to the NVRAM")
    result = gpu1.module(MODULE, dict(devices=["all"], params=dict(SRIOV_EN=True)))
    assert result["failed"] is True, result
    assert result["changed"] is True, result
    assert result["commands"] == ["/usr/sbin/mlxconfig -d %s -y set SRIOV_EN=True" % CX6DX], result["commands"]
    assert result["failed_command"] == "/usr/sbin/mlxconfig -d %s -y set SRIOV_EN=True" % CX7
    assert result["devices"][CX6DX]["changed"] is True and result["devices"][CX6DX]["reboot_required"] is True
    assert result["devices"][CX7]["changed"] is False and result["devices"][CX7]["failed"] is True
    assert result["reboot_required"] is True and result["reboot_type"] == "reboot"
    assert "nothing was changed" not in result["msg"]
    assert "already written: %s" % CX6DX in result["msg"], result["msg"]
    assert params_of(gpu1, CX6DX)["SRIOV_EN"]["next"] == 1
    assert params_of(gpu1, CX7)["SRIOV_EN"]["next"] == 0


def test_a_device_that_never_answers_is_stopped_at_command_timeout(gpu1):
    """Issue 15 (7): a query that hangs (the simulator's hang fault on the second adapter) is stopped after
    command_timeout; the module fails naming the command, changes nothing and leaves no tool process behind."""
    gpu1.fw_admin("flag", "--pci", CX7, "hang=900")
    before = gpu1.firmware()
    started = time.monotonic()
    result = gpu1.module(MODULE, dict(devices=["all"], params=dict(SRIOV_EN=True), command_timeout=3))
    elapsed = time.monotonic() - started
    assert result["failed"] is True and result["failure"] == "timeout", result
    assert "did not finish within 3 seconds" in result["msg"], result["msg"]
    assert result["failed_command"] == "/usr/sbin/mlxconfig -d %s -e query" % CX7
    assert elapsed < 45, elapsed
    assert gpu1.mutating_calls() == [] and gpu1.firmware() == before
    # The hung tool was stopped with its process group, not left waiting on the device.
    left = LAB.exec("gpu1", ["sh", "-c", "ps -eo args | grep -c '[f]wsim.py' || true"])
    assert left.stdout.strip() == "0", left.stdout
    bad = gpu1.module(MODULE, dict(devices=["all"], params=dict(SRIOV_EN=True), command_timeout=0))
    assert bad["failed"] is True and "command_timeout must be 1 to 86400 seconds" in bad["msg"]
    assert gpu1.mutating_calls() == []


def firmware_playbook(limit, *extra):
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "nic_firmware.yml"),
            "-e", "roce_firmware_hosts=%s" % limit] + list(extra)
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)


def test_firmware_that_needs_a_power_cycle_gets_no_warm_reboot(gpu1):
    """Hardening (issue 15 item 10): firmware that needs a power cycle. Every run rebooted the host (a warm reboot
    does not load it); then the first run still rebooted once. Now no run reboots for it: each names the adapters
    and fails its check until the host is power-cycled. Without the module's record (nic_firmware_power_cycle_record
    ""), host_reboot's record of its last reboot still allows only one."""
    for pci in (CX6DX, CX7):
        gpu1.fw_admin("flag", "--pci", pci, "reset_level=power_cycle")
    for attempt in (1, 2):
        run = firmware_playbook("gpu1")
        out = run.stdout
        assert run.returncode != 0 and "a warm reboot does not load it; power-cycle the host" in out, out[-3000:]
        assert "load only at a power cycle" in out and CX6DX in out and CX7 in out, out[-3000:]
        assert gpu1.reboots() == 0, "run %d rebooted the host for a change only a power cycle loads" % attempt
    # The operator power-cycles the host through its BMC: the values load and nothing reboots.
    gpu1.fw_admin("power-cycle")
    done = firmware_playbook("gpu1")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "ConnectX firmware values are running as wanted" in done.stdout
    assert gpu1.reboots() == 0

    # No record: the run that made the change knows (no reboot), the next one does not and reboots once, and
    # host_reboot's record keeps the run after it from rebooting again for the same pending values.
    gpu1.reset()
    for pci in (CX6DX, CX7):
        gpu1.fw_admin("flag", "--pci", pci, "reset_level=power_cycle")
    norecord = ("-e", "nic_firmware_power_cycle_record=")
    assert firmware_playbook("gpu1", *norecord).returncode != 0 and gpu1.reboots() == 0
    assert firmware_playbook("gpu1", *norecord).returncode != 0 and gpu1.reboots() == 1
    again = firmware_playbook("gpu1", *norecord)
    assert again.returncode != 0 and "Not rebooting again for what the reboot at" in again.stdout, again.stdout[-3000:]
    assert "A reboot already failed to load them" in again.stdout and gpu1.reboots() == 1

    # Issue 37, 10: a record cut short (the host lost power while it was written) stopped every later run with a
    # template error. It is no record now: one more reboot, with a warning, and the record is written whole again.
    record = LAB.artifact("gpu1", "reboot_record")
    with open(record) as handle:
        whole = handle.read()
    with open(record, "w") as handle:
        handle.write(whole[:len(whole) // 2])
    cut = firmware_playbook("gpu1", *norecord)
    said = cut.stdout + cut.stderr  # Ansible prints a module's warnings on stderr
    assert "the record is not JSON" in said and "counts as no record" in said, said[-3000:]
    assert "Traceback" not in said and "while templating" not in said and gpu1.reboots() == 2
    with open(record) as handle:
        assert json.load(handle)["reasons"], "the record was not written whole again"
    assert "Not rebooting again" in firmware_playbook("gpu1", *norecord).stdout and gpu1.reboots() == 2


def host_playbook(tmp_path, *args, playbook="host.yml"):
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", playbook),
            "-e", "roce_gpu_hosts=lab_netns_hosts", "-e", "roce_batch_guard_hosts=lab_netns_hosts"] + list(args)
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)


def test_a_rolling_batch_of_every_host_or_an_ignored_serial_is_refused_before_anything_changes(lab, tmp_path):
    """Issue 15 (11): host.yml rebooted whatever batch serial gave, all hosts at once with 100% or 0, and a
    roce_reboot_serial from group_vars was silently not used (Ansible reads the play keyword before inventory
    variables). Each is refused by the first play, before the firmware (which the lab hosts' variables change) is
    touched."""
    hosts = [lab["gpu1"], lab["gpu2"]]
    for host in hosts:
        host.reset()
    before = [host.firmware() for host in hosts]
    # The lab hosts' own variables (nic_firmware_settings) would change the firmware: the host play is not a no-op.
    group_vars = tmp_path / "site.yml"
    group_vars.write_text("all:\n  children:\n    lab_netns_hosts:\n      vars:\n        roce_reboot_serial: 2\n")
    cases = [
        (["-e", "roce_reboot_serial=2"], "roce_reboot_serial=\"2\" takes 2 of the play's 2 hosts down at once"),
        (["-e", "roce_reboot_serial=100%"], "roce_reboot_serial=\"100%\" takes 2 of the play's 2 hosts down at once"),
        (["-e", "roce_reboot_serial=0"], "roce_reboot_serial must be a number of hosts (1 or more)"),
        # Not a number at all: Ansible's own int() error stopped the run before the guard could say why.
        (["-e", "roce_reboot_serial=abc"], 'roce_reboot_serial must be a number of hosts (1 or more), a percentage (1% to 100%) or a list of them, not "abc"'),
        (["-e", '{"roce_reboot_serial": [1, "100%"]}'], "takes 2 of the play's 2 hosts down at once"),
        (["-i", str(group_vars)], "roce_reboot_serial is 2 for these hosts, but the play takes 1 at a time"),
    ]
    for args, message in cases:
        for playbook in ("host.yml", "nic_firmware.yml"):
            proc = host_playbook(tmp_path, *args, playbook=playbook)
            out = proc.stdout
            assert proc.returncode != 0 and message in out and "Nothing was changed." in out, (args, out[-3000:])
            assert "GPU node host stack" not in out and "ConnectX firmware settings" not in out, out[-3000:]
    for host, state in zip(hosts, before):
        assert host.mutating_calls() == [] and host.firmware() == state and host.reboots() == 0
    # The explicit opt-out takes the whole batch (the guard alone, so nothing else runs).
    proc = host_playbook(tmp_path, "-e", "roce_reboot_serial=2", "-e", "roce_allow_all_at_once=true",
                         playbook="batch_guard.yml")
    assert proc.returncode == 0, proc.stdout[-3000:]
