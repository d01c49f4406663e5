# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.rdma_facts on sysfs trees shaped like a ConnectX host, a Soft-RoCE VM and the lab VM's rxe0."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.modules import rdma_facts
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

TOPO = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "gpu", "topo_2gpu_2nic_2numa_built.txt")


@pytest.fixture(autouse=True)
def no_tools_on_the_path(monkeypatch):
    """Neither ofed_info nor nvidia-smi is found unless a test says so (the machine running the tests may have them)."""
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: None)


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
    smi.write_text("#!/bin/sh\nsed '/^%%%%/d' %s\n" % TOPO)
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


# --- driver stack, firmware, node type/GUID, GID table in IPv6 notation, the devices filter ------------------


@pytest.fixture
def lab_vm_and_connectx(tmp_path):
    """The lab VM's rxe0 on enp1s0 (a virtio NIC behind a PCIe root port, values as read in the VM) and a
    ConnectX-6 Dx port with RoCE v1 and v2 GIDs for each address, IPv4 second."""
    root = str(tmp_path)
    sys_dir = os.path.join(root, "sys")
    ib, net, pci_dir = (os.path.join(sys_dir, "class", "infiniband"), os.path.join(sys_dir, "class", "net"),
                        os.path.join(sys_dir, "bus", "pci", "devices"))
    devices = os.path.join(sys_dir, "devices", "pci0000:00")
    virtio = os.path.join(devices, "0000:00:04.0", "0000:01:00.0", "virtio2")
    os.makedirs(virtio)
    write(os.path.join(pci_dir, "0000:01:00.0", "numa_node"), "-1")
    write(os.path.join(net, "enp1s0", "mtu"), "1500")
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
    cx = os.path.join(devices, "0000:3b:00.0")
    write(os.path.join(cx, "numa_node"), "0")
    os.makedirs(os.path.join(sys_dir, "bus", "pci", "drivers", "mlx5_core"))
    os.symlink(os.path.join(sys_dir, "bus", "pci", "drivers", "mlx5_core"), os.path.join(cx, "driver"))
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
    write(os.path.join(root, "proc", "sys", "kernel", "osrelease"), "6.1.0-50-amd64")
    return root


def test_soft_roce_device_as_in_the_lab(lab_vm_and_connectx):
    result = run_module(rdma_facts.main, dict(root=lab_vm_and_connectx, devices=["rxe0"]))
    assert not result["failed"] and not result["changed"]
    facts = result["ansible_facts"]["roce_rdma"]
    (rxe,) = facts["devices"]
    assert rxe["driver"] == "rxe" and rxe["software"] and rxe["fw_ver"] == "0.0.0" and rxe["node_type"] == "CA"
    assert rxe["pci"] is None and rxe["numa_node"] is None and rxe["parent"] == "enp1s0"
    assert rxe["parent_pci"] == "0000:01:00.0" and rxe["parent_numa_node"] == -1
    port = rxe["ports"][0]
    assert port["netdev"]["name"] == "enp1s0" and port["state"] == "ACTIVE" and port["phys_state"] == "LinkUp"
    assert port["link_layer"] == "Ethernet" and port["rate_gbps"] == 2.5
    assert [g["address"] for g in port["gids"]] == ["fe80::5054:ff:fe72:5713", "::ffff:10.78.0.2"]
    assert [g["ipv4"] for g in port["gids"]] == [None, "10.78.0.2"]
    assert port["roce_v2_ipv4_gid_index"] == 1 == port["roce_v2_gid_index"]
    assert facts["driver"] == {"stack": "inbox", "version": "6.1.0-50-amd64"}
    # The filter also limits the active ports and the NCCL environment.
    assert [p["device"] for p in facts["ports"]] == ["rxe0"] and facts["nccl_env"]["NCCL_IB_HCA"] == "=rxe0:1"
    assert facts["commands"] == []


def test_connectx_port_picks_the_roce_v2_ipv4_gid(lab_vm_and_connectx):
    facts = run_module(rdma_facts.main, dict(root=lab_vm_and_connectx))["ansible_facts"]["roce_rdma"]
    assert [d["name"] for d in facts["devices"]] == ["mlx5_0", "rxe0"]
    mlx = facts["devices"][0]
    assert mlx["driver"] == "mlx5_core" and not mlx["software"] and mlx["fw_ver"] == "22.36.1010"
    assert mlx["pci"] == "0000:3b:00.0" and mlx["numa_node"] == 0 and mlx["node_type"] == "CA"
    assert mlx["node_guid"] == "0c42:a103:008d:1a2b" and mlx["parent_pci"] is None and mlx["parent_numa_node"] is None
    port = mlx["ports"][0]
    assert port["roce_v2_ipv4_gid_index"] == 3 == port["roce_v2_gid_index"] and port["ipv4"] == "192.168.100.1"
    assert [(g["index"], g["type"]) for g in port["gids"]] == [
        (0, "IB/RoCE v1"), (1, "RoCE v2"), (2, "IB/RoCE v1"), (3, "RoCE v2")]
    assert port["gids"][3]["address"] == "::ffff:192.168.100.1"
    # No sysfs entry for ens1f0np0 in this tree: the GID names it but there is nothing to read.
    assert port["netdev"] is None
    assert [(p["device"], p["gid_index"]) for p in facts["ports"]] == [("mlx5_0", 3), ("rxe0", 1)]


def test_roce_v2_ipv4_gid_index_is_null_without_an_ipv4_gid(tmp_path):
    root = str(tmp_path)
    port(root, "rxe0", 1, [("fe80:0000:0000:0000:5054:00ff:fe00:0002", "RoCE v2", "ens3")])
    dev_port = run_module(rdma_facts.main, dict(root=root))["ansible_facts"]["roce_rdma"]["devices"][0]["ports"][0]
    assert dev_port["roce_v2_gid_index"] == 0 and dev_port["ipv4"] is None
    assert dev_port["roce_v2_ipv4_gid_index"] is None


def test_unknown_device_is_an_error(lab_vm_and_connectx):
    result = run_module(rdma_facts.main, dict(root=lab_vm_and_connectx, devices=["mlx5_9", "rxe0"]))
    assert result["failed"] and "mlx5_9" in result["msg"] and "found: mlx5_0, rxe0" in result["msg"]
    result = run_module(rdma_facts.main, dict(root=str(lab_vm_and_connectx) + "/nothing", devices=["rxe0"]))
    assert result["failed"] and "found: none" in result["msg"]


def test_nvidia_stack_from_ofed_info(lab_vm_and_connectx, tmp_path, monkeypatch):
    ofed_info = tmp_path / "ofed_info"
    ofed_info.write_text("#!/bin/sh\necho MLNX_OFED_LINUX-24.10-1.1.4.0:\n")
    ofed_info.chmod(0o755)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: str(ofed_info) if name == "ofed_info" else None)
    facts = run_module(rdma_facts.main, dict(root=lab_vm_and_connectx))["ansible_facts"]["roce_rdma"]
    assert facts["driver"] == {"stack": "mlnx_ofed", "version": "24.10-1.1.4.0"}
    assert facts["commands"] == ["%s -s" % ofed_info]
    # An ofed_info that fails or prints something else leaves the inbox stack.
    ofed_info.write_text("#!/bin/sh\necho broken\nexit 1\n")
    facts = run_module(rdma_facts.main, dict(root=lab_vm_and_connectx))["ansible_facts"]["roce_rdma"]
    assert facts["driver"] == {"stack": "inbox", "version": "6.1.0-50-amd64"}


def devinfo(name):
    """The device and port values of a published ``ibv_devinfo`` block (fixtures/ibverbs), read line by line."""
    path = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "ibverbs", name)
    values = {}
    with open(path) as handle:
        for line in handle:
            if line.startswith("%%") or ":" not in line:
                continue
            key, value = line.split(":", 1)
            values.setdefault(key.strip(), value.strip())
    return values


def erdma_host(root, name, node_type, values, bdf="0000:00:0b.0"):
    """An eRDMA device as sysfs shows it: the PCI function (vendor 0x1ded, driver erdma), the device's files and
    port 1, with the values the published ibv_devinfo printed for it."""
    nic = pci(root, bdf, values["vendor_id"], "0x020000", -1, "0-63")
    driver = os.path.join(root, "sys", "bus", "pci", "drivers", "erdma")
    os.makedirs(driver)
    os.symlink(driver, os.path.join(nic, "driver"))
    dev = os.path.join(root, "sys", "class", "infiniband", name)
    os.makedirs(dev)
    os.symlink(nic, os.path.join(dev, "device"))
    write(os.path.join(dev, "node_type"), node_type)
    write(os.path.join(dev, "fw_ver"), values["fw_ver"])
    write(os.path.join(dev, "node_guid"), values["node_guid"])
    state = {"PORT_ACTIVE (4)": "4: ACTIVE"}[values["state"]]
    port(root, name, 1, [("0000:0000:0000:0000:0000:ffff:0a00:054c", "RoCE v2", "eth1")], state=state,
         rate="25 Gb/sec (1X EDR)", layer=values["link_layer"])
    netdev(root, "eth1", 1500)


def test_erdma_device_in_roce_mode_is_named_erdma(tmp_path, monkeypatch):
    """Alibaba Cloud's Elastic RDMA on an H20 instance (the values of fixtures/ibverbs/ibv_devinfo_erdma_h20_excerpt.txt:
    transport eRDMA (0), i.e. node type CA, vendor 0x1ded, firmware 0.2.0, Ethernet link layer)."""
    root = str(tmp_path)
    values = devinfo("ibv_devinfo_erdma_h20_excerpt.txt")
    assert values["transport"] == "eRDMA (0)"
    erdma_host(root, values["hca_id"], "1: CA", values)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    result = run_module(rdma_facts.main, dict(root=root))
    facts = result["ansible_facts"]["roce_rdma"]
    dev = facts["devices"][0]
    assert (dev["name"], dev["driver"], dev["vendor_id"], dev["transport"], dev["erdma_mode"]) == \
        ("erdma_0", "erdma", "0x1ded", "eRDMA", "roce")
    assert dev["fw_ver"] == "0.2.0" and dev["node_guid"] == "0216:3eff:fe2f:3775" and dev["pci"] == "0000:00:0b.0"
    assert facts["ports"][0]["gid_index"] == 0 and facts["ports"][0]["ipv4"] == "10.0.5.76"
    assert facts["nccl_env"]["NCCL_IB_HCA"] == "=erdma_0:1" and facts["nccl_env"]["NCCL_IB_GID_INDEX"] == "0"
    assert warnings == []


def test_erdma_device_named_by_pci_address_in_iwarp_mode_warns(tmp_path, monkeypatch):
    """ACK names eRDMA devices by their PCI address where rdma-core's udev rules do (rocep26s0 in Alibaba's NCCL log,
    fixtures/nccl/info_erdma_rocep_ack_doc.log); the driver and vendor still say eRDMA. Node type RNIC: iWARP mode."""
    root = str(tmp_path)
    values = devinfo("ibv_devinfo_erdma_h20_excerpt.txt")
    erdma_host(root, "rocep26s0", "4: RNIC", values, bdf="0000:1a:00.0")
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    result = run_module(rdma_facts.main, dict(root=root))
    dev = result["ansible_facts"]["roce_rdma"]["devices"][0]
    assert (dev["name"], dev["transport"], dev["erdma_mode"]) == ("rocep26s0", "eRDMA", "iwarp")
    assert any("rocep26s0" in w and "iWARP mode" in w for w in warnings)


def test_transport_of_other_devices():
    from ansible_collections.roce.fabric.plugins.module_utils.rdma import sysfs
    assert sysfs.device_transport("mlx5_core", "0x15b3", "CA", ["Ethernet"]) == "RoCE"
    assert sysfs.device_transport("mlx5_core", "0x15b3", "CA", ["InfiniBand"]) == "InfiniBand"
    assert sysfs.device_transport("irdma", "0x8086", "RNIC", ["Ethernet"]) == "iWARP"
    assert sysfs.device_transport("rxe", None, "CA", ["Ethernet"]) == "RoCE"
    assert sysfs.device_transport(None, "0x1DED", "RNIC", []) == "eRDMA"
    assert sysfs.device_transport(None, None, None, []) is None
    assert sysfs.erdma_mode("RoCE", "CA") is None


def test_a_virtual_function_is_named_and_auto_nic_qos_leaves_it_and_soft_roce_out(tmp_path):
    """An SR-IOV VF's PCI function links to its physical function (physfn, as sysfs shows a VF); rdma_facts says so,
    and nic_qos_interfaces: auto (module_utils/qos/host.py) takes the physical port only."""
    from ansible_collections.roce.fabric.plugins.module_utils.qos.host import interfaces
    root = str(tmp_path)
    connectx_host(root)
    vf = pci(root, "0000:3b:00.2", "0x15b3", "0x020000", 0, "0-23,48-71")
    os.symlink(os.path.join(root, "sys", "bus", "pci", "devices", "0000:3b:00.0"), os.path.join(vf, "physfn"))
    os.makedirs(os.path.join(root, "sys", "class", "infiniband", "mlx5_2"))
    os.symlink(vf, os.path.join(root, "sys", "class", "infiniband", "mlx5_2", "device"))
    port(root, "mlx5_2", 1, [("fe80:0000:0000:0000:0000:00ff:fe00:0001", "RoCE v2", "ens1f0v0")])
    netdev(root, "ens1f0v0", 9000)
    result = run_module(rdma_facts.main, dict(root=root, gpu_topology=False))
    devices = result["ansible_facts"]["roce_rdma"]["devices"]
    assert [(d["name"], d["virtual_function"]) for d in devices] == [("mlx5_0", False), ("mlx5_2", True)]
    assert [n["netdev"] for n in interfaces("auto", devices)] == ["ens1f0np0"]
