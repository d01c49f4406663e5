# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: the pair tests as one launch per host, each slot begun as soon as both its sides are ready. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

A plan's rounds become *slots*. Each host gets its whole part once (``host_parts``: for every slot it is in, its
role, the test and its side's perftest arguments), runs its slots one after the other and returns its records once;
the controller's module runs per host are a launch and a collection, whatever the number of rounds.

No side waits for a clock to begin a slot: a server listens as soon as its host has ended its previous slot, a client
connects as soon as its own has, and tries again while it is refused (its server still in an earlier slot), so that a
slot costs its test and the few tenths of a second a refused client waits. Every test has its own port, so a client
can only ever reach the server of its own test. The clock bounds the run instead: slot r's ``end`` (seconds after
``t0``, the controller's time at planning) is when everything of the slot has ended on the worst case - every earlier
slot as long as its longest test, its setup, a client retrying and a margin, after a lead in which every host's
part has started - and each side's ``latest`` is the last moment its test still fits before its slot's end. A host
that reaches a slot after its ``latest`` does not run it (``late_start``); a server whose client never came is
collected by the slot's end. So a lost or stalled host costs its partners a slot's worst case, never a hang, and the
part ends by its last slot's end whatever its partners do.

The clocks are measured by a call every host makes anyway before the tests (the validation lock: the host's time
beside the controller's, ``clock_offsets``). A host whose clock is further off than ``max_offset`` is refused by
name; below that, the deadlines are widened by the spread of the measured offsets. The lead is ``LEAD_FACTOR`` times
what that call took across the fleet (a module run on every host at the play's forks, as the launch is: from the
first call's start to the last one's end) and a margin. Deadlines cost nothing while every host is there: a lost
host's partners wait for it until them, so a run with a lost host takes up to its worst case.
The controller collects from the *expected* end (every slot as long as its test and ``READY_SECONDS``, after the
launch's span) and polls from there until the worst case.
"""

from __future__ import annotations

import math

BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
# Seconds a test needs beside its measurement: the server's start, the client's connection, the teardown.
SETUP_SECONDS = 4.0
# A test without a duration of its own (rping's iterations, a latency test's): the seconds it is given.
UNTIMED_SECONDS = 3.0
# The margin between one slot's end and the next's start (a side late by its clock's error still fits).
SLOT_MARGIN = 3.0
# A refused client tries again after this many seconds, half as long again after each refusal, at most
# RETRY_DELAY_MAX: a server a little behind is met within tenths of a second, one far behind costs few tries.
RETRY_DELAY = 0.2
RETRY_BACKOFF = 1.5
RETRY_DELAY_MAX = 1.0
# The lead is this many times what one module run on every host took (the lock's call): the launch is a heavier
# module run (its slots, the async wrapper), and a generous lead costs nothing (nobody waits for it) but a lost
# host's partners' wait.
LEAD_FACTOR = 3.0
# Seconds added to the lead beyond LEAD_FACTOR times the lock's call (validate_launch_margin): a launch of modules in
# slow hosts (VMs on a loaded machine took over 40 s where the lock's call had taken a few) must not make the first
# slots late; the lead costs nothing while every host is present.
LAUNCH_MARGIN = 60.0
# What a slot is expected to cost beside its test, begun when both sides are ready: the tools' start, the refused
# tries of a client whose server is a little behind, the teardown. The collection's first poll is planned with it.
READY_SECONDS = 1.0
# How much longer a refused client tries again (a server slow to start, a clock a little behind): beyond the clocks'
# spread. A slot is longer by as much.
CONNECT_GRACE = 3.0


class LaunchError(ValueError):
    """A launch that cannot be planned from its inputs (a clock too far off, a negative margin)."""


def slot_length(args):
    """The seconds one side's test needs, from its perftest arguments: a bandwidth test's duration (every size: its
    timeout), an untimed test's ``UNTIMED_SECONDS``, plus ``SETUP_SECONDS``; never more than its timeout."""
    timeout = float(args.get("timeout") or 60)
    if args.get("tool") in BW_TOOLS and args.get("all_sizes"):
        return timeout
    measured = float(args["duration"]) if args.get("duration") else UNTIMED_SECONDS
    return min(timeout, measured + SETUP_SECONDS)


def clock_offsets(clocks, max_offset):
    """``(offsets, refused)`` from ``clocks`` (host -> ``{host_time, controller_time}`` and ``controller_started``
    where known, as the lock's call returned them): each host's clock minus the controller's at the middle of its
    call (at its end without a start); ``refused``: ``{host: offset}`` of those above ``max_offset``. A host without
    a reading gets offset 0 (its own clock is trusted)."""
    offsets, refused = {}, {}
    for host, reading in sorted((clocks or {}).items()):
        try:
            ended = float(reading["controller_time"])
            began = float(reading.get("controller_started", ended))
            offset = float(reading["host_time"]) - (began + ended) / 2.0
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        if abs(offset) > max_offset:
            refused[host] = round(offset, 3)
        else:
            offsets[host] = round(offset, 3)
    return offsets, refused


def launch_span(clocks):
    """What one module run on every host took at the play's forks: from the first host's call's start to the last
    one's end on the controller (between the first and the last end where the starts are not known; 0 without a
    reading)."""
    starts, ends = [], []
    for reading in (clocks or {}).values():
        try:
            ended = float(reading["controller_time"])
            began = float(reading.get("controller_started", ended))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        ends.append(ended)
        starts.append(began)
    return max(ends) - min(starts) if ends else 0.0


def expected_seconds(args):
    """The seconds one side's test is expected to take once both its sides are ready: its duration (every size of a
    bandwidth test: a second for each of perftest's 23 sizes), an untimed test's ``UNTIMED_SECONDS``."""
    if args.get("tool") in BW_TOOLS and args.get("all_sizes"):
        return 23.0
    return float(args["duration"]) if args.get("duration") else UNTIMED_SECONDS


def host_parts(plan, now, clocks=None, max_offset=30.0, margin=SLOT_MARGIN, launch_margin=None, poll_delay=10.0):
    """The launch of ``plan`` (plan.plan's result with its ``assignments``): ``{"parts": {host: [slot, ...]},
    "launch": {t0, lead, slots: [{start, length}], duration, expected, ends, offsets, refused, spread, margin,
    retry_delay, poll_delay, poll_retries, async_timeout}}``. ``now``: the controller's time, which becomes ``t0``;
    ``clocks``: as ``clock_offsets`` takes them. ``ends``: when every part has ended on the worst case, on the
    controller's clock; ``expected``: when the parts are expected to have ended (the first collection).

    Each slot of a host's part: ``{slot, start, latest, end, role, test_id, args}``, seconds after ``t0``: ``start``
    the slot's worst-case start (nobody waits for it), ``latest`` the last moment this side may begin, ``end`` the
    slot's deadline. Raises LaunchError when a host's clock is off by more than ``max_offset``."""
    launch_margin = LAUNCH_MARGIN if launch_margin is None else launch_margin
    if margin < 0 or launch_margin < 0 or poll_delay <= 0:
        raise LaunchError("the slot margin and the launch margin cannot be negative, nor the poll delay zero")
    offsets, refused = clock_offsets(clocks, max_offset)
    if refused:
        raise LaunchError("the clocks of %s are off the controller's by more than %s s (%s): set them (NTP, PTP) "
                          "or raise validate_clock_max_offset" % (
                              ", ".join(sorted(refused)), max_offset,
                              ", ".join("%s %+.1f s" % (host, refused[host]) for host in sorted(refused))))
    spread = (max(offsets.values()) - min(offsets.values())) if len(offsets) >= 2 else 0.0
    widened = margin + spread
    span = launch_span(clocks)
    lead = LEAD_FACTOR * span + launch_margin
    # A client refused by a server still in an earlier slot tries again for this long beyond its test's setup.
    retrying = spread + CONNECT_GRACE
    slots, parts, start, expected = [], {}, lead, span
    for number, entry in enumerate(plan.get("assignments") or []):
        needs = dict((host, slot_length(side["args"])) for host, side in entry.items())
        length = max(list(needs.values()) or [0.0]) + retrying
        end = start + length + widened
        slots.append(dict(start=round(start, 3), length=round(length, 3)))
        expected += max([expected_seconds(side["args"]) for side in entry.values()] or [0.0]) + READY_SECONDS
        for host, side in sorted(entry.items()):
            parts.setdefault(host, []).append(dict(
                slot=number, start=round(start, 3), latest=round(end - spread - needs[host], 3), end=round(end, 3),
                role=side["role"], test_id=side["test"]["id"], args=side["args"]))
        start = end
    duration = start
    ends = now + duration + spread + 1.0
    expected = min(now + expected, ends)
    # The collection's polls: the first at the expected end, then every poll_delay until the worst case and a margin.
    retries = int(math.ceil((ends - expected + 60.0) / poll_delay)) + 3
    return dict(parts=parts, launch=dict(
        t0=round(now, 3), lead=round(lead, 3), slots=slots, duration=round(duration, 3), expected=round(expected, 3),
        ends=round(ends, 3), offsets=offsets, refused=refused, spread=round(spread, 3), margin=round(widened, 3),
        retry_delay=RETRY_DELAY, poll_delay=poll_delay, poll_retries=retries,
        async_timeout=int(math.ceil(duration + 300.0))))
