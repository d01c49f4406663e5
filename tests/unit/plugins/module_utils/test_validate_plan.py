# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning rounds, thresholds and the report."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate import plan as va


def host(address, rate=100.0, device="mlx5_0", **extra):
    entry = dict(ports=[dict(device=device, port=1, rate_gbps=rate, gid_index=3, ipv4=address, numa_node=0)])
    entry.update(extra)
    return entry


HOSTS = dict(("n%d" % i, host("10.0.0.%d" % i)) for i in range(1, 5))


def test_full_matrix_of_four_hosts_runs_in_three_rounds():
    result = va.plan(HOSTS, ["ib_write_bw"])
    assert len(result["tests"]) == 6
    assert [len(r) for r in result["rounds"]] == [2, 2, 2]
    for assignment in result["assignments"]:
        assert sorted(assignment) == ["n1", "n2", "n3", "n4"]
    assert [t["port"] for t in result["tests"]] == list(range(18515, 18521))
    assert result["port_first"] == 18515 and result["port_last"] == 18520
    assert result["tests"][0]["min_bw_gbps"] == 90.0
    assert result["tests"][0]["server_address"] == "10.0.0.1"


def test_six_hosts_run_in_five_rounds_and_each_tool_of_a_pair_in_its_own():
    """The circle method: N-1 rounds for even N (first-fit took 7 for six hosts), every round's pairs disjoint."""
    hosts = dict(("n%d" % i, host("10.0.0.%d" % i)) for i in range(1, 7))
    result = va.plan(hosts, ["ib_write_bw"])
    assert [len(r) for r in result["rounds"]] == [3] * 5
    both = va.plan(hosts, ["rping", "ib_write_bw"])
    assert len(both["rounds"]) == 10
    by_id = dict((t["id"], t) for t in both["tests"])
    for ids in both["rounds"]:
        members = [h for i in ids for h in (by_id[i]["server"], by_id[i]["client"])]
        assert len(members) == len(set(members))
        assert len(set(by_id[i]["tool"] for i in ids)) == 1


def test_odd_host_count_and_several_tools():
    hosts = dict(("n%d" % i, host("10.0.0.%d" % i)) for i in range(1, 4))
    result = va.plan(hosts, ["rping", "ib_write_bw"])
    assert len(result["tests"]) == 6
    # three hosts: only one pair fits in a round
    assert all(len(r) == 1 for r in result["rounds"])
    rping = [t for t in result["tests"] if t["tool"] == "rping"][0]
    assert rping["min_bw_gbps"] is None


def test_thresholds_host_override_and_slower_link():
    hosts = dict(a=host("10.0.0.1", rate=100.0), b=host("10.0.0.2", rate=25.0))
    assert va.plan(hosts, ["ib_write_bw"])["tests"][0]["min_bw_gbps"] == 22.5
    hosts["a"]["min_bw_gbps"] = 0.01
    assert va.plan(hosts, ["ib_write_bw"])["tests"][0]["min_bw_gbps"] == 0.01
    assert va.plan(dict(a=host("1.1.1.1"), b=host("1.1.1.2")), ["ib_send_lat"], max_lat_usec=5)["tests"][0]["max_lat_usec"] == 5


def test_host_without_rdma_in_explicit_pair_fails_that_test_only():
    hosts = dict(HOSTS, bare=dict(ports=[]))
    result = va.plan(hosts, ["ib_write_bw"], pairs=[dict(server="n1", client="bare"), dict(server="n1", client="n2")])
    failed, ok = result["tests"]
    assert failed["status"] == "failed" and failed["cause"] == "no_device" and "bare" in failed["msg"]
    assert ok["status"] == "planned" and result["rounds"] == [[ok["id"]]]
    assert va.plan(hosts, ["ib_write_bw"])["hosts_without_rdma"] == ["bare"]


def test_bad_plans():
    with pytest.raises(va.PlanError, match="not in the play"):
        va.plan(HOSTS, ["ib_write_bw"], pairs=[dict(server="n1", client="ghost")])
    with pytest.raises(va.PlanError, match="against itself"):
        va.plan(HOSTS, ["ib_write_bw"], pairs=[dict(server="n1", client="n1")])
    with pytest.raises(va.PlanError, match="unknown pair tests"):
        va.plan(HOSTS, ["iperf"])


def test_merge_and_report():
    result = va.plan(dict(a=host("10.0.0.1"), b=host("10.0.0.2"), c=host("10.0.0.3")), ["ib_write_bw"])
    ab, ac, bc = [t["id"] for t in result["tests"]]
    rows = [dict(bytes=65536, iterations=5000, bw_average=92.4, bw_peak=92.42, bw_average_gbps=92.4, bw_peak_gbps=92.42)]
    sides = [
        dict(test_id=ab, role="server", passed=True, command="ib_write_bw -p 18515 -R"),
        dict(test_id=ab, role="client", passed=True, command="ib_write_bw -p 18515 -R 10.0.0.1",
             summary=dict(bytes=65536, value=92.4, unit="Gb/s"), result=dict(rows=rows, unit="Gb/sec")),
        dict(test_id=ac, role="server", passed=False, cause="port_in_use", msg="port 18516 is in use"),
        dict(test_id=ac, role="client", passed=False, cause="unreachable", msg="Couldn't connect"),
    ]
    tests = va.merge_results(result, sides)
    by_id = dict((t["id"], t) for t in tests)
    assert by_id[ab]["status"] == "passed" and "92.4 Gb/s at 65536 bytes (threshold 90.0 Gb/s)" == by_id[ab]["msg"]
    assert by_id[ac]["status"] == "failed" and by_id[ac]["cause"] == "unreachable"
    assert by_id[bc]["status"] == "not_run"
    report = va.build_report(tests, dict(a=dict(status="passed", checks=[dict(name="discovery", status="passed", msg="ok")])))
    assert report["summary"] == dict(passed=2, failed=1, skipped=0, not_run=1)
    assert report["passed"] is False
    page = va.render_html(report)
    assert page.count("<svg") == 1
    assert "ib_write_bw -p 18515 -R 10.0.0.1" in page
    assert "unreachable" in page


def test_a_fleet_s_page_lists_the_tests_that_did_not_pass_and_counts_the_rest():
    hosts = dict(("g%03d" % i, host("10.1.%d.%d" % (i // 200, i % 200 + 1))) for i in range(40))
    planned = va.plan(hosts, ["ib_write_bw"], schedule="full")
    assert len(planned["tests"]) == 780 > va.DETAIL_LIMIT
    rows = [dict(bytes=65536, iterations=1000, bw_peak_gbps=None, bw_average_gbps=92.4, msg_rate_mpps=0.17)]
    sides = []
    for number, test in enumerate(planned["tests"]):
        failed = number in (5, 400)
        sides += [dict(test_id=test["id"], role="server", passed=True, command="ib_write_bw -p %d" % test["port"]),
                  dict(test_id=test["id"], role="client", passed=not failed, cause="unreachable" if failed else None,
                       msg="Couldn't connect" if failed else "", command="ib_write_bw -p %d %s" % (test["port"], test["server_address"]),
                       summary=None if failed else dict(bytes=65536, value=92.4, unit="Gb/s"),
                       result=None if failed else dict(rows=rows, unit="Gb/sec"))]
    report = va.build_report(va.merge_results(planned, sides), dict(g000=dict(status="passed", checks=[])))
    page = va.render_html(report)
    failed = [t for t in report["tests"] if t["status"] == "failed"]
    assert len(failed) == 2 and all(t["client_command"] in page for t in failed)
    passed = [t for t in report["tests"] if t["status"] == "passed"]
    # The passed tests are counted, not listed or plotted, and the raw report stays in report.json.
    assert "the 778 that passed" in page and passed[0]["client_command"] not in page and page.count("<svg") == 0
    assert '"tests": [' not in page and "report.json" in page
    # With the hosts' leaves the matrix is drawn by leaf too, failed/run where a test failed.
    assert "Pair tests by leaf" not in page
    report["groups"] = dict((name, "leaf%d" % (int(name[1:]) // 20)) for name in hosts)
    by_leaf = va.render_html(report)
    assert "Pair tests by leaf (2 leaves)" in by_leaf
    for pair, run in ((("leaf0", "leaf0"), 190), (("leaf1", "leaf1"), 190), (("leaf0", "leaf1"), 400)):
        bad = sum(1 for t in failed if sorted((report["groups"][t["server"]], report["groups"][t["client"]])) == list(pair))
        assert (">%d/%d<" % (bad, run) if bad else ">%d<" % run) in by_leaf
    # At the limit, every test is listed and the raw report embedded, as before.
    small = va.build_report(report["tests"][:va.DETAIL_LIMIT], {})
    assert va.render_html(small).count("<svg") == sum(1 for t in small["tests"] if t["status"] == "passed") == 510


def test_svg_plot_handles_one_point_and_no_data():
    assert "<circle" in va.svg_plot([("x", [(65536, 1.0)])])
    assert "no data" in va.svg_plot([("x", [])])


def test_pair_with_other_server_address():
    result = va.plan(HOSTS, ["rping"], pairs=[dict(server="n1", client="n2", server_address="10.9.9.9")])
    assert result["tests"][0]["server_address"] == "10.9.9.9"


def test_each_side_s_perftest_arguments_are_decided_by_the_plan():
    options = dict(rdma_cm=True, tos=106, size=65536, all_sizes=False, duration=5, rping_count=10, timeout=60,
                   run_dir="/var/tmp/roce-fabric-validate/perftest", tools_dir="")
    result = va.plan(dict(n1=host("10.0.0.1"), n2=host("10.0.0.2", numa_node=1)), ["rping", "ib_write_bw", "ib_send_lat"],
                     perftest=options)
    parts = dict((a["n1"]["test"]["tool"], (a["n1"], a["n2"])) for a in result["assignments"])
    server, client = parts["ib_write_bw"]
    assert server["role"] == "server" and server["args"] == dict(
        mode="server", tool="ib_write_bw", port=server["test"]["port"], rdma_cm=True, timeout=60,
        run_dir="/var/tmp/roce-fabric-validate/perftest", fail_on_error=False, all_sizes=False, tos=106, size=65536,
        duration=5, device="mlx5_0", ib_port=1, numa_node=0)
    assert client["args"]["server"] == "10.0.0.1" and client["args"]["min_bw_gbps"] == 90.0
    assert "max_lat_usec" not in client["args"] and "gid_index" not in client["args"]
    # rping: no ToS option, a count of iterations, no size or duration.
    rping = parts["rping"][1]["args"]
    assert rping["iterations"] == 10 and "tos" not in rping and "size" not in rping and rping["all_sizes"] is False
    # A latency test: the tool's own size; no bandwidth threshold.
    lat = parts["ib_send_lat"][1]["args"]
    assert "size" not in lat and "duration" not in lat and "min_bw_gbps" not in lat
    # Without RDMA-CM the client's GID index is given; every size; the tools from a folder; no ToS given (2.17 renders
    # a null as an empty string).
    other = va.plan(dict(n1=host("10.0.0.1"), n2=host("10.0.0.2")), ["ib_write_bw"],
                    perftest=dict(options, rdma_cm=False, all_sizes=True, tools_dir="/opt/perftest/bin/", tos=""))
    args = other["assignments"][0]["n2"]["args"]
    assert args["gid_index"] == 3 and args["all_sizes"] is True and "size" not in args and "duration" not in args
    assert args["executable"] == "/opt/perftest/bin/ib_write_bw" and "tos" not in args
    # The NUMA node of the NIC: node 0 is a node (the role's Jinja took 0 for none and left the test unpinned).
    assert args["numa_node"] == 0


def test_a_side_s_record_comes_from_the_client_or_the_collected_server():
    test = dict(id="ib_write_bw:n1->n2")
    skipped = dict(skipped=True, changed=False)
    started = dict(passed=True, command="ib_write_bw -p 18515", changed=False)
    collected = dict(passed=True, cause=None, msg="ok", command="ib_write_bw -p 18515", summary=None, result=None)
    assert va.side_outcome(dict(role="server", test=test), started, skipped, collected) == [dict(
        test_id=test["id"], role="server", passed=True, cause=None, msg="ok", command="ib_write_bw -p 18515",
        summary=None, result=None)]
    refused = dict(passed=False, cause="port_in_use", msg="port 18515 is in use", command="ib_write_bw -p 18515")
    record = va.side_outcome(dict(role="server", test=test), refused, skipped, skipped)[0]
    assert (record["passed"], record["cause"], record["msg"]) == (False, "port_in_use", "port 18515 is in use")
    client = dict(passed=True, cause=None, msg="ok", command="ib_write_bw 10.0.0.1", summary={"value": 95.1}, result={})
    assert va.side_outcome(dict(role="client", test=test), skipped, client, skipped)[0]["summary"] == {"value": 95.1}
    # A client whose server never started runs not: the server's record is the test's.
    assert va.side_outcome(dict(role="client", test=test), skipped, skipped, skipped) == []
    assert va.side_outcome(dict(role="none"), skipped, skipped, skipped) == []


def test_a_fleet_above_the_full_matrix_s_limit_gets_the_sparse_pass_over_its_cabling_plan_s_leaves():
    hosts = dict(("n%03d" % i, host("10.1.%d.%d" % (i // 200, i % 200 + 1))) for i in range(96))
    cabling = dict(("n%03d" % i, {"ens1np0": {"switch": "leaf-r0-%d" % (i // 32), "port": "swp%d" % (i % 32 + 1)},
                                  "ens2np0": {"switch": "leaf-r1-%d" % (i // 32), "port": "swp%d" % (i % 32 + 1)}})
                   for i in range(96))
    groups = va.cabling_groups(cabling)
    assert groups["n000"] == "leaf-r0-0,leaf-r1-0" and groups["n095"] == "leaf-r0-2,leaf-r1-2"
    result = va.plan(hosts, ["rping", "ib_write_bw"], groups=groups)
    used = result["schedule"]
    assert used["kind"] == "sparse" and used["fewest_partners"] >= 3 and used["uncrossed"] == []
    # Each pair round runs each tool in a round of its own; no host twice in a round.
    assert len(result["rounds"]) == 2 * used["pair_rounds"] <= 2 * (2 * 7 + 2)
    assert len(result["tests"]) == 2 * used["pairs"] < 2 * 96 * 95 // 2
    for assignment, ids in zip(result["assignments"], result["rounds"]):
        assert len(assignment) == 2 * len(ids)
    by_pair = set((t["server"], t["client"]) for t in result["tests"])
    leaf = dict((name, group.split(",")[0]) for name, group in groups.items())
    assert set(frozenset((leaf[a], leaf[b])) for a, b in by_pair if leaf[a] != leaf[b]) == set(
        frozenset(pair) for pair in [("leaf-r0-0", "leaf-r0-1"), ("leaf-r0-0", "leaf-r0-2"), ("leaf-r0-1", "leaf-r0-2")])
    # Asked for, the full matrix; a small fleet gets it by default.
    assert va.plan(hosts, ["ib_write_bw"], schedule="full")["schedule"]["pairs"] == 96 * 95 // 2
    assert va.plan(HOSTS, ["ib_write_bw"])["schedule"] == dict(kind="full", pair_rounds=3, pairs=6, fewest_partners=3,
                                                               uncrossed=[])
    with pytest.raises(va.PlanError):
        va.plan(hosts, ["ib_write_bw"], schedule="bisect")
