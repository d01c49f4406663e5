# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.mlxconfig driven through main() with captured tool output and a sysfs tree in a temp dir."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.module_utils.firmware import transport
from ansible_collections.roce.fabric.plugins.modules import mlxconfig
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "mlxconfig")
TOOL = "/usr/bin/mstconfig"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


class FakeTool(object):
    """Answers run_command like the tool would, from captured output, and records every call."""

    def __init__(self, query="query_cx4lx_mft_wide.txt", elements=None, set_output="set_cx6dx_roce_disable.txt",
                 set_rc=0, targeted=None, query_rc=0):
        self.query_text = fixture(query) if query else ""
        self.query_rc = query_rc
        self.elements_text = fixture(elements) if elements else None
        self.set_text = fixture(set_output) if set_output and set_output.endswith(".txt") else set_output
        self.set_rc = set_rc
        self.targeted = targeted or {}
        self.calls = []

    def __call__(self, argv, **kwargs):
        assert isinstance(argv, list), "commands must be argv lists"
        assert kwargs["environ_update"]["LC_ALL"] == "C"
        assert kwargs["expand_user_and_vars"] is False
        self.calls.append(argv)
        command = argv[argv.index("-d") + 2:]
        command = [c for c in command if c not in ("-e", "-y")]
        if command[0] == "query":
            names = command[1:]
            if names and all("[" in n for n in names) and self.elements_text:
                return 0, self.elements_text, ""
            if len(names) == 1 and names[0] in self.targeted:
                return 1, self.targeted[names[0]], ""
            return self.query_rc, self.query_text, ""
        return self.set_rc, self.set_text, ""

    @property
    def mutating(self):
        return [c for c in self.calls if "set" in c or "reset" in c]


def make_pci(root, address, vendor="0x15b3", netdev=None, physfn=None, pci_class="0x020000"):
    path = os.path.join(root, "sys", "bus", "pci", "devices", address)
    os.makedirs(os.path.join(path, "net"))
    for name, text in (("vendor", vendor), ("device", "0x1015"), ("class", pci_class), ("numa_node", "0")):
        with open(os.path.join(path, name), "w") as handle:
            handle.write(text + "\n")
    if netdev:
        os.makedirs(os.path.join(path, "net", netdev))
        net = os.path.join(root, "sys", "class", "net", netdev)
        os.makedirs(net)
        os.symlink(path, os.path.join(net, "device"))
    if physfn:
        os.symlink(os.path.join(root, "sys", "bus", "pci", "devices", physfn), os.path.join(path, "physfn"))


@pytest.fixture
def sysfs(tmp_path, monkeypatch):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "sys", "class", "net"))
    make_pci(root, "0000:19:00.0", netdev="ens1f0np0")
    make_pci(root, "0000:19:00.1", netdev="ens1f1np1")
    make_pci(root, "0000:19:00.2", physfn="0000:19:00.0")
    make_pci(root, "0000:af:00.0")
    make_pci(root, "0000:02:00.0", vendor="0x8086", netdev="eno1")
    make_pci(root, "0000:00:1f.0", vendor="0x15b3", pci_class="0x060400")
    os.makedirs(os.path.join(root, "sys", "class", "net", "bond0"))
    monkeypatch.setattr(transport.FirmwareTool, "SYSFS_ROOT", root)
    return root


@pytest.fixture
def tool(monkeypatch, sysfs):
    fake = FakeTool()
    install(monkeypatch, fake)
    return fake


def install(monkeypatch, fake):
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: TOOL if name == "mstconfig" else None)


RECORD = {}


@pytest.fixture(autouse=True)
def power_cycle_record(tmp_path):
    """Each test's own power cycle record (the default is the host's /var/lib/roce-fabric)."""
    RECORD["path"] = str(tmp_path / "roce-fabric" / "mlxconfig_power_cycle.json")
    return RECORD["path"]


def run(args, **kwargs):
    args = dict(args)
    args.setdefault("power_cycle_record", RECORD["path"])
    return run_module(mlxconfig.main, args, **kwargs)


# --- change, idempotence, check mode ---------------------------------------------------------------

def test_change_makes_one_set_call_with_every_change(tool):
    result = run(dict(devices=["19:00.0"], params=dict(NUM_PF_MSIX_VALID=False, LEGACY_BOOT_PROTOCOL="pxe", MEMIC_BAR_SIZE=0)), diff=True)
    assert result["failed"] is False and result["changed"] is True
    assert tool.mutating == [[TOOL, "-d", "0000:19:00.0", "-y", "set", "NUM_PF_MSIX_VALID=False", "LEGACY_BOOT_PROTOCOL=PXE"]]
    assert result["commands"] == ["/usr/bin/mstconfig -d 0000:19:00.0 -y set NUM_PF_MSIX_VALID=False LEGACY_BOOT_PROTOCOL=PXE"]
    assert result["reboot_required"] is True and result["reboot_type"] == "reboot"
    # The reboot's reason names the device and the values a warm reboot loads, in name order.
    assert result["reboot_reason"] == ("ConnectX firmware settings pending on 0000:19:00.0 (%s)" % ", ".join(
        "%s=%s" % (k, v) for k, v in sorted(result["devices"]["0000:19:00.0"]["pending"].items())))
    assert "LEGACY_BOOT_PROTOCOL=" in result["reboot_reason"]
    assert result["warm_reboot_required"] is True and result["power_cycle_devices"] == []
    assert result["diff"] == {
        "before": {"0000:19:00.0": {"NUM_PF_MSIX_VALID": "True(1)", "LEGACY_BOOT_PROTOCOL": "NONE(0)"}},
        "after": {"0000:19:00.0": {"NUM_PF_MSIX_VALID": "False(0)", "LEGACY_BOOT_PROTOCOL": "PXE(1)"}},
    }
    device = result["devices"]["0000:19:00.0"]
    assert device["device_type"] == "ConnectX4LX" and device["selectors"] == ["19:00.0"]
    assert device["changes"]["LEGACY_BOOT_PROTOCOL"] == {"before": "NONE(0)", "after": "PXE(1)"}
    assert tool.calls[0] == [TOOL, "-d", "0000:19:00.0", "-e", "query"]


def test_values_equal_to_next_boot_change_nothing_but_report_pending_reboot(tool):
    # NUM_OF_VFS: Next Boot 8, Current 0; SRIOV_EN True everywhere except Default.
    result = run(dict(devices=["0000:19:00.0"], params=dict(NUM_OF_VFS="8", SRIOV_EN="true")))
    assert result["changed"] is False
    assert tool.mutating == []
    assert result["commands"] == []
    assert result["reboot_required"] is True
    assert result["devices"]["0000:19:00.0"]["params"]["NUM_OF_VFS"] == dict(default="8", current="0", next_boot="8", read_only=False)


def test_converged_device_needs_nothing(tool):
    result = run(dict(devices=["ens1f0np0"], params=dict(SRIOV_EN=True, MEMIC_SIZE_LIMIT="_256kb", NUM_OF_PF=2)))
    assert result["changed"] is False and result["reboot_required"] is False and result["reboot_type"] == "none"
    assert tool.mutating == []


def test_check_mode_reports_the_change_and_runs_no_set(tool):
    result = run(dict(devices=["ens1f0np0"], params=dict(NUM_OF_VFS=16)), check_mode=True, diff=True)
    assert result["changed"] is True
    assert tool.mutating == []
    assert result["commands"] == ["/usr/bin/mstconfig -d 0000:19:00.0 -y set NUM_OF_VFS=16"]
    assert result["diff"]["after"] == {"0000:19:00.0": {"NUM_OF_VFS": "16"}}
    assert result["devices"]["0000:19:00.0"]["params"]["NUM_OF_VFS"]["next_boot"] == "16"


@pytest.mark.parametrize("query", ["query_cx4lx_uefi_x86_mft.txt", "query_cx5_mft411_next_boot.txt", "query_cx6dx_mstconfig_full.txt"])
def test_real_full_queries_with_lower_case_names(monkeypatch, sysfs, query):
    """Real queries of a ConnectX-4 Lx, a ConnectX-5 and a ConnectX-6 Dx list EXP_ROM_UEFI_x86_ENABLE: the module
    reads them, matches a wanted name in any case and sends the device's own spelling."""
    fake = FakeTool(query=query)
    install(monkeypatch, fake)
    current = "True(1)" if query.startswith("query_cx6dx") else "False(0)"
    result = run(dict(devices=["19:00.0"], params=dict(EXP_ROM_UEFI_X86_ENABLE=True)), check_mode=True, diff=True)
    assert result["failed"] is False, result
    if current == "True(1)":
        assert result["changed"] is False and fake.mutating == []
    else:
        assert result["changed"] is True
        assert result["commands"] == ["/usr/bin/mstconfig -d 0000:19:00.0 -y set EXP_ROM_UEFI_x86_ENABLE=True"]
        assert result["diff"]["before"] == {"0000:19:00.0": {"EXP_ROM_UEFI_X86_ENABLE": "False(0)"}}


def test_power_cycle_is_reported(monkeypatch, sysfs, power_cycle_record):
    fake = FakeTool(set_output="set_cx6dx_power_cycle.txt")
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params=dict(NUM_OF_VFS=4)))
    assert result["reboot_type"] == "power_cycle"
    assert result["devices"]["0000:19:00.0"]["reboot_type"] == "power_cycle"
    assert result["reboot_reason"] == ""  # a warm reboot would not load it: no reason for one
    assert result["warm_reboot_required"] is False and result["power_cycle_devices"] == ["0000:19:00.0"]
    pending = result["devices"]["0000:19:00.0"]["pending"]
    if pending:
        with open(power_cycle_record) as handle:
            assert json.load(handle) == {"0000:19:00.0": pending}
        assert oct(os.stat(power_cycle_record).st_mode & 0o777) == "0o600"


# --- device selection ------------------------------------------------------------------------------

def test_all_selects_one_physical_function_per_adapter(tool):
    result = run(dict(devices="all", params=dict(SRIOV_EN=True)))
    assert sorted(result["devices"]) == ["0000:19:00.0", "0000:af:00.0"]
    assert [c[2] for c in tool.calls] == ["0000:19:00.0", "0000:af:00.0"]


def test_selectors_of_the_same_function_are_merged(tool):
    # The second port (function .1) belongs to the same adapter and the same configuration.
    result = run(dict(devices=["ens1f0np0", "0000:19:00.0", "19:00.0", "ens1f1np1"], params=dict(SRIOV_EN=True)))
    assert list(result["devices"]) == ["0000:19:00.0"]
    assert result["devices"]["0000:19:00.0"]["selectors"] == ["ens1f0np0", "0000:19:00.0", "19:00.0", "ens1f1np1"]
    assert len(tool.calls) == 1


@pytest.mark.parametrize("device, message", [
    ("0000:19:00.9", "is not a PCI address"),
    ("19:20.0", "slot 0x20 is above 0x1f"),
    ("0000:77:00.0", "PCI device 0000:77:00.0 does not exist on this host"),
    ("ens9", "network interface 'ens9' does not exist"),
    ("bond0", "is not backed by a PCI device"),
    ("eno1", "is not an NVIDIA/Mellanox adapter (PCI vendor 0x8086)"),
    ("0000:19:00.2", "is a virtual function; firmware settings belong to its physical function 0000:19:00.0"),
    ("/dev/mst/mt4119_pciconf0", "mstconfig takes PCI addresses"),
    ("/etc/passwd", "is not a device"),
    ("/dev/mst/../../etc/passwd", "is not an MFT device path"),
    ("/dev/mst/mt4119_pciconf0 -y reset", "is not an MFT device path"),
    ("bad name!", "is not a valid network interface name"),
])
def test_bad_devices_fail_before_any_tool_call(tool, device, message):
    result = run(dict(devices=[device], params=dict(SRIOV_EN=True)))
    assert result["failed"] is True
    assert message in result["msg"]
    assert tool.calls == []


def test_all_cannot_be_combined(tool):
    result = run(dict(devices=["all", "19:00.0"], params=dict(SRIOV_EN=True)))
    assert result["failed"] and "'all' cannot be combined" in result["msg"]


def test_mst_path_is_passed_to_mlxconfig(monkeypatch, sysfs):
    fake = FakeTool()
    install(monkeypatch, fake)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: "/usr/bin/mlxconfig" if name == "mlxconfig" else None)
    result = run(dict(devices=["/dev/mst/mt4119_pciconf0"], params=dict(NUM_OF_VFS=2)))
    assert result["tool"] == {"path": "/usr/bin/mlxconfig", "kind": "mlxconfig"}
    assert fake.mutating == [["/usr/bin/mlxconfig", "-d", "/dev/mst/mt4119_pciconf0", "-y", "set", "NUM_OF_VFS=2"]]


# --- errors that change nothing --------------------------------------------------------------------

def test_tool_missing(monkeypatch, sysfs):
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: None)
    result = run(dict(devices=["19:00.0"], params=dict(SRIOV_EN=True)))
    assert result["failed"] and "Cannot find mlxconfig or mstconfig" in result["msg"] and result["category"] == "tool_missing"


def test_tool_path_must_be_executable(tool, tmp_path):
    result = run(dict(devices=["19:00.0"], params=dict(SRIOV_EN=True), tool_path=str(tmp_path / "nope")))
    assert result["failed"] and "is not an executable file" in result["msg"]


def test_unknown_and_unsupported_parameters_use_the_tools_words(monkeypatch, sysfs):
    fake = FakeTool(targeted={
        "FOO_BAR": "-E- Unknown Parameter: FOO_BAR\n",
        "ATS_ENABLED": "-E- The Device doesn't support ATS_ENABLED parameter\n",
    })
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params=dict(FOO_BAR=1, ATS_ENABLED=True, NUM_OF_VFS=2)))
    assert result["failed"] is True and result["category"] == "unknown_parameter"
    assert "Unknown Parameter: FOO_BAR" in result["msg"]
    assert "The Device doesn't support ATS_ENABLED parameter" in result["msg"]
    # The unsupported one names its cause: the firmware, by the version the RDMA driver reports when it is loaded.
    assert result["msg"].endswith("the firmware of %s does not offer ATS_ENABLED: update the adapter's firmware to a "
                                  "release that does (roce.fabric.nic_firmware_image pins and burns one), then run "
                                  "again" % "0R887V"), result["msg"]
    assert fake.mutating == []
    ib = os.path.join(sysfs, "sys", "bus", "pci", "devices", "0000:19:00.0", "infiniband", "mlx5_0")
    os.makedirs(ib)
    with open(os.path.join(ib, "fw_ver"), "w") as handle:
        handle.write("16.27.2008\n")
    result = run(dict(devices=["19:00.0"], params=dict(ATS_ENABLED=True)))
    assert "firmware 16.27.2008 of %s does not offer ATS_ENABLED" % "0R887V" in result["msg"], result["msg"]
    assert "FOO_BAR" not in result["msg"] and fake.mutating == []


def test_read_only_parameter(monkeypatch, sysfs):
    fake = FakeTool(query="query_cx7_ro_markers.txt")
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params=dict(NUM_VF_MSIX=12, ATS_ENABLED=True)))
    assert result["failed"] and "NUM_VF_MSIX is read-only" in result["msg"]
    assert fake.mutating == []


@pytest.mark.parametrize("params, message", [
    (dict(SRIOV_EN="maybe"), "SRIOV_EN: 'maybe' is not a boolean"),
    (dict(SRIOV_EN=2), "is not a boolean"),
    (dict(NUM_OF_VFS="8 9"), "is not a valid firmware value"),
    ({"NUM-OF-VFS": 8}, "is not a valid firmware parameter name"),
    (dict(PCI_DOWNSTREAM_PORT_OWNER=1), "is an array parameter"),
    (dict(NUM_OF_VFS=1, SRIOV_EN=None), "values must be booleans, integers or strings"),
])
def test_invalid_values_fail_before_set(tool, params, message):
    result = run(dict(devices=["19:00.0"], params=params))
    assert result["failed"] and message in result["msg"]
    assert tool.mutating == []


def test_one_bad_device_stops_every_device(monkeypatch, sysfs):
    fake = FakeTool(targeted={"NOPE": "-E- Unknown Parameter: NOPE\n"})
    install(monkeypatch, fake)
    result = run(dict(devices="all", params=dict(NOPE=1)))
    assert result["failed"] and fake.mutating == []


def test_firmware_refusing_the_set(monkeypatch, sysfs):
    fake = FakeTool(set_output="-E- Failed to set configuration: Operation is not supported (Read only TLV: NUM_OF_VFS)\n", set_rc=1)
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params=dict(NUM_OF_VFS=2)))
    assert result["failed"] and result["category"] == "read_only"
    assert "was refused, nothing was changed" in result["msg"]
    # What ran and failed is named apart from ``commands``, which lists only what was done.
    assert result["commands"] == [] and result["changed"] is False
    assert result["failed_command"] == "/usr/bin/mstconfig -d 0000:19:00.0 -y set NUM_OF_VFS=2"


def test_device_the_tool_cannot_open(monkeypatch, sysfs):
    fake = FakeTool(query=None, query_rc=1)
    fake.query_text = "-E- Failed to open the device\n"
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params=dict(NUM_OF_VFS=2)))
    assert result["failed"] and result["category"] == "device_not_found" and "Failed to open the device" in result["msg"]


def test_state_present_needs_params(tool):
    result = run(dict(devices=["19:00.0"]))
    assert result["failed"] and "params" in result["msg"]


# --- arrays and reset ------------------------------------------------------------------------------

def test_array_element(monkeypatch, sysfs):
    fake = FakeTool(query="query_cx4_array.txt", elements="query_cx4_array_elements.txt")
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params={"ESWITCH_HAIRPIN_DESCRIPTORS[1]": 64, "ESWITCH_HAIRPIN_DESCRIPTORS[0]": 128}))
    assert result["changed"] is True
    assert fake.calls[1] == [TOOL, "-d", "0000:19:00.0", "-e", "query", "ESWITCH_HAIRPIN_DESCRIPTORS[1]", "ESWITCH_HAIRPIN_DESCRIPTORS[0]"]
    assert fake.mutating == [[TOOL, "-d", "0000:19:00.0", "-y", "set", "ESWITCH_HAIRPIN_DESCRIPTORS[1]=64"]]


def test_array_index_out_of_range(monkeypatch, sysfs):
    fake = FakeTool(query="query_cx4_array.txt")
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], params={"ESWITCH_HAIRPIN_DESCRIPTORS[8]": 1}))
    assert result["failed"] and "Index 8 of ESWITCH_HAIRPIN_DESCRIPTORS is out of range" in result["msg"]


def test_reset_listed_parameters_to_default(tool):
    result = run(dict(devices=["19:00.0"], state="reset", params=dict(LEGACY_BOOT_PROTOCOL=None, SRIOV_EN=None, NUM_OF_VFS=None)))
    assert result["changed"] is True
    assert tool.mutating == [[TOOL, "-d", "0000:19:00.0", "-y", "set", "LEGACY_BOOT_PROTOCOL=PXE", "SRIOV_EN=False"]]


def test_reset_whole_device(tool):
    result = run(dict(devices=["19:00.0"], state="reset"), diff=True)
    assert result["changed"] is True
    assert tool.mutating == [[TOOL, "-d", "0000:19:00.0", "-y", "reset"]]
    assert set(result["diff"]["before"]["0000:19:00.0"]) == {"SRIOV_EN", "LEGACY_BOOT_PROTOCOL"}
    # ROCE_CONTROL already has its default as Next Boot, but Current still differs: a reboot is pending.
    assert result["reboot_required"] is True


def test_reset_is_idempotent_when_next_boot_is_default(monkeypatch, sysfs):
    fake = FakeTool(query="query_cx5_mstflint_narrow.txt")
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], state="reset"))
    assert result["changed"] is False and fake.mutating == []


def test_reset_without_readable_defaults(monkeypatch, sysfs):
    fake = FakeTool(query="query_cx4lx_no_defaults.txt")
    install(monkeypatch, fake)
    result = run(dict(devices=["19:00.0"], state="reset"))
    assert result["changed"] is True and fake.mutating == [[TOOL, "-d", "0000:19:00.0", "-y", "reset"]]
    single = run(dict(devices=["19:00.0"], state="reset", params=dict(SRIOV_EN=None)))
    assert single["failed"] and "cannot report the default value of SRIOV_EN" in single["msg"]
