# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roce.fabric.validation_report: the module, with the record of the run (``generated``) filled in for mode=write.

What only Ansible knows of the run (inventory, limit, tags, check mode, play, version) is read here and handed to
``module_utils/validate/run_record.py``, which decides what the report says; the module then runs where the task
puts it (the validate role delegates it to the controller).
"""

from __future__ import annotations

import datetime

from ansible.plugins.action import ActionBase
from ansible.release import __version__ as ansible_version

from ansible_collections.roce.fabric.plugins.module_utils.validate.run_record import generated_record


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("mode") == "write" and args.get("generated") is None:
            template = self._templar.template
            args["generated"] = generated_record(
                datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                inventory_dir=template(task_vars.get("inventory_dir")) or None,
                limit=template(task_vars.get("ansible_limit")) or None,
                run_tags=template(task_vars.get("ansible_run_tags")) or None,
                check_mode=bool(self._play_context.check_mode or task_vars.get("ansible_check_mode")),
                play=template(task_vars.get("ansible_play_name")) or None,
                ansible_version=ansible_version)
        result.update(self._execute_module(module_name="roce.fabric.validation_report", module_args=args,
                                           task_vars=task_vars))
        return result
