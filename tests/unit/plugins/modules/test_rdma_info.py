# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.rdma_info on sysfs trees shaped like the lab VM's Soft-RoCE device and a ConnectX host."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.module_utils import _rdma
from ansible_collections.roce.fabric.plugins.modules import rdma_info
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


@pytest.fixture
def sysfs(tmp_path, monkeypatch):
    root = str(tmp_path)
    ib, net, pci = os.path.join(root, "ib"), os.path.join(root, "net"), os.path.join(root, "pci")
    for attr, path in (("SYS_IB", ib), ("SYS_NET", net), ("SYS_PCI", pci)):
        monkeypatch.setattr(rdma_info, attr, path)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: None)
    devices = os.path.join(root, "devices", "pci0000:00")
    # The lab VM: rxe0 on enp1s0, a virtio NIC behind a PCIe root port (values as read in the VM).
    virtio = os.path.join(devices, "0000:00:04.0", "0000:01:00.0", "virtio2")
    os.makedirs(virtio)
    write(os.path.join(pci, "0000:01:00.0", "numa_node"), "-1")
    os.makedirs(os.path.join(net, "enp1s0"))
    os.symlink(virtio, os.path.join(net, "enp1s0", "device"))
    rxe = os.path.join(ib, "rxe0")
    for name, text in (("fw_ver", "0.0.0"), ("node_type", "1: CA"), ("node_guid", "5054:00ff:fe72:5713"), ("parent", "enp1s0"),
                       ("ports/1/state", "4: ACTIVE"), ("ports/1/phys_state", "5: LinkUp"), ("ports/1/link_layer", "Ethernet"),
                       ("ports/1/rate", "2.5 Gb/sec (1X SDR)"),
                       ("ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe72:5713"),
                       ("ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:0a4e:0002"),
                       ("ports/1/gids/2", "0000:0000:0000:0000:0000:0000:0000:0000"),
                       ("ports/1/gid_attrs/types/0", "RoCE v2"), ("ports/1/gid_attrs/types/1", "RoCE v2"),
                       ("ports/1/gid_attrs/ndevs/0", "enp1s0"), ("ports/1/gid_attrs/ndevs/1", "enp1s0")):
        write(os.path.join(rxe, name), text)
    # A ConnectX-6 Dx port: RoCE v1 and v2 GIDs for each address, IPv4 second.
    cx = os.path.join(devices, "0000:3b:00.0")
    write(os.path.join(cx, "numa_node"), "0")
    os.makedirs(os.path.join(root, "drivers", "mlx5_core"))
    os.symlink(os.path.join(root, "drivers", "mlx5_core"), os.path.join(cx, "driver"))
    write(os.path.join(pci, "0000:3b:00.0", "numa_node"), "0")
    mlx = os.path.join(ib, "mlx5_0")
    os.makedirs(mlx)
    os.symlink(cx, os.path.join(mlx, "device"))
    gids = [("fe80:0000:0000:0000:0e42:a1ff:fe8d:1a2b", "IB/RoCE v1"), ("fe80:0000:0000:0000:0e42:a1ff:fe8d:1a2b", "RoCE v2"),
            ("0000:0000:0000:0000:0000:ffff:c0a8:6401", "IB/RoCE v1"), ("0000:0000:0000:0000:0000:ffff:c0a8:6401", "RoCE v2")]
    for name, text in (("fw_ver", "22.36.1010"), ("node_type", "1: CA"), ("node_guid", "0c42:a103:008d:1a2b"),
                       ("ports/1/state", "4: ACTIVE"), ("ports/1/phys_state", "5: LinkUp"), ("ports/1/link_layer", "Ethernet"),
                       ("ports/1/rate", "100 Gb/sec (2X HDR)")):
        write(os.path.join(mlx, name), text)
    for index, (gid, gid_type) in enumerate(gids):
        write(os.path.join(mlx, "ports", "1", "gids", str(index)), gid)
        write(os.path.join(mlx, "ports", "1", "gid_attrs", "types", str(index)), gid_type)
        write(os.path.join(mlx, "ports", "1", "gid_attrs", "ndevs", str(index)), "ens1f0np0")
    return root


def test_soft_roce_device_as_in_the_lab(sysfs):
    result = run_module(rdma_info.main, {"devices": ["rxe0"]})
    assert not result["failed"] and not result["changed"]
    (rxe,) = result["devices"]
    assert rxe["driver"] == "rdma_rxe" and rxe["software"] and rxe["pci_address"] == "0000:01:00.0" and rxe["numa_node"] == -1
    port = rxe["ports"][0]
    assert port["netdev"] == "enp1s0" and port["state"] == "ACTIVE" and port["link_layer"] == "Ethernet"
    assert [g["gid"] for g in port["gids"]] == ["fe80::5054:ff:fe72:5713", "::ffff:10.78.0.2"]
    assert port["roce_v2_ipv4_gid_index"] == 1
    assert result["driver"]["stack"] == "inbox"


def test_connectx_port_picks_the_roce_v2_ipv4_gid(sysfs):
    result = run_module(rdma_info.main, {})
    assert [d["name"] for d in result["devices"]] == ["mlx5_0", "rxe0"]
    mlx = result["devices"][0]
    assert mlx["driver"] == "mlx5_core" and not mlx["software"] and mlx["fw_ver"] == "22.36.1010"
    assert mlx["pci_address"] == "0000:3b:00.0" and mlx["numa_node"] == 0 and mlx["node_type"] == "CA"
    assert mlx["ports"][0]["roce_v2_ipv4_gid_index"] == 3
    assert mlx["ports"][0]["netdev"] == "ens1f0np0"


def test_unknown_device_is_an_error(sysfs):
    result = run_module(rdma_info.main, {"devices": ["mlx5_9"]})
    assert result["failed"] and "mlx5_9" in result["msg"]


def test_ofed_info_versions():
    assert _rdma.parse_ofed_info("MLNX_OFED_LINUX-24.10-1.1.4.0:\n") == ("mlnx_ofed", "24.10-1.1.4.0")
    assert _rdma.parse_ofed_info("OFED-internal-25.01-0.6.0:\n") == ("doca_ofed", "25.01-0.6.0")
    assert _rdma.parse_ofed_info("") == (None, None)


def test_gid_helpers():
    assert _rdma.format_gid("0000:0000:0000:0000:0000:ffff:0a4e:0001") == "::ffff:10.78.0.1"
    assert _rdma.parse_sysfs_state("4: ACTIVE") == "ACTIVE"
    assert _rdma.pci_of_path("/sys/devices/pci0000:00/0000:00:04.0/0000:01:00.0/virtio2") == "0000:01:00.0"
    assert _rdma.pci_of_path("/sys/devices/virtual/net/lo") is None
    assert _rdma.roce_v2_ipv4_index([]) is None
