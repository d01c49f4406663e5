# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ESXi VMs: the VMX (extraConfig) keys GPUDirect RDMA needs, wanted against what the VM has, compared once.

PRIVATE to the roce.fabric collection: may change without notice.

``wanted_keys`` turns the task's options into ``{key: value or None (remove)}`` and refuses what
cannot be right; ``compare`` is the one comparison with the VM's extraConfig, from which both the
reconfiguration and the ``--diff`` are read.
"""

from __future__ import annotations

import re

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import normalize_pci_address
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError

NVIDIA_VENDOR = 0x10DE
NAMED_KEYS = (
    ("allow_p2p", "pciPassthru.allowP2P"),
    ("relax_acs_for_p2p", "pciPassthru.RelaxACSforP2P"),
    ("use_64bit_mmio", "pciPassthru.use64bitMMIO"),
    ("mmio_size_gb", "pciPassthru.64bitMMIOSizeGB"),
)


def text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def wanted_keys(params, attached, numa):
    """{key: text or None (remove)} from the options; fails on bad input before anything is changed."""
    want = {}
    for option, key in NAMED_KEYS:
        if params[option] is not None:
            want[key] = text(params[option])
    if params["mmio_size_gb"] is not None and (params["mmio_size_gb"] <= 0 or params["mmio_size_gb"] & (params["mmio_size_gb"] - 1)):
        raise FabricError("mmio_size_gb must be a power of two (e.g. 64, 128, 512), not %d" % params["mmio_size_gb"])
    attached_ids = [a for a, _v in attached]
    for device in params["devices"] or []:
        index = device["index"]
        if index < 0 or index >= max(len(attached), 1) and attached:
            raise FabricError("devices: index %d, but the VM has %d passthrough device(s) (pciPassthru0..%d)" % (
                index, len(attached), len(attached) - 1))
        key = "pciPassthru%d.cfg.gpu-pci-id" % index
        if device["gpu_pci_id"] == "":
            want[key] = None
            continue
        try:
            address = normalize_pci_address(device["gpu_pci_id"])
        except ValueError as exc:
            raise FabricError("devices[index=%d].gpu_pci_id: %s" % (index, exc))
        if address not in attached_ids:
            raise FabricError("devices[index=%d].gpu_pci_id %s is not a passthrough device of this VM (attached: %s)" % (
                index, address, ", ".join(attached_ids) or "none"))
        want[key] = address
    affinity = params["numa_node_affinity"]
    if affinity is not None:
        if affinity == "":
            want["numa.nodeAffinity"] = None
        elif affinity == "auto":
            # The GPUs' node; a VM with passthrough NICs only follows its NICs.
            gpus = [a for a, vendor in attached if vendor is not None and (vendor & 0xFFFF) == NVIDIA_VENDOR]
            devices = gpus or attached_ids
            if not devices:
                raise FabricError("numa_node_affinity=auto: the VM has no PCI passthrough device to take the NUMA node from")
            nodes = sorted(set(numa[a] for a in devices if a in numa))
            if not nodes:
                raise FabricError("numa_node_affinity=auto: the host does not report the NUMA node of %s" % ", ".join(devices))
            want["numa.nodeAffinity"] = ",".join(str(n) for n in nodes)
        else:
            parts = [p.strip() for p in affinity.split(",")]
            if not all(p.isdigit() for p in parts):
                raise FabricError("numa_node_affinity must be 'auto', '' or node numbers like '0' or '0,1', not '%s'" % affinity)
            want["numa.nodeAffinity"] = ",".join(str(n) for n in sorted(set(int(p) for p in parts)))
    for key, value in (params["extra_config"] or {}).items():
        if value is None or isinstance(value, (dict, list)):
            raise FabricError("extra_config: '%s' needs a scalar value ('' removes the key)" % key)
        want[str(key)] = None if text(value) == "" else text(value)
    for key in params["remove_keys"] or []:
        if key in want and want[key] is not None:
            raise FabricError("key '%s' is both set and in remove_keys" % key)
        want[key] = None
    return want


def numa_warnings(attached, numa):
    gpus = dict((a, numa.get(a)) for a, vendor in attached if vendor is not None and (vendor & 0xFFFF) == NVIDIA_VENDOR)
    nics = dict((a, numa.get(a)) for a, vendor in attached if not (vendor is not None and (vendor & 0xFFFF) == NVIDIA_VENDOR))
    warnings = []
    for gpu, gnode in sorted(gpus.items()):
        for nic, nnode in sorted(nics.items()):
            if gnode is not None and nnode is not None and gnode != nnode:
                warnings.append("GPU %s is on NUMA node %d and NIC %s on node %d: peer-to-peer traffic between them crosses "
                                "the inter-socket link; place both on one node for GPUDirect RDMA" % (gpu, gnode, nic, nnode))
    return warnings


def current_keys(extra_config):
    """The VM's extraConfig as ``{key: text}``; a key with an empty value is not set."""
    current = {}
    for option in extra_config or []:
        if option.value is not None and str(option.value) != "":
            current[option.key] = str(option.value)
    return current


_VMX_BOOLEANS = ("true", "false")
_VMX_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def same_vmx_value(before, after):
    """Whether the VM already holds ``after``, compared as VMware reads a VMX value: booleans by meaning (``TRUE``,
    ``True`` and ``true`` alike: VMware writes ``TRUE``, other tools such as community.vmware's vmware_guest keep the
    case they were given), whole numbers by value (``512`` and ``0512``), any other value as exact text."""
    if before is None or after is None:
        return before is after
    left, right = before.strip(), after.strip()
    if left.lower() in _VMX_BOOLEANS and right.lower() in _VMX_BOOLEANS:
        return left.lower() == right.lower()
    if _VMX_INTEGER.match(left) and _VMX_INTEGER.match(right):
        return int(left) == int(right)
    return before == after


def current_value(current, key):
    """The VM's value of ``key``; VMX keys match without regard to case."""
    if key in current:
        return current[key]
    folded = key.lower()
    for name, value in current.items():
        if name.lower() == folded:
            return value
    return None


def compare(want, current):
    """``{key: dict(before, after)}`` for every wanted key that differs (after None: remove the key)."""
    changes = {}
    for key, value in sorted(want.items()):
        before = current_value(current, key)
        if not same_vmx_value(before, value):
            changes[key] = dict(before=before, after=value)
    return changes


def diff_of(changes):
    return (dict((key, change["before"]) for key, change in changes.items()),
            dict((key, change["after"]) for key, change in changes.items()))
