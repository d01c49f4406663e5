# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.run_lock_due: when the validate role refreshes its host lock, on the controller's clock."""

from __future__ import annotations

import time

from ansible_collections.roce.fabric.plugins.filter.locks import run_lock_due


def test_the_refresh_is_due_on_the_controller_s_clock():
    """A registered run_lock result: its controller_time (the action plugin's) against now."""
    assert run_lock_due(dict(owner="run-a", controller_time=time.time()), 7200) is False
    assert run_lock_due(dict(owner="run-a", controller_time=time.time() - 1801), 7200) is True
    assert run_lock_due(dict(owner="run-a"), 7200) is True
