# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""When a run's host lock is due for its refresh (module_utils/common/run_lock.py refresh_due), on the controller."""

from __future__ import annotations

import time

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.common.run_lock import refresh_due


def run_lock_due(lock, stale_after):
    if not isinstance(lock, dict):
        raise AnsibleFilterError("run_lock_due: expected the registered result of roce.fabric.run_lock")
    try:
        stale_after = int(stale_after)
    except (TypeError, ValueError):
        raise AnsibleFilterError("run_lock_due: stale_after must be a number of seconds, not %r" % (stale_after,))
    return refresh_due(lock.get("controller_time"), stale_after, time.time())


class FilterModule:

    def filters(self):
        return {"run_lock_due": run_lock_due}
