# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters that took the roles' set_fact computations into Python, as Ansible loads them: the reboot reasons
(host_reboot)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError


def reboot_filters():
    from ansible_collections.roce.fabric.plugins.filter.reboot import FilterModule
    return FilterModule().filters()


def test_reboot_reasons_are_recorded_per_role_taken_back_and_listed_once_in_name_order():
    record, reasons = reboot_filters()["reboot_pending"], reboot_filters()["reboot_reasons"]
    pending = record({}, "nic_firmware", " ConnectX firmware settings pending on 0000:3b:00.0 (SRIOV_EN=True(1)) ")
    pending = record(pending, "rdma_host", "RDMA namespace mode exclusive waits for a reboot")
    pending = record(pending, "sriov", "")
    assert pending == {"nic_firmware": "ConnectX firmware settings pending on 0000:3b:00.0 (SRIOV_EN=True(1))",
                       "rdma_host": "RDMA namespace mode exclusive waits for a reboot", "sriov": ""}
    assert reasons(pending, ["kernel update", "RDMA namespace mode exclusive waits for a reboot", ""]) == [
        "ConnectX firmware settings pending on 0000:3b:00.0 (SRIOV_EN=True(1))", "kernel update",
        "RDMA namespace mode exclusive waits for a reboot"]
    # A role whose change is loaded (or undone) takes its reason back: nothing is left to reboot for.
    cleared = record(record(pending, "nic_firmware", None), "rdma_host", "")
    assert reasons(cleared) == [] and reasons(cleared, "operator's reason") == ["operator's reason"]
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        reasons(["not", "a", "dict"])


def test_sriov_devices_whose_plan_takes_vfs_away_wait_for_the_rolling_play():
    from ansible_collections.roce.fabric.plugins.filter.sriov import FilterModule
    split = FilterModule().filters()["sriov_split"]
    devices = [{"netdev": "ens1f0np0", "num_vfs": 8}, {"netdev": "ens2f0np0", "num_vfs": 4},
               {"netdev": "ens3f0np0", "num_vfs": 0}]
    # The looped check-mode task's results: a count change on a device that has VFs (through 0), a first count,
    # and a skipped item.
    plans = [dict(item=devices[0], changed=True, removes_vfs=True), dict(item=devices[1], changed=True, removes_vfs=False),
             dict(item=devices[2], skipped=True)]
    assert split(devices, plans, True) == {"now": devices[1:], "deferred": devices[:1]}
    assert split(devices, plans, "false") == {"now": devices, "deferred": []}
    # Not deferring, the plan task is skipped: every device is set now.
    assert split(devices, [], True) == {"now": devices, "deferred": []}
    with pytest.raises(AnsibleFilterError, match="sriov_split"):
        split("ens1f0np0", plans)


@pytest.mark.parametrize("stdout, wanted, installed", [
    # ofed_info -s as MLNX_OFED and DOCA-OFED print it (the formats of module_utils/rdma/sysfs.parse_ofed_info).
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "24.10-1.1.4.0", True),
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "24.10-1.1.4", True),
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "24.10", True),
    ("OFED-internal-25.01-0.6.0:\n", "25.01-0.6.0", True),
    # A substring is not a release: the role's earlier test took 4.1 for installed on 24.10-1.1.4.0.
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "4.1", False),
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "24.1", False),
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "24.10-1.1.4.0.1", False),
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "", False),
    ("", "24.10", False),
])
def test_the_wanted_ofed_release_is_compared_part_by_part(stdout, wanted, installed):
    from ansible_collections.roce.fabric.plugins.filter.rdma_host import ofed_installed
    assert ofed_installed({"rc": 0, "stdout": stdout}, wanted) is installed
    assert ofed_installed({"rc": 127, "stdout": stdout}, wanted) is False


def test_the_firmware_verify_failure_asks_for_a_power_cycle_once_a_reboot_did_not_clear_it():
    """nic_firmware's verify step: the text the role's assert shows, from the module results the verify read back (the
    devices of roce.fabric.mlxconfig's result, the reason of roce.fabric.nic_firmware_image's)."""
    from ansible_collections.roce.fabric.plugins.filter.firmware import FilterModule
    message = FilterModule().filters()["nic_firmware_not_running"]
    settings = {"changed": True, "reboot_required": True, "devices": {
        "0000:3b:00.0": {"reboot_required": True}, "0000:af:00.0": {"reboot_required": False}}}
    reason = "ConnectX firmware settings pending on 0000:3b:00.0 (SRIOV_EN=True(1))"
    assert message(settings, "settings", reboot_reason=reason) == (
        "Firmware values are not running on 0000:3b:00.0. Reboot the host to load them.")
    cleared_not = message(settings, "settings", reboot_reason=reason, not_cleared=[reason])
    assert "A reboot already failed to load them (roce.fabric.host_reboot does not repeat it): power-cycle" in cleared_not
    assert "a warm reboot does not load it; power-cycle the host" in message(settings, "settings", reboot_type="power_cycle")
    image = {"changed": False, "reboot_required": True, "reboot_reason": "ConnectX firmware 28.43.1014 burnt on 0000:5e:00.0"}
    assert message(image, "images").endswith("burnt on 0000:5e:00.0. Run again to burn it, or reboot the host to load it.")
    assert message(image, "images", not_cleared=[image["reboot_reason"]]).endswith(
        "A reboot already failed to load it (roce.fabric.host_reboot does not repeat it): power-cycle the host (BMC/IPMI)"
        " and run again.")
    assert message({"changed": True}, "images").startswith("Pinned ConnectX firmware does not run: an adapter holds another")
    with pytest.raises(AnsibleFilterError, match="kind must be settings or images"):
        message(image, "image")
