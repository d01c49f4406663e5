# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the fault location (plugins/module_utils/validate/locate.py) on the fleet model (tests/fleet/model.py).

For each fleet size (N hosts x R rails, rail-optimized leaves of 32 hosts) it runs seeded scenarios:

- single faults, the nine kinds in turn: the share whose first finding names the right part (kind and identity),
  and whose right part is among the first three findings or the first one's alternatives;
- two or three simultaneous faults on different hosts: the share of faults that a finding names;
- fault-free runs: the share of the fleet's parts (ports, hosts, switches, GPUs) flagged, and the findings that ask
  for a replacement (none is the target);
- every scenario: the anchor retest rounds against ceil(log2 N) + 2.

Then one fleet of ``--big`` hosts: plan (the circle-method rounds), analysis (``locate``) and the JSON report, in
seconds and peak memory (tracemalloc; the model's own run is not counted). Pure Python: no lab, no Ansible.

    python3 tests/bench/locate_bench.py [--sizes 8,32,128,512] [--scenarios 1000] [--clean 200] [--big 2048]
                                        [--scenarios-at 512=100] [--rails 8] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
import collection_path  # noqa: E402  pylint: disable=wrong-import-position

collection_path.add("locate-bench-")
from ansible_collections.roce.fabric.plugins.module_utils.validate.locate import locate  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.roce.fabric.plugins.module_utils.validate.schedule import (  # noqa: E402  pylint: disable=wrong-import-position
    circle_rounds,
    sparse_rounds,
)
from ansible_collections.roce.fabric.tests.fleet import model  # noqa: E402  pylint: disable=wrong-import-position

PART = {"mtu": "nic_config"}


def names_fault(finding, fault):
    return finding["part"] == PART.get(fault["kind"], fault["kind"]) and finding["id"] in fault["ids"]


def distinct_faults(fleet, rng, count):
    """``count`` faults of random kinds on different hosts (and leaves), so that each has a part of its own."""
    faults, hosts, switches = [], set(), set()
    while len(faults) < count:
        fault = model.pick(fleet, rng.choice(model.FAULTS), rng)
        host = fault.get("host") or (fault.get("endpoint") or "").split("/")[0]
        switch = fault.get("switch") or fleet.endpoints.get(fault.get("endpoint"), {}).get("switch")
        if fault["kind"] in ("switch", "uplink"):
            if switch in switches or any(fleet.endpoints["%s/%s" % (h, r)]["switch"] == switch
                                         for h in hosts for r in fleet.rails):
                continue
        elif host in hosts or switch in switches:
            continue
        if fault["kind"] in ("switch", "uplink"):
            switches.add(switch)
        else:
            hosts.add(host)
        faults.append(fault)
    return faults


def parts_of(fleet):
    switches = set(wiring["switch"] for wiring in fleet.endpoints.values())
    return len(fleet.endpoints) * 2 + len(fleet.hosts) + len(switches)  # ports, GPUs, hosts, switches


def size_figures(size, rails, scenarios, clean, seed, schedule="full", sparse=None):
    fleet = model.Fleet(size, rails=rails, schedule=schedule, sparse=sparse)
    out = dict(size=size, single=0, first=0, top3=0, multi_faults=0, multi_named=0, clean=clean, flagged=0,
               replace=0, bound_broken=0, rounds_most=0, bound=None, seconds=0.0, rounds=len(fleet.rounds))
    started = time.time()
    rng = random.Random(seed * 1000003 + size)
    for number in range(scenarios):
        kind = model.FAULTS[number % len(model.FAULTS)]
        fault = model.pick(fleet, kind, rng)
        rails_results, evidence, retest = model.run(fleet, [fault], rng.randrange(1 << 30))
        result = locate(fleet.describe(), rails_results, evidence, retest)
        findings = result["findings"]
        out["single"] += 1
        out["first"] += bool(findings) and names_fault(findings[0], fault)
        top = findings[:3] + [alt for f in findings[:1] for alt in f["alternatives"]]
        out["top3"] += any(names_fault(f, fault) for f in top)
        out["rounds_most"] = max(out["rounds_most"], result["retest_rounds"])
        out["bound"] = result["retest_bound"]
        out["bound_broken"] += result["retest_rounds"] > result["retest_bound"]
    for number in range(scenarios // 2):
        faults = distinct_faults(fleet, rng, 2 + number % 2)
        rails_results, evidence, retest = model.run(fleet, faults, rng.randrange(1 << 30))
        result = locate(fleet.describe(), rails_results, evidence, retest)
        out["multi_faults"] += len(faults)
        out["multi_named"] += sum(any(names_fault(f, fault) for f in result["findings"]) for fault in faults)
        out["bound_broken"] += result["retest_rounds"] > result["retest_bound"]
    parts = parts_of(fleet)
    for _number in range(clean):
        rails_results, evidence, retest = model.run(fleet, [], rng.randrange(1 << 30))
        result = locate(fleet.describe(), rails_results, evidence, retest)
        out["flagged"] += len(result["findings"])
        out["replace"] += sum(1 for f in result["findings"] if f["replace"])
        out["bound_broken"] += result["retest_rounds"] > result["retest_bound"]
    out["flagged_share"] = float(out["flagged"]) / (parts * clean) if clean else 0.0
    out["seconds"] = time.time() - started
    return out


HOST_FAULTS = ("nic_port", "cable", "switch_port", "pcie_link", "gpu", "host", "miswire", "mtu")


def fault_hosts(fault):
    """The host a fault sits on (None for a switch or an uplink)."""
    return fault.get("host") or ((fault.get("endpoint") or "").split("/")[0] or None)


def bisection(fleet, faults, rng, transient=0.01):
    """The baseline of a readiness engine's kind: the fleet as one group test (a collective over its hosts), a failing
    group split in halves tested again in the next round (all groups of a round at once), down to single hosts or to
    a group whose halves both pass (a link fault between them: two groups of hosts). Returns ``(rounds, named)``:
    ``named`` the final suspects, each a list of hosts."""
    bad_hosts = set(fault_hosts(f) for f in faults if fault_hosts(f))
    leaf = fleet.leaf
    dead_leaves = set(int(f["switch"].rsplit("-", 1)[1]) for f in faults if f["kind"] == "switch")
    up_leaves = set(int(f["switch"].rsplit("-", 1)[1]) for f in faults if f["kind"] == "uplink")

    def fails(group):
        if rng.random() < transient:
            return True
        if len(group) < 2:
            return bool(bad_hosts.intersection(group))
        leaves = set(leaf[h] for h in group)
        return bool(bad_hosts.intersection(group) or leaves & dead_leaves
                    or (leaves & up_leaves and len(leaves) > 1))

    rounds, named, tests = 0, [], [(tuple(fleet.hosts), None)]
    while tests:
        rounds += 1
        outcome = [(group, parent, fails(group)) for group, parent in tests]
        halves_of = {}
        for group, parent, failed in outcome:
            if parent is not None:
                halves_of.setdefault(parent, []).append(failed)
        # A group that failed while both its halves pass: what lies between them (or a transient failure of its test).
        named.extend(list(parent) for parent, flags in halves_of.items() if not any(flags))
        tests = []
        for group, _parent, failed in outcome:
            if not failed:
                continue
            if len(group) == 1:
                named.append(list(group))
            else:
                middle = len(group) // 2
                tests += [(group[:middle], group), (group[middle:], group)]
    return rounds, named


def baseline_figures(size, rails, scenarios, clean, seed):
    """The bisection baseline on the same faults: rounds, the right host named alone, only a group of hosts named."""
    fleet = model.Fleet(size, rails=rails, schedule="sparse")
    rng = random.Random(seed * 1000003 + size)
    out = dict(size=size, single=0, host_named=0, host_faults=0, group_only=0, rounds=[], clean=clean, flagged=0)
    for number in range(scenarios):
        kind = model.FAULTS[number % len(model.FAULTS)]
        fault = model.pick(fleet, kind, rng)
        rounds, named = bisection(fleet, [fault], rng)
        out["single"] += 1
        out["rounds"].append(rounds)
        if kind in HOST_FAULTS:
            out["host_faults"] += 1
            out["host_named"] += [fault_hosts(fault)] in named
        out["group_only"] += bool(named) and all(len(group) > 1 for group in named)
    for _number in range(clean):
        rounds, named = bisection(fleet, [], rng)
        out["flagged"] += len(named)
    return out


def big_figures(size, rails, seed, schedule):
    fleet = model.Fleet(size, rails=rails, schedule=schedule)
    rng = random.Random(seed)
    fault = model.pick(fleet, "cable", rng)
    rails_results, evidence, retest = model.run(fleet, [fault], seed)

    def once():
        started = time.time()
        if schedule == "full":
            rounds = circle_rounds(fleet.hosts)
        else:
            rounds = sparse_rounds(fleet.hosts, fleet.leaf)["rounds"]
        planned = time.time()
        result = locate(fleet.describe(), rails_results, evidence, retest)
        analysed = time.time()
        report = json.dumps(result, sort_keys=True)
        return rounds, result, report, started, planned, analysed, time.time()

    # Timed alone, then again under tracemalloc for the peak (tracing slows Python down several times).
    rounds, result, report, started, planned, analysed, done = once()
    tracemalloc.start()
    once()
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dict(size=size, rails=rails, rounds=len(rounds), pairs=sum(len(r) for r in rails_results.values()),
                plan_s=planned - started, analysis_s=analysed - planned, report_s=done - analysed,
                total_s=done - started, peak_mb=peak / 1e6, report_bytes=len(report),
                right=bool(result["findings"]) and names_fault(result["findings"][0], fault))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="128,512,2048")
    parser.add_argument("--schedules", default="full,sparse")
    parser.add_argument("--full-max", type=int, default=512, help="the largest size the full matrix is run at")
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--scenarios-at", default="", help="SIZE=COUNT,... fewer scenarios for the large sizes")
    parser.add_argument("--clean", type=int, default=200)
    parser.add_argument("--rails", type=int, default=8)
    parser.add_argument("--big", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    at = dict((int(k), int(v)) for k, v in (item.split("=") for item in args.scenarios_at.split(",") if item))
    print("fault location on the fleet model: %d rails, leaves of 32 hosts, 4 spines a rail, seed %d; %d fault kinds: %s"
          % (args.rails, args.seed, len(model.FAULTS), ", ".join(model.FAULTS)))
    columns = ("hosts", "schedule", "scenarios", "first", "top3", "multi named", "clean", "flagged", "replace",
               "rounds", "retest", "total", "seconds")
    print("%6s %8s %9s %7s %7s %14s %6s %9s %8s %7s %11s %6s %8s" % columns)
    for size in [int(s) for s in args.sizes.split(",") if s]:
        count = at.get(size, args.scenarios)
        clean = min(args.clean, max(count // 5, 20)) if size in at else args.clean
        for schedule in [s for s in args.schedules.split(",") if s]:
            if schedule == "full" and size > args.full_max:
                continue
            f = size_figures(size, args.rails, count, clean, args.seed, schedule)
            print("%6d %8s %9d %6.1f%% %6.1f%% %6d/%-5d %3.0f%% %6d %8.3f%% %8d %7d %4d (<=%d)%s %6d %8.0f" % (
                size, schedule, f["single"], 100.0 * f["first"] / f["single"], 100.0 * f["top3"] / f["single"],
                f["multi_named"], f["multi_faults"], 100.0 * f["multi_named"] / max(f["multi_faults"], 1), f["clean"],
                100.0 * f["flagged_share"], f["replace"], f["rounds"], f["rounds_most"], f["bound"] or 0,
                "" if not f["bound_broken"] else " BROKEN x%d" % f["bound_broken"], f["rounds"] + f["rounds_most"],
                f["seconds"]))
            sys.stdout.flush()
        b = baseline_figures(size, args.rails, count, clean, args.seed)
        print("%6d %8s %9d  right host named alone %d/%d (%.1f%%), only a group of hosts %d/%d, rounds %d-%d "
              "(median %d), fault-free runs flagging a group %d/%d; names a host at best, never the part" % (
                  size, "bisect", b["single"], b["host_named"], b["host_faults"],
                  100.0 * b["host_named"] / max(b["host_faults"], 1), b["group_only"], b["single"], min(b["rounds"]),
                  max(b["rounds"]), sorted(b["rounds"])[len(b["rounds"]) // 2], b["flagged"], b["clean"]))
        sys.stdout.flush()
    if args.big:
        for schedule in ("sparse", "full"):
            b = big_figures(args.big, args.rails, args.seed, schedule)
            print("%d x %d, %s: %d rounds, %d pair results; plan %.1f s, analysis %.1f s, report %.1f s, total %.1f s; "
                  "peak %.0f MB (tracemalloc), report %d bytes; the injected cable named first: %s"
                  % (b["size"], b["rails"], schedule, b["rounds"], b["pairs"], b["plan_s"], b["analysis_s"],
                     b["report_s"], b["total_s"], b["peak_mb"], b["report_bytes"], b["right"]))


if __name__ == "__main__":
    main()
