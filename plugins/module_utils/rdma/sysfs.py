# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux RDMA: discovery of RDMA devices and GPUs from sysfs, and ``ofed_info``.

PRIVATE to the roce.fabric collection: may change without notice. The sysfs readers
(rdma_devices, gpus, read_port, read_netdev) only read files under ``root`` (the directory under
which ``sys/`` lives, ``/`` on a host) so they are tested against a directory tree shaped like sysfs.
Layout read: ``sys/class/infiniband/<dev>/{fw_ver,node_type,node_guid,parent,device}``,
``<dev>/ports/<n>/{state,phys_state,rate,link_layer,gids/<i>,gid_attrs/types/<i>,gid_attrs/ndevs/<i>}``,
``<dev>/device`` (PCI function; absent for software devices such as Soft-RoCE, whose ``<dev>/parent``
names the netdev), ``sys/class/net/<if>/{mtu,operstate,address,device}``,
``sys/bus/pci/devices/<bdf>/{vendor,class,device,numa_node,local_cpulist}`` and
``proc/sys/kernel/osrelease``.
"""

from __future__ import annotations

import ipaddress
import os
import re

from ansible_collections.roce.fabric.plugins.module_utils.common.files import listdir as _listdir
from ansible_collections.roce.fabric.plugins.module_utils.common.pci import read_sysfs as _read

# --- pure parsers for sysfs values and ofed_info ---------------------------------------------------------

PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
NVIDIA_VENDOR_ID = "0x10de"
# 3D controller and VGA controller.
GPU_CLASSES = ("0x0302", "0x0300")
# Kernel drivers of software RDMA devices (no PCI function), by device name prefix.
SOFTWARE_DRIVERS = (("rxe", "rxe"), ("siw", "siw"))
# Alibaba Cloud's Elastic RDMA adapter: PCI vendor 0x1ded, kernel driver erdma. Its devices are named erdma_<n>, or
# rocep<bus>s<slot> where rdma-core's udev rules name devices by their PCI address (ACK's OFED-based driver mode).
ERDMA_VENDOR_ID = "0x1ded"
ERDMA_DRIVER = "erdma"


def parse_sysfs_state(text):
    """``4: ACTIVE`` / ``5: LinkUp`` / ``1: CA`` -> ``ACTIVE`` / ``LinkUp`` / ``CA``; None when empty."""
    text = (text or "").strip()
    if not text:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text


def parse_rate_gbps(text):
    """``100 Gb/sec (2X HDR)`` -> 100.0; None when unreadable."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec", text or "")
    return float(match.group(1)) if match else None


def gid_unused(raw):
    """True for an empty or all-zero sysfs GID (an unused GID table entry)."""
    return not raw or set(raw.strip().replace(":", "")) <= {"0"}


def gid_address(gid):
    """The IPv4 address of an IPv4-mapped GID (``0000:...:ffff:0a63:0002`` -> ``10.99.0.2``) or None."""
    try:
        mapped = ipaddress.IPv6Address((gid or "").strip()).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped else None


def format_gid(raw):
    """A sysfs GID (``fe80:0000:...:5713``) in IPv6 notation (``fe80::5054:ff:fe72:5713``, ``::ffff:10.78.0.2``);
    None when it is not one."""
    try:
        address = ipaddress.IPv6Address((raw or "").strip())
    except ValueError:
        return None
    if address.ipv4_mapped:
        return "::ffff:%s" % address.ipv4_mapped
    return str(address)


def gid_entry(index, raw, gid_type, netdev):
    """One GID table entry: ``index``, ``gid`` (as sysfs prints it), ``address`` (IPv6 notation), ``type``
    (``RoCE v2``, ``IB/RoCE v1``), ``netdev`` and ``ipv4`` (the IPv4 address of an IPv4-mapped GID, or None)."""
    raw = raw.strip()
    return dict(index=index, gid=raw, address=format_gid(raw), type=gid_type, netdev=netdev, ipv4=gid_address(raw))


def roce_v2_gid(gids, ipv4_only=False):
    """The GID entry to use for RoCE v2: the first RoCE v2 GID with an IPv4 address, else (unless ``ipv4_only``)
    the first RoCE v2 GID; None when there is none."""
    v2 = [g for g in gids if (g.get("type") or "").lower() == "roce v2"]
    with_ipv4 = [g for g in v2 if g.get("ipv4")]
    return (with_ipv4 or ([] if ipv4_only else v2) or [None])[0]


def pci_of_path(path):
    """The PCI address of a sysfs device path: the nearest path component that is one."""
    for part in reversed((path or "").split("/")):
        if PCI_ADDRESS.match(part):
            return part
    return None


def software_driver(name):
    """The driver of a software RDMA device from its name (``rxe0`` -> ``rxe``), or None."""
    return next((driver for prefix, driver in SOFTWARE_DRIVERS if name.startswith(prefix)), None)


def device_transport(driver, vendor_id, node_type, link_layers):
    """How the device carries RDMA: ``eRDMA``, ``iWARP``, ``RoCE`` or ``InfiniBand`` (None when unknown).

    eRDMA is named by its driver or PCI vendor whatever its mode; otherwise an RNIC node type is iWARP, and an
    adapter (CA) is RoCE on Ethernet ports and InfiniBand on InfiniBand ports.
    """
    if driver == ERDMA_DRIVER or (vendor_id or "").lower() == ERDMA_VENDOR_ID:
        return "eRDMA"
    if node_type == "RNIC":
        return "iWARP"
    layers = set(link_layers or [])
    if "InfiniBand" in layers:
        return "InfiniBand"
    if "Ethernet" in layers:
        return "RoCE"
    return None


def erdma_mode(transport, node_type):
    """An eRDMA device's driver mode from its node type: ``roce`` (the RoCE-compatible mode, node type CA, which
    NCCL's IB transport and perftest's RoCE tests use), ``iwarp`` (the driver's default, node type RNIC) or None."""
    if transport != "eRDMA":
        return None
    return {"CA": "roce", "RNIC": "iwarp"}.get(node_type)


def parse_ofed_info(text):
    """``ofed_info -s``: ``MLNX_OFED_LINUX-24.10-1.1.4.0:`` or ``OFED-internal-24.10-1.1.4:`` -> (stack, version)."""
    match = re.search(r"(MLNX_OFED_LINUX|OFED-internal|DOCA[-_A-Za-z]*)-([0-9][0-9A-Za-z.\-]*?):?\s*$", (text or "").strip())
    if not match:
        return None, None
    stack = "mlnx_ofed" if match.group(1) == "MLNX_OFED_LINUX" else "doca_ofed"
    return stack, match.group(2)


def ofed_version_installed(text, wanted):
    """Whether ``ofed_info -s`` (``text``) names the wanted version: the wanted release's parts (split at ``.`` and
    ``-``) are the first parts of the installed one, so 24.10-1.1.4 is 24.10-1.1.4.0 and 24.10 is any 24.10 build,
    but 4.1 is not 24.10-1.1.4.0 and 24.1 is not 24.10."""
    _stack, installed = parse_ofed_info(text)
    wanted = str(wanted or "").strip()
    if not installed or not wanted:
        return False
    have, want = re.split(r"[.-]", installed), re.split(r"[.-]", wanted)
    return have[:len(want)] == want


def usable_ports(devices, link_layer=None):
    """Flatten devices to their ACTIVE ports: ``{device, port, rate_gbps, gid_index, ipv4, netdev, mtu, link_layer,
    numa_node}``."""
    result = []
    for dev in devices:
        for port in dev["ports"]:
            if port["state"] != "ACTIVE":
                continue
            if link_layer and port["link_layer"] != link_layer:
                continue
            netdev = port.get("netdev") or {}
            result.append(dict(device=dev["name"], port=port["port"], rate_gbps=port["rate_gbps"],
                               gid_index=port["roce_v2_gid_index"], ipv4=port["ipv4"], netdev=netdev.get("name"),
                               mtu=netdev.get("mtu"), link_layer=port["link_layer"], numa_node=dev["numa_node"]))
    return result


# --- sysfs readers (files under root, no command) ---------------------------------------------------------


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def kernel_release(root="/"):
    """The running kernel's release (``proc/sys/kernel/osrelease``), or None."""
    return _read(os.path.join(root, "proc", "sys", "kernel", "osrelease"))


def read_port(port_dir, port):
    """Read one port: state, physical state, link layer, rate, and its used GIDs (see gid_entry)."""
    rate_text = _read(os.path.join(port_dir, "rate"))
    gids = []
    for name in _listdir(os.path.join(port_dir, "gids")):
        if not name.isdigit():
            continue
        raw = _read(os.path.join(port_dir, "gids", name))
        if gid_unused(raw):
            continue
        # Attributes of unused entries fail to read (EINVAL) or print nothing.
        gids.append(gid_entry(int(name), raw, _read(os.path.join(port_dir, "gid_attrs", "types", name)),
                              _read(os.path.join(port_dir, "gid_attrs", "ndevs", name))))
    gids.sort(key=lambda g: g["index"])
    return dict(
        port=port,
        state=parse_sysfs_state(_read(os.path.join(port_dir, "state"))),
        phys_state=parse_sysfs_state(_read(os.path.join(port_dir, "phys_state"))),
        link_layer=_read(os.path.join(port_dir, "link_layer")),
        rate=rate_text,
        rate_gbps=parse_rate_gbps(rate_text),
        gids=gids,
    )


def read_netdev(root, name):
    """A network interface's ``name``, ``mtu``, ``operstate`` and ``address``, or None when it does not exist."""
    base = os.path.join(root, "sys", "class", "net", name)
    if not os.path.isdir(base):
        return None
    return dict(name=name, mtu=_int(_read(os.path.join(base, "mtu"))), operstate=_read(os.path.join(base, "operstate")),
                address=_read(os.path.join(base, "address")))


def _netdev_pci(root, name):
    """(PCI address, NUMA node) of a network interface's device, (None, None) for a virtual one."""
    device = os.path.join(root, "sys", "class", "net", name or "", "device")
    if not name or not os.path.exists(device):
        return None, None
    pci = pci_of_path(os.path.realpath(device))
    if not pci:
        return None, None
    return pci, _int(_read(os.path.join(root, "sys", "bus", "pci", "devices", pci, "numa_node")))


def rdma_device_names(root="/"):
    """Names of the RDMA devices, sorted."""
    return _listdir(os.path.join(root, "sys", "class", "infiniband"))


def rdma_devices(root="/", names=None):
    """Discover RDMA devices (all, or those in ``names``), sorted by name.

    Returns a list of dicts: ``name``, ``driver`` (from the device's driver link, or ``rxe``/``siw`` for
    software devices), ``software`` (no PCI function), ``fw_ver``, ``vendor_id`` (PCI vendor),
    ``transport`` and ``erdma_mode`` (see device_transport, erdma_mode), ``node_type``, ``node_guid``,
    ``pci`` (PCI address or None for software devices), ``numa_node``, ``local_cpulist``,
    ``parent`` (Soft-RoCE netdev), ``parent_pci`` and ``parent_numa_node`` (of the netdev a software
    device runs on), ``ports`` (see read_port, plus ``netdev`` (the port's interface, with ``mtu`` and
    ``operstate``), ``roce_v2_gid_index``, ``ipv4`` and ``roce_v2_ipv4_gid_index``).
    """
    base = os.path.join(root, "sys", "class", "infiniband")
    devices = []
    for name in rdma_device_names(root):
        if names is not None and name not in names:
            continue
        dev_dir = os.path.join(base, name)
        device_link = os.path.join(dev_dir, "device")
        software = not os.path.exists(device_link)
        pci = numa = cpus = driver = vendor = None
        if not software:
            candidate = os.path.basename(os.path.realpath(device_link))
            pci = candidate if PCI_ADDRESS.match(candidate) else None
            numa = _int(_read(os.path.join(device_link, "numa_node")))
            cpus = _read(os.path.join(device_link, "local_cpulist"))
            vendor = _read(os.path.join(device_link, "vendor"))
            drv = os.path.join(device_link, "driver")
            if os.path.exists(drv):
                driver = os.path.basename(os.path.realpath(drv))
        else:
            driver = software_driver(name)
        parent = _read(os.path.join(dev_dir, "parent"))
        ports = []
        for port in _listdir(os.path.join(dev_dir, "ports")):
            if not port.isdigit():
                continue
            info = read_port(os.path.join(dev_dir, "ports", port), int(port))
            chosen = roce_v2_gid(info["gids"])
            with_ipv4 = roce_v2_gid(info["gids"], ipv4_only=True)
            netdev_name = (chosen or {}).get("netdev") or next((g["netdev"] for g in info["gids"] if g.get("netdev")), None)
            if not netdev_name:
                netdev_name = parent or next(iter(_listdir(os.path.join(device_link, "net"))), None)
            info["netdev"] = read_netdev(root, netdev_name) if netdev_name else None
            info["roce_v2_gid_index"] = chosen["index"] if chosen else None
            info["ipv4"] = chosen["ipv4"] if chosen else None
            info["roce_v2_ipv4_gid_index"] = with_ipv4["index"] if with_ipv4 else None
            ports.append(info)
        parent_pci = parent_numa = None
        if software:
            lower = parent or next(((p["netdev"] or {}).get("name") for p in ports if p["netdev"]), None)
            parent_pci, parent_numa = _netdev_pci(root, lower)
        node_type = parse_sysfs_state(_read(os.path.join(dev_dir, "node_type")))
        transport = device_transport(driver, vendor, node_type, [p["link_layer"] for p in ports])
        # An SR-IOV virtual function's PCI function links to its physical function.
        virtual_function = not software and os.path.exists(os.path.join(device_link, "physfn"))
        devices.append(dict(name=name, driver=driver, software=software, virtual_function=virtual_function,
                            fw_ver=_read(os.path.join(dev_dir, "fw_ver")),
                            vendor_id=vendor, transport=transport, erdma_mode=erdma_mode(transport, node_type),
                            node_type=node_type, node_guid=_read(os.path.join(dev_dir, "node_guid")),
                            pci=pci, numa_node=numa, local_cpulist=cpus, parent=parent, parent_pci=parent_pci,
                            parent_numa_node=parent_numa, ports=ports))
    return devices


def gpus(root="/"):
    """NVIDIA GPUs on the PCI bus: ``pci``, ``device_id``, ``numa_node``, ``local_cpulist``."""
    base = os.path.join(root, "sys", "bus", "pci", "devices")
    found = []
    for name in _listdir(base):
        dev = os.path.join(base, name)
        if _read(os.path.join(dev, "vendor")) != NVIDIA_VENDOR_ID:
            continue
        klass = _read(os.path.join(dev, "class")) or ""
        if not klass.startswith(GPU_CLASSES):
            continue
        found.append(dict(pci=name, device_id=_read(os.path.join(dev, "device")),
                          numa_node=_int(_read(os.path.join(dev, "numa_node"))),
                          local_cpulist=_read(os.path.join(dev, "local_cpulist"))))
    return found
