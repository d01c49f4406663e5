# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: the pair tests as one launch per host, run by the clock. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

A plan's rounds become *slots*: slot r starts ``start`` seconds after ``t0`` (the controller's clock) and lasts
``length`` seconds - the longest of its tests (``slot_length``) and the time a refused client may try again - plus a
margin. Each host gets its whole part once
(``host_parts``: for every slot it is in, its role, the test and its side's perftest arguments), runs it by its own
clock and returns its records once; the controller's module runs per host are a launch and a collection, whatever
the number of rounds.

The clocks are measured by a call every host makes anyway before the tests (the validation lock: the host's time
beside the controller's, ``clock_offsets``). A host whose clock is further off than ``max_offset`` is refused by
name; below that, the slots are widened by the spread of the measured offsets (each also off by as much as its
call's return took), and a client that finds its server not yet listening tries again for as long.
``t0`` leaves time for the launch itself: twice the span the clock call took across the fleet (a module run on
every host at the play's forks, as the launch is), and a margin.
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
# The host's side waits this long after the slot's start before its client connects (its server is listening).
CLIENT_DELAY = 1.5
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
    """``(offsets, refused)`` from ``clocks`` (host -> ``{host_time, controller_time}``, as the lock's call returned
    them): each host's clock minus the controller's; ``refused``: ``{host: offset}`` of those above ``max_offset``.
    A host without a reading gets offset 0 (its own clock is trusted)."""
    offsets, refused = {}, {}
    for host, reading in sorted((clocks or {}).items()):
        try:
            offset = float(reading["host_time"]) - float(reading["controller_time"])
        except (KeyError, TypeError, ValueError):
            continue
        if abs(offset) > max_offset:
            refused[host] = round(offset, 3)
        else:
            offsets[host] = round(offset, 3)
    return offsets, refused


def launch_span(clocks):
    """The seconds between the first and the last host's clock reading on the controller: what one module run on
    every host took at the play's forks (0 without two readings)."""
    times = []
    for reading in (clocks or {}).values():
        try:
            times.append(float(reading["controller_time"]))
        except (KeyError, TypeError, ValueError):
            continue
    return max(times) - min(times) if len(times) >= 2 else 0.0


def host_parts(plan, now, clocks=None, max_offset=30.0, margin=SLOT_MARGIN, launch_margin=15.0, poll_delay=10.0):
    """The launch of ``plan`` (plan.plan's result with its ``assignments``): ``{"parts": {host: [slot, ...]},
    "launch": {t0, slots: [{start, length}], duration, ends, offsets, refused, spread, poll_delay, poll_retries,
    async_timeout}}``; ``ends``: when every part has ended on the controller's clock (the last slot's end, the clocks'
    spread and a second). ``now``: the controller's time; ``clocks``: as ``clock_offsets`` takes them.

    Each slot of a host's part: ``{slot, start, end, role, test_id, args}`` with ``start`` and ``end`` in seconds
    after ``t0``. Raises LaunchError when a host's clock is off by more than ``max_offset``."""
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
    # A client tries again for this long after its first try: a slot is as much longer.
    retrying = spread + CONNECT_GRACE
    slots, parts, start = [], {}, 0.0
    for number, entry in enumerate(plan.get("assignments") or []):
        length = max([slot_length(side["args"]) for side in entry.values()] or [0.0]) + retrying
        end = start + length + widened
        slots.append(dict(start=round(start, 3), length=round(length, 3)))
        for host, side in sorted(entry.items()):
            parts.setdefault(host, []).append(dict(slot=number, start=round(start, 3), end=round(end, 3),
                                                   role=side["role"], test_id=side["test"]["id"], args=side["args"]))
        start = end
    duration = start
    t0 = now + 2.0 * launch_span(clocks) + launch_margin
    # The collection's polls: the first after the launch, then every poll_delay until the planned end and a margin.
    retries = int(math.ceil((t0 - now + duration + 60.0) / poll_delay)) + 3
    return dict(parts=parts, launch=dict(
        t0=round(t0, 3), slots=slots, duration=round(duration, 3), ends=round(t0 + duration + spread + 1.0, 3),
        offsets=offsets, refused=refused,
        spread=round(spread, 3), margin=round(widened, 3), connect_window=round(CLIENT_DELAY + retrying, 3),
        client_delay=CLIENT_DELAY, poll_delay=poll_delay, poll_retries=retries,
        async_timeout=int(math.ceil(t0 - now + duration + 300.0))))
