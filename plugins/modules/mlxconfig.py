#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mlxconfig
short_description: Declarative NVIDIA ConnectX firmware (NVconfig) settings
version_added: 1.0.0
description:
  - Sets persistent firmware configuration parameters of NVIDIA (Mellanox) ConnectX and BlueField adapters,
    such as C(ATS_ENABLED) for GPUDirect RDMA in virtual machines, C(SRIOV_EN) and C(NUM_OF_VFS) for SR-IOV,
    C(LINK_TYPE_P1) or C(ROCE_CONTROL), with NVIDIA MFT C(mlxconfig) or the open-source C(mstconfig) (mstflint).
  - Reads every device with C(-e query) (Default, Current and Next Boot columns). A parameter is changed when the
    wanted value differs from its Next Boot value; all changes of a device go into one C(set) call.
  - Firmware settings take effect only after a reboot (or a power cycle). The module never reboots; it returns
    O(ignore:reboot_required) when any wanted value differs from the running (Current) value, including changes made
    earlier that are still pending. Roles use it to coalesce one reboot per host.
  - Values are compared by meaning, not by text, against what the tool prints, so V(true), V(True), V(1) and
    C(True(1)) are equal, and enum names match case-insensitively (V(roce_enable) equals C(ROCE_ENABLE(2))).
  - Invalid input fails before any change is made; the tools validate a whole C(set) before applying it,
    so a refused change leaves the firmware untouched.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  platform:
    description: Runs on the host that carries the adapters.
    support: full
    platforms: posix
options:
  devices:
    description:
      - The adapters to configure. Each item is a PCI address (V(0000:3b:00.0) or V(3b:00.0)),
        an MFT device path (V(/dev/mst/mt4123_pciconf0), needs O(tool=mlxconfig) and C(mst start)),
        or a network interface name (V(ens1f0np0)), resolved to its PCI function through sysfs.
      - The single item V(all) selects every NVIDIA/Mellanox network adapter on the host (one physical
        function per adapter; virtual functions are skipped).
      - Two selectors that resolve to the same PCI function are handled once.
    type: list
    elements: str
    required: true
  params:
    description:
      - Firmware parameters and their wanted values, as named by C(mlxconfig query), for example
        C(ATS_ENABLED), C(SRIOV_EN), C(NUM_OF_VFS), C(LINK_TYPE_P1) or an array element such as
        C(PCI_DOWNSTREAM_PORT_OWNER[3]).
      - Values may be booleans, integers (decimal or V(0x) hex strings) or enum names
        (V(ROCE_ENABLE), V(ETH), V(per_mkey)); they are normalised against what the device prints.
      - With O(state=reset) only the names matter (values are ignored); the listed parameters are
        set back to their Default value.
      - Required when O(state=present).
    type: dict
  state:
    description:
      - V(present) sets O(params) to the given values.
      - V(reset) restores defaults. Without O(params) it runs the tool's C(reset) command (every parameter);
        with O(params) it sets only those parameters to their Default value.
    type: str
    choices: [present, reset]
    default: present
  tool:
    description:
      - Which tool to use. V(auto) prefers C(mlxconfig) (NVIDIA MFT) and falls back to C(mstconfig) (mstflint).
    type: str
    choices: [auto, mlxconfig, mstconfig]
    default: auto
  tool_path:
    description:
      - Path to the C(mlxconfig) or C(mstconfig) executable, when it is not on the PATH.
      - With O(tool=auto) the tool kind is taken from the file name (a name containing C(mstconfig) means mstflint).
    type: path
  power_cycle_record:
    description:
      - File on the host that keeps, per device, the values pending when the tool asked for a power cycle
        (C(Please power cycle machine to load new configurations)); root-owned, mode 0600 in a 0700 folder. Later runs
        report those values as RV(reboot_type=power_cycle) too, until they are running. An empty string keeps no
        record (pending values found from an earlier run are then reported as V(reboot)).
    type: path
    default: /var/lib/roce-fabric/mlxconfig_power_cycle.json
notes:
  - "Requires C(mstconfig) (Debian/Ubuntu package C(mstflint), RHEL C(mstflint)) or NVIDIA MFT C(mlxconfig) on the host."
  - "When the firmware cannot read default values (older firmware prints C(N/A)), O(state=reset) without O(params) always
    reports a change, because the module cannot tell whether the device is already at its defaults."
  - "The tool says that a change needs a power cycle only when it makes the change; the module records those values
    (O(power_cycle_record)) and reports RV(reboot_type=power_cycle) for them on later runs. Other pending changes
    found from an earlier run are reported as V(reboot)."
seealso:
  - name: NVIDIA mlxconfig documentation
    description: The parameters and their meaning.
    link: https://docs.nvidia.com/networking/display/mftv4270/using+mlxconfig
"""

EXAMPLES = r"""
- name: Enable PCIe ATS on every ConnectX adapter (GPUDirect RDMA inside VMs)
  roce.fabric.mlxconfig:
    devices: all
    params:
      ATS_ENABLED: true
  register: fw

- name: Reboot when the firmware change needs it
  ansible.builtin.reboot:
  when: fw.reboot_required

- name: SR-IOV with 8 virtual functions on the adapter behind ens1f0np0
  roce.fabric.mlxconfig:
    devices:
      - ens1f0np0
    params:
      SRIOV_EN: true
      NUM_OF_VFS: 8

- name: Ethernet link type on both ports of a VPI adapter, with mstflint
  roce.fabric.mlxconfig:
    devices:
      - "0000:3b:00.0"
    tool: mstconfig
    params:
      LINK_TYPE_P1: ETH
      LINK_TYPE_P2: ETH

- name: One element of an array parameter, through an MFT device path
  roce.fabric.mlxconfig:
    devices:
      - /dev/mst/mt4129_pciconf0
    tool: mlxconfig
    params:
      PCI_DOWNSTREAM_PORT_OWNER[4]: HOST_1

- name: Put NUM_OF_VFS back to its default
  roce.fabric.mlxconfig:
    devices: all
    state: reset
    params:
      NUM_OF_VFS:

- name: Reset every parameter of one adapter to its default
  roce.fabric.mlxconfig:
    devices:
      - "3b:00.0"
    state: reset
"""

RETURN = r"""
changed:
  description: Whether a set or reset was (or, in check mode, would be) made on any device.
  returned: always
  type: bool
reboot_required:
  description:
    - True when any wanted value differs from the running (Current) value on any device,
      including pending changes made before this run. A reboot (or power cycle) loads them.
  returned: always
  type: bool
reboot_type:
  description:
    - V(none), V(reboot), or V(power_cycle) when the tool said a warm reboot cannot load the new
      configuration (C(Please power cycle machine to load new configurations)), in this run or in an earlier one
      whose pending values O(power_cycle_record) kept.
  returned: always
  type: str
  sample: reboot
reboot_reason:
  description:
    - Why a warm reboot is wanted, the same words for the same pending values on every run (each device whose
      pending values a warm reboot loads, and those values); empty when none is. Devices that need a power cycle
      are not in it.
  returned: always
  type: str
  sample: "ConnectX firmware settings pending on 0000:3b:00.0 (LINK_TYPE_P1=2, SRIOV_EN=True)"
warm_reboot_required:
  description:
    - True when some device's pending values load at a warm reboot (RV(reboot_reason) is not empty); devices that
      need a power cycle do not count.
  returned: always
  type: bool
power_cycle_devices:
  description:
    - The devices (keys of RV(devices)) whose pending values only a power cycle loads, in name order.
  returned: always
  type: list
  elements: str
  sample: ["0000:5e:00.0"]
tool:
  description: The tool that was used.
  returned: always
  type: dict
  contains:
    path:
      description: Path of the executable.
      type: str
      sample: /usr/bin/mstconfig
    kind:
      description: V(mlxconfig) (NVIDIA MFT) or V(mstconfig) (mstflint).
      type: str
      sample: mstconfig
commands:
  description:
    - The mutating commands run, or that would run in check mode; queries are not listed.
  returned: always
  type: list
  elements: str
  sample: ["mstconfig -d 0000:3b:00.0 -y set ATS_ENABLED=True NUM_OF_VFS=8"]
devices:
  description: Per device (keyed by PCI address, or by MFT path), what was found and done.
  returned: always
  type: dict
  sample:
    "0000:3b:00.0":
      selectors: [ens1f0np0]
      device_type: ConnectX6DX
      part_number: MCX623106AN-CDA_Ax
      description: ConnectX-6 Dx EN adapter card
      changed: true
      reboot_required: true
      reboot_type: reboot
      changes:
        NUM_OF_VFS:
          before: "0"
          after: "8"
      params:
        NUM_OF_VFS:
          default: "8"
          current: "0"
          next_boot: "8"
          read_only: false
  contains:
    selectors:
      description: The O(devices) items that resolved to this device.
      type: list
      elements: str
    device_type:
      description: Device type as printed by the tool.
      type: str
    part_number:
      description: Part number (the tool's C(Name) field).
      type: str
    description:
      description: Adapter description as printed by the tool.
      type: str
    changed:
      description: Whether this device was (or would be) changed.
      type: bool
    reboot_required:
      description: Whether this device needs a reboot to run the wanted values.
      type: bool
    reboot_type:
      description: V(none), V(reboot) or V(power_cycle) for this device.
      type: str
    changes:
      description: Parameter name to C(before) (Next Boot before the run) and C(after) (the new Next Boot value).
      type: dict
    pending:
      description:
        - Each managed parameter whose Next Boot value is not running yet, to that value. It names the same
          pending change the same way on every run, which is what a reboot record can compare; empty when nothing waits.
      type: dict
    params:
      description:
        - Each managed parameter with its C(default), C(current) and C(next_boot) values as the tool
          prints them (after the change; in check mode, as predicted), and C(read_only).
      type: dict
diff:
  description: Per device and parameter, the Next Boot values before and after (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.firmware import state
from ansible_collections.roce.fabric.plugins.module_utils.firmware.transport import FirmwareTool


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="str", required=True),
            params=dict(type="dict"),
            state=dict(type="str", default="present", choices=["present", "reset"]),
            tool=dict(type="str", default="auto", choices=["auto", "mlxconfig", "mstconfig"]),
            tool_path=dict(type="path"),
            power_cycle_record=dict(type="path", default="/var/lib/roce-fabric/mlxconfig_power_cycle.json"),
            **command_timeout_spec()
        ),
        required_if=[("state", "present", ["params"])],
        supports_check_mode=True,
    )
    params = module.params

    def body(run):
        tool = FirmwareTool(module, params["tool"], params["tool_path"])
        state.converge(run, params, tool)

    ModuleRun(module).execute(body)


if __name__ == "__main__":
    main()
