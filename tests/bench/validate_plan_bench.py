# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the validate role's pair planning for a fleet (8 to 256 hosts).

The role plans once per run, on the controller (``roce.fabric.validation_report`` in ``mode: plan``, which calls
``module_utils/validate/plan.py``): which pairs test, in which rounds (no host in two tests of a round), on which
ports. For each fleet size this times the plan of

- the full matrix (every unordered pair, ``validate_pairs`` empty), one ``ib_write_bw`` per pair;
- a ring (``validate_pairs`` of each host to the next), the shape a site takes for a fleet too large for the matrix;

and prints the number of tests and rounds, the median time to plan, and the size of the plan as JSON (what Ansible
hands every host of the play as the registered result). Pure Python: no lab, no Ansible.

    python3 tests/bench/validate_plan_bench.py [--sizes 8,16,32,64,128,256] [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_plan():
    path = os.path.join(ROOT, "plugins", "module_utils", "validate", "plan.py")
    spec = importlib.util.spec_from_file_location("_validate_plan", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fleet(size):
    """``size`` hosts as rdma_facts reports them: one active 400 Gb/s RoCE port each, an address of its own."""
    return dict(("gpu%03d" % i, {"ports": [{"device": "mlx5_0", "port": 1, "rate_gbps": 400, "gid_index": 3,
                                            "ipv4": "10.%d.%d.%d" % (100 + i // 65536, (i // 256) % 256, i % 256 or 1),
                                            "numa_node": 0}]})
                for i in range(size))


def ring(hosts):
    names = sorted(hosts)
    return [dict(server=names[i], client=names[(i + 1) % len(names)]) for i in range(len(names))]


def timed(planner, runs, *args, **kwargs):
    times, result = [], None
    for _run in range(runs):
        started = time.perf_counter()
        result = planner(*args, **kwargs)
        times.append(time.perf_counter() - started)
    return statistics.median(times), min(times), max(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="8,16,32,64,128,256")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    validate = load_plan()
    print("%6s %-6s %7s %7s %10s %18s %10s" % ("hosts", "pairs", "tests", "rounds", "median", "range", "plan JSON"))
    for size in [int(s) for s in args.sizes.split(",")]:
        hosts = fleet(size)
        for label, pairs in (("matrix", None), ("ring", ring(hosts))):
            median, low, high, result = timed(validate.plan, args.runs, hosts, ["ib_write_bw"], pairs=pairs)
            planned = [t for t in result["tests"] if t["status"] == "planned"]
            size_json = len(json.dumps(result))
            print("%6d %-6s %7d %7d %9.3fs %8.3f-%7.3fs %8.1f MB" % (
                size, label, len(planned), len(result["rounds"]), median, low, high, size_json / 1e6))
            assert len(planned) == len(result["tests"]), "a test of the fleet could not be planned"
            # No host in two tests of a round: the planner's promise, checked on its output.
            by_id = dict((t["id"], t) for t in result["tests"])
            for ids in result["rounds"]:
                members = [h for i in ids for h in (by_id[i]["server"], by_id[i]["client"])]
                assert len(members) == len(set(members)), "a host takes part twice in one round"


if __name__ == "__main__":
    main()
