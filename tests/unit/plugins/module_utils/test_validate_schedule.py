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
