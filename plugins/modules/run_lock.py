#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lock
short_description: Take or release a host lock that one run holds across its tasks
version_added: 1.0.0
description:
  - Lets one run at a time do a job on a host whose resources cannot be shared, for example the validation's test
    ports and run directory. O(state=present) takes the lock for O(owner), the run's id; O(state=absent) releases
    it. The lock is a file in a private folder (root's, mode 0700, checked like the collection's other private
    folders) made with C(O_EXCL), holding the owner, the time and the host's boot id.
  - Another owner's lock is refused with its owner and age, and nothing is written. A lock taken before the host's
    last boot, or more than O(stale_after) seconds ago, was left by a run that ended without releasing it; it is
    taken over, and RV(taken_over) says whose it was. Two runs that find the same abandoned lock take it over one at
    a time (under a flock of the lock's folder, the lock read again); the second finds the first's live lock and is
    refused, never removes it.
  - Taking a lock the same owner holds, and releasing one it does not hold, change nothing; taking it again after
    more than half of O(stale_after), or with O(refresh=true), refreshes its time, so that a long run keeps its
    lock. The result carries C(controller_time), the controller's clock when the task ended, which the filter
    roce.fabric.run_lock_due compares with the controller's clock to tell when a refresh is due.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs on the host to lock.
    support: full
    platforms: posix
options:
  path:
    description: The lock file, an absolute path; its folder is created private (0700) or must already be private.
    type: path
    required: true
  owner:
    description:
      - "Who takes or releases the lock, usually the run's id; 1 to 128 letters, digits and C(_ . : @ + -)."
      - Required with O(state=absent). Left out with O(state=present), the module names the run from the time and a
        random number (C(20261125T080102Z-3fa9c1d2)) and returns it in RV(owner) for the release.
    type: str
  state:
    description: V(present) takes the lock, V(absent) releases it if O(owner) holds it.
    type: str
    choices: [present, absent]
    default: present
  stale_after:
    description: Seconds after which another owner's lock is taken to be abandoned, 60 to 604800.
    type: int
    default: 7200
  refresh:
    description: With O(state=present), write the time now into the owner's lock whatever its age (a long run's
      refresh); a lock of another owner is refused as always.
    type: bool
    default: false
notes:
  - In check mode the lock is neither taken nor released; a live lock of another owner still fails the task, as
    the real run would.
  - The C(roce.fabric.validate) role takes this lock on every host for the length of its run.
"""

EXAMPLES = r"""
- name: One validation at a time on this host
  roce.fabric.run_lock:
    path: /var/lib/roce-fabric/validate.lock
    owner: "{{ run_id }}"

- name: Release it at the end, also when the run failed
  roce.fabric.run_lock:
    path: /var/lib/roce-fabric/validate.lock
    owner: "{{ run_id }}"
    state: absent

- name: Refresh it at a step of a long run, when a quarter of stale_after has passed on the controller's clock
  roce.fabric.run_lock:
    path: /var/lib/roce-fabric/validate.lock
    owner: "{{ run_id }}"
    refresh: true
  when: lock | roce.fabric.run_lock_due(7200)

- name: A lock named by the module (its owner returned for the release)
  roce.fabric.run_lock:
    path: /var/lib/roce-fabric/validate.lock
  register: lock
"""

RETURN = r"""
owner:
  description: The owner this task took or released the lock for (O(owner), or the name the module made).
  returned: always
  type: str
  sample: 20261125T080102Z-3fa9c1d2
holder:
  description: The lock's record after the task (O(state=present)) or the one released (O(state=absent)).
  returned: always
  type: dict
  contains:
    owner:
      description: The owner's id.
      type: str
    since:
      description: When the lock was taken (seconds since the epoch).
      type: float
    boot_id:
      description: The host's boot id when the lock was taken.
      type: str
taken_over:
  description: The abandoned lock replaced by this one, with the C(reason) it was taken to be abandoned; null when none.
  returned: when O(state=present)
  type: dict
  sample: {"owner": "20261125T080102-4711", "since": 1795000000.0, "boot_id": "3f0c...", "reason": "taken before the host's last boot"}
host_time:
  description:
    - The host's clock (seconds since the epoch) when the module ran. Beside RV(controller_time) it measures how far
      the host's clock is from the controller's (off by as much as the task's return took), for the validation's
      pair tests' deadlines.
  returned: always
  type: float
  sample: 1795000123.1
controller_started:
  description: The controller's clock (seconds since the epoch) when the task began on this host, added by the action
    plugin; RV(host_time) was read between it and RV(controller_time).
  returned: always
  type: float
  sample: 1795000122.4
controller_time:
  description: The controller's clock (seconds since the epoch) when the task ended, added by the action plugin.
  returned: always
  type: float
  sample: 1795000123.4
commands:
  description: What was done to the lock (or, in check mode, what a real run does).
  returned: always
  type: list
  elements: str
  sample: ["take /var/lib/roce-fabric/validate.lock for 20261125T080102-4711"]
"""

import binascii
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError
from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.common.run_lock import OWNER_RE, LockHeld, release, take


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            owner=dict(type="str"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            stale_after=dict(type="int", default=7200),
            refresh=dict(type="bool", default=False),
        ),
        required_if=[("state", "absent", ["owner"])],
        supports_check_mode=True,
    )
    params = module.params
    if params["owner"] is None:
        # The run's name when the caller gives none: when it started, and a random part two runs do not share.
        params["owner"] = "%s-%s" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
                                     binascii.hexlify(os.urandom(4)).decode("ascii"))
    path = params["path"]
    if not os.path.isabs(path) or "\x00" in path or os.path.basename(path) in ("", ".", ".."):
        module.fail_json(msg="path must be an absolute file path, not %r; nothing was changed" % path)
    if not OWNER_RE.match(params["owner"] or ""):
        module.fail_json(msg="owner must be 1 to 128 letters, digits and _ . : @ + -, not %r; nothing was changed" % params["owner"])
    if not 60 <= params["stale_after"] <= 604800:
        module.fail_json(msg="stale_after %d is outside 60-604800 seconds; nothing was changed" % params["stale_after"])
    run = ModuleRun(module)
    run.update(owner=params["owner"], host_time=time.time())

    def body(run):
        try:
            # take and release decide and write under the lock folder's flock in one call (two runs may race for
            # an abandoned lock), so the record follows the call.
            if params["state"] == "present":
                changed, holder, taken_over = take(path, params["owner"], params["stale_after"], check_mode=module.check_mode,
                                                   refresh=params["refresh"])
                if changed:
                    run.mutate("take %s for %s%s" % (path, params["owner"], " (from %s: %s)" % (
                        taken_over.get("owner"), taken_over.get("reason")) if taken_over else ""))
                run.set_diff(dict(held_by=(taken_over or {}).get("owner") if changed else holder.get("owner")),
                             dict(held_by=holder.get("owner")))
                run.update(holder=holder, taken_over=taken_over)
                return
            changed, holder = release(path, params["owner"], check_mode=module.check_mode)
            if changed:
                run.mutate("release %s held by %s" % (path, params["owner"]))
            run.set_diff(dict(held_by=holder.get("owner")), dict(held_by=None if changed else holder.get("owner")))
            run.update(holder=holder)
        except LockHeld as exc:
            run.fail("%s is locked: %s. Another run is using this host; nothing was changed. Run again when it "
                     "has finished, or remove the file if that run is gone." % (path, exc),
                     failure="locked", holder=exc.holder)
        except (PrivateDirError, IOError, OSError) as exc:
            run.fail("Cannot use the lock %s: %s; nothing was changed" % (path, exc))

    run.execute(body)


if __name__ == "__main__":
    main()
