#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_qos
short_description: RoCE QoS of a host NIC (trust, PFC, DSCP map, DCQCN ECN, CNP, RDMA-CM ToS, traffic class)
version_added: 1.0.0
description:
  - Sets what a host NIC needs to send RoCE into the class the switches protect, reading everything first and
    changing only what differs, one setting at a time. Settings left out are not managed.
  - The DCB settings (O(trust), O(pfc), O(dscp2prio)) go through NVIDIA's C(mlnx_qos) (MLNX_OFED / DOCA
    mlnx-tools) or iproute2's C(dcb) (inbox drivers; C(dcb apptrust), the trust mode, needs iproute2 6.2 or later).
  - DCQCN's ECN enable per priority (reaction and notification point), the CNP DSCP and priority go to the mlx5
    driver's C(/sys/class/net/IF/ecn/) files; RDMA-CM's default ToS of the RDMA port to configfs
    (C(/sys/kernel/config/rdma_cm/DEV/ports/PORT/default_roce_tos), what C(cma_roce_tos) writes; C(rdma_cm) is
    loaded when needed); the device traffic class to C(/sys/class/infiniband/DEV/tc/PORT/traffic_class)
    (MLNX_OFED's mlx5 only).
  - A setting that the NIC's driver does not offer (no DCB support, no ECN or traffic class files) fails with
    nothing changed and says which, as do missing tools and out-of-range values.
  - Changes only the running system. RV(boot_actions) in the result is what sets the same at boot; the
    C(roce.fabric.nic_qos) role keeps it in a unit that runs at every boot.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  netdev:
    description: "The NIC's network interface: 1 to 15 characters, letters, digits and C(_ . : -)."
    type: str
    required: true
  rdma_device:
    description:
      - The RDMA device of O(netdev) (for O(roce_tos) and O(traffic_class)), for example V(mlx5_0) or V(rxe0).
      - Found from sysfs when not given.
    type: str
  port:
    description: The RDMA port of O(rdma_device).
    type: int
    default: 1
  backend:
    description:
      - The tool for O(trust), O(pfc) and O(dscp2prio). V(auto) takes C(mlnx_qos) when installed, else C(dcb).
      - V(none) manages no DCB setting (giving one is then an error).
    type: str
    choices: [auto, mlnx_qos, dcb, none]
    default: auto
  trust:
    description: How the NIC classifies received traffic into priorities; RoCE QoS by DSCP needs V(dscp).
    type: str
    choices: [dscp, pcp]
  pfc:
    description: The priorities with priority flow control on; every other priority's PFC is turned off. V([]) turns PFC off.
    type: list
    elements: int
  dscp2prio:
    description:
      - "DSCP-to-priority entries that must hold, for example V({26: 3}); other entries are left alone. Only needed
        where the priority is not the DSCP's three high bits (the default map)."
    type: dict
  ecn:
    description: Priorities on which DCQCN's ECN reaction point and notification point are enabled (mlx5 sysfs).
    type: list
    elements: int
  cnp_dscp:
    description: DSCP of the congestion notification packets this NIC sends (mlx5 C(roce_np/cnp_dscp)).
    type: int
  cnp_priority:
    description: 802.1p priority of the CNPs (mlx5 C(roce_np/cnp_802p_prio)).
    type: int
  roce_tos:
    description: RDMA-CM's default ToS byte for the port (0-255; 106 is DSCP 26 with ECT(0)).
    type: int
  traffic_class:
    description: The RDMA device's traffic class for the port (MLNX_OFED mlx5 C(tc/PORT/traffic_class)).
    type: int
notes:
  - "Real-device limits: the lab proves RDMA-CM's ToS on Soft-RoCE (the packets carry it) and the error of a virtual
    NIC without DCB; trust, PFC, ECN and CNP values on a ConnectX NIC come from simulated tools in the lab."
seealso:
  - name: mlnx_qos in mlnx-tools
    description: NVIDIA's QoS tool (trust, PFC, DSCP map).
    link: https://github.com/Mellanox/mlnx-tools
  - name: dcb(8)
    description: iproute2's DCB tool (dcb pfc, dcb app, dcb apptrust).
    link: https://man7.org/linux/man-pages/man8/dcb.8.html
"""

EXAMPLES = r"""
- name: Lossless RoCE on DSCP 26 / priority 3, ECN on it, CNPs on DSCP 48 / priority 6, RDMA-CM ToS 106
  roce.fabric.nic_qos:
    netdev: ens1f0np0
    trust: dscp
    pfc: [3]
    ecn: [3]
    cnp_dscp: 48
    cnp_priority: 6
    roce_tos: 106

- name: From the fabric's RoCE QoS contract
  roce.fabric.nic_qos:
    netdev: ens1f0np0
    trust: dscp
    pfc: "{{ qos.pfc_priorities }}"
    dscp2prio: "{{ qos.dscp2prio }}"
    ecn: "{{ qos.ecn_priorities }}"
    roce_tos: "{{ qos.roce_tos }}"
  vars:
    qos: "{{ roce_fabric_qos | roce.fabric.roce_qos }}"

- name: Only the RDMA-CM default ToS (Soft-RoCE or any driver)
  roce.fabric.nic_qos:
    netdev: enp1s0
    backend: none
    roce_tos: 106
"""

RETURN = r"""
backend:
  description: The DCB tool used (C(mlnx_qos), C(dcb)), or null.
  returned: always
  type: str
  sample: mlnx_qos
rdma_device:
  description: The RDMA device of the netdev, or null when it has none.
  returned: always
  type: str
  sample: mlx5_0
before:
  description: The managed settings before the run.
  returned: always
  type: dict
  sample: {trust: pcp, pfc: [], roce_tos: 0}
after:
  description: The managed settings after the run (predicted in check mode).
  returned: always
  type: dict
  sample: {trust: dscp, pfc: [3], roce_tos: 106}
commands:
  description: The changes made (or, in check mode, that a real run makes), in order.
  returned: always
  type: list
  elements: str
  sample: ["/usr/bin/mlnx_qos -i ens1f0np0 --trust dscp", "write /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos: 106"]
boot_actions:
  description: Every action that sets the managed settings on a freshly booted host (C(run) an argv, C(mkdir), C(write) a value).
  returned: always
  type: list
  elements: dict
  sample: [{run: ["/usr/bin/mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp"]}]
reboot_required:
  description: Always false; every setting takes effect at once.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.qos import state
from ansible_collections.roce.fabric.plugins.module_utils.qos.transport import QosHost


def read_current(host, wanted):
    have = {}
    if any(key in wanted for key in state.DCB_KEYS):
        if host.backend is None:
            raise FabricError("%s: trust, pfc or dscp2prio given but %s; nothing was changed" % (
                host.netdev, "backend is none" if host.module.params["backend"] == "none" else
                "neither mlnx_qos (MLNX_OFED / DOCA) nor dcb (iproute2) is installed"), kind="tool_missing")
        have.update(host.read_dcb(need_trust="trust" in wanted))
    if any(key in wanted for key in ("ecn", "cnp_dscp", "cnp_priority")):
        ecn = host.read_ecn()
        if ecn is None:
            raise FabricError("%s: the driver has no DCQCN ECN settings (%s is missing; mlx5 has them); nothing was changed"
                              % (host.netdev, host.ecn_dir()), kind="no_ecn")
        have["ecn"] = ecn
        have["cnp_dscp"], have["cnp_priority"] = host.read_cnp()
    if any(key in wanted for key in ("roce_tos", "traffic_class")) and not host.rdma_device:
        if host.module.check_mode:
            # An earlier task of the same run (a Soft-RoCE link, a driver) may create it.
            host.module.warn("%s has no RDMA device yet; check mode assumes the one a real run finds" % host.netdev)
            host.rdma_device = "<rdma device of %s>" % host.netdev
            have.update(roce_tos=None, _tos_dir=False, traffic_class=None)
            return have
        raise FabricError("%s has no RDMA device (give rdma_device, or create it first); nothing was changed" % host.netdev,
                          kind="no_rdma_device")
    if "roce_tos" in wanted:
        have["roce_tos"], have["_tos_dir"] = host.read_roce_tos()
    if "traffic_class" in wanted:
        have["traffic_class"] = host.read_traffic_class()
        if have["traffic_class"] is None:
            raise FabricError("%s: no traffic class file %s (MLNX_OFED's mlx5 has it); nothing was changed" % (
                host.rdma_device, host.traffic_class_path()), kind="no_traffic_class")
    return have


def converge(run, params):
    try:
        state.check_names(params["netdev"], params["rdma_device"])
        wanted = state.want(params)
    except state.QosInputError as exc:
        raise FabricError("Invalid input, nothing was changed: %s" % exc, kind="invalid")
    host = QosHost(run.module, params["netdev"], port=params["port"], backend=params["backend"],
                   rdma_device=params["rdma_device"])
    run.update(backend=host.backend, rdma_device=host.rdma_device, reboot_required=False,
               boot_actions=state.boot_actions(host.backend, host.tool, host.netdev, host.rdma_device, host.port, wanted))
    have = read_current(host, wanted)
    changes = state.compare(wanted, have)
    actions = state.dcb_actions(host.backend, host.tool, host.netdev, changes) + state.sysfs_actions(
        host.netdev, host.rdma_device, host.port, changes, configfs_present=host.configfs_present(),
        device_dir_present=have.get("_tos_dir", True))
    for action in actions:
        run.mutate(state.describe(action), lambda action=action: host.apply(action))
    before = dict((key, have.get(key)) for key in wanted)
    if "ecn" in wanted:
        before["ecn"] = dict((p, have["ecn"].get(p)) for p in wanted["ecn"])
    if "dscp2prio" in wanted:
        before["dscp2prio"] = dict((d, (have.get("dscp2prio") or {}).get(d)) for d in wanted["dscp2prio"])
    after = dict(before)
    for key, (_before, value) in changes.items():
        if isinstance(value, dict):
            merged = dict(after.get(key) or {})
            merged.update(value)
            after[key] = merged
        else:
            after[key] = value
    run.update(before=state.as_report(before), after=state.as_report(after))
    run.set_diff(state.as_report(dict((k, before[k]) for k in changes)), state.as_report(dict((k, after[k]) for k in changes)))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdev=dict(type="str", required=True),
            rdma_device=dict(type="str"),
            port=dict(type="int", default=1),
            backend=dict(type="str", default="auto", choices=["auto", "mlnx_qos", "dcb", "none"]),
            trust=dict(type="str", choices=["dscp", "pcp"]),
            pfc=dict(type="list", elements="int"),
            dscp2prio=dict(type="dict"),
            ecn=dict(type="list", elements="int"),
            cnp_dscp=dict(type="int"),
            cnp_priority=dict(type="int"),
            roce_tos=dict(type="int"),
            traffic_class=dict(type="int"),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    ModuleRun(module, backend=None, rdma_device=None, before={}, after={}, boot_actions=[],
              reboot_required=False).execute(lambda run: converge(run, module.params))


if __name__ == "__main__":
    main()
