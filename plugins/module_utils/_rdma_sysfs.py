# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RDMA device and GPU discovery from sysfs.

PRIVATE to the roce.fabric collection: may change without notice.

Functions take ``root`` (the directory under which ``sys/`` lives, ``/`` on a host) so they are
tested against a directory tree shaped like sysfs. Layout read here:
``sys/class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer,gids/<i>,
gid_attrs/types/<i>,gid_attrs/ndevs/<i>}``, ``<dev>/device`` (PCI function; absent for Soft-RoCE,
whose ``<dev>/parent`` names the netdev), ``sys/class/net/<if>/{mtu,operstate}`` and
``sys/bus/pci/devices/<bdf>/{vendor,class,numa_node,local_cpulist}``.
"""

from __future__ import annotations

import ipaddress
import os
import re

NVIDIA_VENDOR_ID = "0x10de"
# 3D controller and VGA controller.
GPU_CLASSES = ("0x0302", "0x0300")
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError, ValueError):
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def gid_address(gid):
    """Return the IPv4 address of an IPv4-mapped GID (``0000:...:ffff:0a63:0002`` -> ``10.99.0.2``) or None."""
    try:
        address = ipaddress.IPv6Address(gid)
    except (ipaddress.AddressValueError, ValueError):
        return None
    mapped = address.ipv4_mapped
    return str(mapped) if mapped else None


def _state_word(text):
    # sysfs prints "4: ACTIVE", "5: LinkUp".
    if not text:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def read_port(port_dir, port):
    """Read one port: state, link layer, rate, and its GIDs (type, netdev, IPv4 address)."""
    rate_text = _read(os.path.join(port_dir, "rate"))
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec", rate_text or "")
    gids = []
    for name in _listdir(os.path.join(port_dir, "gids")):
        if not name.isdigit():
            continue
        gid = _read(os.path.join(port_dir, "gids", name))
        if not gid or gid == ZERO_GID:
            continue
        # Unset entries fail to read (EINVAL) or print nothing.
        gid_type = _read(os.path.join(port_dir, "gid_attrs", "types", name))
        ndev = _read(os.path.join(port_dir, "gid_attrs", "ndevs", name))
        gids.append(dict(index=int(name), gid=gid, type=gid_type, netdev=ndev, ipv4=gid_address(gid)))
    gids.sort(key=lambda g: g["index"])
    return dict(
        port=port,
        state=_state_word(_read(os.path.join(port_dir, "state"))),
        phys_state=_state_word(_read(os.path.join(port_dir, "phys_state"))),
        link_layer=_read(os.path.join(port_dir, "link_layer")),
        rate=rate_text,
        rate_gbps=float(match.group(1)) if match else None,
        gids=gids,
    )


def roce_v2_gid(gids):
    """Pick the GID index to use for RoCE v2: the first RoCE v2 GID with an IPv4 address, else the first RoCE v2 GID."""
    v2 = [g for g in gids if (g.get("type") or "").lower() == "roce v2"]
    with_ipv4 = [g for g in v2 if g.get("ipv4")]
    chosen = (with_ipv4 or v2 or [None])[0]
    return chosen


def read_netdev(root, name):
    base = os.path.join(root, "sys", "class", "net", name)
    if not os.path.isdir(base):
        return None
    return dict(name=name, mtu=_int(_read(os.path.join(base, "mtu"))), operstate=_read(os.path.join(base, "operstate")),
                address=_read(os.path.join(base, "address")))


def rdma_devices(root="/"):
    """Discover RDMA devices.

    Returns a list of dicts: ``name``, ``driver`` (from the device's module link, if any),
    ``pci`` (PCI address or None for software devices), ``numa_node``, ``local_cpulist``,
    ``parent`` (Soft-RoCE netdev), ``ports`` (see read_port, plus ``netdev`` (the port's
    interface, with ``mtu`` and ``operstate``), ``roce_v2_gid_index`` and ``ipv4``).
    """
    base = os.path.join(root, "sys", "class", "infiniband")
    devices = []
    for name in _listdir(base):
        dev_dir = os.path.join(base, name)
        device_link = os.path.join(dev_dir, "device")
        pci = None
        numa = None
        cpus = None
        driver = None
        if os.path.exists(device_link):
            real = os.path.realpath(device_link)
            candidate = os.path.basename(real)
            if re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", candidate):
                pci = candidate
            numa = _int(_read(os.path.join(device_link, "numa_node")))
            cpus = _read(os.path.join(device_link, "local_cpulist"))
            drv = os.path.join(device_link, "driver")
            if os.path.exists(drv):
                driver = os.path.basename(os.path.realpath(drv))
        parent = _read(os.path.join(dev_dir, "parent"))
        if driver is None and parent:
            driver = "rxe" if name.startswith("rxe") else None
        ports = []
        for port in _listdir(os.path.join(dev_dir, "ports")):
            if not port.isdigit():
                continue
            info = read_port(os.path.join(dev_dir, "ports", port), int(port))
            chosen = roce_v2_gid(info["gids"])
            netdev_name = (chosen or {}).get("netdev") or next((g["netdev"] for g in info["gids"] if g.get("netdev")), None)
            if not netdev_name:
                netdev_name = parent or next(iter(_listdir(os.path.join(device_link, "net"))), None)
            info["netdev"] = read_netdev(root, netdev_name) if netdev_name else None
            info["roce_v2_gid_index"] = chosen["index"] if chosen else None
            info["ipv4"] = chosen["ipv4"] if chosen else None
            ports.append(info)
        devices.append(dict(name=name, driver=driver, pci=pci, numa_node=numa, local_cpulist=cpus, parent=parent,
                            ports=ports))
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


def usable_ports(devices, link_layer=None):
    """Flatten devices to their ACTIVE ports: ``{device, port, rate_gbps, gid_index, ipv4, netdev, mtu, numa_node}``."""
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
