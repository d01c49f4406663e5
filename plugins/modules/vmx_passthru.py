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
  - Values are compared as text. A key set to the empty string is treated as absent; removing a key sets it to the
    empty string, which vSphere takes as a deletion.
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
diff:
  description: The managed keys before and after.
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import normalize_pci_address
from ansible_collections.roce.fabric.plugins.module_utils.esxi.vsphere import Vsphere, VsphereError, vim, vmodl, vsphere_argument_spec

NVIDIA_VENDOR = 0x10DE
NAMED_KEYS = (
    ("allow_p2p", "pciPassthru.allowP2P"),
    ("relax_acs_for_p2p", "pciPassthru.RelaxACSforP2P"),
    ("use_64bit_mmio", "pciPassthru.use64bitMMIO"),
    ("mmio_size_gb", "pciPassthru.64bitMMIOSizeGB"),
)
VM_PROPS = ["config.extraConfig", "config.hardware.device", "runtime.powerState", "runtime.host", "parent"]


def text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def passthrough_devices(devices):
    """[(id, vendor_id)] of the VM's PCI passthrough devices, in order (pciPassthru0, 1, ...)."""
    found = []
    for device in devices or []:
        if isinstance(device, vim.vm.device.VirtualPCIPassthrough):
            backing = device.backing
            address = getattr(backing, "id", None)
            if address:
                try:
                    address = normalize_pci_address(address)
                except ValueError:
                    pass
                found.append((address, getattr(backing, "vendorId", None)))
    return found


def folder_paths(conn):
    folders = dict((f, p) for f, p in conn.collect(vim.Folder, ["name", "parent"]))
    datacenters = dict((d, p) for d, p in conn.collect(vim.Datacenter, ["name", "parent"]))

    root = conn.content.rootFolder

    def path(obj):
        # Inventory paths start below the root folder ("Datacenters"): /DC0/vm/gpu.
        parts = []
        while obj is not None and obj != root:
            props = folders.get(obj) or datacenters.get(obj)
            if props is None:
                break
            parts.append(props["name"])
            obj = props.get("parent")
        return "/" + "/".join(reversed(parts))
    return path


def find_vm(module, conn):
    params = module.params
    vms = conn.vms(VM_PROPS)
    if params["uuid"]:
        wanted = params["uuid"].lower()
        matches = [(vm, p) for vm, p in vms if wanted in ((p.get("config.uuid") or "").lower(), (p.get("config.instanceUuid") or "").lower())]
        what = "with UUID %s" % params["uuid"]
    else:
        matches = [(vm, p) for vm, p in vms if p.get("name") == params["name"]]
        what = "named '%s'" % params["name"]
        if params["folder"] and matches:
            path = folder_paths(conn)
            want = params["folder"].strip("/")
            matches = [(vm, p) for vm, p in matches
                       if path(p.get("parent")).strip("/") == want or path(p.get("parent")).rsplit("/", 1)[-1] == want]
            what += " in folder '%s'" % params["folder"]
    if not matches:
        module.fail_json(msg="no VM %s in %s" % (what, conn.where))
    if len(matches) > 1:
        module.fail_json(msg="%d VMs %s; give folder or uuid to choose one" % (len(matches), what))
    return matches[0]


def host_numa_nodes(conn, host):
    nodes = {}
    name = None
    for obj, props in conn.collect(vim.HostSystem, ["name", "hardware.numaInfo"]):
        if obj != host:
            continue
        name = props.get("name")
        info = props.get("hardware.numaInfo")
        for node in (info.numaNode if info else None) or []:
            for pci_id in node.pciId or []:
                try:
                    nodes[normalize_pci_address(pci_id)] = int(node.typeId)
                except ValueError:
                    continue
    return name, nodes


def wanted_keys(module, attached, numa):
    """{key: text or None (remove)} from the options; fails on bad input before anything is changed."""
    params = module.params
    want = {}
    for option, key in NAMED_KEYS:
        if params[option] is not None:
            want[key] = text(params[option])
    if params["mmio_size_gb"] is not None and (params["mmio_size_gb"] <= 0 or params["mmio_size_gb"] & (params["mmio_size_gb"] - 1)):
        module.fail_json(msg="mmio_size_gb must be a power of two (e.g. 64, 128, 512), not %d" % params["mmio_size_gb"])
    attached_ids = [a for a, _v in attached]
    for device in params["devices"] or []:
        index = device["index"]
        if index < 0 or index >= max(len(attached), 1) and attached:
            module.fail_json(msg="devices: index %d, but the VM has %d passthrough device(s) (pciPassthru0..%d)" % (
                index, len(attached), len(attached) - 1))
        key = "pciPassthru%d.cfg.gpu-pci-id" % index
        if device["gpu_pci_id"] == "":
            want[key] = None
            continue
        try:
            address = normalize_pci_address(device["gpu_pci_id"])
        except ValueError as exc:
            module.fail_json(msg="devices[index=%d].gpu_pci_id: %s" % (index, exc))
        if address not in attached_ids:
            module.fail_json(msg="devices[index=%d].gpu_pci_id %s is not a passthrough device of this VM (attached: %s)" % (
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
                module.fail_json(msg="numa_node_affinity=auto: the VM has no PCI passthrough device to take the NUMA node from")
            nodes = sorted(set(numa[a] for a in devices if a in numa))
            if not nodes:
                module.fail_json(msg="numa_node_affinity=auto: the host does not report the NUMA node of %s" % ", ".join(devices))
            want["numa.nodeAffinity"] = ",".join(str(n) for n in nodes)
        else:
            parts = [p.strip() for p in affinity.split(",")]
            if not all(p.isdigit() for p in parts):
                module.fail_json(msg="numa_node_affinity must be 'auto', '' or node numbers like '0' or '0,1', not '%s'" % affinity)
            want["numa.nodeAffinity"] = ",".join(str(n) for n in sorted(set(int(p) for p in parts)))
    for key, value in (params["extra_config"] or {}).items():
        if value is None or isinstance(value, (dict, list)):
            module.fail_json(msg="extra_config: '%s' needs a scalar value ('' removes the key)" % key)
        want[str(key)] = None if text(value) == "" else text(value)
    for key in params["remove_keys"] or []:
        if key in want and want[key] is not None:
            module.fail_json(msg="key '%s' is both set and in remove_keys" % key)
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


def run(module, conn):
    vm, props = find_vm(module, conn)
    attached = passthrough_devices(props.get("config.hardware.device"))
    host_name, numa = host_numa_nodes(conn, props.get("runtime.host"))
    want = wanted_keys(module, attached, numa)
    for warning in numa_warnings(attached, numa):
        module.warn("%s: %s" % (props["name"], warning))
    current = {}
    for option in props.get("config.extraConfig") or []:
        if option.value is not None and str(option.value) != "":
            current[option.key] = str(option.value)
    changes = {}
    for key, value in sorted(want.items()):
        before = current.get(key)
        if before != value:
            changes[key] = dict(before=before, after=value)
    power_state = str(props.get("runtime.powerState"))
    result = dict(changed=bool(changes), power_cycle_required=False, power_cycled=False, changes=changes,
                  numa_nodes=dict((a, numa[a]) for a, _v in attached if a in numa),
                  vm=dict(name=props["name"], uuid=props.get("config.uuid"), host=host_name, power_state=power_state,
                          passthrough=[a for a, _v in attached]))
    if module._diff:
        result["diff"] = dict(before=dict((k, current.get(k)) for k in sorted(want)), after=dict((k, want[k]) for k in sorted(want)))
    running = power_state == "poweredOn"
    if changes and running:
        result["power_cycle_required"] = not module.params["power_cycle"]
    if not changes or module.check_mode:
        if changes and running and module.params["power_cycle"]:
            result["power_cycled"] = True
        return result
    spec = vim.vm.ConfigSpec(extraConfig=[vim.option.OptionValue(key=k, value=c["after"] if c["after"] is not None else "")
                                          for k, c in sorted(changes.items())])
    conn.wait(vm.ReconfigVM_Task(spec=spec), "reconfiguring VM %s" % props["name"])
    if running and module.params["power_cycle"]:
        conn.wait(vm.PowerOffVM_Task(), "powering off VM %s" % props["name"])
        conn.wait(vm.PowerOnVM_Task(), "powering on VM %s" % props["name"])
        result["power_cycled"] = True
    return result


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
    try:
        result = run(module, conn)
    except VsphereError as exc:
        module.fail_json(msg=str(exc))
    except vmodl.MethodFault as exc:
        module.fail_json(msg="vSphere: %s" % exc.msg)
    finally:
        conn.close()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
