# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-tests of lab/esxi/esxcli_sim.py, the ESXi shell's esxcli stand-in.

Expected tables are in the layout ESXi prints for ``esxcli system settings kernel list`` (VMware's documented
Name/Type/Configured/Runtime/Default/Description table).
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.join(HERE, "esxcli_sim.py")
sys.path.insert(0, HERE)
import esxcli_sim  # noqa: E402

PCI = [{"address": "0000:3b:00.0", "vendor_id": "0x15b3", "device_id": "0x101d", "vendor_name": "Mellanox Technologies",
        "device_name": "MT2892 Family [ConnectX-6 Dx]", "class": "0x0200", "numa_node": 1, "vmkernel_name": "vmnic4"}]


@pytest.fixture
def host(tmp_path):
    with open(os.path.join(str(tmp_path), "state.json"), "w") as handle:
        json.dump(esxcli_sim.initial_state(PCI), handle)

    def esxcli(*args):
        return subprocess.run([sys.executable, SIM] + list(args), capture_output=True, text=True, check=False,
                              env=dict(os.environ, ESXCLI_SIM_STATE=str(tmp_path)), timeout=30)

    def state():
        with open(os.path.join(str(tmp_path), "state.json")) as handle:
            return json.load(handle)
    esxcli.state = state
    return esxcli


def test_kernel_list_one_setting_is_the_esxcli_table(host):
    out = host("system", "settings", "kernel", "list", "-o", "atsSupport")
    assert out.returncode == 0
    assert out.stdout == (
        "Name        Type  Configured  Runtime  Default  Description\n"
        "----------  ----  ----------  -------  -------  -----------\n"
        "atsSupport  Bool  FALSE       FALSE    FALSE    Enable Support for PCIe ATS\n")


sys.path.insert(0, os.path.join(HERE, "..", "common"))
import corpus  # noqa: E402  pylint: disable=wrong-import-position


def test_kernel_list_replays_the_real_esxi_8_sample(host):
    """The real ESXi 8.0 output of the corpus: vga set to FALSE, the host not yet rebooted."""
    real = corpus.body("esxcli", "kernel_list_vga.txt")
    assert host("system", "settings", "kernel", "set", "-s", "vga", "-v", "FALSE").returncode == 0
    out = host("system", "settings", "kernel", "list", "-o", "vga")
    assert out.returncode == 0
    assert out.stdout == real


def test_set_changes_configured_only_and_accepts_lowercase(host):
    assert host("system", "settings", "kernel", "set", "-s", "atsSupport", "-v", "true").returncode == 0
    setting = host.state()["settings"]["atsSupport"]
    assert (setting["configured"], setting["runtime"]) == ("TRUE", "FALSE")


@pytest.mark.parametrize("args, text", [
    (["-s", "atsSupprt", "-v", "TRUE"], "Unable to find option atsSupprt"),
    (["-s", "atsSupport", "-v", "maybe"], "Invalid value maybe for option atsSupport of type Bool"),
    (["-s", "maxPCPUS", "-v", "-1"], "Invalid value -1 for option maxPCPUS of type uint32"),
])
def test_bad_set_fails_and_changes_nothing(host, args, text):
    before = host.state()
    out = host("system", "settings", "kernel", "set", *args)
    assert out.returncode == 1 and text in out.stdout
    assert host.state() == before


def test_reboot_refused_outside_maintenance_mode(host):
    out = host("system", "shutdown", "reboot", "-r", "ats")
    assert out.returncode == 1 and "not in maintenance mode" in out.stdout
    assert host.state()["reboots"] == 0


def test_pci_list_shows_numa_node(host):
    out = host("hardware", "pci", "list").stdout
    assert out.startswith("0000:3b:00.0\n   Address: 0000:3b:00.0\n")
    assert "   NUMA Node: 1\n" in out and "   VMkernel Name: vmnic4\n" in out


def test_unknown_namespace(host):
    out = host("system", "nope")
    assert out.returncode == 1 and "Unknown command or namespace" in out.stderr
