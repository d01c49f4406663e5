#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sriov_vfs
short_description: SR-IOV virtual functions of one physical function in the running kernel
version_added: 1.0.0
description:
  - Sets the number of virtual functions of a physical function through C(sriov_numvfs). The kernel
    refuses to change a non-zero count directly, so a changed count goes through 0 (the VFs are
    destroyed and created again); an unchanged count is never touched.
  - Sets per-VF MAC address, trust, spoof checking and port VLAN with C(ip link set dev PF vf N),
    only for the settings that differ from what C(ip -j -d link show) reports, one command per VF.
  - Reads everything before it changes anything; input that cannot be right (an interface name with
    other characters, a VF index outside the count, a malformed MAC, a VLAN outside 0-4094, more VFs
    than the adapter offers) fails with nothing changed.
  - Changes only the running kernel. Keeping the VFs across reboots is the job of the
    caller's (the C(roce.fabric.sriov) role writes a systemd unit), and the
    firmware side (C(SRIOV_EN), C(NUM_OF_VFS)) is M(roce.fabric.mlxconfig)'s.
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
    description: "Network interface of the physical function: 1 to 15 characters, letters, digits and C(_ . : -)."
    type: str
    required: true
  num_vfs:
    description: Number of virtual functions; 0 removes them.
    type: int
    required: true
  vfs:
    description: Settings of individual VFs; settings left out are not managed.
    type: list
    elements: dict
    default: []
    suboptions:
      index:
        description: VF number, 0 to O(num_vfs) - 1.
        type: int
        required: true
      mac:
        description: MAC address (C(02:00:00:00:00:01)); compared without regard to case.
        type: str
      trust:
        description: Trusted VF (may change its MAC, enter promiscuous mode).
        type: bool
      spoofchk:
        description: MAC spoof checking.
        type: bool
      vlan:
        description: Port VLAN, 0 for none.
        type: int
  wait_for_firmware:
    description:
      - The adapter's firmware change that raises its VF limit waits for a reboot. When the adapter offers
        fewer VFs than O(num_vfs), report it (RV(pending)) and change nothing instead of failing.
    type: bool
    default: false
requirements:
  - iproute2 (C(ip)) on the host
notes:
  - Runs C(ip) with C(LC_ALL=C) and an argv list, never through a shell.
seealso:
  - module: roce.fabric.mlxconfig
"""

EXAMPLES = r"""
- name: Eight VFs on the first port, VF 0 trusted with a fixed MAC on VLAN 100
  roce.fabric.sriov_vfs:
    netdev: ens1f0np0
    num_vfs: 8
    vfs:
      - {index: 0, mac: "02:00:00:00:00:01", trust: true, spoofchk: false, vlan: 100}

- name: Remove the VFs
  roce.fabric.sriov_vfs:
    netdev: ens1f0np0
    num_vfs: 0
"""

RETURN = r"""
num_vfs:
  description: The VF count before and after (after is what a real run leaves in check mode).
  returned: always
  type: dict
  sample: {before: 0, after: 8}
total_vfs:
  description: How many VFs the adapter offers (C(sriov_totalvfs)).
  returned: always
  type: int
  sample: 8
pending:
  description: The adapter offers fewer VFs than asked and O(wait_for_firmware) is set; nothing was changed.
  returned: always
  type: bool
removes_vfs:
  description:
    - The run changes the count of a device that has VFs. The kernel takes every VF away before it makes the new
      count, so whatever uses one (a pod, a VM) loses it. Playbooks that roll through hosts plan with check mode and
      leave such a change to their rolling batch.
  returned: always
  type: bool
  sample: true
vfs:
  description: Every VF's settings after the run, by index (predicted in check mode).
  returned: always
  type: dict
  sample: {"0": {mac: "02:00:00:00:00:01", trust: true, spoofchk: false, vlan: 100}}
commands:
  description: The changes made (or, in check mode, that a real run makes), in order.
  returned: always
  type: list
  elements: str
  sample: ["write /sys/class/net/ens1f0np0/device/sriov_numvfs: 0", "write /sys/class/net/ens1f0np0/device/sriov_numvfs: 8",
           "ip link set dev ens1f0np0 vf 0 mac 02:00:00:00:00:01 trust on"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.rdma import sriov
from ansible_collections.roce.fabric.plugins.module_utils.rdma.host import SriovPort

VF_SPEC = dict(
    index=dict(type="int", required=True),
    mac=dict(type="str"),
    trust=dict(type="bool"),
    spoofchk=dict(type="bool"),
    vlan=dict(type="int"),
)


def converge(run, params):
    try:
        wanted = sriov.want_vfs(params["netdev"], params["num_vfs"], params["vfs"])
    except sriov.SriovInputError as exc:
        raise FabricError("Invalid input, nothing was changed: %s" % exc, kind="invalid")
    port = SriovPort(run.module, params["netdev"])
    total = port.read_count("sriov_totalvfs")
    current = port.read_count("sriov_numvfs")
    count = params["num_vfs"]
    run.update(total_vfs=total, pending=False, removes_vfs=False, num_vfs=dict(before=current, after=current))
    if count > total:
        if params["wait_for_firmware"]:
            run.update(pending=True, vfs=dict((str(i), v) for i, v in sorted(sriov.parse_vfs(port.link_json()).items())))
            return
        raise FabricError("%s offers %d VFs (sriov_totalvfs), %d asked; nothing was changed" % (params["netdev"], total, count),
                          kind="too_many")

    if count != current:
        path = port.count_path("sriov_numvfs")
        for step in ([0] if current else []) + ([count] if count else []):
            run.mutate("write %s: %d" % (path, step), lambda step=step: port.write_count(step))
        run.update(num_vfs=dict(before=current, after=count), removes_vfs=current > 0)

    # VFs that were just created (or would be, in check mode) start with the driver's defaults.
    have = sriov.parse_vfs(port.link_json()) if not (run.check_mode and count != current) else {}
    changes = sriov.compare(wanted, have)
    for index, differ in sorted(changes.items()):
        argv = sriov.set_argv(port.ip, params["netdev"], index, differ)
        run.mutate(CommandRunner.render(argv), lambda argv=argv: port.set_vf(argv))
    after = dict((i, dict(v)) for i, v in have.items() if i < count)
    for index, differ in changes.items():
        after.setdefault(index, {}).update((key, pair[1]) for key, pair in differ.items())
    run.update(vfs=dict((str(i), v) for i, v in sorted(after.items())))
    run.set_diff(*sriov.diff_of(current, count, changes))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdev=dict(type="str", required=True),
            num_vfs=dict(type="int", required=True),
            vfs=dict(type="list", elements="dict", default=[], options=VF_SPEC),
            wait_for_firmware=dict(type="bool", default=False),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    ModuleRun(module, vfs={}).execute(lambda run: converge(run, module.params))


if __name__ == "__main__":
    main()
