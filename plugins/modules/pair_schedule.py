#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pair_schedule
short_description: Run this host's part of a validation's pair tests in one call, each slot once both sides are ready
version_added: 1.0.0
description:
  - Takes the slots a validation plan gives this host (RV(roce.fabric.validation_report#module:plan) of
    O(roce.fabric.validation_report#module:mode=plan) with O(roce.fabric.validation_report#module:execution=launch))
    and runs them one after the other, then returns the record of every side at once. Meant to run as one
    asynchronous task per host (C(async), C(poll=0), then C(ansible.builtin.async_status)), so that the controller's
    module runs per host are a launch and a collection whatever the number of rounds.
  - No slot waits for a clock. A server side is started as soon as this host has ended its previous slot (a stray
    server of these tools on its port is stopped first) and collected by the slot's C(end); a client side connects as
    soon as this host has ended its previous slot and tries again while its server refuses it (the server's host
    still in an earlier slot) - after O(retry_delay) seconds, then half as long again after each refusal, at most a
    second between tries - until the side's C(latest). Every test of a plan has its
    own port, so a client reaches only its own test's server. Each side runs as M(roce.fabric.perftest) runs it,
    judged the same way; its record is the one the round-by-round play keeps, with its C(slot), C(began) and
    C(ended) (seconds after O(t0)).
  - A slot this host reaches after its side's C(latest) is not run, and its record says C(late_start); the partner's
    record says what it saw. Every wait ends by the slot's C(end), so the part ends by its last slot's end whatever
    the partners do.
  - With O(lock), the validation's lock on this host is refreshed between slots once a quarter of its
    C(stale_after) has passed, so that a long part keeps it.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  check_mode:
    support: full
    details: In check mode no test runs; every slot is returned with C(skipped).
  diff_mode:
    support: none
    details: A measurement; nothing is configured.
  idempotent:
    support: full
    details: The tests leave nothing behind (each server is collected and its files removed); it reports no change.
  platform:
    description: Runs on a Linux host with RDMA devices.
    support: full
    platforms: posix
options:
  slots:
    description: This host's slots, in any order.
    type: list
    elements: dict
    required: true
    suboptions:
      slot:
        description: The slot's number (the plan's round).
        type: int
        required: true
      start:
        description: Seconds after O(t0) at which the slot starts on the plan's worst case (nothing waits for it).
        type: float
        required: true
      latest:
        description: Seconds after O(t0) after which this side is not begun (its test no longer fits before C(end)).
        type: float
        required: true
      end:
        description: Seconds after O(t0) by which everything of the slot has ended.
        type: float
        required: true
      role:
        description: This host's side of the slot's test.
        type: str
        choices: [server, client]
        required: true
      test_id:
        description: The plan's id of the test.
        type: str
        required: true
      args:
        description:
          - This side's M(roce.fabric.perftest) arguments as the plan gives them (C(tool), C(port), C(device),
            C(server) for a client, thresholds, C(run_dir), ...); C(mode) and the timeouts are set from the slot.
        type: dict
        required: true
  t0:
    description: The controller's time (seconds since the epoch) that the slots' seconds count from.
    type: float
    required: true
  retry_delay:
    description: Seconds a refused client waits before it first tries again (then half as long again each time, at most
      1 s).
    type: float
    default: 0.2
  lock:
    description: The validation's lock on this host, refreshed while the part runs.
    type: dict
    suboptions:
      path:
        description: The lock file (M(roce.fabric.run_lock)'s O(roce.fabric.run_lock#module:path)).
        type: path
        required: true
      owner:
        description: The run's owner of the lock.
        type: str
        required: true
      stale_after:
        description: The lock's O(roce.fabric.run_lock#module:stale_after).
        type: int
        required: true
notes:
  - The slots' times are read on this host's clock. The plan measures every host's clock against the controller's
    first (M(roce.fabric.run_lock)'s RV(roce.fabric.run_lock#module:host_time)), refuses hosts too far off and widens
    the deadlines by the spread of the rest.
seealso:
  - module: roce.fabric.perftest
  - module: roce.fabric.validation_report
"""

EXAMPLES = r"""
- name: Launch this host's part of the pair tests
  roce.fabric.pair_schedule:
    slots: "{{ validate_plan.plan.parts[inventory_hostname] }}"
    t0: "{{ validate_plan.plan.launch.t0 }}"
    retry_delay: "{{ validate_plan.plan.launch.retry_delay }}"
  async: "{{ validate_plan.plan.launch.async_timeout }}"
  poll: 0
  register: validate_launched

- name: Collect its records once it has run
  ansible.builtin.async_status:
    jid: "{{ validate_launched.ansible_job_id }}"
  register: validate_part_run
  until: validate_part_run.finished
  retries: "{{ validate_plan.plan.launch.poll_retries }}"
  delay: "{{ validate_plan.plan.launch.poll_delay }}"
"""

RETURN = r"""
results:
  description:
    - One record per slot, in slot order - C({test_id, role, passed, cause, msg, command, summary, result, slot, began,
      ended, part_began}), a server's with C(started) (whether it listened), a client's with C(connect_tries). C(cause) is
      the test's (as M(roce.fabric.perftest)'s) or C(late_start) for a slot not run, whose C(msg) says whether the part
      began after the first slot's start (the launch's lead) or an earlier slot overran.
    - C(began), C(ended) and C(part_began) (when this host's part began) are seconds after O(t0) on this host's clock.
  returned: always
  type: list
  elements: dict
late:
  description: The slots not run because their start had passed when this host reached them.
  returned: always
  type: list
  elements: int
lock_refreshed:
  description: How many times the lock was refreshed; C(lock_error) says why a refresh failed, when one did.
  returned: when O(lock) is given
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.validate.pair_schedule import PartRunner


def main():
    module = AnsibleModule(
        argument_spec=dict(
            slots=dict(type="list", elements="dict", required=True, options=dict(
                slot=dict(type="int", required=True),
                start=dict(type="float", required=True),
                latest=dict(type="float", required=True),
                end=dict(type="float", required=True),
                role=dict(type="str", required=True, choices=["server", "client"]),
                test_id=dict(type="str", required=True),
                args=dict(type="dict", required=True),
            )),
            t0=dict(type="float", required=True),
            retry_delay=dict(type="float", default=0.2),
            lock=dict(type="dict", options=dict(
                path=dict(type="path", required=True),
                owner=dict(type="str", required=True),
                stale_after=dict(type="int", required=True),
            )),
        ),
        supports_check_mode=True,
    )
    params = module.params
    bad = ["slot %s: its times must be 0 <= start <= latest < end (start %s, latest %s, end %s)"
           % (s["slot"], s["start"], s["latest"], s["end"]) for s in params["slots"]
           if not 0 <= s["start"] <= s["latest"] < s["end"]]
    if len(set(s["slot"] for s in params["slots"])) != len(params["slots"]):
        bad.append("a slot is given twice")
    if not 0 < params["retry_delay"] <= 10:
        bad.append("retry_delay must be above 0 and at most 10 seconds")
    if bad:
        module.fail_json(msg="; ".join(bad) + "; nothing was run")
    run = ModuleRun(module)

    def body(run):
        if module.check_mode:
            run.update(late=[], results=[dict(test_id=s["test_id"], role=s["role"], slot=s["slot"], skipped=True)
                                         for s in sorted(params["slots"], key=lambda item: item["slot"])])
            return
        runner = PartRunner(module, params["t0"], params["retry_delay"], params["lock"])
        records = runner.run(params["slots"])
        run.update(results=records, late=[r["slot"] for r in records if r.get("cause") == "late_start"])
        if params["lock"]:
            run.update(lock_refreshed=runner.refreshed, lock_error=runner.lock_error)

    run.execute(body)


if __name__ == "__main__":
    main()
