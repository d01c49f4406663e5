# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roce.fabric.run_summary: per host of every stage, what the run changed (or would change), or why not.

Runs on the controller after the stages; reads the results the roles kept in each host's variables (untemplated)
and hands them to ``module_utils/common/summary.py``, which decides what they say.
"""

from __future__ import annotations

from ansible.utils.vars import load_extra_vars

from ansible_collections.roce.fabric.plugins.action.preflight import ActionModule as PreflightAction
from ansible_collections.roce.fabric.plugins.module_utils.common import summary


class ActionModule(PreflightAction):

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(PreflightAction, self).run(tmp, task_vars)
        stages, error = self._stages(task_vars)
        if error:
            result.update(failed=True, msg="run_summary: " + error)
            return result
        # The validation's switch reads belong to the switch stage's report; their hosts are the switch stage's.
        stages = [s for s in stages if s != "validate_switches"]
        host_stages = self._stage_hosts(stages, task_vars, load_extra_vars(self._loader) or {})
        hostvars = task_vars.get("hostvars")
        names = set(["host_reboot_pending", "host_reboot_result", "roce_reach"] + [n for rows in summary.RESULTS.values() for n, _what in rows])
        check_mode = bool(self._task.check_mode) or bool(task_vars.get("ansible_check_mode"))
        hosts = {}
        for host, host_stage_list in host_stages.items():
            raw = hostvars.raw_get(host) if hostvars is not None else {}
            variables = dict((name, raw[name]) for name in names if name in raw)
            hosts[host] = summary.host_summary(host_stage_list, variables, check_mode)
        text = summary.report(hosts, check_mode)
        result.update(changed=False, msg=text, lines=text.splitlines(),
                      hosts=dict((h, [dict(stage=r[0], what=r[1], status=r[2], detail=r[3]) for r in rows])
                                 for h, rows in hosts.items()))
        return result
