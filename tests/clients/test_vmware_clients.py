"""community.vmware (from the 'ansible' package the project pins) against the lab's vCenter simulator (vc1).

community.vmware was written against real vCenters: it must read back what roce.fabric's modules wrote, and our
modules must read back what it wrote, through the same simulator."""

import os
import sys

import pytest

from conftest import REPO, run_module

sys.path.insert(0, os.path.join(REPO, "lab"))
import door  # noqa: E402  pylint: disable=wrong-import-position

LAB_INVENTORY = os.path.join(REPO, "inventories", "lab")
LAB = door.Lab(LAB_INVENTORY)
VC = dict(hostname="127.0.0.1", port=8989, username="user", password="vc1-Lab-secret", validate_certs=False)
P2P = dict(allow_p2p=True, relax_acs_for_p2p=True, use_64bit_mmio=True, mmio_size_gb=512)
P2P_KEYS = {"pciPassthru.allowP2P": "true", "pciPassthru.RelaxACSforP2P": "true", "pciPassthru.use64bitMMIO": "TRUE",
            "pciPassthru.64bitMMIOSizeGB": "512"}


def local(name, args, check=False):
    return run_module(LAB_INVENTORY, "localhost", name, args, check=check, connection="local")


@pytest.fixture(scope="module")
def vcenter():
    LAB.up("vc1")
    yield
    LAB.down("vc1")


@pytest.fixture
def vc(vcenter):
    LAB.reset("vc1")


def extra_config_entries(vm):
    """The VM's extraConfig as vmware_guest_info reads it: the raw list of (key, value), in order."""
    args = dict(VC, name=vm, datacenter="DC0", schema="vsphere", properties=["config.extraConfig"])
    info = local("community.vmware.vmware_guest_info", args)
    assert info.get("failed") is not True, info.get("msg")
    return [(item["key"], item["value"]) for item in info["instance"]["config"]["extraConfig"]]


def extra_config(vm):
    entries = extra_config_entries(vm)
    keys = [key for key, _value in entries]
    assert len(keys) == len(set(keys)), "a key listed twice in extraConfig: %s" % entries
    return dict(entries)


def lab_entries(vm):
    """The raw extraConfig list as the simulator holds it (the lab's state endpoint), not a dict of it."""
    return [(e["key"], e["value"]) for e in LAB.state("vc1")["vms"][vm]["extra_config_entries"]]


def mutating_calls():
    calls = LAB.state("vc1")["calls"]
    return dict((k, v) for k, v in calls.items() if k in ("ReconfigVM_Task", "PowerOffVM_Task", "PowerOnVM_Task"))


def advanced_settings(vm, settings, state="present", check=False):
    result = local("vmware.vmware.vm_advanced_settings", dict(VC, name=vm, settings=settings, state=state), check=check)
    assert result.get("failed") is not True, result.get("msg")
    return result


def test_vmware_guest_info_reads_the_keys_vmx_passthru_wrote(vc):
    ours = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-a1", **P2P))
    assert ours.get("failed") is not True and ours["changed"] is True, ours.get("msg")
    extra = extra_config("gpuvm-a1")
    for key, value in P2P_KEYS.items():
        assert extra.get(key, "").lower() == value.lower(), (key, extra.get(key))


def test_vmx_passthru_reads_back_what_vmware_guest_wrote(vc):
    written = local("community.vmware.vmware_guest", dict(
        VC, name="gpuvm-b2", datacenter="DC0", state="present",
        advanced_settings=[dict(key=key, value=value) for key, value in P2P_KEYS.items()]))
    assert written.get("failed") is not True, written.get("msg")
    assert written["changed"] is True
    ours = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-b2", **P2P), check=True)
    assert ours.get("failed") is not True, ours.get("msg")
    assert ours["changed"] is False, ours.get("diff")


def test_host_config_manager_reads_back_what_esxi_kernel_setting_wrote(vc):
    ours = local("roce.fabric.esxi_kernel_setting", dict(VC, esxi_hostname="esx-a.lab", settings={"atsSupport": True}))
    assert ours.get("failed") is not True and ours["changed"] is True, ours.get("msg")
    theirs = local("community.vmware.vmware_host_config_manager", dict(
        VC, esxi_hostname="esx-a.lab", options={"VMkernel.Boot.atsSupport": True}), check=True)
    assert theirs.get("failed") is not True, theirs.get("msg")
    assert theirs["changed"] is False, theirs.get("msg")
    info = local("community.vmware.vmware_host_config_info", dict(VC, esxi_hostname="esx-a.lab"))
    assert info["hosts_info"]["esx-a.lab"]["VMkernel.Boot.atsSupport"] is True


def test_esxi_kernel_setting_reads_back_what_host_config_manager_wrote(vc):
    theirs = local("community.vmware.vmware_host_config_manager", dict(
        VC, esxi_hostname="esx-b.lab", options={"VMkernel.Boot.atsSupport": True}))
    assert theirs.get("failed") is not True and theirs["changed"] is True, theirs.get("msg")
    ours = local("roce.fabric.esxi_kernel_setting", dict(VC, esxi_hostname="esx-b.lab", settings={"atsSupport": True}), check=True)
    assert ours.get("failed") is not True, ours.get("msg")
    assert ours["changed"] is False


def test_vmx_passthru_takes_keys_vmware_guest_wrote_as_TRUE_on_a_running_vm(vc):
    """VMX booleans are not case-sensitive: TRUE (VMware's spelling, kept by vmware_guest) is what vmx_passthru wants.
    With power_cycle: true, a wrong comparison would power-cycle a running GPU VM for nothing."""
    assert LAB.state("vc1")["vms"]["gpuvm-a1"]["power_state"] == "poweredOn"
    keys = {"pciPassthru.allowP2P": "TRUE", "pciPassthru.RelaxACSforP2P": "True", "pciPassthru.use64bitMMIO": "TRUE",
            "pciPassthru.64bitMMIOSizeGB": "512"}
    written = local("community.vmware.vmware_guest", dict(
        VC, name="gpuvm-a1", datacenter="DC0", state="present",
        advanced_settings=[dict(key=key, value=value) for key, value in keys.items()]))
    assert written.get("failed") is not True and written["changed"] is True, written.get("msg")
    LAB.reset_calls("vc1")
    ours = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-a1", power_cycle=True, **P2P))
    assert ours.get("failed") is not True, ours.get("msg")
    assert ours["changed"] is False and ours["changes"] == {}, ours["changes"]
    assert ours["power_cycle_required"] is False and ours["power_cycled"] is False
    assert mutating_calls() == {}
    assert [e for e in lab_entries("gpuvm-a1") if e[0] in keys] == list(keys.items())  # the user's spelling kept


def test_a_key_set_again_is_replaced_not_listed_twice(vc):
    """vCenter resets the value of a key that is there; vmx_passthru and vm_advanced_settings then read one entry."""
    ours = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-b1", allow_p2p=True))
    assert ours.get("failed") is not True and ours["changed"] is True, ours.get("msg")
    theirs = advanced_settings("gpuvm-b1", {"pciPassthru.allowP2P": "FALSE"})
    assert theirs["changed"] is True
    assert [e for e in lab_entries("gpuvm-b1") if e[0] == "pciPassthru.allowP2P"] == [("pciPassthru.allowP2P", "FALSE")]
    assert extra_config("gpuvm-b1")["pciPassthru.allowP2P"] == "FALSE"
    again = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-b1", allow_p2p=True), check=True)
    assert again["changed"] is True and again["changes"] == {"pciPassthru.allowP2P": dict(before="FALSE", after="true")}
    assert advanced_settings("gpuvm-b1", {"pciPassthru.allowP2P": "FALSE"}, check=True)["changed"] is False


def test_a_removal_leaves_no_entry_and_the_clients_agree(vc):
    """vmx_passthru removes keys with vCenter's empty value: nothing is left in the raw extraConfig, and
    vm_advanced_settings (state: absent) and vmware_guest_info agree that the keys are gone."""
    added = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-a2", allow_p2p=True,
                                                   extra_config={"pciPassthru.msiEnabled": "FALSE"}))
    assert added.get("failed") is not True and added["changed"] is True, added.get("msg")
    removed = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-a2", remove_keys=["pciPassthru.allowP2P"],
                                                     extra_config={"pciPassthru.msiEnabled": ""}))
    assert removed.get("failed") is not True and removed["changed"] is True, removed.get("msg")
    gone = ("pciPassthru.allowP2P", "pciPassthru.msiEnabled")
    assert [e for e in lab_entries("gpuvm-a2") if e[0] in gone] == []
    assert not [key for key in extra_config("gpuvm-a2") if key in gone]
    theirs = advanced_settings("gpuvm-a2", {"pciPassthru.allowP2P": "true", "pciPassthru.msiEnabled": ""}, state="absent")
    assert theirs["changed"] is False, theirs
    again = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-a2", remove_keys=list(gone)))
    assert again["changed"] is False
    # And the other way round: what vm_advanced_settings removes, vmx_passthru sees gone.
    advanced_settings("gpuvm-a2", {"pciPassthru.RelaxACSforP2P": "TRUE"})
    assert advanced_settings("gpuvm-a2", {"pciPassthru.RelaxACSforP2P": ""}, state="absent")["changed"] is True
    assert [e for e in lab_entries("gpuvm-a2") if e[0] == "pciPassthru.RelaxACSforP2P"] == []
    check = local("roce.fabric.vmx_passthru", dict(VC, name="gpuvm-a2", remove_keys=["pciPassthru.RelaxACSforP2P"]), check=True)
    assert check["changed"] is False


@pytest.mark.parametrize("host", ["esx-a.lab", "esx-b.lab"])
def test_vmware_host_facts_runs_on_every_lab_host(vc, host):
    """Real ESXi always has configManager.vsanSystem; vmware_host_facts queries it on every host."""
    facts = local("community.vmware.vmware_host_facts", dict(VC, esxi_hostname=host))
    assert facts.get("failed") is not True, facts.get("msg")
    ansible_facts = facts["ansible_facts"]
    assert ansible_facts["cluster"] is not None
    # A host outside any vSAN cluster, as the module documents one.
    assert (ansible_facts["vsan_cluster_uuid"], ansible_facts["vsan_node_uuid"], ansible_facts["vsan_health"]) == (
        None, None, "unknown")


def test_the_simulators_take_no_password_on_their_command_line(vc):
    """Any local user reads a process's argv (ps); the simulators read their passwords from a file only root reads."""
    argv = LAB.command_line("vc1")
    assert argv and "vc1-Lab-secret" not in " ".join(argv), argv
    secret = argv[argv.index("-password-file") + 1]
    assert oct(os.stat(secret).st_mode & 0o777) == "0o600"
