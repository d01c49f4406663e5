#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node
short_description: Drain a Slurm node and wait until its jobs are done, or return a node this collection drained
version_added: 1.0.0
description:
  - O(state=drained) drains O(name) (C(scontrol update NodeName=<name> State=DRAIN Reason=<reason>), the reason
    marked with C(roce.fabric:) in front) so that Slurm starts no new job on it, then waits up to O(wait_timeout)
    seconds until no job runs on it (C(squeue --nodelist)) and Slurm no longer counts it busy, and fails naming the
    jobs still there when they do not end in time (RV(failure) C(jobs_running)), or naming its state when Slurm
    still counts it busy without a job squeue shows holding it (C(node_busy), a job ending or resizing); the node
    stays drained then.
  - A node that is drained or down already with another reason (someone else's) is left as it is, and waited for
    the same way; RV(drained_by) says C(other).
  - O(state=resumed) returns the node (C(State=RESUME)) only when its reason carries this collection's mark; a node
    that someone else drained stays drained, and one that is not drained is left alone.
  - Runs C(scontrol) and C(squeue) where the module runs (a node of the cluster, or the host of the Slurm
    controller), with their argv lists and C(LC_ALL=C), each under O(command_timeout).
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  platform:
    description: Runs on a host whose C(scontrol) reaches the cluster's controller (munge credentials in place).
    support: full
    platforms: posix
options:
  name:
    description: The node's Slurm name (letters, digits and C(. _ -); one node, no host list).
    type: str
    required: true
  state:
    description: V(drained) drains the node and waits for its jobs; V(resumed) returns it if this collection drained it.
    type: str
    choices: [drained, resumed]
    default: drained
  reason:
    description: Why (one line; C(roce.fabric:) is put in front). Required with O(state=drained).
    type: str
  wait_timeout:
    description: Seconds to wait until no job runs on the drained node, 0 to 604800; 0 does not wait (the jobs are
      named, and the task fails while any runs).
    type: int
    default: 600
  poll_interval:
    description: Seconds between two reads of the node while waiting, 1 to 300.
    type: int
    default: 5
  scontrol:
    description: The scontrol program; found on the PATH when left out.
    type: path
  squeue:
    description: The squeue program; found on the PATH when left out.
    type: path
  slurm_conf:
    description: The cluster's C(slurm.conf) (C(SLURM_CONF) of both programs) where it is not the default.
    type: path
notes:
  - In check mode nothing is sent and nothing is waited for; the jobs on the node are read and returned.
"""

EXAMPLES = r"""
- name: Drain the node before its reboot; its jobs end first
  roce.fabric.slurm_node:
    name: "{{ inventory_hostname_short }}"
    state: drained
    reason: "reboot: mlxconfig SRIOV_EN"
    wait_timeout: 3600

- name: Return it after its checks (only if this collection drained it)
  roce.fabric.slurm_node:
    name: "{{ inventory_hostname_short }}"
    state: resumed
"""

RETURN = r"""
state:
  description: The node's Slurm state after the task (as scontrol prints it).
  returned: success
  type: str
  sample: IDLE+DRAIN
reason:
  description: The node's reason after the task, without who set it and when (RV(reason_user), RV(reason_time)).
  returned: success
  type: str
  sample: "roce.fabric: reboot: mlxconfig SRIOV_EN"
reason_user:
  description: Who set the node's reason, as scontrol prints it after the reason (C([root@2026-11-28T10:01:02])); null
    where it prints none. For someone else's drain, the evidence of whose it is.
  returned: success
  type: str
  sample: root
reason_time:
  description: When the reason was set, as scontrol prints it; null where it prints none.
  returned: success
  type: str
  sample: "2026-11-28T10:01:02"
failure:
  description: Why the task failed - C(jobs_running) (jobs did not end within O(wait_timeout)) or C(node_busy) (Slurm
    still counts the node busy without a job that squeue shows holding it).
  returned: on those failures
  type: str
drained_by:
  description: Whose drain the node was in before the task - C(roce.fabric), C(other) or C(none).
  returned: success
  type: str
jobs:
  description: The jobs on the node when the task ended (C(id), C(user), C(state), C(name)).
  returned: always
  type: list
  elements: dict
waited:
  description: Seconds waited for the jobs to end.
  returned: success
  type: float
note:
  description: Why nothing was sent, when a node was left as someone else had it.
  returned: when that happened
  type: str
commands:
  description: What was sent to Slurm (in check mode, what a real run sends).
  returned: always
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import (CommandRunner, FabricError, ModuleRun,
                                                                             command_timeout_spec)
from ansible_collections.roce.fabric.plugins.module_utils.slurm import node as slurm


class Slurm(object):
    """scontrol and squeue for one node."""

    def __init__(self, module, runner, name):
        params = module.params
        self.runner, self.name = runner, name
        self.scontrol = params["scontrol"] or module.get_bin_path("scontrol")
        self.squeue = params["squeue"] or module.get_bin_path("squeue")
        if not self.scontrol or not self.squeue:
            raise FabricError("scontrol and squeue were not found on %s (set scontrol and squeue); nothing was changed"
                              % ("the PATH" if not (params["scontrol"] or params["squeue"]) else "the paths given"))
        self.env = dict(SLURM_CONF=params["slurm_conf"]) if params["slurm_conf"] else {}

    def _run(self, argv, mutating=False):
        rc, out, err = self.runner.run(argv, mutating=mutating, env=self.env)
        if rc != 0:
            raise FabricError("%s failed (rc %d): %s" % (CommandRunner.render(argv), rc, (err or out).strip()),
                              rc=rc, stdout=out, stderr=err)
        return out

    def node(self):
        try:
            return slurm.parse_node(self._run([self.scontrol, "--oneliner", "show", "node", self.name]), self.name)
        except slurm.SlurmError as exc:
            raise FabricError(str(exc))

    def jobs(self):
        try:
            return slurm.parse_jobs(self._run([self.squeue, "--noheader", "--nodelist", self.name,
                                               "--format", slurm.SQUEUE_FORMAT]))
        except slurm.SlurmError as exc:
            raise FabricError(str(exc))

    def update_argv(self, action, reason=None):
        argv = [self.scontrol, "update", "NodeName=%s" % self.name, "State=%s" % action.upper()]
        return argv + (["Reason=%s" % reason] if reason is not None else [])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", default="drained", choices=["drained", "resumed"]),
            reason=dict(type="str"),
            wait_timeout=dict(type="int", default=600),
            poll_interval=dict(type="int", default=5),
            scontrol=dict(type="path"),
            squeue=dict(type="path"),
            slurm_conf=dict(type="path"),
            **command_timeout_spec()
        ),
        required_if=[("state", "drained", ["reason"])],
        supports_check_mode=True,
    )
    params = module.params
    name = params["name"]
    if not slurm.NAME_RE.match(name or ""):
        module.fail_json(msg="name must be one Slurm node name (letters, digits and . _ -), not %r; nothing was changed"
                         % name)
    if params["reason"] is not None and any(ord(ch) < 32 or ord(ch) == 127 for ch in params["reason"]):
        module.fail_json(msg="reason must be one line of text; nothing was changed")
    if not 0 <= params["wait_timeout"] <= 604800 or not 1 <= params["poll_interval"] <= 300:
        module.fail_json(msg="wait_timeout must be 0 to 604800 seconds and poll_interval 1 to 300; nothing was changed")
    run = ModuleRun(module, jobs=[])

    def body(run):
        cluster = Slurm(module, CommandRunner(module), name)
        node = cluster.node()
        before = node.get("State")
        action, note = slurm.plan(node, params["state"])
        run.update(drained_by=slurm.drained_by(node))
        if note:
            run.update(note="%s %s" % (name, note))
        if action:
            reason = slurm.reason_text(params["reason"]) if action == "drain" else None
            argv = cluster.update_argv(action, reason)
            run.mutate(CommandRunner.render(argv), lambda: cluster._run(argv, mutating=True))
            if not module.check_mode:
                node = cluster.node()
        waited = 0.0
        if params["state"] == "drained" and module.check_mode:
            run.update(jobs=slurm.holding(cluster.jobs()))
        elif params["state"] == "drained":
            started = time.monotonic()
            jobs = slurm.holding(cluster.jobs())
            while (jobs or slurm.busy(node)) and waited < params["wait_timeout"]:
                time.sleep(min(params["poll_interval"], max(params["wait_timeout"] - waited, 0.1)))
                node, jobs = cluster.node(), slurm.holding(cluster.jobs())
                waited = time.monotonic() - started
            run.update(jobs=jobs)
            reason = slurm.split_reason(node.get("Reason"))
            if jobs:
                raise FabricError(
                    "Slurm node %s is drained but jobs still run on it after %d s: %s; nothing disruptive may be done "
                    "to it (it stays drained)" % (name, waited, slurm.job_words(jobs)),
                    failure="jobs_running", jobs=jobs, state=node.get("State"), reason=reason["text"],
                    reason_user=reason["user"], reason_time=reason["time"])
            if slurm.busy(node):
                # No job squeue names holds it, yet Slurm still counts the node busy (a job ending or resizing, a
                # state squeue does not list): not drained, and nothing disruptive may be done to it.
                listed = cluster.jobs()
                raise FabricError(
                    "Slurm node %s is still busy after %d s (state %s; jobs squeue lists on it: %s); nothing disruptive "
                    "may be done to it (it stays drained)" % (name, waited, node.get("State"),
                                                              slurm.job_words(listed) or "none"),
                    failure="node_busy", jobs=listed, state=node.get("State"), reason=reason["text"],
                    reason_user=reason["user"], reason_time=reason["time"])
        reason = slurm.split_reason(node.get("Reason"))
        run.set_diff(dict(state=before), dict(state=node.get("State")))
        run.update(state=node.get("State"), reason=reason["text"], reason_user=reason["user"],
                   reason_time=reason["time"], waited=round(waited, 1))

    run.execute(body)


if __name__ == "__main__":
    main()
