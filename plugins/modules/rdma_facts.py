#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_facts
short_description: Discover RDMA devices, RoCE GIDs, link rates, GPUs and their NUMA affinity
version_added: 1.0.0
description:
  - Reads the kernel's view of RDMA devices from sysfs (C(/sys/class/infiniband)) of the host's network namespace;
    for every device its driver, firmware version, node type and GUID, PCI address and NUMA node (for a software
    device such as Soft-RoCE C(rxe0), of the network interface it runs on); for every port its state, physical
    state, link layer, rate, GID table with GID types and network interfaces, and the RoCE v2 GID index that tools
    such as C(ib_write_bw -x) and NCCL (C(NCCL_IB_GID_INDEX)) must use (the first RoCE v2 GID holding an IPv4
    address).
  - Reads the MTU and state of each port's network interface, the adapter's PCI address and NUMA node.
  - Names each device's transport (RoCE, InfiniBand, iWARP or eRDMA). An eRDMA device (Alibaba Cloud's Elastic RDMA)
    in the driver's default iWARP mode gives a warning, since GPU jobs use it in the RoCE-compatible or OFED-based
    mode (on ACK, the eRDMA controller's C(preferDriver)).
  - Reports the RDMA driver stack, V(mlnx_ofed) or V(doca_ofed) with its version when C(ofed_info) is installed
    (C(ofed_info -s) is run), else V(inbox) with the kernel release.
  - Lists NVIDIA GPUs from the PCI bus with their NUMA node and local CPUs and, when C(nvidia-smi) is
    installed, parses C(nvidia-smi topo -m) to pair each GPU with its closest NIC.
  - Builds the NCCL environment for the active ports (C(NCCL_IB_HCA), C(NCCL_IB_GID_INDEX),
    C(NCCL_SOCKET_IFNAME), C(NCCL_NET_GDR_LEVEL), HCOLL off).
  - Only reads; never changes anything.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  diff_mode:
    support: none
    details: Reads only; there is never a difference to show.
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
  platform:
    description: Runs on the Linux host that carries the adapters.
    support: full
    platforms: posix
options:
  devices:
    description:
      - Only these RDMA devices (default every one), for O(ignore:ansible_facts.roce_rdma.devices), the active
        O(ignore:ansible_facts.roce_rdma.ports) and the NCCL environment.
      - A name that is not an RDMA device of the host is an error that lists the devices found.
    type: list
    elements: str
    default: []
  root:
    description:
      - Directory under which C(sys/) is read. Only for tests and chroots; the default reads the running kernel.
    type: path
    default: /
  link_layer:
    description:
      - Use only ports of this link layer for the NCCL environment and O(ignore:ansible_facts.roce_rdma.ports).
      - V(any) keeps InfiniBand and Ethernet (RoCE) ports.
    type: str
    choices: [any, Ethernet, InfiniBand]
    default: any
  gpu_topology:
    description:
      - Run C(nvidia-smi topo -m) when GPUs are present and C(nvidia-smi) is installed.
    type: bool
    default: true
  nvidia_smi_path:
    description: Path of C(nvidia-smi) when it is not on the PATH.
    type: path
  nccl_gdr_level:
    description:
      - Value for C(NCCL_NET_GDR_LEVEL) in the generated environment (V(PIX), V(PXB), V(PHB), V(SYS));
        left out when not set, so NCCL's default applies.
    type: str
    choices: [LOC, PIX, PXB, PHB, SYS]
  nccl_socket_ifname:
    description:
      - Interface for NCCL's bootstrap and socket transport. Default is the network interface of the first active port.
    type: str
notes:
  - "Soft-RoCE (rxe) devices have no PCI function: their O(ignore:pci) is null, O(ignore:parent) names the netdev,
    and O(ignore:parent_pci) and O(ignore:parent_numa_node) say where that netdev's adapter sits."
seealso:
  - module: roce.fabric.perftest
"""

EXAMPLES = r"""
- name: Discover RDMA devices and GPUs
  roce.fabric.rdma_facts:

- name: Show the RoCE v2 GID index of the first active port
  ansible.builtin.debug:
    msg: "{{ ansible_facts.roce_rdma.ports[0].gid_index }}"
  when: ansible_facts.roce_rdma.ports | length > 0

- name: GID index for perftest on the first port of mlx5_0, and the driver stack
  roce.fabric.rdma_facts:
    devices: [mlx5_0]
    gpu_topology: false

- name: Show them
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.roce_rdma.devices[0].ports[0].roce_v2_ipv4_gid_index }}
      {{ ansible_facts.roce_rdma.driver.stack }} {{ ansible_facts.roce_rdma.driver.version }}

- name: RoCE ports only, GPUDirect RDMA allowed through the host bridge
  roce.fabric.rdma_facts:
    link_layer: Ethernet
    nccl_gdr_level: PHB
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(roce_rdma).
  returned: always
  type: dict
  contains:
    roce_rdma:
      description: The discovery result.
      returned: always
      type: dict
      contains:
        devices:
          description: Every RDMA device (those of O(devices) when given), sorted by name.
          returned: always
          type: list
          elements: dict
          contains:
            name:
              description: The RDMA device name.
              type: str
              sample: mlx5_0
            driver:
              description:
                - The kernel driver of the device's PCI function (V(mlx5_core), V(irdma), ...), V(rxe) or V(siw)
                  for a software device; null when unknown.
              type: str
              sample: mlx5_core
            software:
              description: True for a device without a PCI function of its own (Soft-RoCE C(rxe), C(siw)).
              type: bool
              sample: false
            fw_ver:
              description: Firmware version (C(0.0.0) or similar for software devices).
              type: str
              sample: "22.36.1010"
            vendor_id:
              description: PCI vendor ID of the device's PCI function (V(0x15b3) NVIDIA Mellanox, V(0x1ded) Alibaba); null for software devices.
              type: str
              sample: "0x15b3"
            transport:
              description:
                - How the device carries RDMA, V(RoCE), V(InfiniBand), V(iWARP) or V(eRDMA) (Alibaba Cloud's Elastic RDMA,
                  driver C(erdma), named C(erdma_0) or C(rocep<bus>s<slot>)); null when unknown.
              type: str
              sample: RoCE
            erdma_mode:
              description:
                - For an eRDMA device, its driver mode from its node type, V(roce) (the RoCE-compatible or OFED-based mode,
                  node type CA) or V(iwarp) (the driver's default, node type RNIC); null for other devices.
              type: str
              sample: roce
            node_type:
              description: Node type (V(CA) for an adapter).
              type: str
              sample: CA
            node_guid:
              description: Node GUID.
              type: str
              sample: "0c42:a103:008d:1a2b"
            pci:
              description: PCI address of the device; null for software devices.
              type: str
              sample: "0000:3b:00.0"
            numa_node:
              description: NUMA node of the device's PCI function (-1 when the platform has none); null for software devices.
              type: int
              sample: 0
            local_cpulist:
              description: CPUs local to the device's PCI function; null for software devices.
              type: str
              sample: "0-23,48-71"
            parent:
              description: The network interface a software device runs on (sysfs C(parent)); null for others.
              type: str
              sample: ens3
            parent_pci:
              description:
                - For a software device, the PCI address of the network interface it runs on; null for hardware devices
                  and virtual interfaces.
              type: str
              sample: "0000:01:00.0"
            parent_numa_node:
              description: For a software device, the NUMA node of O(ignore:parent_pci); null otherwise.
              type: int
              sample: -1
            virtual_function:
              description: Whether the device is an SR-IOV virtual function (its PCI function links to a C(physfn)).
              type: bool
              sample: false
            ports:
              description: The device's ports.
              type: list
              elements: dict
              contains:
                port:
                  description: Port number.
                  type: int
                  sample: 1
                state:
                  description: Logical state (V(ACTIVE), V(DOWN), V(INIT), ...).
                  type: str
                  sample: ACTIVE
                phys_state:
                  description: Physical state (V(LinkUp), V(Disabled), ...).
                  type: str
                  sample: LinkUp
                link_layer:
                  description: V(Ethernet) (RoCE) or V(InfiniBand).
                  type: str
                  sample: Ethernet
                rate:
                  description: The rate as sysfs prints it.
                  type: str
                  sample: 100 Gb/sec (2X HDR)
                rate_gbps:
                  description: The rate in Gb/s.
                  type: float
                  sample: 100.0
                gids:
                  description: The used entries of the GID table, by index.
                  type: list
                  elements: dict
                  contains:
                    index:
                      description: GID index.
                      type: int
                    gid:
                      description: The GID as sysfs prints it.
                      type: str
                      sample: "0000:0000:0000:0000:0000:ffff:0a63:0002"
                    address:
                      description: The GID in IPv6 notation.
                      type: str
                      sample: "::ffff:10.99.0.2"
                    type:
                      description: GID type (V(RoCE v2), V(IB/RoCE v1)).
                      type: str
                      sample: RoCE v2
                    netdev:
                      description: Network interface of the GID.
                      type: str
                      sample: ens3
                    ipv4:
                      description: The IPv4 address of an IPv4-mapped GID, else null.
                      type: str
                      sample: 10.99.0.2
                netdev:
                  description: The port's network interface (C(name), C(mtu), C(operstate), C(address)), null when none.
                  type: dict
                  sample: {name: ens3, mtu: 4200, operstate: up, address: "52:54:00:00:00:02"}
                roce_v2_gid_index:
                  description: Index of the first RoCE v2 GID holding an IPv4 address, else of the first RoCE v2 GID; null when none.
                  type: int
                  sample: 3
                ipv4:
                  description: IPv4 address of the GID at O(ignore:roce_v2_gid_index), null when it holds none.
                  type: str
                  sample: 10.10.11.11
                roce_v2_ipv4_gid_index:
                  description:
                    - Index of the first RoCE v2 GID holding an IPv4 address (what C(ib_write_bw -x) and C(NCCL_IB_GID_INDEX)
                      want); null when there is none.
                  type: int
                  sample: 3
          sample:
            - name: rxe0
              driver: rxe
              software: true
              virtual_function: false
              fw_ver: "0.0.0"
              node_type: CA
              node_guid: "5054:00ff:fe72:5712"
              pci:
              numa_node:
              local_cpulist:
              parent: ens3
              parent_pci: "0000:01:00.0"
              parent_numa_node: -1
              ports:
                - port: 1
                  state: ACTIVE
                  phys_state: LinkUp
                  link_layer: Ethernet
                  rate: 10 Gb/sec (1X QDR)
                  rate_gbps: 10.0
                  gids:
                    - {index: 0, gid: "fe80:0000:0000:0000:5054:00ff:fe72:5712", address: "fe80::5054:ff:fe72:5712",
                       type: RoCE v2, netdev: ens3, ipv4: null}
                    - {index: 1, gid: "0000:0000:0000:0000:0000:ffff:0a63:0002", address: "::ffff:10.99.0.2",
                       type: RoCE v2, netdev: ens3, ipv4: 10.99.0.2}
                  netdev: {name: ens3, mtu: 4200, operstate: up, address: "52:54:00:72:57:12"}
                  roce_v2_gid_index: 1
                  ipv4: 10.99.0.2
                  roce_v2_ipv4_gid_index: 1
        ports:
          description: Active ports (of O(link_layer)), flattened.
          returned: always
          type: list
          elements: dict
          contains:
            device:
              description: RDMA device name.
              type: str
            port:
              description: Port number.
              type: int
            rate_gbps:
              description: Link rate in Gb/s.
              type: float
            gid_index:
              description: The port's C(roce_v2_gid_index).
              type: int
            ipv4:
              description: IPv4 address of that GID.
              type: str
            netdev:
              description: Network interface name.
              type: str
            mtu:
              description: MTU of the network interface.
              type: int
            link_layer:
              description: V(Ethernet) or V(InfiniBand).
              type: str
            numa_node:
              description: NUMA node of the device.
              type: int
          sample:
            - {device: mlx5_0, port: 1, rate_gbps: 100.0, gid_index: 3, ipv4: 10.10.11.11, netdev: ens1f0np0, mtu: 9000,
               link_layer: Ethernet, numa_node: 0}
        driver:
          description: The RDMA driver stack.
          returned: always
          type: dict
          contains:
            stack:
              description: V(mlnx_ofed) or V(doca_ofed) (from C(ofed_info -s)), else V(inbox).
              type: str
            version:
              description: The NVIDIA stack's version, or for V(inbox) the kernel release.
              type: str
          sample: {"stack": "inbox", "version": "6.1.0-50-amd64"}
        gpus:
          description: NVIDIA GPUs on the PCI bus (C(pci), C(device_id), C(numa_node), C(local_cpulist)).
          returned: always
          type: list
          elements: dict
          sample:
            - {pci: "0000:17:00.0", device_id: "0x2335", numa_node: 0, local_cpulist: "0-23,48-71"}
        topology:
          description: Parsed C(nvidia-smi topo -m) (C(gpus), C(nics)), or null when not run.
          returned: always
          type: dict
        affinity:
          description: Per GPU the closest NIC (C(nic), C(nic_link), C(numa_node), C(cpus), C(warning)).
          returned: always
          type: dict
        nccl_env:
          description: Environment for NCCL jobs built from the active ports.
          returned: always
          type: dict
          sample:
            NCCL_IB_HCA: "=mlx5_0:1"
            NCCL_IB_GID_INDEX: "3"
            NCCL_SOCKET_IFNAME: "=ens1f0np0"
            OMPI_MCA_coll_hcoll_enable: "0"
            HCOLL_ENABLE_MCAST_ALL: "0"
        commands:
          description: Commands run (C(ofed_info -s) and C(nvidia-smi topo -m) when run).
          returned: always
          type: list
          elements: str
commands:
  description: The changes made - always none, the module only reads (every module of the collection returns this record).
  returned: always
  type: list
  elements: str
  sample: []
"""

import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.validate import gpu as _gpu
from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl as _nccl
from ansible_collections.roce.fabric.plugins.module_utils.rdma import sysfs as rdma_sysfs
from ansible_collections.roce.fabric.plugins.module_utils.common.run import (
    CommandRunner,
    FabricError,
    ModuleRun,
    command_timeout_spec,
)


def driver_stack(module, runner):
    """``{stack, version}``: the NVIDIA stack from ``ofed_info -s`` when it is installed, else inbox."""
    driver = {"stack": "inbox", "version": rdma_sysfs.kernel_release(module.params["root"]) or platform.release()}
    ofed_info = module.get_bin_path("ofed_info")
    if ofed_info:
        rc, out, err = runner.run([ofed_info, "-s"])
        stack, version = rdma_sysfs.parse_ofed_info(out)
        if rc == 0 and stack:
            driver = {"stack": stack, "version": version}
    return driver


def discover(module, runner):
    params = module.params
    root = params["root"]
    wanted = params["devices"]
    if wanted:
        found = rdma_sysfs.rdma_device_names(root)
        unknown = [d for d in wanted if d not in found]
        if unknown:
            module.fail_json(msg="unknown RDMA device(s): %s (found: %s)" % (", ".join(unknown), ", ".join(found) or "none"))
    devices = rdma_sysfs.rdma_devices(root, names=wanted or None)
    driver = driver_stack(module, runner)
    layer = None if params["link_layer"] == "any" else params["link_layer"]
    ports = rdma_sysfs.usable_ports(devices, layer)
    gpus = rdma_sysfs.gpus(root)
    topology = None
    affinity = {}
    if gpus and params["gpu_topology"]:
        smi = params["nvidia_smi_path"] or module.get_bin_path("nvidia-smi")
        if smi:
            rc, out, err = runner.run([smi, "topo", "-m"])
            if rc == 0:
                try:
                    topology = _gpu.parse_topo(out)
                    affinity = _gpu.gpu_nic_affinity(topology)
                except _gpu.GpuParseError as exc:
                    module.warn("cannot read nvidia-smi topo -m: %s" % exc)
            else:
                module.warn("nvidia-smi topo -m failed (rc %d): %s" % (rc, (err or out).strip()))
    for dev in devices:
        if dev["erdma_mode"] == "iwarp":
            module.warn("eRDMA device %s runs in the driver's default iWARP mode (node type RNIC): GPU jobs (NCCL) use eRDMA in "
                        "the RoCE-compatible or OFED-based mode (on ACK, the eRDMA controller's preferDriver compat or ofed)"
                        % dev["name"])
    for gpu, entry in sorted(affinity.items()):
        if entry.get("warning"):
            module.warn(entry["warning"])
    gid_indexes = sorted(set(p["gid_index"] for p in ports if p["gid_index"] is not None))
    if len(gid_indexes) > 1:
        module.warn("active ports use different RoCE v2 GID indexes %s; NCCL_IB_GID_INDEX takes one" % gid_indexes)
    ifname = params["nccl_socket_ifname"] or next((p["netdev"] for p in ports if p["netdev"]), None)
    env = _nccl.nccl_env([dict(name=p["device"], port=p["port"]) for p in ports],
                         gid_index=gid_indexes[0] if gid_indexes and any(p["link_layer"] == "Ethernet" for p in ports)
                         else None,
                         socket_ifname=ifname, gdr_level=params["nccl_gdr_level"])
    return dict(devices=devices, ports=ports, driver=driver, gpus=gpus, topology=topology, affinity=affinity, nccl_env=env,
                commands=list(runner.executed))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="str", default=[]),
            root=dict(type="path", default="/"),
            link_layer=dict(type="str", default="any", choices=["any", "Ethernet", "InfiniBand"]),
            gpu_topology=dict(type="bool", default=True),
            nvidia_smi_path=dict(type="path"),
            nccl_gdr_level=dict(type="str", choices=["LOC", "PIX", "PXB", "PHB", "SYS"]),
            nccl_socket_ifname=dict(type="str"),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    runner = CommandRunner(module)
    run = ModuleRun(module)

    def body(run):
        try:
            run.update(ansible_facts=dict(roce_rdma=discover(module, runner)))
        except FabricError as exc:
            # What was read before the failure, for the message (nothing is changed by this module).
            run.fail(str(exc), read=list(runner.executed), **exc.details)

    run.execute(body)


if __name__ == "__main__":
    main()
