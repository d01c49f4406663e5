# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""esxcli parsers and kernel setting values (fixtures/esxcli, sources in fixtures/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.esxi import parsers as esxcli
from ansible_collections.roce.fabric.plugins.module_utils.esxi import vmx
from ansible_collections.roce.fabric.plugins.module_utils.esxi.vsphere import typed_option_value
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "esxcli")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


def test_kernel_list_public_sample():
    assert esxcli.parse_kernel_settings(fixture("kernel_list_vga.txt")) == {
        "vga": dict(type="Bool", configured="FALSE", runtime="TRUE", default="TRUE", description="Enable/Disable VGA support.")}


def test_kernel_list_pending_change_keeps_description_with_spaces():
    # Set, not yet rebooted: Configured differs from Runtime.
    vga = esxcli.parse_kernel_settings(fixture("kernel_list_vga.txt"))["vga"]
    assert (vga["configured"], vga["runtime"], vga["description"]) == ("FALSE", "TRUE", "Enable/Disable VGA support.")


def test_kernel_list_without_table_is_an_error():
    with pytest.raises(ValueError, match="no esxcli table"):
        esxcli.parse_kernel_settings("Error: Unknown command or namespace system settings kernel lst\n")


def test_pci_list_numa_and_normalised_address():
    devices = esxcli.parse_pci_list(fixture("pci_list_gpu_nic.txt"))
    assert [d["address"] for d in devices] == ["0000:17:00.0", "0000:3b:00.0"]
    assert [d["numa_node"] for d in devices] == [0, 1]
    assert devices[1]["vmkernel_name"] == "vmnic4" and devices[1]["device_class"] == "0x0200"
    assert devices[0]["vmkernel_name"] == "" and devices[1]["extended_device_name"] == ""


@pytest.mark.parametrize("kind, value, expected", [
    ("Bool", True, "TRUE"), ("Bool", "true", "TRUE"), ("Bool", "no", "FALSE"), ("Bool", 0, "FALSE"),
    ("uint32", "0x10", "16"), ("uint32", 4096, "4096"), ("int32", "-5", "-5"), ("str", "abc", "abc"),
])
def test_normalize_kernel_value(kind, value, expected):
    assert esxcli.normalize_kernel_value(kind, value) == expected


@pytest.mark.parametrize("kind, value", [
    ("Bool", "maybe"), ("uint32", "-1"), ("uint32", "x"), ("uint8", 256), ("int32", True),
])
def test_normalize_kernel_value_refuses(kind, value):
    with pytest.raises(ValueError):
        esxcli.normalize_kernel_value(kind, value)


@pytest.mark.parametrize("current, wanted, expected", [
    (False, "TRUE", (True, "true")), (True, False, (False, "false")), (4096, "0x20", (32, "32")), ("a", True, ("true", "true")),
])
def test_typed_option_value(current, wanted, expected):
    assert typed_option_value(current, wanted) == expected


@pytest.mark.parametrize("current, wanted", [(False, "maybe"), (1, "many"), (1, True)])
def test_typed_option_value_refuses(current, wanted):
    with pytest.raises(ValueError):
        typed_option_value(current, wanted)


def test_vmx_values_compare_as_vmware_reads_them():
    # community.vmware's vmware_guest writes TRUE where vmx_passthru writes true: the same setting to VMware.
    current = {"pciPassthru.use64bitMMIO": "TRUE", "PCIPASSTHRU.ALLOWP2P": "true", "pciPassthru.64bitMMIOSizeGB": "512"}
    want = {"pciPassthru.use64bitMMIO": "true", "pciPassthru.allowP2P": "true", "pciPassthru.64bitMMIOSizeGB": "512"}
    assert vmx.compare(want, current) == {}
    assert vmx.compare({"pciPassthru.use64bitMMIO": "false"}, current) == {
        "pciPassthru.use64bitMMIO": dict(before="TRUE", after="false")}
    assert vmx.compare({"pciPassthru.64bitMMIOSizeGB": "1024"}, current)["pciPassthru.64bitMMIOSizeGB"]["before"] == "512"
    assert vmx.compare({"numa.nodeAffinity": None}, current) == {}


@pytest.mark.parametrize("before, after, same", [
    ("TRUE", "true", True), ("True", "false", False), (" TRUE", "true", True),
    ("512", "512", True), ("0512", "512", True), ("512", "1024", False), ("+1", "1", True),
    ("0,1", "0,1", True), ("0, 1", "0,1", False),  # lists and other strings as exact text
    ("0000:17:00.0", "0000:17:00.0", True), ("Auto", "auto", False), ("1", "true", False),
    (None, None, True), (None, "true", False), ("true", None, False),
])
def test_vmx_value_kinds(before, after, same):
    assert vmx.same_vmx_value(before, after) is same
