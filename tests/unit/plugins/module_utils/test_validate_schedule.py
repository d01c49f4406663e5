# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pair schedule (circle method, anchor retests) and the robust baseline (module_utils/validate/schedule.py)."""

from __future__ import annotations

import itertools
import math

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate import schedule


@pytest.mark.parametrize("count", [2, 3, 4, 5, 6, 7, 8, 9, 16, 33, 128])
def test_every_pair_once_in_n_minus_1_rounds_for_even_n_and_n_for_odd(count):
    names = ["gpu%03d" % i for i in range(count)]
    rounds = schedule.circle_rounds(names)
    assert len(rounds) == (count - 1 if count % 2 == 0 else count)
    pairs = [pair for rnd in rounds for pair in rnd]
    assert sorted(pairs) == list(itertools.combinations(names, 2))
    for rnd in rounds:
        hosts = [host for pair in rnd for host in pair]
        assert len(hosts) == len(set(hosts)) and len(rnd) == count // 2


def test_names_given_twice_or_too_few():
    with pytest.raises(ValueError):
        schedule.circle_rounds(["a", "a"])
    assert schedule.circle_rounds(["a"]) == []


def test_a_single_suspect_pair_is_retested_against_anchors_within_the_bound():
    names = ["h%d" % i for i in range(8)]
    rounds = schedule.circle_rounds(names)
    suspect = ("h2", "h5")
    passed = [pair for rnd in rounds for pair in rnd if pair != suspect and "h5" not in pair]
    plan = schedule.anchor_retests([suspect], names, passed)
    assert plan["suspects"] == ["h2", "h5"]
    assert plan["untested"] == [] and len(plan["rounds"]) <= schedule.retest_bound(8) == 5
    tested = dict((s, a) for rnd in plan["rounds"] for s, a in rnd)
    assert set(tested) == {"h2", "h5"} and tested["h2"] != "h5" and tested["h5"] != "h2"
    assert tested["h2"] not in ("h2", "h5") and tested["h5"] not in ("h2", "h5")
    for rnd in plan["rounds"]:
        hosts = [host for pair in rnd for host in pair]
        assert len(hosts) == len(set(hosts))


def test_a_bad_host_s_many_failing_pairs_are_retested_in_few_rounds():
    names = ["h%02d" % i for i in range(32)]
    pairs = [pair for rnd in schedule.circle_rounds(names) for pair in rnd]
    failing = [pair for pair in pairs if "h07" in pair]
    passed = [pair for pair in pairs if "h07" not in pair]
    plan = schedule.anchor_retests(failing, names, passed)
    # One host explains all 31 failing pairs: it alone is retested, in one round.
    assert plan["suspects"] == ["h07"] and plan["untested"] == [] and len(plan["rounds"]) == 1
    assert schedule.retest_bound(32) == int(math.ceil(math.log(32, 2))) + 2 == 7


def test_bandwidth_and_latency_outliers():
    bandwidth = {"a-b": 97.1, "c-d": 96.8, "e-f": 97.4, "g-h": 88.0, "i-j": 97.0, "k-l": None}
    found = schedule.outliers(bandwidth)
    assert list(found) == ["g-h"] and found["g-h"].startswith("88 is below 93 % of the best 97.4")
    floored = schedule.outliers(bandwidth, floor=97.05)
    assert floored["c-d"] == "96.8 is below the floor 97.05" and floored["i-j"] == "97 is below the floor 97.05"
    assert sorted(floored) == ["c-d", "g-h", "i-j"] and "MADs under the median" in floored["g-h"]
    latency = {"a-b": 2.1, "c-d": 2.0, "e-f": 2.2, "g-h": 5.0}
    assert list(schedule.outliers(latency, higher_is_better=False)) == ["g-h"]
    # Identical results: no MAD, nothing flagged.
    assert schedule.outliers({"a": 10.0, "b": 10.0, "c": 10.0}) == {}
    assert schedule.baseline([1, 2, 3, 100]) == dict(median=2.5, mad=1.0, best_high=100.0, best_low=1.0, count=4)


def leaves(count, per_leaf):
    names = ["h%04d" % i for i in range(count)]
    return names, dict((name, "leaf%d" % (i // per_leaf)) for i, name in enumerate(names))


@pytest.mark.parametrize("count,per_leaf", [(33, 32), (64, 32), (100, 8), (127, 16), (512, 32), (2048, 32), (2047, 16)])
def test_a_sparse_pass_gives_every_host_three_partners_and_crosses_every_pair_of_leaves_within_the_bound(
        count, per_leaf):
    names, groups = leaves(count, per_leaf)
    result = schedule.sparse_rounds(names, groups)
    bound = 2 * int(math.ceil(math.log(count, 2))) + 2
    assert result["bound"] == bound and len(result["rounds"]) <= bound and result["uncrossed"] == []
    pairs = [pair for rnd in result["rounds"] for pair in rnd]
    assert len(pairs) == len(set(pairs)) and len(set(frozenset(p) for p in pairs)) == len(pairs)
    for rnd in result["rounds"]:
        hosts = [host for pair in rnd for host in pair]
        assert len(hosts) == len(set(hosts))
    partners = dict((name, set()) for name in names)
    for a, b in pairs:
        partners[a].add(b)
        partners[b].add(a)
    assert min(len(met) for met in partners.values()) >= 3
    assert dict((name, len(met)) for name, met in partners.items()) == result["partners"]
    crossed = set(frozenset((groups[a], groups[b])) for a, b in pairs if groups[a] != groups[b])
    assert len(crossed) == len(set(groups.values())) * (len(set(groups.values())) - 1) // 2
    # Far fewer tests than the full matrix, and the same names plan the same rounds.
    assert len(pairs) <= len(result["rounds"]) * count // 2 < count * (count - 1) // 2
    assert schedule.sparse_rounds(names, groups) == result


def test_a_sparse_pass_the_bound_cannot_fit_says_which_leaves_it_left_uncrossed():
    # 64 leaves of one host each: 2,016 pairs of leaves, 32 tests a round, at most 14 rounds.
    names, groups = leaves(64, 1)
    result = schedule.sparse_rounds(names, groups)
    assert len(result["rounds"]) == result["bound"] == 14
    pairs = [pair for rnd in result["rounds"] for pair in rnd]
    crossed = set(frozenset((groups[a], groups[b])) for a, b in pairs)
    assert len(result["uncrossed"]) == 2016 - len(crossed) > 0
    assert all(frozenset(pair) not in crossed for pair in result["uncrossed"])


def test_the_host_that_rests_in_a_sparse_round_of_an_odd_fleet_turns():
    names, groups = leaves(65, 65)
    result = schedule.sparse_rounds(names, groups, rounds=6)
    resting = [set(names) - set(h for pair in rnd for h in pair) for rnd in result["rounds"]]
    assert all(len(rest) == 1 for rest in resting)
    assert len(set.union(*resting)) == len(resting)


def test_auto_is_the_full_matrix_up_to_its_limit_and_never_sparse_where_the_matrix_is_no_longer():
    assert schedule.schedule_kind("auto", 32) == "full" and schedule.schedule_kind("auto", 33) == "sparse"
    assert schedule.schedule_kind("auto", 100, full_max=128) == "full"
    assert schedule.schedule_kind("sparse", 6) == "full"  # 5 rounds: a sparse pass would need as many
    assert schedule.schedule_kind("full", 2048) == "full"
    with pytest.raises(ValueError):
        schedule.schedule_kind("bisect", 64)
