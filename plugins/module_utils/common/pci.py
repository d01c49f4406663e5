# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PCI addresses and sysfs lookups for RDMA NICs and GPUs.

PRIVATE to the roce.fabric collection: may change without notice.

Functions take ``root`` (the directory under which ``sys/`` lives, ``/`` on a host) so they can
be tested against a directory tree shaped like sysfs.
"""

from __future__ import annotations

import os
import re

MELLANOX_VENDOR_ID = "0x15b3"
# PCI class codes (upper 16 bits of the 24-bit class): Ethernet, InfiniBand, other network.
NETWORK_CLASSES = ("0x0200", "0x0207", "0x0280")

PCI_RE = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{1,4}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<slot>[0-9a-fA-F]{1,2})\.(?P<function>[0-7])$"
)
IFNAME_RE = re.compile(r"^[^\s/:]{1,15}$")


def normalize_pci_address(address):
    """Return ``dddd:bb:ss.f`` in lower case, or raise ValueError with the reason.

    Accepts ``bb:ss.f`` and ``dddd:bb:ss.f`` in any case; slot must be at most 0x1f.
    """
    match = PCI_RE.match((address or "").strip())
    if not match:
        raise ValueError("'%s' is not a PCI address (expected [domain:]bus:slot.function, e.g. 0000:3b:00.0)" % address)
    slot = int(match.group("slot"), 16)
    if slot > 0x1F:
        raise ValueError("'%s' is not a PCI address: slot 0x%02x is above 0x1f" % (address, slot))
    return "%04x:%02x:%02x.%s" % (
        int(match.group("domain") or "0", 16),
        int(match.group("bus"), 16),
        slot,
        match.group("function"),
    )


def looks_like_pci_address(text):
    """True when text is shaped like a PCI address (even an invalid one), so errors can say so."""
    return bool(re.match(r"^[0-9a-fA-F]{1,4}(:[0-9a-fA-F]{1,4})?:[0-9a-fA-F]{1,4}\.[0-9a-fA-F]+$", (text or "").strip()))


def read_sysfs(path):
    """A sysfs (or configfs, procfs) file's text without surrounding whitespace, or None when it cannot be read."""
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError, ValueError):
        return None


def pci_device_dir(address, root="/"):
    return os.path.join(root, "sys", "bus", "pci", "devices", address)


def pci_device_info(address, root="/"):
    """Facts about one PCI function from sysfs, or None when it does not exist."""
    path = pci_device_dir(address, root)
    if not os.path.isdir(path):
        return None
    net_dir = os.path.join(path, "net")
    netdevs = sorted(os.listdir(net_dir)) if os.path.isdir(net_dir) else []
    numa = read_sysfs(os.path.join(path, "numa_node"))
    physfn = os.path.join(path, "physfn")
    return dict(
        address=address,
        vendor=read_sysfs(os.path.join(path, "vendor")),
        device=read_sysfs(os.path.join(path, "device")),
        pci_class=read_sysfs(os.path.join(path, "class")),
        numa_node=int(numa) if numa not in (None, "") and re.match(r"^-?\d+$", numa) else None,
        netdevs=netdevs,
        physfn=os.path.basename(os.path.realpath(physfn)) if os.path.exists(physfn) else None,
    )


def netdev_pci_address(ifname, root="/"):
    """PCI address behind a network interface, or raise ValueError with the reason."""
    if not IFNAME_RE.match(ifname or ""):
        raise ValueError("'%s' is not a valid network interface name" % ifname)
    net = os.path.join(root, "sys", "class", "net", ifname)
    if not os.path.exists(net):
        raise ValueError("network interface '%s' does not exist on this host" % ifname)
    device = os.path.join(net, "device")
    if not os.path.exists(device):
        raise ValueError("network interface '%s' is not backed by a PCI device (virtual interface?)" % ifname)
    address = os.path.basename(os.path.realpath(device))
    try:
        return normalize_pci_address(address)
    except ValueError:
        raise ValueError("network interface '%s' sits on '%s', which is not a PCI device" % (ifname, address))


def is_network_class(pci_class):
    return bool(pci_class) and pci_class[:6].lower() in NETWORK_CLASSES


def _is_mellanox_pf(info):
    return bool(info) and (info["vendor"] or "").lower() == MELLANOX_VENDOR_ID and not info["physfn"] and is_network_class(info["pci_class"])


def adapter_address(address, root="/"):
    """The first NVIDIA/Mellanox physical network function in the same slot as ``address``.

    Ports of one adapter share its firmware configuration. A VM that was given only one
    function keeps that one.
    """
    slot = address.rsplit(".", 1)[0]
    for function in range(8):
        candidate = "%s.%d" % (slot, function)
        if candidate == address or _is_mellanox_pf(pci_device_info(candidate, root)):
            return candidate
    return address


def list_mellanox_nics(root="/"):
    """Physical NVIDIA/Mellanox network functions, one per adapter (lowest function of a slot).

    Virtual functions and non-network functions (bridges of a BlueField, for instance) are skipped.
    """
    base = os.path.join(root, "sys", "bus", "pci", "devices")
    if not os.path.isdir(base):
        return []
    by_slot = {}
    for name in sorted(os.listdir(base)):
        try:
            address = normalize_pci_address(name)
        except ValueError:
            continue
        if not _is_mellanox_pf(pci_device_info(name, root)):
            continue
        slot = address.rsplit(".", 1)[0]
        by_slot.setdefault(slot, address)
    return [by_slot[slot] for slot in sorted(by_slot)]
