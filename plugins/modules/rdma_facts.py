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
  - Reads the kernel's view of RDMA devices from sysfs (C(/sys/class/infiniband)), for every port its state,
    link layer, rate, GID table with GID types and network interfaces, and picks the RoCE v2 GID index
    that tools such as C(ib_write_bw -R) and NCCL (C(NCCL_IB_GID_INDEX)) must use (the first RoCE v2 GID
    holding an IPv4 address).
  - Reads the MTU and state of each port's network interface, the adapter's PCI address and NUMA node.
  - Lists NVIDIA GPUs from the PCI bus with their NUMA node and local CPUs and, when C(nvidia-smi) is
    installed, parses C(nvidia-smi topo -m) to pair each GPU with its closest NIC.
  - Builds the NCCL environment for the active ports (C(NCCL_IB_HCA), C(NCCL_IB_GID_INDEX),
    C(NCCL_SOCKET_IFNAME), C(NCCL_NET_GDR_LEVEL), HCOLL off).
  - Only reads; never changes anything.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
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
  - "Soft-RoCE (rxe) devices have no PCI function: their O(ignore:pci) is null and O(ignore:parent) names the netdev."
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
      type: dict
      contains:
        devices:
          description:
            - Every RDMA device with C(name), C(driver), C(pci), C(numa_node), C(local_cpulist), C(parent) and C(ports)
              (C(port), C(state), C(phys_state), C(link_layer), C(rate), C(rate_gbps), C(gids), C(netdev),
              C(roce_v2_gid_index), C(ipv4)).
          type: list
          elements: dict
          sample:
            - name: rxe0
              driver: rxe
              pci:
              parent: ens3
              ports:
                - port: 1
                  state: ACTIVE
                  link_layer: Ethernet
                  rate_gbps: 10.0
                  roce_v2_gid_index: 1
                  ipv4: 10.99.0.2
                  netdev: {name: ens3, mtu: 4200, operstate: up}
        ports:
          description: Active ports, flattened (C(device), C(port), C(rate_gbps), C(gid_index), C(ipv4), C(netdev), C(mtu),
            C(link_layer), C(numa_node)).
          type: list
          elements: dict
        gpus:
          description: NVIDIA GPUs on the PCI bus (C(pci), C(device_id), C(numa_node), C(local_cpulist)).
          type: list
          elements: dict
        topology:
          description: Parsed C(nvidia-smi topo -m) (C(gpus), C(nics)), or null when not run.
          type: dict
        affinity:
          description: Per GPU the closest NIC (C(nic), C(nic_link), C(numa_node), C(cpus), C(warning)).
          type: dict
        nccl_env:
          description: Environment for NCCL jobs built from the active ports.
          type: dict
          sample:
            NCCL_IB_HCA: "=mlx5_0:1"
            NCCL_IB_GID_INDEX: "3"
            NCCL_SOCKET_IFNAME: "=ens1f0np0"
            OMPI_MCA_coll_hcoll_enable: "0"
            HCOLL_ENABLE_MCAST_ALL: "0"
        commands:
          description: Commands run (C(nvidia-smi topo -m) when run).
          type: list
          elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils import _gpu
from ansible_collections.roce.fabric.plugins.module_utils import _nccl
from ansible_collections.roce.fabric.plugins.module_utils import _rdma_sysfs as _rdma
from ansible_collections.roce.fabric.plugins.module_utils._command import CommandRunner


def discover(module, runner):
    params = module.params
    root = params["root"]
    devices = _rdma.rdma_devices(root)
    layer = None if params["link_layer"] == "any" else params["link_layer"]
    ports = _rdma.usable_ports(devices, layer)
    gpus = _rdma.gpus(root)
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
    return dict(devices=devices, ports=ports, gpus=gpus, topology=topology, affinity=affinity, nccl_env=env,
                commands=list(runner.executed))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default="/"),
            link_layer=dict(type="str", default="any", choices=["any", "Ethernet", "InfiniBand"]),
            gpu_topology=dict(type="bool", default=True),
            nvidia_smi_path=dict(type="path"),
            nccl_gdr_level=dict(type="str", choices=["LOC", "PIX", "PXB", "PHB", "SYS"]),
            nccl_socket_ifname=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    runner = CommandRunner(module)
    facts = discover(module, runner)
    module.exit_json(changed=False, ansible_facts=dict(roce_rdma=facts))


if __name__ == "__main__":
    main()
