# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.rdma_facts on sysfs trees shaped like a ConnectX host and a Soft-RoCE VM."""

from __future__ import annotations

import os

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.modules import rdma_facts
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

TOPO = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "gpu", "topo_2gpu_2nic_2numa_built.txt")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def port(root, dev, number, gids, state="4: ACTIVE", rate="100 Gb/sec (4X EDR)", layer="Ethernet"):
    base = os.path.join(root, "sys", "class", "infiniband", dev, "ports", str(number))
    write(os.path.join(base, "state"), state)
    write(os.path.join(base, "phys_state"), "5: LinkUp")
    write(os.path.join(base, "rate"), rate)
    write(os.path.join(base, "link_layer"), layer)
    for index, (gid, gid_type, ndev) in enumerate(gids):
        write(os.path.join(base, "gids", str(index)), gid)
        if gid_type:
            write(os.path.join(base, "gid_attrs", "types", str(index)), gid_type)
            write(os.path.join(base, "gid_attrs", "ndevs", str(index)), ndev)


def netdev(root, name, mtu):
    write(os.path.join(root, "sys", "class", "net", name, "mtu"), str(mtu))
    write(os.path.join(root, "sys", "class", "net", name, "operstate"), "up")


def pci(root, bdf, vendor, klass, numa, cpus):
    base = os.path.join(root, "sys", "bus", "pci", "devices", bdf)
    write(os.path.join(base, "vendor"), vendor)
    write(os.path.join(base, "class"), klass)
    write(os.path.join(base, "device"), "0x2335")
    write(os.path.join(base, "numa_node"), str(numa))
    write(os.path.join(base, "local_cpulist"), cpus)
    return base


ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"


def connectx_host(root):
    nic = pci(root, "0000:3b:00.0", "0x15b3", "0x020000", 0, "0-23,48-71")
    os.makedirs(os.path.join(root, "sys", "class", "infiniband", "mlx5_0"))
    os.symlink(nic, os.path.join(root, "sys", "class", "infiniband", "mlx5_0", "device"))
    port(root, "mlx5_0", 1, [
        ("fe80:0000:0000:0000:0e42:a1ff:fe6f:2b10", "IB/RoCE v1", "ens1f0np0"),
        ("fe80:0000:0000:0000:0e42:a1ff:fe6f:2b10", "RoCE v2", "ens1f0np0"),
        ("0000:0000:0000:0000:0000:ffff:0a0a:0b0b", "IB/RoCE v1", "ens1f0np0"),
        ("0000:0000:0000:0000:0000:ffff:0a0a:0b0b", "RoCE v2", "ens1f0np0"),
        (ZERO, None, None),
    ])
    netdev(root, "ens1f0np0", 9000)
    pci(root, "0000:17:00.0", "0x10de", "0x030200", 0, "0-23,48-71")
    pci(root, "0000:86:00.0", "0x10de", "0x030200", 1, "24-47,72-95")
    pci(root, "0000:00:1f.0", "0x8086", "0x060100", -1, "0-95")


def test_connectx_host_gid_index_gpus_and_nccl_env(tmp_path, monkeypatch):
    root = str(tmp_path)
    connectx_host(root)
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncat %s\n" % TOPO)
    smi.chmod(0o755)
    result = run_module(rdma_facts.main, dict(root=root, nvidia_smi_path=str(smi), nccl_gdr_level="PHB"))
    assert result["changed"] is False
    facts = result["ansible_facts"]["roce_rdma"]
    dev = facts["devices"][0]
    assert dev["name"] == "mlx5_0" and dev["pci"] == "0000:3b:00.0" and dev["numa_node"] == 0
    assert dev["ports"][0]["roce_v2_gid_index"] == 3
    assert dev["ports"][0]["ipv4"] == "10.10.11.11"
    assert dev["ports"][0]["netdev"]["mtu"] == 9000
    assert len(dev["ports"][0]["gids"]) == 4
    assert facts["ports"] == [dict(device="mlx5_0", port=1, rate_gbps=100.0, gid_index=3, ipv4="10.10.11.11",
                                   netdev="ens1f0np0", mtu=9000, link_layer="Ethernet", numa_node=0)]
    assert [g["pci"] for g in facts["gpus"]] == ["0000:17:00.0", "0000:86:00.0"]
    assert facts["gpus"][1]["numa_node"] == 1
    assert facts["affinity"]["GPU0"]["nic"] == "mlx5_0"
    assert facts["nccl_env"] == {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_GID_INDEX": "3", "NCCL_SOCKET_IFNAME": "=ens1f0np0",
                                 "NCCL_NET_GDR_LEVEL": "PHB", "OMPI_MCA_coll_hcoll_enable": "0",
                                 "HCOLL_ENABLE_MCAST_ALL": "0"}
    assert facts["commands"] == ["%s topo -m" % smi]


def test_soft_roce_vm_like_the_lab(tmp_path):
    root = str(tmp_path)
    write(os.path.join(root, "sys", "class", "infiniband", "rxe0", "parent"), "ens3")
    port(root, "rxe0", 1, [
        ("fe80:0000:0000:0000:5054:00ff:fe00:0002", "RoCE v2", "ens3"),
        ("0000:0000:0000:0000:0000:ffff:0a63:0002", "RoCE v2", "ens3"),
    ], rate="10 Gb/sec (1X QDR)")
    netdev(root, "ens3", 4200)
    facts = run_module(rdma_facts.main, dict(root=root))["ansible_facts"]["roce_rdma"]
    dev = facts["devices"][0]
    assert dev["pci"] is None and dev["parent"] == "ens3" and dev["driver"] == "rxe"
    assert facts["ports"][0]["gid_index"] == 1 and facts["ports"][0]["ipv4"] == "10.99.0.2"
    assert facts["ports"][0]["rate_gbps"] == 10.0
    assert facts["gpus"] == [] and facts["topology"] is None
    assert facts["nccl_env"]["NCCL_IB_GID_INDEX"] == "1"


def test_no_rdma_devices_and_down_ports(tmp_path):
    root = str(tmp_path)
    facts = run_module(rdma_facts.main, dict(root=root))["ansible_facts"]["roce_rdma"]
    assert facts["devices"] == [] and facts["ports"] == []
    assert facts["nccl_env"]["NCCL_IB_DISABLE"] == "1"
    port(root, "mlx5_1", 1, [], state="1: DOWN")
    facts = run_module(rdma_facts.main, dict(root=root))["ansible_facts"]["roce_rdma"]
    assert facts["devices"][0]["ports"][0]["state"] == "DOWN"
    assert facts["ports"] == []


def test_infiniband_filter_and_check_mode(tmp_path):
    root = str(tmp_path)
    connectx_host(root)
    result = run_module(rdma_facts.main, dict(root=root, link_layer="InfiniBand", gpu_topology=False), check_mode=True)
    facts = result["ansible_facts"]["roce_rdma"]
    assert facts["ports"] == [] and facts["commands"] == []
    assert result["changed"] is False


def test_nvidia_smi_failure_is_a_warning(tmp_path, monkeypatch):
    root = str(tmp_path)
    connectx_host(root)
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n")
    smi.chmod(0o755)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    facts = run_module(rdma_facts.main, dict(root=root, nvidia_smi_path=str(smi)))["ansible_facts"]["roce_rdma"]
    assert facts["topology"] is None
    assert "nvidia-smi topo -m failed (rc 9)" in warnings[0]
