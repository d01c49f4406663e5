# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: one host's part of the pair tests, each slot begun as soon as both its sides are ready, inside one
module call.

PRIVATE to the roce.fabric collection: may change without notice.

``PartRunner.run`` takes the host's slots (``launch.host_parts``) and runs them one after the other, each through the
same ``PerftestSession`` the perftest module runs: a server is started as soon as the host has ended its previous
slot and collected by the slot's ``end``; a client connects as soon as its host has, and tries again every
``retry_delay`` seconds while it is refused (its server's host still in an earlier slot; half as long again after each
refusal, at most a second), until its ``latest``.
Each side's record is the one the round-by-round play keeps (``plan.side_outcome``), with the slot and its times.
A slot this host reaches after its ``latest`` is not run: its record says ``late_start`` (its partner's says what it
saw). Every wait is bounded by the slot's end, so the part ends by the last slot's end whatever its partners do.
The host's validation lock, when given, is refreshed between slots once a quarter of its ``stale_after`` has passed.
"""

from __future__ import annotations

import math
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.common.run_lock import LockHeld, take
from ansible_collections.roce.fabric.plugins.module_utils.validate.perftest_session import (
    PerftestSession,
    params_problem,
    perftest_argument_spec,
)
from ansible_collections.roce.fabric.plugins.module_utils.validate.launch import RETRY_BACKOFF, RETRY_DELAY, RETRY_DELAY_MAX
from ansible_collections.roce.fabric.plugins.module_utils.validate.plan import side_outcome

# Causes of a client that found no server listening yet: tried again until its latest start.
NOT_YET = ("unreachable",)


class SideModule(object):
    """The module as one side's PerftestSession sees it: that side's arguments as ``params``, never check mode (the
    part runs only in a real run), everything else the module's own."""

    def __init__(self, module, params):
        self._module = module
        self.params = params
        self.check_mode = False
        self._diff = False

    def __getattr__(self, name):
        return getattr(self._module, name)


def side_params(args):
    """The perftest module's arguments of one side: ``args`` over the module's defaults."""
    params = dict((key, spec.get("default")) for key, spec in perftest_argument_spec().items())
    params.update(args)
    params["fail_on_error"] = False
    return params


def run_side(module, args):
    """One perftest call (``args["mode"]``) in this process: its result as the module would return it."""
    params = side_params(args)
    problem = params_problem(params)
    if problem:
        return dict(passed=False, cause="tool_error", msg=problem)
    run = ModuleRun(SideModule(module, params))
    try:
        PerftestSession(run)(run)
    except (IOError, OSError) as exc:
        run.update(passed=False, cause="tool_error", msg="%s: %s" % (exc.__class__.__name__, exc))
    return run.result


def _seconds(value):
    return max(1, int(math.ceil(value)))


class PartRunner(object):
    """Runs one host's slots. ``module``: the pair_schedule module; ``t0``: the time the slots' seconds count from;
    ``clock``/``sleep`` are the host's."""

    def __init__(self, module, t0, retry_delay=RETRY_DELAY, lock=None, clock=time.time, sleep=time.sleep, side=run_side,
                 retry_delay_max=RETRY_DELAY_MAX):
        self.module = module
        self.t0 = float(t0)
        self.retry_delay = float(retry_delay)
        self.retry_delay_max = max(float(retry_delay_max), self.retry_delay)
        self.lock = lock
        self.clock = clock
        self.sleep = sleep
        self.side = side
        self.lock_stamp = clock()
        self.refreshed = 0
        self.lock_error = None

    def refresh_lock(self):
        if not self.lock or self.lock_error:
            return
        stale_after = float(self.lock["stale_after"])
        if self.clock() - self.lock_stamp < stale_after / 4.0:
            return
        try:
            take(self.lock["path"], self.lock["owner"], int(stale_after), refresh=True)
            self.refreshed += 1
        except (LockHeld, IOError, OSError, ValueError) as exc:
            # Not the run's to fix mid-way: the record says so and the role's own refresh tries again after it.
            self.lock_error = str(exc)
        self.lock_stamp = self.clock()

    def server(self, slot, end):
        args = dict(slot["args"], mode="server", kill_stray=True, start_timeout=_seconds(min(15.0, end - self.clock())),
                    timeout=_seconds(end - self.clock()))
        started = self.side(self.module, args)
        collected = None
        if started.get("passed"):
            collected = self.side(self.module, dict(slot["args"], mode="collect", timeout=_seconds(end - self.clock())))
        return started, collected

    def client(self, slot, latest, end):
        tries, delay = [], self.retry_delay
        while True:
            result = self.side(self.module, dict(slot["args"], mode="client", timeout=_seconds(end - self.clock())))
            tries.append(result)
            if result.get("passed") or result.get("cause") not in NOT_YET or self.clock() + delay > latest:
                break
            self.sleep(delay)
            delay = min(delay * RETRY_BACKOFF, self.retry_delay_max)
        return result, len(tries)

    def run(self, slots):
        """The records of every slot of the part, in slot order."""
        records = []
        ordered = sorted(slots, key=lambda item: item["slot"])
        # When this part began, against the first slot's worst-case start (the launch's lead): a late start says which.
        part_began = self.clock() - self.t0
        lead = float(ordered[0]["start"]) if ordered else 0.0
        for slot in ordered:
            latest, end = self.t0 + float(slot["latest"]), self.t0 + float(slot["end"])
            part = dict(role=slot["role"], test=dict(id=slot["test_id"]))
            began = self.clock()
            if began > latest:
                why = ("the part began %.1f s after planning, beyond the launch's lead of %.1f s: raise "
                       "validate_launch_margin" % (part_began, lead) if part_began > lead else
                       "the part began %.1f s after planning, within the lead of %.1f s: an earlier slot overran"
                       % (part_began, lead))
                records.append(dict(test_id=slot["test_id"], role=slot["role"], passed=False, cause="late_start",
                                    msg="slot %d: this host reached it %.1f s after the last moment its test still "
                                        "fitted (%s); not run" % (slot["slot"], began - latest, why),
                                    command="", summary=None, result=None, slot=slot["slot"], began=None, ended=None,
                                    part_began=round(part_began, 3)))
                continue
            if slot["role"] == "server":
                started, collected = self.server(slot, end)
                record = side_outcome(part, server=started, collect=collected)[0]
                record["started"] = bool(started.get("passed"))
            else:
                result, tries = self.client(slot, latest, end)
                record = side_outcome(part, client=result)[0]
                record["connect_tries"] = tries
            record.update(slot=slot["slot"], began=round(began - self.t0, 3), ended=round(self.clock() - self.t0, 3),
                          part_began=round(part_began, 3))
            records.append(record)
            self.refresh_lock()
        return records
