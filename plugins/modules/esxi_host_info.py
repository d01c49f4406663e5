#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_host_info
short_description: ESXi host state, VMs and PCI passthrough topology for GPUDirect RDMA rollouts
version_added: 1.0.0
description:
  - Reads, in a fixed small number of API calls whatever the number of hosts and VMs, what a rolling ESXi change
    needs to know about each host, through vCenter or the host's API (pyVmomi).
  - Per host, its connection state, maintenance mode, whether it needs a reboot, its boot time, the NUMA node of
    each PCI device, and its VMs with their power state and attached PCI passthrough devices.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.vsphere
attributes:
  check_mode:
    support: full
    details: Read-only; it changes nothing in any mode.
  diff_mode:
    support: none
    details: Read-only; nothing to diff.
  platform:
    description: Runs on the controller and talks to vCenter or ESXi.
    support: full
    platforms: vmware
options:
  esxi_hostname:
    description: Only this host, by its name in vCenter.
    type: str
  cluster_name:
    description: Only the hosts of this cluster.
    type: str
seealso:
  - module: roce.fabric.esxi_kernel_setting
  - module: roce.fabric.vmx_passthru
"""

EXAMPLES = r"""
- name: What runs on the host
  roce.fabric.esxi_host_info:
    hostname: vcenter.example.com
    username: administrator@vsphere.local
    password: "{{ vcenter_password }}"
    esxi_hostname: esx01.example.com
  delegate_to: localhost
  register: esx

- name: Names of its running VMs
  ansible.builtin.debug:
    msg: "{{ esx.hosts['esx01.example.com'].running_vms }}"
"""

RETURN = r"""
hosts:
  description:
    - Per host (by name) - its connection state, maintenance mode, whether it waits for a reboot, its boot time, the
      NUMA node of each PCI device, its VMs (name, UUID, power state, passthrough devices) and C(running_vms), the
      names of those powered on (what a reboot of the host would stop), in name order.
  returned: always
  type: dict
  sample:
    esx01.example.com:
      connection_state: connected
      maintenance_mode: false
      reboot_required: false
      boot_time: "2026-11-20T07:48:06+00:00"
      pci_numa: {"0000:17:00.0": 0, "0000:3b:00.0": 0}
      vms:
        - {name: gpuvm01, uuid: 4205c1a2-0000-0000-0000-000000000000, power_state: poweredOn,
           passthrough: ["0000:17:00.0", "0000:3b:00.0"]}
      running_vms: [gpuvm01]
commands:
  description: The changes made - always none, the module only reads (every module of the collection returns this record).
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import normalize_pci_address
from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.esxi.vsphere import Vsphere, vim, vmodl, vsphere_argument_spec


def _pci(address):
    try:
        return normalize_pci_address(address)
    except ValueError:
        return address


def read_hosts(conn):
    """{host name: its state, PCI NUMA nodes and VMs} of the hosts the module's arguments select (read only)."""
    hosts = conn.hosts(conn.module.params["esxi_hostname"], conn.module.params["cluster_name"],
                       props=["runtime.inMaintenanceMode", "summary.rebootRequired", "runtime.bootTime", "hardware.numaInfo"])
    result = {}
    by_ref = {}
    for host, props in hosts:
        numa = {}
        info = props.get("hardware.numaInfo")
        for node in (info.numaNode if info else None) or []:
            for pci_id in node.pciId or []:
                numa[_pci(pci_id)] = int(node.typeId)
        boot = props.get("runtime.bootTime")
        entry = dict(connection_state=str(props["runtime.connectionState"]),
                     maintenance_mode=bool(props.get("runtime.inMaintenanceMode")),
                     reboot_required=bool(props.get("summary.rebootRequired")),
                     boot_time=boot.isoformat() if boot else None, pci_numa=numa, vms=[])
        result[props["name"]] = entry
        by_ref[host] = entry
    for vm, props in conn.vms(["runtime.host", "runtime.powerState", "config.hardware.device"]):
        entry = by_ref.get(props.get("runtime.host"))
        if entry is None:
            continue
        passthrough = [_pci(d.backing.id) for d in props.get("config.hardware.device") or []
                       if isinstance(d, vim.vm.device.VirtualPCIPassthrough) and getattr(d.backing, "id", None)]
        entry["vms"].append(dict(name=props["name"], uuid=props.get("config.uuid"),
                                 power_state=str(props.get("runtime.powerState")), passthrough=passthrough))
    for entry in result.values():
        entry["vms"].sort(key=lambda v: v["name"])
        entry["running_vms"] = [vm["name"] for vm in entry["vms"] if vm["power_state"] == "poweredOn"]
    return result


def main():
    argument_spec = vsphere_argument_spec()
    argument_spec.update(esxi_hostname=dict(type="str"), cluster_name=dict(type="str"))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           mutually_exclusive=[["esxi_hostname", "cluster_name"]])
    run = ModuleRun(module)

    def body(run):
        conn = Vsphere(module)
        try:
            run.update(hosts=read_hosts(conn))
        except vmodl.MethodFault as exc:
            run.fail("vSphere: %s" % exc.msg)
        finally:
            conn.close()

    run.execute(body)


if __name__ == "__main__":
    main()
