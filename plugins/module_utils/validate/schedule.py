# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: the schedule of pair tests and the robust baseline their results are judged against. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

The full matrix of N hosts is a round robin by the circle method: host 0 stays put, the others turn one place
each round, and round r pairs the i-th host from the front with the i-th from the back. Every pair meets once in
N-1 rounds for even N (N for odd N, one host resting each round), each round N/2 disjoint pairs, so no NIC is in
two tests at once and every round runs in parallel. A pair that failed or was slow is then tested again against
anchors (hosts that passed with others): each end of the pair against a different anchor, the retests packed into
rounds with no host twice, at most ``ceil(log2 N) + 2`` rounds.

Results are judged per rail and test against a robust baseline (median and MAD): a bandwidth below
``bw_fraction`` (0.93) of the rail's best, or a latency above ``lat_factor`` (2.1) times its best, is an outlier,
as is one more than ``mad_k`` MADs from the median on the wrong side.
"""

from __future__ import annotations

import math


def circle_rounds(names):
    """Rounds of disjoint pairs covering every unordered pair of ``names`` once (the circle method).

    Returns a list of rounds, each a list of ``(a, b)`` with ``a`` before ``b`` in ``names``' order.
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError("a host is named twice")
    if len(names) < 2:
        return []
    ring = names + ([None] if len(names) % 2 else [])
    order = dict((name, index) for index, name in enumerate(names))
    size = len(ring)
    rounds = []
    for _round in range(size - 1):
        pairs = []
        for i in range(size // 2):
            a, b = ring[i], ring[size - 1 - i]
            if a is None or b is None:
                continue
            pairs.append((a, b) if order[a] < order[b] else (b, a))
        rounds.append(sorted(pairs, key=lambda pair: (order[pair[0]], order[pair[1]])))
        # Keep the first host fixed, turn the others one place.
        ring = [ring[0], ring[-1]] + ring[1:-1]
    return rounds


def retest_bound(count):
    """The most extra rounds the anchor retest of a single fault may take for ``count`` hosts."""
    return int(math.ceil(math.log(max(count, 2), 2))) + 2


def suspects_of(suspect_pairs, names):
    """The fewest hosts that explain the suspect pairs, greedily: the host in most of the pairs not yet explained,
    again and again; pairs that share no host with another leave both their ends suspect (the fault may be either
    end, or the path between them)."""
    order = dict((name, index) for index, name in enumerate(names))
    left = [tuple(pair) for pair in suspect_pairs]
    found = []
    while left:
        counts = {}
        for pair in left:
            for host in pair:
                counts[host] = counts.get(host, 0) + 1
        top = max(counts.values())
        if top == 1:
            for pair in left:
                found.extend(host for host in pair if host not in found)
            break
        host = min((h for h, c in counts.items() if c == top), key=lambda h: order.get(h, len(order)))
        found.append(host)
        left = [pair for pair in left if host not in pair]
    return found


def anchor_retests(suspect_pairs, names, passed_pairs, max_rounds=None):
    """Retest each suspect (``suspects_of`` the suspect pairs) against an anchor - a host that passed with another
    host and is not a suspect - preferring anchors it did not already fail with; the retests in rounds where no host
    is twice.

    ``suspect_pairs``: ``(a, b)`` pairs that failed or were slow; ``passed_pairs``: pairs that passed. Returns
    ``{"suspects": [...], "rounds": [[(suspect, anchor), ...], ...], "untested": [suspects without an anchor or a
    round]}``. At most ``max_rounds`` rounds (default ``retest_bound(len(names))``).
    """
    max_rounds = retest_bound(len(names)) if max_rounds is None else max_rounds
    suspects = suspects_of(suspect_pairs, names)
    anchors = []
    for a, b in passed_pairs:
        for host in (a, b):
            if host not in anchors and host not in suspects:
                anchors.append(host)
    failing_with = dict((host, set()) for host in suspects)
    for a, b in suspect_pairs:
        for host, other in ((a, b), (b, a)):
            if host in failing_with:
                failing_with[host].add(other)
    rounds, busy, untested = [], [], []
    rank = dict((anchor, index) for index, anchor in enumerate(anchors))
    used = dict((anchor, 0) for anchor in anchors)
    for suspect in suspects:
        fresh = [anchor for anchor in anchors if anchor not in failing_with[suspect]]
        candidates = fresh or anchors
        placed = False
        for number in range(max_rounds):
            if number == len(rounds):
                rounds.append([])
                busy.append(set())
            if suspect in busy[number]:
                continue
            free = [anchor for anchor in candidates if anchor not in busy[number]]
            if free:
                # The anchor used least so far, then in the order given: a steady spread over the good hosts.
                anchor = min(free, key=lambda item: (used[item], rank[item]))
                used[anchor] += 1
                rounds[number].append((suspect, anchor))
                busy[number].update((suspect, anchor))
                placed = True
                break
        if not placed:
            untested.append(suspect)
    return {"suspects": suspects, "rounds": [rnd for rnd in rounds if rnd], "untested": untested}


def median(values):
    values = sorted(values)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0


def baseline(values):
    """``{median, mad, best_high, best_low, count}`` of the numbers given (None values left out)."""
    values = [float(v) for v in values if v is not None]
    if not values:
        return dict(median=None, mad=None, best_high=None, best_low=None, count=0)
    mid = median(values)
    return dict(median=mid, mad=median([abs(v - mid) for v in values]), best_high=max(values), best_low=min(values),
                count=len(values))


def outliers(results, higher_is_better=True, bw_fraction=0.93, lat_factor=2.1, mad_k=5.0, floor=None):
    """The keys of ``results`` (key -> number, e.g. test id -> Gb/s) that are outliers against their own baseline.

    Bandwidth (``higher_is_better``): below ``bw_fraction`` of the best, or below the ``floor`` the site sets, or
    more than ``mad_k`` MADs under the median. Latency: above ``lat_factor`` times the best, or more than ``mad_k``
    MADs over the median. A MAD of 0 (identical results) flags only what the fraction or the floor flag.
    Returns ``{key: reason}``.
    """
    base = baseline(results.values())
    if not base["count"]:
        return {}
    found = {}
    for key, value in results.items():
        if value is None:
            continue
        value = float(value)
        reasons = []
        if higher_is_better:
            if value < bw_fraction * base["best_high"]:
                reasons.append("%.4g is below %d %% of the best %.4g" % (value, round(bw_fraction * 100), base["best_high"]))
            if floor is not None and value < floor:
                reasons.append("%.4g is below the floor %.4g" % (value, floor))
            if base["mad"] and value < base["median"] - mad_k * base["mad"]:
                distance = (base["median"] - value) / base["mad"]
                reasons.append("%.4g is %.1f MADs under the median %.4g" % (value, distance, base["median"]))
        else:
            if value > lat_factor * base["best_low"]:
                reasons.append("%.4g is above %.1fx the best %.4g" % (value, lat_factor, base["best_low"]))
            if base["mad"] and value > base["median"] + mad_k * base["mad"]:
                distance = (value - base["median"]) / base["mad"]
                reasons.append("%.4g is %.1f MADs over the median %.4g" % (value, distance, base["median"]))
        if reasons:
            found[key] = "; ".join(reasons)
    return found
