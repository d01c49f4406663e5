#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_scratch
short_description: Local NVMe drives striped into one RAID 0 array, formatted and mounted as scratch
version_added: 1.0.0
description:
  - Selects local NVMe namespaces (C(nvme0n1), ...) by kernel name, model, serial and size, stripes them into one
    Linux md RAID 0 array with a stable name (C(/dev/md/NAME), metadata 1.2, no home host recorded so that a
    renamed host assembles it under the same name), makes an XFS or ext4 file system on it, records the array in
    C(mdadm.conf) and the mount in C(/etc/fstab) by the file system's UUID, mounts it and sets the owner and mode
    of its root.
  - An array of that name that is already active with the same members is kept as it is; one whose members are
    all present but not assembled is assembled, not created again. An active array of that name with other
    members is refused; it is never rebuilt over its data.
  - Takes only local namespaces - every controller a namespace is reached through (each path of a native multipath
    namespace) must have one of O(transports), C(pcie) by default. NVMe over Fabrics namespaces (C(nvme connect)
    over RDMA, TCP or FC; on a RoCE fabric, likely a neighbour's storage) are left out, named in RV(left_out) and in
    any error, even with O(drives=[{}]).
  - Refuses, with nothing changed, drives that hold partitions, a file system or another array's superblock
    unless O(force=true), which wipes their signatures first; a drive with anything mounted or used as swap (the
    boot disk) is refused even then.
  - Before it makes an array, it waits for udev (C(udevadm settle)) and reads each drive itself rather than udev's
    cached view - every signature (C(wipefs --no-act)), the kernel's holders, and 16 samples of 64 KiB from the first
    to the last block through an exclusive open (which the kernel refuses while anything mounts or holds the drive,
    in any mount namespace). A signature udev had not recorded, or non-zero data without any signature, needs
    O(force=true); a holder other than an inactive array, or an exclusive open refused, is refused even then. Only
    then does C(mdadm --create --run) run. If a wipe or the create fails after drives were wiped, the error names
    the wiped drives.
  - The mount point is refused when any of its components is a symbolic link, or an ancestor can be written by any
    user or is not owned by root; it is made one directory at a time, and the owner and mode are set on a
    descriptor of the mounted root opened without following links, after checking it is the array's file system.
  - Reads everything before it changes anything; with check mode it reports what it would run.
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
  name:
    description:
      - Name of the array (C(/dev/md/NAME), the superblock's name, the file system's label, cut to its length limit).
      - 1 to 32 letters, digits, C(_) and C(-).
    type: str
    default: scratch
  state:
    description:
      - C(present) makes and mounts the array; C(absent) unmounts it, takes its lines out of C(/etc/fstab) and
        C(mdadm.conf) and stops it, leaving the data on the drives (a later C(present) with the same drives
        assembles it again).
    type: str
    choices: [present, absent]
    default: present
  drives:
    description:
      - Which local NVMe namespaces make the array. A namespace is taken when one selector matches it (all the keys
        a selector gives). C({}) matches every local NVMe namespace. Required with O(state=present).
    type: list
    elements: dict
    suboptions:
      name:
        description: Regular expression matched against the whole kernel name (C(nvme[0-7]n1)).
        type: str
      model:
        description: Regular expression matched against the whole model string (C(Microsoft NVMe Direct Disk.*)).
        type: str
      serial:
        description: Regular expression matched against the whole serial number.
        type: str
      min_size:
        description: Smallest size taken, in bytes or with a binary unit (C(800G), C(3.5T)).
        type: str
      max_size:
        description: Largest size taken, in bytes or with a binary unit.
        type: str
  count:
    description:
      - The number of drives the selectors must match; any other number fails with nothing changed (a node that
        lost a drive does not get a smaller array).
    type: int
  chunk:
    description: Chunk size of the stripes (C(512K)); mdadm's default when left out.
    type: str
  fstype:
    description: File system made on the array.
    type: str
    choices: [xfs, ext4]
    default: xfs
  path:
    description:
      - Mount point (created when missing), normalised (C(/./mnt//nvme) is C(/mnt/nvme)). Not a system directory
        such as C(/), C(/mnt) or C(/var), nor in a system tree (C(/etc), C(/usr), C(/boot), C(/proc), C(/sys), C(/dev),
        C(/run), C(/tmp), C(/var/lib), ...), however it is spelt. Required with O(state=present); with O(state=absent)
        the mount point whose C(/etc/fstab) entry is removed - only the entry of this array's file system, while the
        array is active.
    type: path
  transports:
    description:
      - NVMe transports a namespace may be reached through to be taken (every one of its controllers). C(pcie) is a
        drive in the node; C(rdma), C(tcp) and C(fc) are NVMe over Fabrics, C(loop) the kernel's own target. Add
        one only for a site that really stripes remote namespaces.
    type: list
    elements: str
    choices: [pcie, rdma, tcp, fc, loop]
    default: [pcie]
  mount_options:
    description:
      - Options of the C(/etc/fstab) entry. Keep C(nofail) where the drives may come back empty (cloud instances),
        so that the boot goes on without the scratch mount.
    type: str
    default: defaults,noatime,nofail
  owner:
    description: Owner of the mounted file system's root (name or id); unmanaged when left out.
    type: str
  group:
    description: Group of the mounted file system's root (name or id); unmanaged when left out.
    type: str
  mode:
    description: Mode of the mounted file system's root, in octal (C('1777')); unmanaged when left out.
    type: str
  force:
    description:
      - Wipe the signatures (partition table, file system, md superblock) of selected drives that hold them, and make
        a new file system over one of another type. Drives with anything mounted are refused even so.
    type: bool
    default: false
requirements:
  - mdadm, util-linux (lsblk, blkid, wipefs, mount), udev (udevadm), xfsprogs or e2fsprogs on the node.
notes:
  - The array is found by its name among the active arrays, whatever C(/dev/mdN) the kernel gave it.
  - Nothing here needs a reboot (C(reboot_required) is always false); the array is assembled at boot from its
    superblocks and C(mdadm.conf), and mounted from C(/etc/fstab).
  - Drives that come back empty after a stop (ephemeral NVMe of cloud instances) are made again at boot by the
    C(roce.fabric.nvme_scratch) role's boot unit, with the same UUIDs, where the role is asked to.
seealso:
  - name: Linux md(4)
    description: Kernel documentation of software RAID.
    link: https://docs.kernel.org/admin-guide/md.html
"""

EXAMPLES = r"""
- name: The eight local NVMe drives of an Azure NDv4 node, striped and mounted at /mnt/nvme
  roce.fabric.nvme_scratch:
    drives:
      - model: "Microsoft NVMe Direct Disk.*"
    count: 8
    path: /mnt/nvme
    mode: "1777"

- name: Every 3.5 TB NVMe namespace, ext4, owned by the job user
  roce.fabric.nvme_scratch:
    name: ckpt
    drives:
      - min_size: 3T
        max_size: 4T
    fstype: ext4
    path: /scratch
    owner: slurm
    group: slurm
    mode: "0770"

- name: Take the array down (its data stays on the drives)
  roce.fabric.nvme_scratch:
    name: ckpt
    state: absent
    path: /scratch
"""

RETURN = r"""
drives:
  description: The selected drives, in array order.
  returned: state is present
  type: list
  elements: dict
  sample: [{name: nvme0n1, path: /dev/nvme0n1, model: QEMU NVMe Ctrl, serial: RFN1D0, size: 1073741824,
            by_id: /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_RFN1D0}]
left_out:
  description:
    - The namespaces the selectors match that were left out as not local, each with its controllers' transports
      and addresses.
  returned: state is present
  type: list
  elements: str
  sample: ["nvme4n1: nvme4 over tcp (nqn.2014-08.org.example:scratch, traddr=10.0.0.7,trsvcid=4420)"]
array:
  description: The array after the run (device is C(/dev/md/NAME), kernel the C(/dev/mdN) it is; uuid null in check
    mode before it is made).
  returned: always
  type: dict
  sample: {name: scratch, device: /dev/md/scratch, kernel: /dev/md127, level: raid0,
           members: [/dev/nvme0n1, /dev/nvme1n1], uuid: "0b7f6a43:8c1e2d55:6a9b1f0e:2c4d8e71", size: 2143289344}
filesystem:
  description: Type and UUID of the array's file system (uuid null in check mode before it is made).
  returned: state is present
  type: dict
  sample: {type: xfs, uuid: 5b1f3c0e-8d1a-4f6e-9c2b-7a3d5e9f1b24}
mount:
  description: The mount point, the fstab entry and whether the array is mounted there.
  returned: state is present
  type: dict
  sample: {path: /mnt/nvme, fstab: "UUID=5b1f3c0e-8d1a-4f6e-9c2b-7a3d5e9f1b24 /mnt/nvme xfs defaults,noatime,nofail 0 0",
           mounted: true}
reboot_required:
  description: Always false; nothing here waits for a reboot.
  returned: always
  type: bool
commands:
  description: The commands and file edits that changed (in check mode, would change) the node.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.storage import state
from ansible_collections.roce.fabric.plugins.module_utils.storage.scratch import converge

SELECTOR_SPEC = dict(
    name=dict(type="str"),
    model=dict(type="str"),
    serial=dict(type="str"),
    min_size=dict(type="str"),
    max_size=dict(type="str"),
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", default="scratch"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            drives=dict(type="list", elements="dict", options=SELECTOR_SPEC),
            count=dict(type="int"),
            chunk=dict(type="str"),
            fstype=dict(type="str", choices=["xfs", "ext4"], default="xfs"),
            path=dict(type="path"),
            mount_options=dict(type="str", default="defaults,noatime,nofail"),
            owner=dict(type="str"),
            group=dict(type="str"),
            mode=dict(type="str"),
            force=dict(type="bool", default=False),
            transports=dict(type="list", elements="str", default=["pcie"], choices=list(state.TRANSPORTS)),
            **command_timeout_spec()
        ),
        required_if=[("state", "present", ("drives", "path"))],
        supports_check_mode=True,
    )
    ModuleRun(module, array=None, reboot_required=False).execute(lambda run: converge(run, module.params))


if __name__ == "__main__":
    main()
