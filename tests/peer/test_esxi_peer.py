"""esxi_kernel_setting, vmx_passthru and the esxi_ats role against real peers: the vSphere API
simulator (vc1) over SOAP and the ESXi shell (esxi1, esxi2) over SSH.

Every bad input is checked to fail clearly AND to leave the simulator's state, read from outside
(vcsim's /roce/state, the ESXi shell's state.json), exactly as it was.
"""

import json
import os

import pytest

from conftest import INVENTORY, LAB, REPO, labctl, run_module

VC_PORT = 8989


class Vcenter(object):
    """vc1: state read through the simulator's own state endpoint; pyVmomi for direct API reads."""

    name = "vc1"
    port = VC_PORT

    def state(self):
        return LAB.state(self.name)

    def host(self, name):
        return self.state()["hosts"][name]

    def vm(self, name):
        return self.state()["vms"][name]

    def calls(self):
        return self.state()["calls"]

    def reset_calls(self):
        LAB.reset_calls(self.name)

    def reset(self):
        labctl("reset", self.name)

    def connect(self):
        from pyVim.connect import SmartConnect
        return SmartConnect(host="127.0.0.1", port=self.port, user="user", pwd="vc1-Lab-secret", disableSslCertValidation=True)


class EsxiShell(object):
    def __init__(self, name):
        self.name = name

    def state(self):
        return LAB.state(self.name)

    def setting(self, name):
        return self.state()["settings"][name]

    def calls(self):
        return LAB.calls(self.name)

    def mutating_calls(self):
        return [c for c in self.calls() if c["mutating"]]

    def reset(self):
        labctl("reset", self.name)

    def module(self, name, args, check=False, diff=False):
        return run_module(INVENTORY, self.name, name, args, check=check, diff=diff)


@pytest.fixture(scope="module")
def vcenter():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    labctl("up", "vc1")
    yield Vcenter()
    labctl("down", "vc1")


@pytest.fixture
def vc(vcenter):
    vcenter.reset()
    return vcenter


@pytest.fixture(scope="module")
def shells():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    labctl("up", "esxi1", "esxi2")
    yield dict((n, EsxiShell(n)) for n in ("esxi1", "esxi2"))
    labctl("down", "esxi1", "esxi2")


@pytest.fixture
def esxi1(shells):
    shells["esxi1"].reset()
    return shells["esxi1"]


# --- the simulators themselves ---------------------------------------------------------------------

def _wait(task):
    import time
    while task.info.state in ("queued", "running"):
        time.sleep(0.05)
    return task.info


def test_vcsim_boot_setting_is_pending_until_reboot_in_maintenance_mode(vc):
    from pyVmomi import vim
    si = vc.connect()
    host = si.content.searchIndex.FindByDnsName(dnsName="esx-a.lab", vmSearch=False)
    host = host or [h for h in si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.HostSystem], True).view
                    if h.name == "esx-a.lab"][0]
    host.configManager.advancedOption.UpdateOptions(
        changedValue=[vim.option.OptionValue(key="VMkernel.Boot.atsSupport", value=True)])
    state = vc.host("esx-a.lab")
    assert state["configured"]["VMkernel.Boot.atsSupport"] is True
    assert state["runtime"]["VMkernel.Boot.atsSupport"] is False and state["reboot_required"] is True
    info = _wait(host.RebootHost_Task(force=False))
    assert info.state == "error" and isinstance(info.error, vim.fault.InvalidState)
    assert vc.host("esx-a.lab")["reboots"] == 0
    assert vc.host("esx-b.lab")["configured"]["VMkernel.Boot.atsSupport"] is False


def test_vcsim_vms_carry_passthrough_devices_and_hosts_numa_nodes(vc):
    state = vc.state()
    assert state["vms"]["gpuvm-a1"]["passthrough"] == ["0000:17:00.0", "0000:31:00.0", "0000:3b:00.0"]
    assert state["vms"]["gpuvm-a1"]["host"] == "esx-a.lab"
    assert state["vms"]["gpuvm-b2"]["power_state"] == "poweredOff"


def test_esxi_shell_reboot_applies_configured(esxi1):
    import subprocess
    import time
    ssh = ["ssh", "-i", LAB.ssh_key(), "-o", "StrictHostKeyChecking=no",
           "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "root@10.78.1.2"]
    for cmd in (["esxcli", "system", "settings", "kernel", "set", "-s", "atsSupport", "-v", "TRUE"],
                ["esxcli", "system", "maintenanceMode", "set", "-e", "true"],
                ["esxcli", "system", "shutdown", "reboot", "-r", "test"]):
        subprocess.run(ssh + cmd, check=True, timeout=30)
    deadline = time.time() + 20
    while esxi1.state()["reboots"] == 0 and time.time() < deadline:
        time.sleep(0.2)
    assert esxi1.setting("atsSupport")["runtime"] == "TRUE"


# --- esxi_kernel_setting over the vSphere API ------------------------------------------------------

API = dict(hostname="127.0.0.1", port=VC_PORT, username="user", password="vc1-Lab-secret", validate_certs=False)
MUTATING = ("UpdateOptions", "ReconfigVM_Task", "PowerOffVM_Task", "PowerOnVM_Task", "RebootHost_Task",
            "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task")


def local(name, args, check=False, diff=False, extra_env=None):
    return run_module(INVENTORY, "localhost", name, args, check=check, diff=diff, extra_env=extra_env, connection="local")


def mutations(vc):
    return dict((k, v) for k, v in vc.calls().items() if k in MUTATING)


def inventory_state(vc):
    """What a bad input must leave alone: every host's settings, maintenance, reboots; every VM's keys and power."""
    state = vc.state()
    return dict(hosts=dict((n, dict(configured=h["configured"], runtime=h["runtime"], mm=h["maintenance_mode"],
                                    reboots=h["reboots"])) for n, h in state["hosts"].items()),
                vms=dict((n, dict(extra=v["extra_config"], power=v["power_state"])) for n, v in state["vms"].items()))


def test_kernel_setting_vsphere_change_then_no_change_then_check_mode(vc):
    args = dict(API, esxi_hostname="esx-a.lab", settings={"atsSupport": True})
    result = local("roce.fabric.esxi_kernel_setting", args, diff=True)
    assert result["changed"] and result["reboot_required"]
    assert result["hosts"]["esx-a.lab"]["settings"]["atsSupport"] == dict(type="bool", before="false", after="true", runtime=None)
    assert result["diff"]["after"] == {"esx-a.lab": {"atsSupport": "true"}}
    host = vc.host("esx-a.lab")
    assert host["configured"]["VMkernel.Boot.atsSupport"] is True and host["runtime"]["VMkernel.Boot.atsSupport"] is False
    assert vc.host("esx-b.lab")["configured"]["VMkernel.Boot.atsSupport"] is False
    vc.reset_calls()
    again = local("roce.fabric.esxi_kernel_setting", args)
    assert not again["changed"] and again["reboot_required"], "still pending until the host reboots"
    assert mutations(vc) == {}
    before = inventory_state(vc)
    check = local("roce.fabric.esxi_kernel_setting", dict(API, esxi_hostname="esx-b.lab", settings={"atsSupport": "TRUE"}), check=True)
    assert check["changed"] and check["hosts"]["esx-b.lab"]["changed"]
    assert inventory_state(vc) == before and mutations(vc) == {}


def test_kernel_setting_vsphere_whole_cluster_and_prefixed_name(vc):
    result = local("roce.fabric.esxi_kernel_setting", dict(API, cluster_name="DC0_C0", settings={"VMkernel.Boot.maxPCPUS": "0x100"}))
    assert sorted(result["hosts"]) == ["esx-a.lab", "esx-b.lab"] and result["changed"]
    assert all(h["configured"]["VMkernel.Boot.maxPCPUS"] == 256 for h in vc.state()["hosts"].values())


@pytest.mark.parametrize("args, message", [
    (dict(esxi_hostname="esx-a.lab", settings={"atsSuport": True}), "has no kernel setting 'atsSuport'"),
    (dict(esxi_hostname="esx-a.lab", settings={"atsSupport": "maybe"}), "'maybe' is not a boolean"),
    (dict(esxi_hostname="esx-a.lab", settings={"atsSupport": True, "maxPCPUS": "many"}), "'many' is not an integer"),
    (dict(esxi_hostname="esx-z.lab", settings={"atsSupport": True}), "ESXi host 'esx-z.lab' not found"),
    (dict(cluster_name="nope", settings={"atsSupport": True}), "cluster 'nope' not found"),
    (dict(esxi_hostname="esx-a.lab", settings={"atsSupport": True}, password="not-the-Secret-42"), "login to 127.0.0.1:8989 failed"),
    (dict(esxi_hostname="esx-a.lab", settings={"atsSupport": True}, validate_certs=True), "certificate could not be verified"),
    # Hardening: an empty or missing host name used to select every host of the vCenter.
    (dict(esxi_hostname="", settings={"atsSupport": True}), "an empty name would select every host of the vCenter"),
    (dict(settings={"atsSupport": True}), "Name the ESXi host (esxi_hostname) or its cluster"),
])
def test_kernel_setting_vsphere_bad_input_changes_nothing(vc, args, message):
    before = inventory_state(vc)
    vc.reset_calls()
    result = local("roce.fabric.esxi_kernel_setting", dict(API, **args))
    assert result.get("failed") and message in result["msg"], result.get("msg")
    assert "vc1-Lab-secret" not in json.dumps(result)
    assert inventory_state(vc) == before and mutations(vc) == {}


def test_kernel_setting_vsphere_credentials_from_environment(vc):
    env = dict(VMWARE_HOST="127.0.0.1", VMWARE_PORT=str(VC_PORT), VMWARE_USER="user", VMWARE_PASSWORD="vc1-Lab-secret",
               VMWARE_VALIDATE_CERTS="false")
    result = local("roce.fabric.esxi_kernel_setting", dict(esxi_hostname="esx-b.lab", settings={"atsSupport": False}), extra_env=env)
    assert not result.get("failed"), result.get("msg")
    assert not result["changed"] and not result["reboot_required"]


# --- esxi_kernel_setting over SSH (esxcli) ---------------------------------------------------------

def test_kernel_setting_ssh_change_then_no_change_then_check_mode(esxi1, shells):
    result = esxi1.module("roce.fabric.esxi_kernel_setting", dict(transport="ssh", settings={"atsSupport": True}), diff=True)
    assert result["changed"] and result["reboot_required"]
    assert result["commands"] == ["esxcli system settings kernel set -s atsSupport -v TRUE"]
    assert (esxi1.setting("atsSupport")["configured"], esxi1.setting("atsSupport")["runtime"]) == ("TRUE", "FALSE")
    assert len(esxi1.mutating_calls()) == 1
    again = esxi1.module("roce.fabric.esxi_kernel_setting", dict(transport="ssh", settings={"atsSupport": "true"}))
    assert not again["changed"] and again["reboot_required"]
    assert list(again["hosts"].values())[0]["settings"]["atsSupport"]["runtime"] == "FALSE"
    assert len(esxi1.mutating_calls()) == 1
    check = esxi1.module("roce.fabric.esxi_kernel_setting", dict(transport="ssh", settings={"vga": False}), check=True)
    assert check["changed"] and check["commands"] == ["esxcli system settings kernel set -s vga -v FALSE"]
    assert esxi1.setting("vga")["configured"] == "TRUE" and len(esxi1.mutating_calls()) == 1
    other = shells["esxi2"]
    assert other.setting("atsSupport")["configured"] == "FALSE"


@pytest.mark.parametrize("settings, message", [
    ({"atsSuport": True}, "no kernel setting 'atsSuport'"),
    ({"atsSupport": "maybe"}, "'maybe' is not a boolean"),
    ({"atsSupport": True, "maxPCPUS": -4}, "is negative"),
])
def test_kernel_setting_ssh_bad_input_changes_nothing(esxi1, settings, message):
    before = esxi1.state()
    result = esxi1.module("roce.fabric.esxi_kernel_setting", dict(transport="ssh", settings=settings))
    assert result.get("failed") and message in result["msg"], result.get("msg")
    assert esxi1.state() == before and esxi1.mutating_calls() == []


# --- vmx_passthru ----------------------------------------------------------------------------------

P2P = dict(allow_p2p=True, relax_acs_for_p2p=True, use_64bit_mmio=True, mmio_size_gb=512, numa_node_affinity="auto")


def test_vmx_passthru_change_then_no_change_then_check_mode(vc):
    args = dict(API, name="gpuvm-a1", devices=[dict(index=0, gpu_pci_id="17:00.0"), dict(index=1, gpu_pci_id="0000:31:00.0")], **P2P)
    result = local("roce.fabric.vmx_passthru", args, diff=True)
    assert result["changed"] and result["power_cycle_required"] and not result["power_cycled"]
    extra = vc.vm("gpuvm-a1")["extra_config"]
    assert extra["pciPassthru.allowP2P"] == "true" and extra["pciPassthru.RelaxACSforP2P"] == "true"
    assert extra["pciPassthru0.cfg.gpu-pci-id"] == "0000:17:00.0" and extra["numa.nodeAffinity"] == "0"
    assert extra["pciPassthru.64bitMMIOSizeGB"] == "512"
    assert result["numa_nodes"] == {"0000:17:00.0": 0, "0000:31:00.0": 0, "0000:3b:00.0": 0}
    vc.reset_calls()
    again = local("roce.fabric.vmx_passthru", args)
    assert not again["changed"] and not again["power_cycle_required"] and mutations(vc) == {}
    before = inventory_state(vc)
    check = local("roce.fabric.vmx_passthru", dict(API, name="gpuvm-b1", **P2P), check=True)
    assert check["changed"] and inventory_state(vc) == before and mutations(vc) == {}


def test_vmx_passthru_numa_mismatch_warns_and_uses_the_gpu_node(vc):
    result = local("roce.fabric.vmx_passthru", dict(API, name="gpuvm-a2", numa_node_affinity="auto"))
    assert vc.vm("gpuvm-a2")["extra_config"]["numa.nodeAffinity"] == "1"
    assert any("NUMA node 1 and NIC 0000:3b:00.0 on node 0" in w for w in result.get("warnings", []))


def test_vmx_passthru_by_uuid_remove_keys_and_power_cycle(vc):
    uuid = vc.vm("gpuvm-b1")["uuid"]
    local("roce.fabric.vmx_passthru", dict(API, uuid=uuid, allow_p2p=True, extra_config={"pciPassthru.msiEnabled": "FALSE"}))
    vc.reset_calls()
    result = local("roce.fabric.vmx_passthru", dict(API, uuid=uuid, remove_keys=["pciPassthru.allowP2P"],
                                                    extra_config={"pciPassthru.msiEnabled": ""}, power_cycle=True))
    assert result["changed"] and result["power_cycled"] and not result["power_cycle_required"]
    assert result["changes"]["pciPassthru.allowP2P"] == dict(before="true", after=None)
    # Gone from the raw list, not only empty: vCenter removes a key set to "".
    keys = [entry["key"] for entry in vc.vm("gpuvm-b1")["extra_config_entries"]]
    assert "pciPassthru.allowP2P" not in keys and "pciPassthru.msiEnabled" not in keys, keys
    assert vc.calls().get("PowerOffVM_Task") == 1 and vc.calls().get("PowerOnVM_Task") == 1
    assert vc.vm("gpuvm-b1")["power_state"] == "poweredOn"


def test_vmx_passthru_powered_off_vm_needs_no_power_cycle(vc):
    result = local("roce.fabric.vmx_passthru", dict(API, name="gpuvm-b2", folder="/DC0/vm", **P2P))
    assert result["changed"] and not result["power_cycle_required"]
    assert vc.vm("gpuvm-b2")["extra_config"]["numa.nodeAffinity"] == "1"


@pytest.mark.parametrize("args, message", [
    (dict(name="gpuvm-a1", devices=[dict(index=0, gpu_pci_id="0000:17:00.9")]), "is not a PCI address"),
    (dict(name="gpuvm-a1", devices=[dict(index=0, gpu_pci_id="gpu0")]), "is not a PCI address"),
    (dict(name="gpuvm-a1", devices=[dict(index=0, gpu_pci_id="0000:b1:00.0")]), "is not a passthrough device of this VM"),
    (dict(name="gpuvm-a1", devices=[dict(index=5, gpu_pci_id="0000:17:00.0")]), "index 5, but the VM has 3"),
    (dict(name="gpuvm-zz", allow_p2p=True), "no VM named 'gpuvm-zz'"),
    (dict(name="gpuvm-a1", folder="/DC0/vm/elsewhere", allow_p2p=True), "in folder '/DC0/vm/elsewhere'"),
    (dict(uuid="00000000-0000-0000-0000-000000000000", allow_p2p=True), "no VM with UUID"),
    (dict(name="gpuvm-a1", mmio_size_gb=100), "power of two"),
    (dict(name="gpuvm-a1", numa_node_affinity="first"), "numa_node_affinity must be"),
    (dict(name="gpuvm-a1", allow_p2p=True, password="not-the-Secret-42"), "login to 127.0.0.1:8989 failed"),
    (dict(name="gpuvm-a1", allow_p2p=True, validate_certs=True), "certificate could not be verified"),
])
def test_vmx_passthru_bad_input_changes_nothing(vc, args, message):
    before = inventory_state(vc)
    vc.reset_calls()
    result = local("roce.fabric.vmx_passthru", dict(API, **args))
    assert result.get("failed") and message in result["msg"], result.get("msg")
    assert inventory_state(vc) == before and mutations(vc) == {}


# --- the esxi_ats role (playbooks/esxi_ats.yml) ----------------------------------------------------

# The role's reboot records (esxi_ats_record_dir) of these tests, apart from the user's own.
RECORDS = os.path.join(os.environ.get("TMPDIR", "/tmp"), "roce-fabric-test-esxi-ats-records-%d" % os.getpid())


def playbook(extra_vars=None, check=False):
    import subprocess
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "esxi_ats.yml"),
            "-e", json.dumps(dict(dict(esxi_ats_record_dir=RECORDS), **(extra_vars or {})))]
    if check:
        argv.append("--check")
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)


def test_host_info_names_the_running_vms_a_reboot_would_stop(vc):
    info = local("roce.fabric.esxi_host_info", dict(API, esxi_hostname="esx-a.lab"))
    assert info.get("failed") is not True, info
    host = info["hosts"]["esx-a.lab"]
    powered = sorted(name for name, vm in vc.state()["vms"].items()
                     if vm["power_state"] == "poweredOn" and name in [v["name"] for v in host["vms"]])
    assert host["running_vms"] == powered == ["gpuvm-a1", "gpuvm-a2"]


def test_role_refuses_maintenance_with_running_vms_and_changes_nothing(vc):
    before = inventory_state(vc)
    vc.reset_calls()
    run = playbook(dict(esxi_ats_power_off_vms=False))
    assert run.returncode != 0
    assert "esx-a.lab must reboot for atsSupport, but VMs run on it: gpuvm-a1, gpuvm-a2" in run.stdout
    assert "Nothing was changed" in run.stdout
    assert inventory_state(vc) == before and mutations(vc) == {}


@pytest.mark.parametrize("extra", [
    dict(esxi_ats_reboot_poll_interval=0),  # was a division by zero after the reboot was issued
    dict(esxi_ats_reboot_timeout=5, esxi_ats_reboot_poll_interval=10),
    dict(esxi_ats_host_name=""),  # an empty name must not mean "every host of the vCenter"
])
def test_role_refuses_bad_reboot_polling_and_an_empty_host_name_before_any_change(vc, extra):
    """Hardening: values that used to fail only after the host was in maintenance mode and rebooting."""
    before = inventory_state(vc)
    vc.reset_calls()
    run = playbook(extra)
    assert run.returncode != 0 and "nothing was changed" in run.stdout, run.stdout[-2000:]
    assert inventory_state(vc) == before and mutations(vc) == {}


def test_role_host_not_coming_back_fails_clearly_and_leaves_other_hosts_alone(vc):
    LAB.fault(vc.name, reboot_hang="esx-a.lab")
    run = playbook(dict(esxi_ats_reboot_timeout=4, esxi_ats_reboot_poll_interval=1))
    assert run.returncode != 0
    assert "esx-a.lab did not come back within 4 s after its reboot (connection state: notResponding)" in run.stdout
    a, b = vc.host("esx-a.lab"), vc.host("esx-b.lab")
    assert a["maintenance_mode"] and a["connection_state"] == "notResponding"
    assert b["reboots"] == 0 and not b["maintenance_mode"] and b["configured"]["VMkernel.Boot.atsSupport"] is False
    assert vc.vm("gpuvm-b1")["power_state"] == "poweredOn" and vc.vm("gpuvm-b1")["extra_config"].get("pciPassthru.allowP2P") is None


def test_role_rolls_one_host_at_a_time_then_is_idempotent(vc):
    run = playbook()
    assert run.returncode == 0, run.stdout[-3000:]
    state = vc.state()
    log = state["reboot_log"]
    assert [r["host"] for r in log] == ["esx-a.lab", "esx-b.lab"]
    assert log[0]["back"] and log[0]["back"] < log[1]["started"], "esx-b went down before esx-a was back"
    for host in state["hosts"].values():
        assert host["runtime"]["VMkernel.Boot.atsSupport"] is True and not host["maintenance_mode"] and host["reboots"] == 1
    assert state["vms"]["gpuvm-a1"]["power_state"] == "poweredOn"
    assert state["vms"]["gpuvm-b2"]["power_state"] == "poweredOff", "a VM that was off stays off"
    assert state["vms"]["gpuvm-a2"]["extra_config"]["numa.nodeAffinity"] == "1"
    vc.reset_calls()
    again = playbook()
    assert again.returncode == 0 and "changed=0" in again.stdout
    check = playbook(check=True)
    assert check.returncode == 0 and "changed=0" in check.stdout
    assert mutations(vc) == {}


@pytest.fixture
def silent_peer():
    """A TCP peer that accepts connections and never answers: a vCenter wedged behind its load balancer."""
    import socket
    import threading
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("name, args", [
    ("roce.fabric.esxi_kernel_setting", dict(esxi_hostname="esx-a.lab", settings={"atsSupport": True})),
    ("roce.fabric.vmx_passthru", dict(name="gpuvm-b1", allow_p2p=True)),
    ("roce.fabric.esxi_host_info", dict()),
])
def test_vsphere_peer_that_never_answers_fails_at_the_timeout(silent_peer, name, args):
    """Issue 15 (7): pyVmomi connected with no timeout, so a peer that accepts and never answers hung the play."""
    import time
    started = time.monotonic()
    result = local(name, dict(API, port=silent_peer, timeout=2, **args))
    elapsed = time.monotonic() - started
    assert result.get("failed") and "did not answer within 2 seconds" in result["msg"], result.get("msg")
    assert result["failure"] == "timeout" and elapsed < 30, elapsed
    assert "vc1-Lab-secret" not in json.dumps(result)


def test_role_a_reboot_flag_that_is_not_ours_reboots_once_not_every_run(vc, tmp_path):
    """Issue 15 (10): summary.rebootRequired held by something else (a staged update) made esxi_ats reboot the host,
    then fail its check with the host left in maintenance mode, and do the same on every run. Now the role keeps a
    record of its reboots: it does not reboot for a flag its own reboot left set, and without a record it reboots once
    (it cannot tell whose the flag is), puts the host back in service and reports the flag."""
    def run(record):
        proc = playbook(dict(esxi_ats_power_off_vms=True, esxi_ats_record_dir=str(tmp_path / record)))
        assert proc.returncode == 0, proc.stdout[-3000:]
        return proc.stdout

    run("first")
    a = vc.host("esx-a.lab")
    assert a["reboots"] == 1 and a["runtime"]["VMkernel.Boot.atsSupport"] is True and not a["reboot_required"]
    saved = json.loads((tmp_path / "first" / "esx-a.lab.json").read_text())
    # The record of roce.fabric.reboot_record: the settings are its subject, the boot time its boot.
    assert saved["subject"] == {"atsSupport": True} and saved["boot_id"], saved
    assert saved["reasons"] == ["summary.rebootRequired"]
    assert oct((tmp_path / "first" / "esx-a.lab.json").stat().st_mode & 0o777) == "0o600"
    # A staged update now holds esx-a's flag set; its settings are active.
    LAB.fault(vc.name, reboot_required_stuck="esx-a.lab")
    assert vc.host("esx-a.lab")["reboot_required"] is True
    # The role rebooted esx-a for these settings and it has not booted since: the flag is not for them.
    vc.reset_calls()
    out = run("first")
    assert "Not rebooting again" in out and "changed=0" in out, out[-3000:]
    assert vc.host("esx-a.lab")["reboots"] == 1 and mutations(vc) == {}
    # No record (settings made by hand, or records lost): one reboot, the host back in service, the flag reported.
    out = run("second")
    a = vc.host("esx-a.lab")
    assert a["reboots"] == 2 and not a["maintenance_mode"] and a["connection_state"] == "connected", a
    assert "esx-a.lab came back with its kernel settings active, and vSphere still says it needs a reboot" in out
    assert vc.vm("gpuvm-a1")["power_state"] == "poweredOn"
    # And not again.
    vc.reset_calls()
    out = run("second")
    assert "Not rebooting again" in out and "changed=0" in out, out[-3000:]
    a, b = vc.host("esx-a.lab"), vc.host("esx-b.lab")
    assert a["reboots"] == 2 and b["reboots"] == 1 and not a["maintenance_mode"] and a["reboot_required"] is True
    assert mutations(vc) == {}
