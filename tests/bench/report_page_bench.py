# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the validation report's size and cost at fleet sizes (plugins/module_utils/validate/plan.py).

For each size it plans the pair tests as the validate role does (``validate_schedule: auto``: the sparse first pass
above 32 hosts, one bandwidth test a pair), gives every test the sides a launched part returns - the client's numbers
parsed by the collection's own parser from a captured ``ib_write_bw`` output (the fixture
write_bw_mlx5_gbits_100g.txt), ``--failed`` of the tests failed as the captured ``Couldn't connect`` output
reads - and builds the report: ``merge_results``, ``build_report`` (with each host's leaf, 32 hosts a leaf, as the
cabling plan gives them), ``report.json`` and ``render_html``. It prints the
tests, the seconds each step took, the sizes of report.json and report.html, and the seconds Python's own HTML
parser takes to read the page (a stand-in for a browser's parse: no browser runs here). The fault location is not
part of it (locate_bench.py times it).

    python3 tests/bench/report_page_bench.py [--sizes 128,512,2048] [--failed 0.01] [--seed 1]
"""

from __future__ import annotations

import argparse
import html.parser
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "fixtures", "perftest")


sys.path.insert(0, HERE)
import collection_path  # noqa: E402  pylint: disable=wrong-import-position

collection_path.add("report-bench-")
from ansible_collections.roce.fabric.plugins.module_utils.validate import perftest as pt  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.roce.fabric.plugins.module_utils.validate import plan as va  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.roce.fabric.plugins.module_utils.validate.pair_schedule import side_params  # noqa: E402  pylint: disable=wrong-import-position


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return "".join(line for line in handle if not line.startswith("%%"))


def fleet(count):
    hosts, groups = {}, {}
    for index in range(count):
        name = "gpu%04d" % (index + 1)
        hosts[name] = dict(ports=[dict(device="mlx5_0", port=1, rate_gbps=100.0, gid_index=3,
                                       ipv4="10.%d.%d.%d" % (index // 62500, index // 250 % 250, index % 250 + 2))])
        groups[name] = "leaf%02d" % (index // 32 + 1)
    return hosts, groups


class Reader(html.parser.HTMLParser):
    def __init__(self):
        html.parser.HTMLParser.__init__(self)
        self.tags = 0

    def handle_starttag(self, tag, attrs):
        self.tags += 1


def measure(count, failed_share, rng):
    hosts, groups = fleet(count)
    params = side_params(dict(tool="ib_write_bw", mode="client", port=18515, duration=5, min_bw_gbps=90.0))
    good = pt.judge(params, fixture("write_bw_mlx5_gbits_100g.txt"), 0)
    bad = pt.judge(params, fixture("write_bw_unreachable_client.txt"), 1)
    began = time.time()
    planned = va.plan(hosts, ["ib_write_bw"], groups=groups, launch=dict(now=began))
    planned_s = time.time() - began
    sides = []
    for test in planned["tests"]:
        judged = bad if rng.random() < failed_share else good
        sides.append(dict(test_id=test["id"], role="server", passed=True, cause=None, msg="", command="ib_write_bw -p %d"
                          % test["port"], summary=None, result=None, started=True, slot=test["round"], began=0.0,
                          ended=5.2))
        sides.append(dict(test_id=test["id"], role="client", passed=judged[0], cause=judged[1], msg=judged[2],
                          command="ib_write_bw -p %d %s" % (test["port"], test["server_address"]), result=judged[3],
                          summary=judged[4], slot=test["round"], began=0.1, ended=5.3))
    began = time.time()
    tests = va.merge_results(planned, sides)
    report = va.build_report(tests, dict((name, dict(status="passed", checks=[])) for name in hosts))
    report["groups"] = groups  # as the module adds them from the cabling plan: the matrix by leaf
    encoded = json.dumps(report, indent=2, sort_keys=True) + "\n"  # as the module writes report.json
    built_s = time.time() - began
    began = time.time()
    page = va.render_html(report)
    rendered_s = time.time() - began
    began = time.time()
    reader = Reader()
    reader.feed(page)
    reader.close()
    parsed_s = time.time() - began
    return dict(hosts=count, tests=len(tests), failed=sum(1 for t in tests if t["status"] != "passed"),
                rounds=len(planned["rounds"]), planned_s=planned_s, built_s=built_s, rendered_s=rendered_s,
                parsed_s=parsed_s, json_mb=len(encoded.encode()) / 1e6, html_mb=len(page.encode()) / 1e6,
                tags=reader.tags)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="128,512,2048")
    parser.add_argument("--failed", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    lines = ["report_page_bench: one port a host, validate_schedule auto, ib_write_bw, %.1f %% of the tests failed; "
             "the page lists every test up to %d tests, above that the ones that did not pass"
             % (100 * args.failed, va.DETAIL_LIMIT),
             "| hosts | rounds | tests | not passed | plan s | merge + report.json s | page s | report.json MB | "
             "report.html MB | HTML parse s (tags) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for size in [int(s) for s in args.sizes.split(",")]:
        got = measure(size, args.failed, rng)
        lines.append("| %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f (%d) |" % (
            got["hosts"], got["rounds"], got["tests"], got["failed"], got["planned_s"], got["built_s"],
            got["rendered_s"], got["json_mb"], got["html_mb"], got["parsed_s"], got["tags"]))
        print(lines[-1], flush=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
