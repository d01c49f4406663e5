# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch of a plan: slots, each host's part, the clocks (module_utils/validate/launch.py)."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate import launch
from ansible_collections.roce.fabric.plugins.module_utils.validate import plan as va


def hosts(count):
    return dict(("n%02d" % i, dict(ports=[dict(device="mlx5_0", port=1, rate_gbps=100.0, gid_index=3,
                                               ipv4="10.0.0.%d" % (i + 1))])) for i in range(count))


def clocks(offsets, first=1000.0, step=0.5):
    return dict((host, dict(host_time=first + i * step + offset, controller_time=first + i * step))
                for i, (host, offset) in enumerate(sorted(offsets.items())))


def test_each_round_is_a_slot_and_every_host_gets_its_whole_part_once():
    options = dict(duration=5, rping_count=10, timeout=60)
    planned = va.plan(hosts(6), ["rping", "ib_write_bw"], perftest=options,
                      launch=dict(now=2000.0, clocks=clocks(dict(("n%02d" % i, 0.0) for i in range(6)))))
    assert planned["execution"] == "launch" and planned["assignments"] == []
    times = planned["launch"]
    # Ten rounds (5 pair rounds, a round per tool): rping's slot 3 + 4 s, ib_write_bw's 5 + 4 s, each with 3 s for a
    # refused client to try again, then the margin of 3 s: the worst case.
    assert [slot["length"] for slot in times["slots"]] == [10.0, 12.0] * 5
    # The slots count from the controller's time at planning, after a lead: three times what the lock's call took on all
    # hosts (2.5 s) and the launch margin.
    assert times["t0"] == 2000.0 and times["lead"] == 3 * 2.5 + launch.LAUNCH_MARGIN
    starts = [slot["start"] for slot in times["slots"]]
    lead = 7.5 + launch.LAUNCH_MARGIN
    assert starts == [lead + sum([13.0, 15.0][i % 2] for i in range(n)) for n in range(10)]
    assert times["duration"] == lead + 140.0
    assert times["ends"] == 2000.0 + 147.5 + launch.LAUNCH_MARGIN + 1.0
    # Expected: the launch's span, then every slot as long as its test and READY_SECONDS.
    assert times["expected"] == 2000.0 + 2.5 + 5 * (3.0 + launch.READY_SECONDS) + 5 * (5.0 + launch.READY_SECONDS)
    assert times["poll_retries"] * times["poll_delay"] >= times["ends"] - times["expected"]
    assert times["retry_delay"] == launch.RETRY_DELAY
    for host, slots in planned["parts"].items():
        assert [s["slot"] for s in slots] == list(range(10))  # six hosts: each in every round
        for slot in slots:
            test = [t for t in planned["tests"] if t["id"] == slot["test_id"]][0]
            assert slot["role"] == ("server" if test["server"] == host else "client") and host in (test["server"], test["client"])
            assert slot["args"]["port"] == test["port"] and slot["end"] - slot["start"] == times["slots"][slot["slot"]]["length"] + 3.0
            # The last moment this side may begin: its test and setup still fit before the slot's end.
            assert slot["latest"] == slot["end"] - launch.slot_length(slot["args"])
    # Every test its own port: a client that is early can only reach its own test's server.
    assert len(set(t["port"] for t in planned["tests"])) == len(planned["tests"])


def test_a_host_whose_clock_is_off_is_refused_by_name_and_the_spread_widens_the_slots():
    with pytest.raises(va.PlanError) as refused:
        va.plan(hosts(4), ["ib_write_bw"], launch=dict(now=0.0, clocks=clocks(dict(n00=0.0, n01=42.5, n02=0.0, n03=-0.2))))
    assert "n01" in str(refused.value) and "+42.5 s" in str(refused.value) and "n03" not in str(refused.value)
    offsets = dict(n00=0.0, n01=1.5, n02=0.0, n03=-0.5)
    planned = va.plan(hosts(4), ["ib_write_bw"], launch=dict(now=0.0, clocks=clocks(offsets)))
    assert planned["launch"]["spread"] == 2.0 and planned["launch"]["margin"] == 5.0
    first = planned["launch"]["slots"][0]
    # Retrying 2 s longer, a margin 2 s wider, and each side's latest start 2 s earlier (its clock may be ahead).
    assert first["length"] == launch.slot_length(dict(tool="ib_write_bw", duration=5, timeout=60)) + 2.0 + launch.CONNECT_GRACE
    side = planned["parts"]["n00"][0]
    assert side["latest"] == side["end"] - 2.0 - launch.slot_length(side["args"])
    # No clock reading (the lock off): the host's own clock is trusted, the launch gets the margin alone.
    bare = va.plan(hosts(4), ["ib_write_bw"], launch=dict(now=0.0, clocks={"n00": {"skipped": True}}))
    assert bare["launch"]["offsets"] == {} and bare["launch"]["t0"] == 0.0 and bare["launch"]["slots"][0]["start"] == launch.LAUNCH_MARGIN


def test_the_call_s_start_sets_the_launch_s_lead_and_the_middle_of_the_call_the_offset():
    # Every host's lock call began at once and took 20 s to come back, as a module run on 64 hosts at 64 forks on a
    # loaded controller does: the last end alone says 1 s, the starts say what the launch will take.
    readings = dict(("n%02d" % i, dict(controller_started=1000.0, controller_time=1019.0 + i * 0.25,
                                       host_time=1010.0 + i * 0.125)) for i in range(4))
    offsets, refused = launch.clock_offsets(readings, 10.0)
    assert refused == {} and offsets["n00"] == 1010.0 - 1009.5 and launch.launch_span(readings) == 19.75
    planned = va.plan(hosts(4), ["ib_write_bw"], launch=dict(now=1020.0, clocks=readings))
    lead = 3 * 19.75 + launch.LAUNCH_MARGIN
    assert planned["launch"]["lead"] == lead and planned["launch"]["slots"][0]["start"] == lead
    # Without the starts (an older lock result): the ends' spread, as before.
    bare = dict((host, dict(host_time=r["host_time"], controller_time=r["controller_time"])) for host, r in readings.items())
    assert launch.launch_span(bare) == 0.75 and launch.clock_offsets(bare, 10.0)[0]["n00"] == 1010.0 - 1019.0


def test_a_test_of_every_size_is_given_its_timeout():
    assert launch.slot_length(dict(tool="ib_write_bw", all_sizes=True, timeout=45)) == 45.0
    assert launch.slot_length(dict(tool="ib_write_bw", duration=5, timeout=60)) == 9.0
    assert launch.slot_length(dict(tool="ib_send_lat", timeout=60)) == 7.0
    assert launch.slot_length(dict(tool="ib_write_bw", duration=30, timeout=20)) == 20.0


def test_records_of_a_launched_plan_name_a_lost_or_late_host():
    planned = va.plan(hosts(4), ["ib_write_bw"], launch=dict(now=0.0))
    first, second, third = planned["tests"][:3]
    ok = dict(passed=True, cause=None, msg="", command="x", summary=dict(value=95.0, unit="Gb/s"), result=None)
    records = [
        # A host lost mid-run: no record of its side.
        dict(ok, test_id=first["id"], role="server", passed=False, cause="timeout", msg="no client", started=True),
        # A late host: its record says so, its partner's is what it saw.
        dict(ok, test_id=second["id"], role="client", passed=False, cause="late_start", msg="slot 0 started 9 s before"),
        dict(ok, test_id=second["id"], role="server", passed=False, cause="timeout", msg="no client", started=True),
        # A server that never listened: its cause is the test's, not the client's refused connection.
        dict(ok, test_id=third["id"], role="server", passed=False, cause="port_in_use", msg="port in use", started=False),
        dict(ok, test_id=third["id"], role="client", passed=False, cause="unreachable", msg="refused"),
    ]
    merged = dict((t["id"], t) for t in va.merge_results(planned, records))
    assert merged[first["id"]]["cause"] == "peer_lost" and first["client"] in merged[first["id"]]["msg"]
    assert merged[second["id"]]["cause"] == "late_start" and second["client"] in merged[second["id"]]["msg"]
    assert merged[third["id"]]["cause"] == "port_in_use"
    # The same records of a round-by-round plan: a missing side is a side that did not run (as before).
    rounds = va.plan(hosts(4), ["ib_write_bw"])
    assert dict((t["id"], t) for t in va.merge_results(rounds, records))[first["id"]]["cause"] == "timeout"


def test_a_reading_that_is_not_a_time_is_left_out_of_the_span_and_the_offsets():
    readings = dict(a=dict(controller_started=100.0, controller_time=104.0, host_time=102.0),
                    b=dict(controller_started="soon", controller_time=103.0, host_time=103.0),
                    c="not a reading")
    assert launch.launch_span(readings) == 4.0
    assert launch.clock_offsets(readings, 10.0) == ({"a": 0.0}, {})
