#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_counters
short_description: Read one RoCE port's traffic counters (ethtool -S and the RDMA hw_counters)
version_added: 1.0.0
description:
  - Reads the statistics of a network interface (C(ethtool -S)) and the C(hw_counters) of the RDMA port on
    it, as a snapshot. Two snapshots around a test give what the test sent and on which priority; the
    C(roce.fabric.roce_qos_traffic) filter turns them into a report check.
  - Per-priority byte and pause counters (C(tx_prio3_bytes), C(rx_prio3_pause), ...) exist on mlx5; the RDMA
    congestion counters (CNPs sent and handled, ECN-marked packets) on mlx5_ib and irdma. A driver without
    them gives an empty set, not an error.
  - Reads only; never changes anything, so check mode and a normal run are the same.
author:
  - roce.fabric contributors (@roce-fabric)
options:
  netdev:
    description: "The network interface: letters, digits and C(_ . : -), at most 15."
    type: str
    required: true
  rdma_device:
    description: The RDMA device on O(netdev) (C(mlx5_0), C(rxe0)); without it only C(ethtool -S) is read.
    type: str
  port:
    description: The RDMA device's port.
    type: int
    default: 1
  ethtool:
    description: Read C(ethtool -S); false reads only the RDMA counters.
    type: bool
    default: true
  root:
    description: Where sysfs is read from (a container's or chroot's root; C(/) on a host).
    type: path
    default: /
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - "Counter names: mlx5 in the kernel's mlx5 counters documentation, irdma in its driver's stat names, Soft-RoCE
    C(sent_pkts)/C(rcvd_pkts). Hardware RoCE traffic bypasses the kernel's packet path: its priority shows only in
    these counters, not in a packet capture."
seealso:
  - module: roce.fabric.nic_qos
  - name: mlx5 counters
    description: The kernel's documentation of the mlx5 ethtool counters.
    link: https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/counters.html
"""

EXAMPLES = r"""
- name: Snapshot before the test
  roce.fabric.rdma_counters:
    netdev: ens1f0np0
    rdma_device: mlx5_0
  register: before

- name: Snapshot after it, and the share of RDMA bytes on the contract's priority
  roce.fabric.rdma_counters:
    netdev: ens1f0np0
    rdma_device: mlx5_0
  register: after

- name: The check
  ansible.builtin.debug:
    msg: "{{ 'ens1f0np0' | roce.fabric.roce_qos_traffic(before, after, roce_fabric_qos) }}"
"""

RETURN = r"""
netdev:
  description: The interface read.
  returned: always
  type: str
  sample: ens1f0np0
driver:
  description: The interface's kernel driver, or null (a virtual interface without one).
  returned: always
  type: str
  sample: mlx5_core
ethtool:
  description: C(ethtool -S) as counter to integer, or null when it could not be read (see RV(ethtool_error)).
  returned: always
  type: dict
  sample: {tx_prio3_bytes: 8123456789, rx_prio3_pause: 12, tx_vport_rdma_unicast_bytes: 8123400000}
ethtool_error:
  description: Why C(ethtool -S) gave nothing (not installed, no statistics), or null.
  returned: always
  type: str
hw_counters:
  description: The RDMA port's C(hw_counters) files as name to integer; empty without O(rdma_device) or such files.
  returned: always
  type: dict
  sample: {np_cnp_sent: 0, rp_cnp_handled: 0, np_ecn_marked_roce_packets: 0}
priorities:
  description: The per-priority counters found in RV(ethtool), by priority.
  returned: always
  type: dict
  sample: {"3": {tx_bytes: 8123456789, rx_pause: 12}}
mtu:
  description: The interface's MTU (sysfs C(mtu)), or null where it cannot be read.
  returned: always
  type: int
  sample: 9000
carrier_changes:
  description: How often the interface's carrier went down or up since the interface was made (sysfs
    C(carrier_changes), every driver; a flap counts two), or null where it cannot be read.
  returned: always
  type: int
  sample: 2
speed:
  description: The link's rate in Mb/s (sysfs C(speed)), or null where the driver does not know it (C(-1)) or the
    link is down.
  returned: always
  type: int
  sample: 400000
mac:
  description: The interface's Ethernet address (sysfs C(address)), lower case, or null where it has none.
  returned: always
  type: str
  sample: "52:54:00:12:34:01"
read_at:
  description: When the counters were read, in seconds since the epoch (two reads give a window's length).
  returned: always
  type: float
  sample: 1795926120.412
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.qos.port_counters import read_port


def body(run):
    params = run.module.params
    run.update(**read_port(run.module, params["root"], params["netdev"], params["rdma_device"], params["port"],
                           params["ethtool"]))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdev=dict(type="str", required=True),
            rdma_device=dict(type="str"),
            port=dict(type="int", default=1),
            ethtool=dict(type="bool", default=True),
            root=dict(type="path", default="/"),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    ModuleRun(module, netdev=module.params["netdev"], driver=None, ethtool=None, ethtool_error=None, hw_counters={},
              priorities={}).execute(body)


if __name__ == "__main__":
    main()
