# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser tests on rdma / ip netns / container runtime output (fixtures/rdma, sources in fixtures/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.rdma import tools as rdma_tools
from ansible_collections.roce.fabric.plugins.module_utils.rdma import sysfs as rdma_sysfs
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "rdma")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


@pytest.mark.parametrize("name, expected", [
    ("system_5.4_shared.txt", {"netns": "shared"}),
    ("system_6.1_shared.txt", {"netns": "shared", "copy_on_fork": True}),
    ("system_6.1_exclusive.txt", {"netns": "exclusive", "copy_on_fork": True}),
    ("system_newest_shared.txt", {"netns": "shared", "privileged_qkey": False, "monitor": False, "copy_on_fork": True}),
    ("system_6.15_shared.txt", {"netns": "shared", "monitor": False, "copy_on_fork": True}),
])
def test_every_rdma_system_variant(name, expected):
    assert rdma_tools.parse_system(fixture(name)) == expected


def test_rdma_system_on_old_iproute2_is_too_old():
    with pytest.raises(rdma_tools.RdmaToolError) as err:
        rdma_tools.parse_system(fixture("system_unknown_object.txt"))
    assert err.value.kind == "too_old"
    assert "Unknown object" in err.value.text


@pytest.mark.parametrize("text", ["", "netns\n", "netns bogus copy-on-fork on\n", "error: Operation not permitted\n"])
def test_rdma_system_without_a_mode_is_an_error(text):
    with pytest.raises(rdma_tools.RdmaToolError):
        rdma_tools.parse_system(text)


def test_dev_show_text_and_json_agree_on_rxe():
    text = rdma_tools.parse_dev_show(fixture("dev_show_rxe.txt"))
    as_json = rdma_tools.parse_dev_json(fixture("dev_show_rxe.json"))
    assert text == as_json == [{"index": 0, "name": "rxe0", "node_type": "ca", "node_guid": "5054:00ff:fe72:5712",
                                "sys_image_guid": "5054:00ff:fe72:5712"}]


def test_dev_show_details_ignores_caps_lines():
    devices = rdma_tools.parse_dev_show(fixture("dev_show_rxe_details.txt"))
    assert [d["name"] for d in devices] == ["rxe0"]
    assert devices[0]["adaptive_moderation"] == "off"


def test_dev_show_hardware_devices_with_firmware():
    # A PF and a subfunction: the kernel's indexes need not be 0, 1, ...
    devices = rdma_tools.parse_dev_show(fixture("dev_show_mlx5_sf_kernel_doc.txt"))
    expected = [(8, "rocep6s0f1", "16.29.0550"), (13, "mlx5_0", "16.29.0550")]
    assert [(d["index"], d["name"], d["fw"]) for d in devices] == expected
    assert [d["name"] for d in rdma_tools.parse_devices(fixture("dev_show_mlx5_sf_kernel_doc.txt"))] == ["rocep6s0f1", "mlx5_0"]


def test_dev_show_of_iproute2_6_15_prints_the_protocol():
    devices = rdma_tools.parse_dev_show(fixture("dev_show_rxe_6.15.txt"))
    assert [(d["index"], d["name"]) for d in devices] == [(0, "rxe0")]
    assert [d["name"] for d in rdma_tools.parse_devices(fixture("dev_show_rxe_6.15.json"))] == ["rxe0"]
    newer, older = rdma_tools.parse_devices(fixture("dev_show_rxe_6.15.txt")), rdma_tools.parse_devices(fixture("dev_show_rxe.txt"))
    assert newer[0]["protocol"] == "roce" and "protocol" not in older[0]
    assert dict((k, v) for k, v in newer[0].items() if k != "protocol") == older[0]


def test_dev_show_of_an_unknown_device_lists_nothing():
    assert rdma_tools.parse_devices(fixture("dev_show_unknown.txt")) == []
    assert rdma_tools.parse_devices(fixture("dev_show_unknown.json")) == []
    assert rdma_tools.classify_error(fixture("dev_show_unknown.txt")) == "no_device"


def test_empty_namespace_lists_nothing():
    assert rdma_tools.parse_devices("") == []
    assert rdma_tools.parse_devices("[]\n") == []


def test_link_show():
    assert rdma_tools.parse_link_show(fixture("link_show_rxe.txt")) == [
        {"device": "rxe0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "enp1s0"}]
    links = rdma_tools.parse_link_show(fixture("link_show_mlx5.txt"))
    assert [(l["device"], l["netdev"]) for l in links] == [("mlx5_0", "ens6f0np0"), ("mlx5_1", "ens6f1np1")]
    assert rdma_tools.parse_link_show(fixture("link_show_mlx5_sf_kernel_doc.txt")) == [
        {"device": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "p0sf88"}]


@pytest.mark.parametrize("name, kind", [
    ("err_move_rxe.txt", "not_supported"),
    ("err_mode_busy.txt", "busy"),
    ("err_no_netns.txt", "no_netns"),
    ("err_mode_invalid.txt", "invalid"),
    ("system_unknown_object.txt", "too_old"),
    ("dev_show_unknown.txt", "no_device"),
])
def test_error_kinds(name, kind):
    assert rdma_tools.classify_error(fixture(name)) == kind


def test_unrecognised_error():
    assert rdma_tools.classify_error("something else went wrong") == "unknown"


def test_netns_list_with_and_without_ids():
    assert rdma_tools.parse_netns_list(fixture("netns_list.txt")) == ["pa", "foo"]
    assert rdma_tools.parse_netns_list("") == []


@pytest.mark.parametrize("text, version, supported", [
    (fixture("version_6.1.txt"), "6.1.0", True),
    (fixture("version_6.15.txt"), "6.15.0", True),
    (fixture("version_ss190107.txt"), "ss190107", False),
    ("rdma utility, iproute2-ss191125\n", "ss191125", True),
    ("rdma utility, iproute2-5.3.0\n", "5.3.0", False),
    ("rdma utility, iproute2-5.10.0\n", "5.10.0", True),
    ("ip utility, iproute2-6.1.0, libbpf 1.1.2\n", "6.1.0", True),
    ("", None, None),
])
def test_iproute2_version(text, version, supported):
    assert rdma_tools.parse_iproute2_version(text) == version
    assert rdma_tools.iproute2_supports_netns(version) is supported


def test_modprobe_options():
    assert rdma_tools.modprobe_netns_mode("options ib_core netns_mode=0\n") == "exclusive"
    assert rdma_tools.modprobe_netns_mode("# options ib_core netns_mode=0\noptions ib_core netns_mode=1\n") == "shared"
    assert rdma_tools.modprobe_netns_mode("options ib_core foo=1 netns_mode=0 # comment\n") == "exclusive"
    assert rdma_tools.modprobe_netns_mode("options mlx5_core num_vfs=4\n") is None
    assert rdma_tools.modprobe_netns_mode("options ib_core netns_mode=7\n") == "invalid"


def test_effective_mode_last_file_in_name_order_wins():
    files = [("/etc/modprobe.d/roce-fabric-ib_core.conf", rdma_tools.render_modprobe_file("exclusive")),
             ("/etc/modprobe.d/ib_core.conf", "# This file is managed by sriov-network-operator do not edit.\noptions ib_core netns_mode=1\n")]
    assert rdma_tools.effective_persistent_mode(files) == ("exclusive", "/etc/modprobe.d/roce-fabric-ib_core.conf")
    files.append(("/etc/modprobe.d/zz.conf", "options ib_core netns_mode=1\n"))
    assert rdma_tools.effective_persistent_mode(files) == ("shared", "/etc/modprobe.d/zz.conf")
    assert rdma_tools.effective_persistent_mode([]) == ("shared", None)


def test_rendered_file_round_trips():
    for mode in ("shared", "exclusive"):
        assert rdma_tools.modprobe_netns_mode(rdma_tools.render_modprobe_file(mode)) == mode


def test_initramfs_listing():
    assert rdma_tools.initramfs_has_module(fixture("lsinitramfs_ib_core.txt"))
    assert not rdma_tools.initramfs_has_module(fixture("lsinitramfs_no_ib_core.txt"))
    assert rdma_tools.initramfs_has_module("-rw-r--r--   1 root root  1234 Jan  1 00:00 usr/lib/modules/5.14/kernel/ib_core.ko.xz\n")
    assert not rdma_tools.initramfs_has_module("usr/lib/modules/5.14/kernel/ib_core_extra.ko\n")


def test_container_pids():
    assert rdma_tools.parse_inspect_pid(fixture("docker_inspect.json")) == 51877
    assert rdma_tools.parse_inspect_pid(fixture("crictl_inspectp.json")) == 48213
    assert rdma_tools.parse_inspect_pid(fixture("docker_inspect_stopped.json")) is None
    assert rdma_tools.parse_inspect_pid("[]") is None


def test_pods_match_exactly_and_only_ready_sandboxes():
    text = fixture("crictl_pods.json")
    assert rdma_tools.parse_crictl_pods(text, "rdma-test", "default") == ["5c1f0a8d2e4b7a96c3d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6"]
    assert rdma_tools.parse_crictl_pods(text, "rdma-test", "other") == []
    assert rdma_tools.parse_crictl_pods('{"items": []}', "rdma-test", "default") == []


# --- sysfs value and ofed_info parsers -----------------------------------------------------------------------


def test_ofed_info_versions():
    assert rdma_sysfs.parse_ofed_info("MLNX_OFED_LINUX-24.10-1.1.4.0:\n") == ("mlnx_ofed", "24.10-1.1.4.0")
    assert rdma_sysfs.parse_ofed_info("OFED-internal-25.01-0.6.0:\n") == ("doca_ofed", "25.01-0.6.0")
    assert rdma_sysfs.parse_ofed_info("") == (None, None)


def test_gid_helpers():
    assert rdma_sysfs.format_gid("0000:0000:0000:0000:0000:ffff:0a4e:0001") == "::ffff:10.78.0.1"
    assert rdma_sysfs.format_gid("fe80:0000:0000:0000:5054:00ff:fe72:5713") == "fe80::5054:ff:fe72:5713"
    assert rdma_sysfs.format_gid("not a gid") is None
    assert rdma_sysfs.gid_address("0000:0000:0000:0000:0000:ffff:0a63:0002") == "10.99.0.2"
    assert rdma_sysfs.gid_address("fe80:0000:0000:0000:5054:00ff:fe72:5713") is None
    assert rdma_sysfs.gid_unused("0000:0000:0000:0000:0000:0000:0000:0000") and rdma_sysfs.gid_unused("") and rdma_sysfs.gid_unused(None)
    assert not rdma_sysfs.gid_unused("fe80:0000:0000:0000:5054:00ff:fe72:5713")
    assert rdma_sysfs.gid_entry(1, "0000:0000:0000:0000:0000:ffff:0a4e:0002\n", "RoCE v2", "enp1s0") == dict(
        index=1, gid="0000:0000:0000:0000:0000:ffff:0a4e:0002", address="::ffff:10.78.0.2", type="RoCE v2",
        netdev="enp1s0", ipv4="10.78.0.2")
    assert rdma_sysfs.parse_sysfs_state("4: ACTIVE") == "ACTIVE"
    assert rdma_sysfs.parse_sysfs_state("") is None and rdma_sysfs.parse_sysfs_state(None) is None
    assert rdma_sysfs.parse_rate_gbps("2.5 Gb/sec (1X SDR)") == 2.5 and rdma_sysfs.parse_rate_gbps("invalid") is None
    assert rdma_sysfs.pci_of_path("/sys/devices/pci0000:00/0000:00:04.0/0000:01:00.0/virtio2") == "0000:01:00.0"
    assert rdma_sysfs.pci_of_path("/sys/devices/virtual/net/lo") is None
    assert rdma_sysfs.software_driver("rxe0") == "rxe" and rdma_sysfs.software_driver("siw0") == "siw"
    assert rdma_sysfs.software_driver("mlx5_0") is None


def test_roce_v2_gid_choice():
    v1_v2 = [dict(index=0, type="IB/RoCE v1", ipv4=None), dict(index=1, type="RoCE v2", ipv4=None),
             dict(index=2, type="IB/RoCE v1", ipv4="10.0.0.1"), dict(index=3, type="RoCE v2", ipv4="10.0.0.1")]
    assert rdma_sysfs.roce_v2_gid(v1_v2)["index"] == 3
    assert rdma_sysfs.roce_v2_gid(v1_v2, ipv4_only=True)["index"] == 3
    assert rdma_sysfs.roce_v2_gid(v1_v2[:2])["index"] == 1
    assert rdma_sysfs.roce_v2_gid(v1_v2[:2], ipv4_only=True) is None
    assert rdma_sysfs.roce_v2_gid([]) is None and rdma_sysfs.roce_v2_gid([], ipv4_only=True) is None
