# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.vmx_passthru: wanted keys from the options and NUMA warnings (pure logic, no vSphere)."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.esxi import vmx

NVIDIA = 0x10DE
MELLANOX = 0x15B3
ATTACHED = [("0000:17:00.0", NVIDIA), ("0000:31:00.0", NVIDIA), ("0000:3b:00.0", MELLANOX)]
NUMA = {"0000:17:00.0": 0, "0000:31:00.0": 0, "0000:3b:00.0": 0, "0000:b1:00.0": 1}


Failed = FabricError


def module_params(**params):
    """The module's parameters with the given ones set."""
    defaults = dict(allow_p2p=None, relax_acs_for_p2p=None, use_64bit_mmio=None, mmio_size_gb=None,
                    numa_node_affinity=None, devices=None, extra_config=None, remove_keys=None)
    defaults.update(params)
    return defaults


def keys(**params):
    return vmx.wanted_keys(module_params(**params), ATTACHED, NUMA)


def test_named_keys_and_auto_numa():
    assert keys(allow_p2p=True, relax_acs_for_p2p=True, use_64bit_mmio=False, mmio_size_gb=512, numa_node_affinity="auto") == {
        "pciPassthru.allowP2P": "true", "pciPassthru.RelaxACSforP2P": "true", "pciPassthru.use64bitMMIO": "false",
        "pciPassthru.64bitMMIOSizeGB": "512", "numa.nodeAffinity": "0"}


def test_devices_are_normalised_and_empty_removes():
    assert keys(devices=[dict(index=0, gpu_pci_id="17:00.0"), dict(index=1, gpu_pci_id="")]) == {
        "pciPassthru0.cfg.gpu-pci-id": "0000:17:00.0", "pciPassthru1.cfg.gpu-pci-id": None}


def test_explicit_numa_nodes_sorted_and_extra_and_removal():
    assert keys(numa_node_affinity="1, 0", extra_config={"a.b": 3, "c": ""}, remove_keys=["d"]) == {
        "numa.nodeAffinity": "0,1", "a.b": "3", "c": None, "d": None}


@pytest.mark.parametrize("params, message", [
    (dict(devices=[dict(index=0, gpu_pci_id="0000:17:00.8")]), "is not a PCI address"),
    (dict(devices=[dict(index=0, gpu_pci_id="0000:b1:00.0")]), "is not a passthrough device of this VM"),
    (dict(devices=[dict(index=3, gpu_pci_id="0000:17:00.0")]), "index 3, but the VM has 3"),
    (dict(mmio_size_gb=96), "power of two"),
    (dict(numa_node_affinity="node0"), "numa_node_affinity must be"),
    (dict(allow_p2p=True, remove_keys=["pciPassthru.allowP2P"]), "both set and in remove_keys"),
])
def test_bad_input(params, message):
    with pytest.raises(Failed, match=message):
        keys(**params)


def test_auto_without_gpu_follows_the_nics_and_without_devices_fails():
    nics_only = vmx.wanted_keys(module_params(numa_node_affinity="auto"), [("0000:3b:00.0", MELLANOX)], {"0000:3b:00.0": 1})
    assert nics_only == {"numa.nodeAffinity": "1"}
    with pytest.raises(Failed, match="no PCI passthrough device"):
        vmx.wanted_keys(module_params(numa_node_affinity="auto"), [], NUMA)


def test_numa_warning_only_on_mismatch():
    assert vmx.numa_warnings(ATTACHED, NUMA) == []
    warnings = vmx.numa_warnings([("0000:b1:00.0", NVIDIA), ("0000:3b:00.0", MELLANOX)], NUMA)
    assert len(warnings) == 1 and "GPU 0000:b1:00.0 is on NUMA node 1 and NIC 0000:3b:00.0 on node 0" in warnings[0]
