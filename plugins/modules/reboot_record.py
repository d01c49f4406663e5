#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: reboot_record
short_description: Read or write the record of a host's last reboot, so that it is never rebooted twice in vain
version_added: 1.0.0
description:
  - Keeps the rule "never reboot twice for what a reboot did not clear". The record holds the reasons of the last
    reboot made for the host, the boot it produced, the boot before it, when, and an optional subject (what the
    reasons were about).
  - O(state=read) reads the record and this boot's identity and returns RV(not_cleared), the reasons of O(reasons)
    that the recorded reboot was made for and that are still pending in the boot it produced (a ConnectX setting
    only a power cycle loads, a change that fails at boot), and RV(reboot_for), the rest. A new boot allows one more
    reboot.
  - A record that cannot be read (empty or cut short by a power loss while it was written, not JSON, not a record)
    is reported in RV(problem) with a warning and counts as no record, so the host may reboot once more; it never
    stops later runs. A record that is a symbolic link is refused.
  - O(state=write), after a reboot, records O(reasons), this boot's identity and O(previous_boot_id) - written to
    a temporary file, flushed to disk (fsync) and renamed over the record, in a private folder (root's, 0700) made
    if needed. Writing the same reboot again changes nothing.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    description: Runs where the record is kept - on the host (Linux), or on the controller for a host it cannot
      write to (ESXi).
    support: full
    platforms: posix
options:
  path:
    description: The record, an absolute path; its folder is made private (0700) or must already be private.
    type: path
    required: true
  state:
    description: V(read) the record and decide; V(write) it after a reboot.
    type: str
    choices: [read, write]
    default: read
  reasons:
    description: The reasons pending now (V(read)), or the reasons the reboot was made for (V(write)).
    type: list
    elements: str
    default: []
  boot_id:
    description:
      - The identity of the host's current boot. Left out, it is read from C(/proc/sys/kernel/random/boot_id) where
        the module runs (the host itself); give it when the record is kept elsewhere (an ESXi host's boot time).
    type: str
  previous_boot_id:
    description: With V(write), the boot before the reboot (RV(boot_id) of the V(read) before it).
    type: str
    default: ''
  subject:
    description:
      - What the reasons are about (the settings asked for, for one). A recorded reboot keeps a reason from
        another reboot only for the same subject.
    type: raw
notes:
  - The C(roce.fabric.host_reboot) role reads the record before its reboot and writes it after
    (C(host_reboot_record), default C(/var/lib/roce-fabric/host_reboot.json)).
"""

EXAMPLES = r"""
- name: What a reboot would be for, and what the last one did not clear
  roce.fabric.reboot_record:
    path: /var/lib/roce-fabric/host_reboot.json
    reasons: ["mlxconfig: 0000:17:00.0 ADVANCED_PCI_SETTINGS"]
  register: before

- name: Reboot only for what a reboot can clear
  ansible.builtin.reboot:
  register: rebooted
  when: before.reboot_for | length > 0

- name: Record the reboot and the boot it produced
  roce.fabric.reboot_record:
    path: /var/lib/roce-fabric/host_reboot.json
    state: write
    reasons: "{{ before.reboot_for }}"
    previous_boot_id: "{{ before.boot_id }}"
  when: rebooted is changed
"""

RETURN = r"""
record:
  description: The record as it was read (null when there is none or it could not be read).
  returned: always
  type: dict
  sample: {reasons: ["mlxconfig: 0000:17:00.0 ADVANCED_PCI_SETTINGS"], boot_id: 9c6f0a1e-5e0b-4a4e-9d3f-3c1f7d2a8b11,
           previous_boot_id: 1b2c3d4e-0000-4000-8000-000000000001, rebooted_at: "2026-11-27T08:01:02Z", subject: null}
problem:
  description: Why a record that is there could not be read (it then counts as no record); null otherwise.
  returned: always
  type: str
boot_id:
  description: The current boot's identity.
  returned: always
  type: str
not_cleared:
  description: The reasons the recorded reboot, made in this boot's making, did not clear (no reboot for them).
  returned: state is read
  type: list
  elements: str
reboot_for:
  description: The reasons a reboot may be made for.
  returned: state is read
  type: list
  elements: str
commands:
  description: The record written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, read_private, write_private_record
from ansible_collections.roce.fabric.plugins.module_utils.common.reboot_record import decide, new_record, parse_record, same_reboot
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.common.run_lock import boot_id as read_boot_id


def read(path):
    try:
        text = read_private(path)
    except PrivateDirError as exc:
        raise FabricError("Cannot read the reboot record %s: %s; nothing was changed" % (path, exc), kind="refused")
    except (IOError, OSError) as exc:
        raise FabricError("Cannot read the reboot record %s: %s" % (path, exc), kind="record")
    return parse_record(text if text or os.path.lexists(path) else None)


def converge(run, params):
    path = params["path"]
    if not path.startswith("/"):
        raise FabricError("path must be absolute, not %r; nothing was changed" % path, kind="invalid")
    current = params["boot_id"] if params["boot_id"] is not None else read_boot_id()
    if not current:
        raise FabricError("the current boot has no identity (no /proc/sys/kernel/random/boot_id here): give boot_id",
                          kind="invalid")
    record, problem = read(path)
    if problem:
        run.module.warn("%s: %s; it counts as no record (one more reboot is allowed)" % (path, problem))
    run.update(record=record, problem=problem, boot_id=current)
    if params["state"] == "read":
        run.update(**decide(record, params["reasons"], current, params["subject"]))
        return
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    wanted = new_record(params["reasons"], current, params["previous_boot_id"], stamp, params["subject"])
    if same_reboot(record, wanted):
        return
    run.diff("record", record, wanted)

    def write():
        try:
            write_private_record(path, wanted)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot write the reboot record %s: %s" % (path, exc), kind="record")
    run.mutate("write %s: %s" % (path, ", ".join(wanted["reasons"]) or "no reasons"), write)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", choices=["read", "write"], default="read"),
            reasons=dict(type="list", elements="str", default=[]),
            boot_id=dict(type="str"),
            previous_boot_id=dict(type="str", default=""),
            subject=dict(type="raw"),
        ),
        supports_check_mode=True,
    )
    ModuleRun(module, record=None, problem=None).execute(lambda run: converge(run, module.params))


if __name__ == "__main__":
    main()
