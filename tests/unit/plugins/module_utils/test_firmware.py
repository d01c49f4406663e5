# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser tests on real mlxconfig/mstconfig output (fixtures/mlxconfig, sources in fixtures/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.firmware import parsers as mlx
from ansible_collections.roce.fabric.plugins.module_utils.firmware import power_cycle
from ansible_collections.roce.fabric.plugins.module_utils.firmware.state import reboot_needs
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "mlxconfig")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


def only_device(name):
    devices = mlx.parse_query(fixture(name))
    assert len(devices) == 1
    return devices[0]


def test_wide_mft_layout_header_and_rows():
    device = only_device("query_cx4lx_mft_wide.txt")
    assert device["device_type"] == "ConnectX4LX"
    assert device["name"] == "0R887V"
    assert device["description"].startswith("MCX422A-ACAA ConnectX-4 Lx EN Dual Port SFP28")
    assert device["device"] == "19:00.0"
    assert device["columns"] == ["default", "current", "next_boot"]
    assert len(device["params"]) == 24
    assert device["params"]["NUM_OF_VFS"] == dict(modified=True, read_only=False, default="8", current="0", next_boot="8")
    assert device["params"]["ROCE_CONTROL"]["current"] == "DEVICE_DEFAULT(0)"
    assert device["params"]["LEGACY_BOOT_PROTOCOL"]["next_boot"] == "NONE(0)"


def test_value_wider_than_its_column_is_still_one_value():
    # The real tool prints long enum values followed by a single space.
    row = only_device("query_cx4lx_mft_wide.txt")["params"]["PCI_ATOMIC_MODE"]
    assert row["default"] == row["current"] == row["next_boot"] == "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"


def test_narrow_mstflint_layout():
    device = only_device("query_cx5_mstflint_narrow.txt")
    assert device["device_type"] == "ConnectX5"
    assert device["device"] == "0000:02:00.1"
    assert device["params"]["MEMIC_SIZE_LIMIT"]["next_boot"] == "_256KB(1)"
    assert device["params"]["HOST_CHAINING_MODE"]["default"] == "DISABLED(0)"


def test_array_rows_and_elements():
    device = only_device("query_cx4_array.txt")
    assert mlx.parse_value(device["params"]["ESWITCH_HAIRPIN_DESCRIPTORS"]["next_boot"])["array"] == (0, 7)
    assert device["params"]["KEEP_IB_LINK_UP_P2"]["modified"] is True
    elements = only_device("query_cx4_array_elements.txt")
    assert sorted(elements["params"]) == ["ESWITCH_HAIRPIN_DESCRIPTORS[0]", "ESWITCH_HAIRPIN_DESCRIPTORS[1]"]
    assert elements["params"]["ESWITCH_HAIRPIN_DESCRIPTORS[1]"]["current"] == "128"


def test_connectx9_raw_current_value_is_compared_through_the_enum_map():
    row = only_device("query_cx9_mixed.txt")["params"]["PCI_DOWNSTREAM_PORT_OWNER[1]"]
    assert row["current"] == "HOST_0(1)"
    raw_row = only_device("query_cx9_mixed.txt")["params"]["PCI_DOWNSTREAM_PORT_OWNER[0]"]
    assert raw_row["current"] == "148"
    wanted = mlx.wanted_value("device_default", raw_row)
    assert wanted["token"] == "DEVICE_DEFAULT"
    assert mlx.same_value(wanted, raw_row["next_boot"], raw_row) is True
    assert mlx.same_value(wanted, raw_row["current"], raw_row) is False


def test_read_only_markers_glued_and_separate():
    device = only_device("query_cx7_ro_markers.txt")
    assert device["params"]["NUM_VF_MSIX"]["read_only"] is True
    assert device["params"]["SAFE_MODE_ENABLE"]["read_only"] is True
    assert device["params"]["ATS_ENABLED"] == dict(modified=True, read_only=False, default="False(0)", current="False(0)", next_boot="True(1)")
    # A name that starts with RO is not a read-only marker.
    assert device["params"]["ROCE_CONTROL"]["read_only"] is False


def test_firmware_without_default_values():
    device = only_device("query_cx4lx_no_defaults.txt")
    assert device["warnings"] == ["Device Firmware does not support reading default configurations"]
    assert device["params"]["SRIOV_EN"]["default"] is None
    assert mlx.default_token(device["params"]["SRIOV_EN"]) is None


@pytest.mark.parametrize("name, kind", [("set_cx6dx_roce_disable.txt", "reboot"), ("set_cx6dx_power_cycle.txt", "power_cycle")])
def test_set_output(name, kind):
    device = mlx.parse_tool_output(fixture(name))[0]
    assert device["columns"] == ["next_boot", "new"]
    assert device["params"]["ROCE_CONTROL"]["next_boot"] == "ROCE_ENABLE(2)"
    assert device["params"]["ROCE_CONTROL"]["new"] == "ROCE_DISABLE(1)"
    assert device["applied"] is True
    assert device["reboot"] == kind
    assert mlx.reboot_kind([fixture("set_cx6dx_roce_disable.txt"), fixture(name)]) == kind


def test_errors_and_abort():
    text = "\nDevice #1:\n----------\n\n Apply new Configuration? (y/n) [n] : n\nAborted by user.\n"
    device = mlx.parse_tool_output(text)[0]
    assert device["aborted"] is True and device["applied"] is False
    assert mlx.error_lines("-E- Failed to open the device\n") == ["Failed to open the device"]
    assert mlx.classify_error("Unknown Parameter: FOO") == "unknown_parameter"
    assert mlx.classify_error("The Device doesn't support ATS_ENABLED parameter") == "unsupported_parameter"
    assert mlx.classify_error("Failed to set configuration: Operation is not supported (Read only TLV: X)") == "read_only"
    assert mlx.classify_error("Failed to open the device") == "device_not_found"
    assert mlx.classify_error("Device in Livefish mode is not supported") == "livefish"


def test_malformed_rows_raise():
    with pytest.raises(mlx.MlxconfigParseError):
        mlx.parse_query("Configurations:   Default   Current   Next Boot\n        SRIOV_EN   True(1)\n")
    with pytest.raises(mlx.MlxconfigParseError):
        mlx.parse_query("Configurations:   Default   Sideways\n")


@pytest.mark.parametrize("value, token, number", [
    (True, "True", 1), ("true", "True", 1), ("True", "True", 1), (1, "True", 1), ("1", "True", 1), ("yes", "True", 1),
    (False, "False", 0), ("FALSE", "False", 0), (0, "False", 0), ("0x0", "False", 0),
])
def test_boolean_values_normalise(value, token, number):
    row = dict(default="False(0)", current="False(0)", next_boot="True(1)")
    wanted = mlx.wanted_value(value, row)
    assert (wanted["token"], wanted["number"]) == (token, number)


@pytest.mark.parametrize("value", ["maybe", 2, "ROCE_ENABLE", ""])
def test_boolean_rejects_non_booleans(value):
    with pytest.raises(ValueError):
        mlx.wanted_value(value, dict(default="False(0)", current="False(0)", next_boot="False(0)"))


def test_enum_values_by_name_number_and_case():
    row = dict(default="ROCE_ENABLE(2)", current="DEVICE_DEFAULT(0)", next_boot="ROCE_ENABLE(2)")
    assert mlx.wanted_value("roce_enable", row)["display"] == "ROCE_ENABLE(2)"
    assert mlx.wanted_value(2, row)["token"] == "ROCE_ENABLE"
    assert mlx.same_value(mlx.wanted_value("Roce_Enable", row), row["next_boot"], row) is True
    assert mlx.same_value(mlx.wanted_value("ROCE_ENABLE", row), row["current"], row) is False
    # A name the row never printed is passed through for the tool to validate.
    unseen = mlx.wanted_value("ROCE_DISABLE", row)
    assert unseen["token"] == "ROCE_DISABLE" and unseen["number"] is None
    assert mlx.same_value(unseen, row["next_boot"], row) is False


def test_integer_values():
    row = dict(default="8", current="0", next_boot="8")
    assert mlx.same_value(mlx.wanted_value("8", row), row["next_boot"], row) is True
    assert mlx.same_value(mlx.wanted_value(0x10, row), row["next_boot"], row) is False
    assert mlx.wanted_value("0x10", row)["token"] == "16"
    assert mlx.same_value(mlx.wanted_value(8, row), "N/A", row) is None
    with pytest.raises(ValueError):
        mlx.wanted_value("8 9", row)
    with pytest.raises(ValueError):
        mlx.wanted_value(1.5, row)


def test_parameter_names():
    assert mlx.split_param_name("NUM_OF_VFS") == ("NUM_OF_VFS", None)
    assert mlx.split_param_name("PCI_DOWNSTREAM_PORT_OWNER[15]") == ("PCI_DOWNSTREAM_PORT_OWNER", 15)
    # Real firmware prints names with lower-case letters; the tools take names in any case.
    assert mlx.split_param_name("EXP_ROM_UEFI_x86_ENABLE") == ("EXP_ROM_UEFI_x86_ENABLE", None)
    assert mlx.split_param_name("num_of_vfs") == ("num_of_vfs", None)
    assert mlx.find_param({"EXP_ROM_UEFI_x86_ENABLE": {}}, "EXP_ROM_UEFI_X86_ENABLE") == "EXP_ROM_UEFI_x86_ENABLE"
    assert mlx.find_param({"NUM_OF_VFS": {}}, "SRIOV_EN") is None
    for bad in ("NAME[]", "NAME[1", "A B", "", "NAME=1", "_X", "1X"):
        with pytest.raises(ValueError):
            mlx.split_param_name(bad)


def test_default_token():
    assert mlx.default_token(dict(default="ROCE_ENABLE(2)")) == "ROCE_ENABLE"
    assert mlx.default_token(dict(default="8")) == "8"
    assert mlx.default_token(dict(default="Array[0..7]")) is None


def test_power_cycle_record_keeps_pending_values_until_they_run(tmp_path):
    """Hardening (issue 15 item 10): the tool's "power cycle" answer is only in the set's output; the record keeps
    it for later runs, and is refused when planted as a link."""
    path = str(tmp_path / "roce-fabric" / "mlxconfig_power_cycle.json")
    record = power_cycle.DeviceRecord(path).load()
    record.set("0000:19:00.0", {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"})
    record.save()
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    again = power_cycle.DeviceRecord(path).load()
    assert power_cycle.needs_power_cycle(again.get("0000:19:00.0"), {"SRIOV_EN": "True(1)"})
    assert not power_cycle.needs_power_cycle(again.get("0000:19:00.0"), {"SRIOV_EN": "False(0)"}), "another value"
    assert not power_cycle.needs_power_cycle(again.get("0000:af:00.0"), {"SRIOV_EN": "True(1)"}), "another device"
    again.set("0000:19:00.0", {})
    again.save()
    assert not os.path.exists(path)
    assert power_cycle.DeviceRecord("").load().get("0000:19:00.0") == {}
    target = tmp_path / "target"
    target.write_text("{}")
    os.symlink(str(target), path)
    with pytest.raises(FabricError, match="Cannot read the power cycle record .*symbolic link"):
        power_cycle.DeviceRecord(path, "power cycle record").load()


def test_reboot_needs_of_mixed_devices_keep_power_cycles_out_of_the_warm_reboot():
    devices = {
        "0000:b1:00.0": {"reboot_required": True, "reboot_type": "power_cycle", "pending": {"NUM_OF_VFS": "16"}},
        "0000:3B:00.0": {"reboot_required": True, "reboot_type": "reboot", "pending": {"SRIOV_EN": "True(1)"}},
        "0000:5e:00.0": {"reboot_required": False, "reboot_type": "none", "pending": {}},
    }
    assert reboot_needs(devices) == {
        "reboot_reason": "ConnectX firmware settings pending on 0000:3B:00.0 (SRIOV_EN=True(1))",
        "warm_reboot_required": True,
        "power_cycle_devices": ["0000:b1:00.0"],
    }
    only_cycle = dict((k, v) for k, v in devices.items() if k != "0000:3B:00.0")
    assert reboot_needs(only_cycle) == {"reboot_reason": "", "warm_reboot_required": False,
                                        "power_cycle_devices": ["0000:b1:00.0"]}
    assert reboot_needs({}) == {"reboot_reason": "", "warm_reboot_required": False, "power_cycle_devices": []}
