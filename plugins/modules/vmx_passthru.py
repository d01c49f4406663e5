#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vmx_passthru
short_description: Declarative VM passthrough and PCIe peer-to-peer keys (VMX advanced settings) for GPUDirect RDMA
version_added: 1.0.0
description:
  - Sets the VM configuration keys that GPUDirect RDMA between passed-through GPUs and NICs needs inside a VM on
    VMware ESXi, as VM advanced settings (C(extraConfig)) through vCenter or the host's API (pyVmomi).
  - "Named options map to keys: O(allow_p2p) C(pciPassthru.allowP2P), O(relax_acs_for_p2p)
    C(pciPassthru.RelaxACSforP2P), O(use_64bit_mmio) C(pciPassthru.use64bitMMIO), O(mmio_size_gb)
    C(pciPassthru.64bitMMIOSizeGB), O(numa_node_affinity) C(numa.nodeAffinity), O(devices) C(pciPassthruN.cfg.gpu-pci-id)."
  - Reads the VM's attached PCI passthrough devices; every O(devices[].gpu_pci_id) must name one of them (a GPU's
    address, or a virtual function's when the GPU is in SR-IOV mode).
  - With O(numa_node_affinity=auto) the NUMA node comes from the host's PCI topology (the NUMA node of each
    attached device); the module warns when the VM's GPU and NIC sit on different NUMA nodes.
  - These keys are read when the VM powers on. Changing them on a running VM reports O(ignore:power_cycle_required);
    with O(power_cycle=true) the module powers the VM off and on again.
  - Values are compared as VMware reads them, booleans by meaning (V(TRUE), V(True) and V(true) are one setting),
    whole numbers by value (V(512) and V(0512)), other values as exact text. A key the VM holds with another spelling
    of the wanted value is left as it is, so a VM whose keys another tool wrote is neither reconfigured nor
    power-cycled. Values are written as the task gives them (booleans of the named options as V(true) or V(false)).
  - A key set to the empty string is treated as absent; removing a key sets it to the empty string, which vCenter
    takes as a deletion.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.vsphere
attributes:
  platform:
    description: Runs on the controller and talks to vCenter or ESXi.
    support: full
    platforms: vmware
options:
  name:
    description: The VM's name. With O(folder) when names repeat across folders.
    type: str
  folder:
    description: The VM's folder, its name or its path (V(/DC0/vm/gpu)), to tell VMs of the same name apart.
    type: str
  uuid:
    description: The VM's BIOS UUID or instance UUID, instead of O(name).
    type: str
  allow_p2p:
    description: C(pciPassthru.allowP2P), PCIe peer-to-peer between the VM's passthrough devices.
    type: bool
  relax_acs_for_p2p:
    description: C(pciPassthru.RelaxACSforP2P), relaxes ACS so peer-to-peer traffic need not go through the root complex.
    type: bool
  use_64bit_mmio:
    description: C(pciPassthru.use64bitMMIO), needed for GPUs with large BARs.
    type: bool
  mmio_size_gb:
    description: C(pciPassthru.64bitMMIOSizeGB), the 64-bit MMIO space in GB (a power of two, for example 128 or 512).
    type: int
  numa_node_affinity:
    description:
      - C(numa.nodeAffinity), the NUMA node(s) the VM runs on, as V(0) or V(0,1).
      - V(auto) takes the NUMA node of the VM's passthrough GPUs (of its passthrough NICs when it has no GPU) from the
        host's PCI topology.
      - The empty string removes the key.
    type: str
  devices:
    description: Per passthrough device settings.
    type: list
    elements: dict
    suboptions:
      index:
        description: N of C(pciPassthruN), the device's position among the VM's passthrough devices (from 0).
        type: int
        required: true
      gpu_pci_id:
        description:
          - C(pciPassthruN.cfg.gpu-pci-id), the GPU's host PCI address as C(ssss:bb:dd.f) in hex (a VF address if the
            GPU is in SR-IOV mode); V(bb:dd.f) is accepted and normalised. The empty string removes the key.
        type: str
        required: true
  extra_config:
    description: Further keys and values, as text. The empty string removes a key.
    type: dict
  remove_keys:
    description: Keys to remove.
    type: list
    elements: str
  power_cycle:
    description: Power the VM off and on again when a change was made while it was running.
    type: bool
    default: false
seealso:
  - module: roce.fabric.esxi_kernel_setting
  - name: NVIDIA GPUDirect RDMA on VMware vSphere
    description: The VM settings GPUDirect RDMA needs.
    link: https://docs.nvidia.com/ai-enterprise/deployment/vmware/latest/advanced-gpu.html
"""

EXAMPLES = r"""
- name: GPUDirect RDMA keys on a GPU VM, NUMA node from the host's topology
  roce.fabric.vmx_passthru:
    hostname: vcenter.example.com
    username: administrator@vsphere.local
    password: "{{ vcenter_password }}"
    name: gpuvm01
    allow_p2p: true
    relax_acs_for_p2p: true
    use_64bit_mmio: true
    mmio_size_gb: 512
    numa_node_affinity: auto
  delegate_to: localhost

- name: A VM with two GPUs names the GPU of each passthrough device; power cycle to apply
  roce.fabric.vmx_passthru:
    name: gpuvm02
    devices:
      - index: 0
        gpu_pci_id: "0000:17:00.0"
      - index: 1
        gpu_pci_id: "0000:31:00.0"
    power_cycle: true
  delegate_to: localhost

- name: Remove a key
  roce.fabric.vmx_passthru:
    uuid: 420c6b0a-5f2e-11ee-8c99-0242ac120002
    remove_keys:
      - pciPassthru.RelaxACSforP2P
  delegate_to: localhost
"""

RETURN = r"""
changed:
  description: Whether keys were (or, in check mode, would be) changed.
  returned: always
  type: bool
power_cycle_required:
  description: True when keys changed while the VM was powered on and it was not power cycled.
  returned: always
  type: bool
power_cycled:
  description: Whether the module powered the VM off and on again.
  returned: always
  type: bool
vm:
  description: The VM.
  returned: always
  type: dict
  sample: {name: gpuvm01, uuid: 4205c1a2-0000-0000-0000-000000000000, host: esx01.example.com, power_state: poweredOn,
           passthrough: ["0000:17:00.0", "0000:3b:00.0"]}
changes:
  description: Per key, the value before and after (V(null) when absent).
  returned: always
  type: dict
  sample: {"pciPassthru.allowP2P": {before: null, after: "true"}}
numa_nodes:
  description: The NUMA node of each attached passthrough device, from the host (empty when the host does not say).
  returned: always
  type: dict
  sample: {"0000:17:00.0": 0, "0000:3b:00.0": 0}
commands:
  description: The vSphere calls made (in check mode, that a real run makes), in order.
  returned: always
  type: list
  elements: str
  sample: ["ReconfigVM_Task extraConfig numa.nodeAffinity, pciPassthru.allowP2P", "PowerOffVM_Task", "PowerOnVM_Task"]
diff:
  description: The keys that change, before and after (V(null) when absent).
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.esxi import vmx
from ansible_collections.roce.fabric.plugins.module_utils.esxi.vsphere import (
    Vsphere,
    VsphereError,
    find_vm,
    host_numa_nodes,
    passthrough_devices,
    vim,
    vmodl,
    vsphere_argument_spec,
)


def converge(run, module, conn):
    """Find the VM, check the wanted keys against its devices and host, compare once, reconfigure what differs."""
    params = module.params
    vm, props = find_vm(conn, params)
    attached = passthrough_devices(props.get("config.hardware.device"))
    host_name, numa = host_numa_nodes(conn, props.get("runtime.host"))
    want = vmx.wanted_keys(params, attached, numa)
    for warning in vmx.numa_warnings(attached, numa):
        module.warn("%s: %s" % (props["name"], warning))
    changes = vmx.compare(want, vmx.current_keys(props.get("config.extraConfig")))
    power_state = str(props.get("runtime.powerState"))
    running = power_state == "poweredOn"
    run.update(power_cycle_required=bool(changes and running and not params["power_cycle"]), power_cycled=False, changes=changes,
               numa_nodes=dict((a, numa[a]) for a, _v in attached if a in numa),
               vm=dict(name=props["name"], uuid=props.get("config.uuid"), host=host_name, power_state=power_state,
                       passthrough=[a for a, _v in attached]))
    run.set_diff(*vmx.diff_of(changes))
    if not changes:
        return
    spec = vim.vm.ConfigSpec(extraConfig=[vim.option.OptionValue(key=k, value=c["after"] if c["after"] is not None else "")
                                          for k, c in sorted(changes.items())])
    run.mutate("ReconfigVM_Task extraConfig %s" % ", ".join(sorted(changes)),
               lambda: conn.wait(vm.ReconfigVM_Task(spec=spec), "reconfiguring VM %s" % props["name"]))
    if running and params["power_cycle"]:
        run.mutate("PowerOffVM_Task", lambda: conn.wait(vm.PowerOffVM_Task(), "powering off VM %s" % props["name"]))
        run.mutate("PowerOnVM_Task", lambda: conn.wait(vm.PowerOnVM_Task(), "powering on VM %s" % props["name"]))
        run.update(power_cycled=True)


def main():
    argument_spec = vsphere_argument_spec()
    argument_spec.update(
        name=dict(type="str"),
        folder=dict(type="str"),
        uuid=dict(type="str"),
        allow_p2p=dict(type="bool"),
        relax_acs_for_p2p=dict(type="bool"),
        use_64bit_mmio=dict(type="bool"),
        mmio_size_gb=dict(type="int"),
        numa_node_affinity=dict(type="str"),
        devices=dict(type="list", elements="dict", options=dict(
            index=dict(type="int", required=True),
            gpu_pci_id=dict(type="str", required=True),
        )),
        extra_config=dict(type="dict"),
        remove_keys=dict(type="list", elements="str", no_log=False),
        power_cycle=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_one_of=[["name", "uuid"]], mutually_exclusive=[["name", "uuid"], ["folder", "uuid"]])
    conn = Vsphere(module)

    def body(run):
        try:
            converge(run, module, conn)
        except vmodl.MethodFault as exc:
            raise VsphereError("vSphere: %s" % exc.msg)
        finally:
            conn.close()

    ModuleRun(module).execute(body)


if __name__ == "__main__":
    main()
