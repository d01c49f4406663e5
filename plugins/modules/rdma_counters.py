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
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import read_sysfs
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.qos import counters, state


def read_hw_counters(root, device, port):
    directory = os.path.join(root, "sys", "class", "infiniband", device, "ports", str(port), "hw_counters")
    values = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return values
    for name in names:
        number = counters.parse_counter_lines("%s:%s" % (name, read_sysfs(os.path.join(directory, name)) or ""))
        values.update(number)
    return values


def body(run):
    module = run.module
    params = module.params
    try:
        state.check_names(params["netdev"], params["rdma_device"])
    except state.QosInputError as exc:
        raise FabricError(str(exc), kind="bad_input")
    root = params["root"]
    net_dir = os.path.join(root, "sys", "class", "net", params["netdev"])
    if not os.path.isdir(net_dir):
        raise FabricError("No network interface %s on this host" % params["netdev"], kind="no_device")
    driver_link = os.path.join(net_dir, "device", "driver")
    driver = os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else None
    stats, error = None, None
    if params["ethtool"]:
        tool = module.get_bin_path("ethtool")
        if not tool:
            error = "ethtool is not installed"
        else:
            rc, out, err = CommandRunner(module).run([tool, "-S", params["netdev"]])
            if rc == 0:
                stats = counters.parse_ethtool_stats(out)
            else:
                error = (err or out).strip() or "ethtool -S exited with %d" % rc
    hw = read_hw_counters(root, params["rdma_device"], params["port"]) if params["rdma_device"] else {}
    prios = dict((str(p), v) for p, v in counters.priority_stats(stats or {}).items())
    run.update(netdev=params["netdev"], driver=driver, ethtool=stats, ethtool_error=error, hw_counters=hw, priorities=prios)


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
