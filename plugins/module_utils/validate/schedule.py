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

A fleet too large for N-1 rounds gets a sparse first pass instead (``sparse_rounds``): a few rounds of disjoint pairs
in which every host meets at least three partners (a bad host fails with all of them, each of its partners with one:
the two look different), every pair of leaves (the groups the cabling plan gives) is crossed by at least one test,
and no pair meets twice; at most ``2 * ceil(log2 N) + 2`` rounds. ``schedule_kind`` picks between the two.

Results are judged per rail and test against a robust baseline (median and MAD): a bandwidth below
``bw_fraction`` (0.93) of the rail's best, or a latency above ``lat_factor`` (2.1) times its best, is an outlier,
as is one more than ``mad_k`` MADs from the median on the wrong side.
"""

from __future__ import annotations

import math
import random


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


FULL_MATRIX_MAX = 32
KINDS = ("auto", "full", "sparse")


def sparse_bound(count):
    """The most rounds the sparse first pass of ``count`` hosts may take: ``2 * ceil(log2 N) + 2``."""
    return 2 * int(math.ceil(math.log(max(count, 2), 2))) + 2


def sparse_default_rounds(count):
    """The sparse first pass's rounds when none is asked for: ``ceil(log2 N) + 2`` (7 for 32 hosts, 13 for 2,048),
    never fewer than three (the partners a host needs to tell its own fault from a partner's)."""
    return max(3, int(math.ceil(math.log(max(count, 2), 2))) + 2)


def schedule_kind(kind, count, full_max=FULL_MATRIX_MAX):
    """``full`` or ``sparse`` for ``count`` hosts: ``auto`` is the full matrix up to ``full_max`` hosts, the sparse
    first pass above; the full matrix also wherever it takes no more rounds than the sparse pass would."""
    if kind not in KINDS:
        raise ValueError("unknown schedule '%s' (known: %s)" % (kind, ", ".join(KINDS)))
    if kind == "auto":
        kind = "full" if count <= full_max else "sparse"
    if kind == "sparse" and count - 1 <= sparse_default_rounds(count):
        kind = "full"
    return kind


def sparse_rounds(names, groups=None, rounds=None, seed=0):
    """A sparse first pass over ``names``: ``{"rounds": [[(a, b), ...], ...], "partners": {name: count},
    "uncrossed": [(group, group), ...], "bound": sparse_bound(N)}``.

    ``groups``: name -> the leaf (or any group) it hangs off; the first round pairs hosts within their group (a path
    that stays on its leaf), then every pair of groups is crossed by a test of the next rounds (each group's hosts
    spread over the groups it has not met yet), the rest of each round pairs the hosts left free at random
    (seeded: the same names plan the same rounds). ``rounds``: how many (default
    ``sparse_default_rounds``); more are added, up to the bound, while a group pair is uncrossed or a host has fewer
    than three partners; what the bound leaves uncrossed is returned, never hidden. No pair meets twice, no host is
    in two tests of a round, and with an odd count the host resting each round is one that has met the most.
    Costs O(N + G^2) a round for G groups.
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError("a host is named twice")
    count = len(names)
    bound = sparse_bound(count)
    if count < 2:
        return dict(rounds=[], partners=dict((name, 0) for name in names), uncrossed=[], bound=bound)
    wanted = min(rounds or sparse_default_rounds(count), bound)
    if wanted < 1:
        raise ValueError("a sparse pass needs one round at least")
    order = dict((name, index) for index, name in enumerate(names))
    groups = groups or {}
    group_of = dict((name, groups.get(name, "")) for name in names)
    keys = sorted(set(group_of.values()), key=str)
    members = dict((key, [name for name in names if group_of[name] == key]) for key in keys)
    uncrossed = set((a, b) for i, a in enumerate(keys) for b in keys[i + 1:])
    met = dict((name, set()) for name in names)
    rng = random.Random(seed)
    planned = []
    while len(planned) < bound and (len(planned) < wanted or uncrossed or
                                    min(len(met[name]) for name in names) < min(3, count - 1)):
        free = set(names)
        if count % 2:
            # One host rests: one of those that met the most, the first of them by name order turning round by round.
            most = max(len(met[name]) for name in names)
            resting = [name for name in names if len(met[name]) == most]
            free.discard(resting[len(planned) % len(resting)])
        pairs = []

        def take(a, b):
            free.discard(a)
            free.discard(b)
            met[a].add(b)
            met[b].add(a)
            pairs.append((a, b) if order[a] < order[b] else (b, a))

        if not planned and len(keys) > 1:
            # The first round within each group (hosts of one leaf: their path does not leave it), so that a fault
            # of a leaf's uplinks is told from its hosts' own.
            for key in keys:
                inside = list(members[key])
                rng.shuffle(inside)
                while len(inside) >= 2:
                    a, b = inside.pop(), inside.pop()
                    if a in free and b in free:
                        take(a, b)
        # Group pairs not crossed yet, the groups with the most left first, each from hosts still free in both.
        todo = sorted(uncrossed, key=lambda pair: (str(pair[0]), str(pair[1])))
        rng.shuffle(todo)
        for left, right in todo:
            a_side = [name for name in members[left] if name in free]
            b_side = [name for name in members[right] if name in free]
            if not a_side or not b_side:
                continue
            a = a_side[rng.randrange(len(a_side))]
            fresh = [name for name in b_side if name not in met[a]]
            if not fresh:
                continue
            take(a, fresh[rng.randrange(len(fresh))])
            uncrossed.discard((left, right))
        # The hosts left: a random matching without a pair met before (a host that finds none waits the round).
        rest = sorted(free, key=order.get)
        rng.shuffle(rest)
        waiting = []
        while rest:
            a = rest.pop()
            for index in range(len(rest) - 1, -1, -1):
                if rest[index] not in met[a]:
                    b = rest.pop(index)
                    take(a, b)
                    break
            else:
                waiting.append(a)
        planned.append(sorted(pairs, key=lambda pair: (order[pair[0]], order[pair[1]])))
    return dict(rounds=planned, partners=dict((name, len(met[name])) for name in names),
                uncrossed=sorted(uncrossed, key=lambda pair: (str(pair[0]), str(pair[1]))), bound=bound)


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
