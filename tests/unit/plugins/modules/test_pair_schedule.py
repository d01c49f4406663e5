# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.pair_schedule with real processes: two "hosts" (this test and a second Python process, each a module
call) run their parts of a plan, each slot as soon as both sides are ready; the stand-in tool is a real TCP server and client (perftest's socket
exchange, without RDMA-CM) that prints captured perftest output once they met, so a client that connects before its
server listens is refused as by the real tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common import run_lock
from ansible_collections.roce.fabric.plugins.module_utils.validate import plan as va
from ansible_collections.roce.fabric.plugins.modules import pair_schedule
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "perftest")
MODULE = os.path.abspath(pair_schedule.__file__)

STAND_IN = r'''#!{python}
import socket, sys
port = int(sys.argv[sys.argv.index("-p") + 1])
fixture = "".join(line for line in open({fixture!r}) if not line.startswith("%%"))
if sys.argv[-1] != "127.0.0.1":
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port)); listener.listen(1)
    print("* Waiting for client to connect... *", flush=True)
    conn, _ = listener.accept(); conn.recv(16); conn.sendall(b"ok"); conn.close()
    print(fixture, end=""); sys.exit(0)
try:
    conn = socket.create_connection(("127.0.0.1", port), timeout=2)
except OSError:
    print(" Couldn't connect to 127.0.0.1:%d" % port); sys.exit(1)
conn.sendall(b"hello"); conn.recv(16); conn.close()
print(fixture, end="")
'''


@pytest.fixture
def tools(tmp_path):
    folder = tmp_path / "tools"
    folder.mkdir()
    path = folder / "ib_write_bw"
    path.write_text(STAND_IN.format(python=sys.executable, fixture=os.path.join(FIXTURES, "write_bw_mlx5_gbits_100g.txt")))
    path.chmod(0o755)
    return str(folder)


def two_host_plan(tools, tmp_path, now, slot_margin=1.0):
    hosts = dict((name, dict(ports=[dict(device="mlx5_0", port=1, rate_gbps=100.0, gid_index=3, ipv4="127.0.0.1")]))
                 for name in ("a", "b"))
    # Two pairs' worth of slots: a-b twice, the server on each side once.
    pairs = [dict(server="a", client="b"), dict(server="b", client="a")]
    options = dict(rdma_cm=False, duration=1, timeout=10, tools_dir=tools, run_dir=str(tmp_path / "run"))
    return va.plan(hosts, ["ib_write_bw"], pairs=pairs, port_base=29400 + int(now) % 400, perftest=options,
                   launch=dict(now=now, margin=slot_margin, launch_margin=1.0))


def module_args(planned, host, **extra):
    args = dict(slots=planned["parts"][host], t0=planned["launch"]["t0"], retry_delay=planned["launch"]["retry_delay"])
    args.update(extra)
    return args


def other_host(planned, host, tmp_path, delay=0.0):
    """The second host: the module as Ansible runs it, in a process of its own, after ``delay`` seconds."""
    path = tmp_path / ("args-%s.json" % host)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args(planned, host)}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = "import time, runpy, sys; time.sleep(%f); sys.argv = [%r, %r]; runpy.run_path(%r, run_name='__main__')" % (
        delay, MODULE, str(path), MODULE)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)


def result_of(proc):
    out, err = proc.communicate(timeout=120)
    assert out.strip(), err
    return json.loads(out.strip().splitlines()[-1])


def test_two_hosts_begin_each_slot_when_both_are_ready_and_a_refused_client_tries_again(tools, tmp_path):
    planned = two_host_plan(tools, tmp_path, time.time())
    # b starts its part a second late: a's server of slot 0 waits for it, and a's client of slot 1 is refused until
    # b's server of slot 1 listens.
    proc = other_host(planned, "b", tmp_path, delay=1.0)
    mine = run_module(pair_schedule.main, module_args(planned, "a"))
    theirs = result_of(proc)
    assert mine["changed"] is False and theirs["changed"] is False
    records = mine["results"] + theirs["results"]
    assert sorted((r["slot"], r["role"], r["passed"]) for r in records) == [
        (0, "client", True), (0, "server", True), (1, "client", True), (1, "server", True)], records
    merged = va.merge_results(planned, records)
    assert [t["status"] for t in merged] == ["passed", "passed"] and merged[0]["summary"]["value"] == 92.40
    assert [t["slot"] for t in merged] == [0, 1]
    by = dict(((r["slot"], r["role"]), r) for r in records)
    # Nobody waited for a slot's worst-case start: slot 1 began on both hosts when slot 0 had ended on each, long
    # before its planned start, and within a few retries of the later of the two.
    slot1 = planned["launch"]["slots"][1]["start"]
    assert by[(1, "server")]["began"] < slot1 and by[(1, "client")]["began"] < slot1
    assert by[(1, "client")]["began"] >= by[(0, "server")]["ended"] and by[(1, "server")]["began"] >= by[(0, "client")]["ended"]
    assert by[(1, "client")]["ended"] - max(by[(0, "server")]["ended"], by[(0, "client")]["ended"]) < 3.0
    assert mine["results"][1]["connect_tries"] >= 1
    for record in records:
        assert record["ended"] <= planned["parts"]["a"][record["slot"]]["end"] + 1
    assert os.listdir(str(tmp_path / "run")) == []


def test_a_host_that_reaches_a_slot_too_late_skips_it_and_its_partner_says_what_it_saw(tools, tmp_path):
    planned = two_host_plan(tools, tmp_path, time.time())
    lock = str(tmp_path / "lock" / "validate.lock")
    run_lock.take(lock, "run-1", 60)
    late = planned["launch"]["t0"] - time.time() + planned["parts"]["b"][0]["latest"] + 0.5
    proc = other_host(planned, "b", tmp_path, delay=late)
    mine = run_module(pair_schedule.main, module_args(planned, "a", lock=dict(path=lock, owner="run-1", stale_after=4)))
    theirs = result_of(proc)
    assert theirs["late"] == [0] and theirs["results"][0]["cause"] == "late_start"
    # Its record says the part itself began past the lead (not that an earlier slot overran) and what to raise.
    lead = planned["parts"]["b"][0]["start"]
    assert theirs["results"][0]["part_began"] > lead
    assert "beyond the launch's lead of %.1f s: raise validate_launch_margin" % lead in theirs["results"][0]["msg"]
    assert all(r["part_began"] < lead for r in mine["results"])
    assert mine["results"][0]["role"] == "server" and mine["results"][0]["cause"] == "timeout"
    merged = va.merge_results(planned, mine["results"] + theirs["results"])
    assert [(t["status"], t["cause"]) for t in merged] == [("failed", "late_start"), ("passed", None)]
    assert "(b)" in merged[0]["msg"]
    # The part kept the lock: refreshed while it ran (a quarter of stale_after each time).
    assert mine["lock_refreshed"] >= 1 and mine["lock_error"] is None
    assert run_lock.read_holder(lock)["owner"] == "run-1"


def test_a_partner_that_never_runs_leaves_peer_lost_never_a_hang(tools, tmp_path):
    planned = two_host_plan(tools, tmp_path, time.time())
    began = time.time()
    mine = run_module(pair_schedule.main, module_args(planned, "a"))
    # Bounded by the slots' ends, whatever the partner does: the server waited until its slot's end, the client
    # tried again until its latest start.
    assert time.time() - began <= planned["launch"]["t0"] - began + planned["launch"]["duration"] + 3
    assert mine["results"][0]["ended"] >= planned["parts"]["a"][0]["end"] - 1.5
    assert [(r["role"], r["cause"]) for r in mine["results"]] == [("server", "timeout"), ("client", "unreachable")]
    assert mine["results"][1]["connect_tries"] > 1
    merged = va.merge_results(planned, mine["results"])
    assert [t["cause"] for t in merged] == ["peer_lost", "peer_lost"] and "from b" in merged[0]["msg"]


def test_check_mode_runs_nothing_and_bad_slots_are_refused(tools, tmp_path):
    planned = two_host_plan(tools, tmp_path, time.time() + 60)
    checked = run_module(pair_schedule.main, module_args(planned, "a"), check_mode=True)
    assert [r["skipped"] for r in checked["results"]] == [True, True] and not os.path.exists(str(tmp_path / "run"))
    bad = module_args(planned, "a")
    bad["slots"] = [dict(bad["slots"][0], end=bad["slots"][0]["start"])]
    refused = run_module(pair_schedule.main, bad)
    assert refused["failed"] and "0 <= start <= latest < end" in refused["msg"] and "nothing was run" in refused["msg"]
    early = module_args(planned, "a")
    early["slots"] = [dict(early["slots"][0], latest=early["slots"][0]["start"] - 1)]
    assert "latest" in run_module(pair_schedule.main, early)["msg"]
    twice = module_args(planned, "a")
    twice["slots"] = [twice["slots"][0], twice["slots"][0]]
    assert "given twice" in run_module(pair_schedule.main, twice)["msg"]


def test_a_refused_client_backs_off_to_a_second_and_stops_at_its_latest_start():
    from ansible_collections.roce.fabric.plugins.module_utils.validate.pair_schedule import PartRunner
    now = [100.0]
    waits = []

    def sleep(seconds):
        waits.append(round(seconds, 4))
        now[0] += seconds

    def refused(module, args):
        assert args["mode"] == "client" and args["timeout"] >= 1
        now[0] += 0.05  # the tool's own try
        return dict(passed=False, cause="unreachable", msg="Couldn't connect to 10.0.0.2:18515")

    runner = PartRunner(None, 100.0, retry_delay=0.2, clock=lambda: now[0], sleep=sleep, side=refused)
    records = runner.run([dict(slot=0, start=0.0, latest=5.0, end=12.0, role="client", test_id="t1", args={})])
    assert waits[:6] == [0.2, 0.3, 0.45, 0.675, 1.0, 1.0] and max(waits) == 1.0
    # No try begun after its latest start (5 s after t0), and the record is the last refusal's.
    assert now[0] <= 100.0 + 5.0 + 0.05 and records[0]["cause"] == "unreachable"
    assert records[0]["connect_tries"] == len(waits) + 1
