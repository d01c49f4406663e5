"""esxi_kernel_setting, vmx_passthru and the esxi_ats role against real peers: the vSphere API
simulator (vc1) over SOAP and the ESXi shell (esxi1, esxi2) over SSH.

Every bad input is checked to fail clearly AND to leave the simulator's state, read from outside
(vcsim's /roce/state, the ESXi shell's state.json), exactly as it was.
"""

import json
import os
import ssl
import sys

import pytest

from conftest import INVENTORY, LAB_DIR, REPO, labctl, run_module

sys.path.insert(0, os.path.join(REPO, "tests", "lab"))
import peer_vcsim  # noqa: E402

VC_PORT = 8989


class Vcenter(object):
    """vc1: state read through the simulator's own state endpoint; pyVmomi for direct API reads."""

    name = "vc1"
    port = VC_PORT

    def state(self):
        return peer_vcsim.state(self.port)

    def host(self, name):
        return self.state()["hosts"][name]

    def vm(self, name):
        return self.state()["vms"][name]

    def calls(self):
        return self.state()["calls"]

    def reset_calls(self):
        peer_vcsim.reset_calls(self.port)

    def reset(self):
        labctl("reset", self.name)

    def connect(self):
        from pyVim.connect import SmartConnect
        return SmartConnect(host="127.0.0.1", port=self.port, user="user", pwd="vc1-Lab-secret", disableSslCertValidation=True)


class EsxiShell(object):
    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(LAB_DIR, "esxi", name)

    def state(self):
        with open(os.path.join(self.dir, "state.json")) as handle:
            return json.load(handle)

    def setting(self, name):
        return self.state()["settings"][name]

    def calls(self):
        path = os.path.join(self.dir, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

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
    ssh = ["ssh", "-i", os.path.join(LAB_DIR, "ssh", "id_ed25519"), "-o", "StrictHostKeyChecking=no",
           "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "root@10.78.1.2"]
    for cmd in (["esxcli", "system", "settings", "kernel", "set", "-s", "atsSupport", "-v", "TRUE"],
                ["esxcli", "system", "maintenanceMode", "set", "-e", "true"],
                ["esxcli", "system", "shutdown", "reboot", "-r", "test"]):
        subprocess.run(ssh + cmd, check=True, timeout=30)
    deadline = time.time() + 20
    while esxi1.state()["reboots"] == 0 and time.time() < deadline:
        time.sleep(0.2)
    assert esxi1.setting("atsSupport")["runtime"] == "TRUE"
