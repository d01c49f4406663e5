# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roce.fabric.run_lock: the module on the host, then the controller's clock in the result (``controller_time``), so
that a run tells when its lock's refresh is due on one clock (roce.fabric.run_lock_due), whatever the host's says;
and the controller's clock when the task began on this host (``controller_started``), so that the host's clock is
read between the two and the launch of a validation's parts knows what one module run on every host took."""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        started = time.time()
        result = super(ActionModule, self).run(tmp, task_vars)
        result.update(self._execute_module(module_name="roce.fabric.run_lock", module_args=self._task.args,
                                           task_vars=task_vars))
        result["controller_time"] = time.time()
        result["controller_started"] = started
        return result
