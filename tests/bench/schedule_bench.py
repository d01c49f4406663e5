# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the pair schedule (circle method) and the anchor retest of suspects, on seeded fleets.

For N hosts on one rail (N in 8, 32, 128, 512, 2048 by default) this times the round robin of the full matrix
(``circle_rounds``) and checks that every pair meets once in N-1 rounds (N for odd N) with no host twice in a round.
Then, for seeded scenarios, it makes the matrix's outcomes of a fault (a bad host: every pair with it fails; a bad
link: one pair fails) with 1 % transient failures of other pairs, and plans the anchor retest
(``anchor_retests``): the bad host must be the first suspect, and the retest must fit in ``ceil(log2 N) + 2`` rounds.
Prints, per size: plan seconds and peak memory, the share of scenarios whose first suspect is the bad host, the
retest rounds (most, and the bound), and the scenarios that broke the bound. Pure Python: no lab, no Ansible.

    python3 tests/bench/schedule_bench.py [--sizes 8,32,128,512] [--scenarios 100] [--seed 1]

The retest has no confirmation step yet: a transient failure of another pair makes its ends suspects too, which
is what the "bad link" column shows falling as the fleet grows (1 % of N(N-1)/2 pairs fail by chance).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_schedule():
    path = os.path.join(ROOT, "plugins", "module_utils", "validate", "schedule.py")
    spec = importlib.util.spec_from_file_location("_validate_schedule", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scenario(schedule, names, rounds, rng, kind, transient=0.01):
    """(failing pairs, passing pairs, the faulty part) of one seeded run."""
    pairs = [pair for rnd in rounds for pair in rnd]
    if kind == "host":
        bad = rng.choice(names)
        broken = set(pair for pair in pairs if bad in pair)
    else:
        pair = rng.choice(pairs)
        bad = pair
        broken = {pair}
    failing = [pair for pair in pairs if pair in broken or rng.random() < transient]
    failed = set(failing)
    passing = [pair for pair in pairs if pair not in failed]
    return failing, passing, bad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,32,128,512")
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    schedule = load_schedule()
    print("| hosts | rounds | pairs | plan s | peak MB | bad host first | bad link: both ends suspects | retest rounds (most / bound) | over bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size in [int(s) for s in args.sizes.split(",")]:
        names = ["gpu%04d" % i for i in range(size)]
        tracemalloc.start()
        started = time.time()
        rounds = schedule.circle_rounds(names)
        took = time.time() - started
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        pairs = sum(len(r) for r in rounds)
        assert pairs == size * (size - 1) // 2
        assert all(len(set(h for p in r for h in p)) == 2 * len(r) for r in rounds)
        rng = random.Random(args.seed * 1000003 + size)
        first = links = most = over = 0
        count = max(1, args.scenarios if size <= 512 else args.scenarios // 10)
        for number in range(count):
            kind = "host" if number % 2 == 0 else "link"
            failing, passing, bad = scenario(schedule, names, rounds, rng, kind)
            plan = schedule.anchor_retests(failing, names, passing)
            most = max(most, len(plan["rounds"]))
            over += len(plan["rounds"]) > schedule.retest_bound(size)
            if kind == "host":
                first += plan["suspects"][:1] == [bad]
            else:
                links += set(bad) <= set(plan["suspects"])
        hosts_runs = (count + 1) // 2
        link_runs = count // 2
        print("| %d | %d | %d | %.2f | %.0f | %d/%d | %d/%d | %d / %d | %d |" % (
            size, len(rounds), pairs, took, peak, first, hosts_runs, links, link_runs, most,
            schedule.retest_bound(size), over))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
