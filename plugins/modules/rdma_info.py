#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_info
short_description: RDMA devices of a Linux host, their ports, GIDs and PCI placement
version_added: 1.0.0
description:
  - Reads every RDMA device in C(/sys/class/infiniband) of the host's network namespace, without running any tool
    (except C(ofed_info -s) when it is installed).
  - For each device, its driver, firmware version, PCI address and NUMA node (of the device, or for a software
    device such as Soft-RoCE C(rxe0), of the network interface it runs on); for each port, its network interface,
    state, physical state, link layer, rate, GID table and the index of the first RoCE v2 GID carrying an IPv4
    address (what C(ib_write_bw -x) and C(NCCL_IB_GID_INDEX) need).
  - The driver stack is V(mlnx_ofed) or V(doca_ofed) with its version when C(ofed_info) is installed, else
    V(inbox) with the kernel release.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  diff_mode:
    support: none
    details: Reads only; there is nothing to compare.
  platform:
    description: Runs on the Linux host that carries the RDMA devices.
    support: full
    platforms: posix
options:
  devices:
    description: Only these RDMA devices (default every one).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Read the RDMA devices
  roce.fabric.rdma_info:
  register: rdma

- name: GID index for perftest on the first device
  ansible.builtin.debug:
    msg: "{{ rdma.devices[0].ports[0].roce_v2_ipv4_gid_index }}"
"""

RETURN = r"""
driver:
  description: The RDMA driver stack.
  returned: always
  type: dict
  sample: {"stack": "inbox", "version": "6.1.0-50-amd64"}
devices:
  description: One entry per RDMA device, sorted by name.
  returned: always
  type: list
  elements: dict
  sample:
    - name: rxe0
      driver: rdma_rxe
      software: true
      node_type: CA
      node_guid: "5054:00ff:fe72:5712"
      fw_ver: "0.0.0"
      pci_address: "0000:01:00.0"
      numa_node: -1
      ports:
        - port: 1
          netdev: enp1s0
          state: ACTIVE
          phys_state: LinkUp
          link_layer: Ethernet
          rate: 2.5 Gb/sec (1X SDR)
          roce_v2_ipv4_gid_index: 1
          gids:
            - {index: 0, gid: "fe80::5054:ff:fe72:5712", type: RoCE v2, netdev: enp1s0, ipv4: false}
            - {index: 1, gid: "::ffff:10.78.0.1", type: RoCE v2, netdev: enp1s0, ipv4: true}
"""

import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils._command import CommandRunner
from ansible_collections.roce.fabric.plugins.module_utils import _rdma

SYS_IB = "/sys/class/infiniband"
SYS_NET = "/sys/class/net"
SYS_PCI = "/sys/bus/pci/devices"
SOFTWARE_DRIVERS = {"rxe": "rdma_rxe", "siw": "siw"}


def read(path, default=None):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return default


def port_info(base, port):
    pdir = os.path.join(base, "ports", port)
    entries = []
    gids_dir = os.path.join(pdir, "gids")
    for name in os.listdir(gids_dir) if os.path.isdir(gids_dir) else []:
        if not name.isdigit():
            continue
        raw = read(os.path.join(gids_dir, name))
        gid_type = read(os.path.join(pdir, "gid_attrs", "types", name))
        netdev = read(os.path.join(pdir, "gid_attrs", "ndevs", name))
        entries.append((int(name), raw, gid_type, netdev))
    table = _rdma.gid_table(entries)
    netdev = next((e["netdev"] for e in table if e["netdev"]), None)
    return {
        "port": int(port),
        "netdev": netdev,
        "state": _rdma.parse_sysfs_state(read(os.path.join(pdir, "state"), "")),
        "phys_state": _rdma.parse_sysfs_state(read(os.path.join(pdir, "phys_state"), "")),
        "link_layer": read(os.path.join(pdir, "link_layer")),
        "rate": read(os.path.join(pdir, "rate")),
        "gids": table,
        "roce_v2_ipv4_gid_index": _rdma.roce_v2_ipv4_index(table),
    }


def device_info(name):
    base = os.path.join(SYS_IB, name)
    ports_dir = os.path.join(base, "ports")
    ports = [port_info(base, p) for p in sorted(os.listdir(ports_dir), key=int)] if os.path.isdir(ports_dir) else []
    device_link = os.path.join(base, "device")
    parent = read(os.path.join(base, "parent"))
    if os.path.exists(device_link):
        software = False
        driver_link = os.path.join(device_link, "driver")
        driver = os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else None
        pci = _rdma.pci_of_path(os.path.realpath(device_link))
    else:
        software = True
        driver = next((d for prefix, d in SOFTWARE_DRIVERS.items() if name.startswith(prefix)), "software")
        netdev = parent or next((p["netdev"] for p in ports if p["netdev"]), None)
        net_device = os.path.join(SYS_NET, netdev, "device") if netdev else None
        pci = _rdma.pci_of_path(os.path.realpath(net_device)) if net_device and os.path.exists(net_device) else None
    numa = read(os.path.join(SYS_PCI, pci, "numa_node")) if pci else None
    node_type = read(os.path.join(base, "node_type"))
    return {
        "name": name,
        "driver": driver,
        "software": software,
        "parent_netdev": parent,
        "node_type": _rdma.parse_sysfs_state(node_type) if node_type else None,
        "node_guid": read(os.path.join(base, "node_guid")),
        "fw_ver": read(os.path.join(base, "fw_ver")),
        "pci_address": pci,
        "numa_node": int(numa) if numa not in (None, "") else None,
        "ports": ports,
    }


def main():
    module = AnsibleModule(argument_spec=dict(devices=dict(type="list", elements="str", default=[])), supports_check_mode=True)
    names = sorted(os.listdir(SYS_IB)) if os.path.isdir(SYS_IB) else []
    wanted = module.params["devices"]
    unknown = [d for d in wanted if d not in names]
    if unknown:
        module.fail_json(msg="unknown RDMA device(s): %s (found: %s)" % (", ".join(unknown), ", ".join(names) or "none"))
    devices = [device_info(n) for n in names if not wanted or n in wanted]
    driver = {"stack": "inbox", "version": platform.release()}
    ofed_info = module.get_bin_path("ofed_info")
    if ofed_info:
        rc, out, err = CommandRunner(module).run([ofed_info, "-s"])
        stack, version = _rdma.parse_ofed_info(out)
        if rc == 0 and stack:
            driver = {"stack": stack, "version": version}
    module.exit_json(changed=False, devices=devices, driver=driver)


if __name__ == "__main__":
    main()
