# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's findings (module_utils/validate/findings.py): one run's merged pair tests and the counter deltas of
its traffic checks, handed to the fault location engine; the report, its HTML and JUnit carry them."""

from __future__ import annotations

import itertools
import json
import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers as nvue_parsers
from ansible_collections.roce.fabric.plugins.module_utils.qos import counters
from ansible_collections.roce.fabric.plugins.module_utils.validate import junit, lldp, nccl, nccl_ras, plan
from ansible_collections.roce.fabric.plugins.module_utils.validate.findings import (
    cabling_ports,
    findings_of,
    pair_matrix,
    retest_pairs,
    run_inputs,
    switch_lldp_of,
    switch_port_deltas,
)
from ansible_collections.roce.fabric.plugins.module_utils.validate.locate import locate
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

HOSTS = ["gpu%02d" % n for n in range(1, 7)]


def merged(bad_host=None, gbps=92.5):
    """Tests as merge_results returns them: ib_write_bw over every pair, those of ``bad_host`` failed."""
    tests = []
    for number, (server, client) in enumerate(itertools.combinations(HOSTS, 2)):
        failed = bad_host in (server, client)
        tests.append(dict(id="ib_write_bw:%s->%s" % (server, client), number=number + 1, port=18515 + number,
                          round=None, msg="", tool="ib_write_bw", server=server, client=client,
                          server_device="mlx5_0", client_device="mlx5_0",
                          status="failed" if failed else "passed", cause="timeout" if failed else None,
                          summary=None if failed else dict(bytes=65536, value=gbps, unit="Gb/s")))
    return tests


def hosts_with(nic_of=None):
    """Each host's traffic check as traffic_checks records it, with the deltas of ``nic_of[host]``."""
    out = {}
    for host in HOSTS:
        record = dict(name="traffic ens1f0np0", status="passed", msg="", command="", netdev="ens1f0np0", device="mlx5_0")
        if (nic_of or {}).get(host):
            record["nic"] = nic_of[host]
        out[host] = dict(status="passed", checks=[record])
    return out


def test_a_healthy_run_has_no_finding():
    findings, location = findings_of(merged(), hosts_with())
    assert findings == [] and location["pairs"] == 15 and location["suspects"] == [] and location["reference_gbps"] == 92.5


def test_a_host_whose_pairs_fail_with_receive_errors_is_its_cable_with_two_kinds_of_evidence():
    # The mlx5 physical counters the kernel documents (rx_crc_errors_phy, rx_symbol_err_phy), as window deltas.
    findings, location = findings_of(merged("gpu04"), hosts_with({"gpu04": {"rx_crc_errors_phy": 1840,
                                                                            "rx_symbol_err_phy": 77}}))
    assert location["suspects"] == ["gpu04/mlx5_0"] and "not every suspect was retested" in location["note"]
    top = findings[0]
    assert (top["part"], top["id"], top["confidence"], top["replace"]) == ("cable", "gpu04/mlx5_0", "medium", True)
    assert [e["kind"] for e in top["evidence"]] == ["matrix", "nic_rx"] and "5 of its 5 pairs" in top["evidence"][0]["text"]


def test_a_host_whose_pairs_are_slow_on_a_narrow_pcie_link_is_its_pcie_link():
    """gpu03's pairs run at a quarter of the rail (x4 of x16 while its traffic flowed, as traffic_window samples it);
    its NIC counters are clean: the host's PCIe link, not the cable, with the PCI address named."""
    tests = merged()
    for test in tests:
        if "gpu03" in (test["server"], test["client"]):
            test["summary"] = dict(bytes=65536, value=23.1, unit="Gb/s")
    hosts = hosts_with()
    hosts["gpu03"]["checks"][0]["pcie"] = dict(pci="0000:17:00.0", speed=32.0, max_speed=32.0, width=4, max_width=16,
                                               upstream_pci="0000:16:02.0", upstream_width=16, upstream_max_width=16,
                                               busy_samples=6, below_samples=6, aer_correctable=0)
    findings, location = findings_of(tests, hosts)
    assert location["suspects"] == ["gpu03/mlx5_0"]
    top = findings[0]
    assert (top["part"], top["id"], top["replace"]) == ("pcie_link", "gpu03/mlx5_0", True), findings
    pcie_evidence = [e for e in top["evidence"] if e["kind"] == "pcie"]
    assert pcie_evidence and pcie_evidence[0]["text"] == "PCIe 0000:17:00.0: x4 of x16 under load"
    # The same run with the link at full width: the matrix alone, no PCIe evidence.
    hosts["gpu03"]["checks"][0]["pcie"].update(width=16)
    assert [e["kind"] for e in findings_of(tests, hosts)[0][0]["evidence"]] == ["matrix"]


def test_the_matrix_alone_names_the_nic_port_for_inspection_only():
    findings, _location = findings_of(merged("gpu02"), hosts_with())
    assert [(f["part"], f["id"], f["confidence"], f["replace"]) for f in findings] == [
        ("nic_port", "gpu02/mlx5_0", "low", False)]
    assert findings[0]["action"].startswith("inspect (one kind of evidence only)")


@pytest.mark.parametrize("cause", ["late_start", "peer_lost", "port_in_use", "tool_missing"])
def test_tests_failed_for_the_run_s_own_causes_name_no_part(cause):
    """A host whose every test failed because it reached its slots too late (a slow controller, a launch that
    overran its lead), lost its part, met a port another process held or lacked the tool: the tests stay failed in
    the report, but the matrix is the other pairs' and no NIC is named for it, nor retested; the location says how
    many it left out and why."""
    tests = merged("gpu02")
    for test in tests:
        if test["status"] == "failed":
            test["cause"] = cause
    findings, location = findings_of(tests, hosts_with())
    assert findings == [] and location["pairs"] == 10 and location["suspects"] == []
    assert location["left_out"] == {cause: 5}
    assert location["left_out_note"].startswith("5 failed because ")
    assert location["left_out_note"].endswith("not evidence of the fabric, left out of the matrix")
    assert retest_pairs(tests) == []
    # The same host failing on a timeout is the fabric's evidence: named for inspection.
    assert [f["id"] for f in findings_of(merged("gpu02"), hosts_with())[0]] == ["gpu02/mlx5_0"]
    # Every test of a run left out: nothing to locate, and the location says why.
    for test in tests:
        test.update(status="failed", cause=cause, summary=None)
    findings, location = findings_of(tests, hosts_with())
    assert findings == [] and location["pairs"] == 0 and location["left_out"] == {cause: 15}
    assert location["note"] == "no pair test said anything of the fabric: nothing to locate"
    # A retest that failed for such a cause neither confirms nor clears its suspect.
    suspect_tests = merged("gpu04")
    pairs = retest_pairs(suspect_tests)
    retests = retested(pairs, passed=False)
    for test in retests:
        test["cause"] = cause
    _findings, location = findings_of(suspect_tests, hosts_with(), retest_tests=retests)
    assert "gpu04/mlx5_0" in location["suspects"] and location["transient"] == []
    assert location["note"].startswith("not every suspect was retested")


def retested(pairs, passed):
    """The anchor retests as merge_results returns them, each ``passed`` or failed (a timeout, as a dead port's)."""
    return [dict(id="retest:ib_write_bw:%s->%s" % (pair["server"], pair["client"]), tool="ib_write_bw",
                 server=pair["server"], client=pair["client"], server_device="mlx5_0", client_device="mlx5_0",
                 status="passed" if passed else "failed", cause=None if passed else "timeout", msg="",
                 summary=dict(bytes=65536, value=92.1, unit="Gb/s") if passed else None) for pair in pairs]


def test_each_suspect_is_retested_against_an_anchor_that_confirms_or_clears_it():
    """The role runs the engine's anchor retests as one more round (retest_pairs): gpu04 failed every pair, so its
    retest against a host that passed with others confirms it (the matrix evidence says so) or, when it passes, clears
    it as transient. Fewer than three hosts, or no suspect: no retest."""
    tests = merged("gpu04")
    pairs = retest_pairs(tests)
    assert [(p["client"], p["suspect"]) for p in pairs] == [("gpu04", "gpu04/mlx5_0")], pairs
    assert pairs[0]["server"] != "gpu04" and pairs[0]["anchor"] == pairs[0]["server"] + "/mlx5_0"
    hosts = hosts_with({"gpu04": {"rx_crc_errors_phy": 1840}})
    findings, location = findings_of(tests, hosts, retested(pairs, passed=False))
    assert location["note"] == "" and location["retests"][0]["status"] == "failed" and location["transient"] == []
    assert findings[0]["id"] == "gpu04/mlx5_0" and "its retest against an anchor failed too" in findings[0]["evidence"][0]["text"]
    findings, location = findings_of(tests, hosts, retested(pairs, passed=True))
    assert location["transient"] == ["gpu04/mlx5_0"] and [f["id"] for f in findings] == [], findings
    assert retest_pairs(merged()) == []
    assert retest_pairs([t for t in tests if {t["server"], t["client"]} == {"gpu01", "gpu04"}]) == []


def test_a_port_whose_lldp_neighbour_is_not_the_plans_is_a_miswire():
    """The traffic checks carry each port's LLDP neighbour (traffic_window, from lldpcli); the site's cabling plan
    (validate_cabling) says where each port belongs: gpu03 hears swp9 where the plan says swp3, though its pairs
    passed. Without a plan, one leaf for all: nothing to say."""
    hosts = hosts_with()
    for host in HOSTS:
        hosts[host]["checks"][0]["lldp"] = dict(switch="leaf1", port="swp%d" % int(host[-2:]))
    hosts["gpu03"]["checks"][0]["lldp"] = dict(switch="leaf1", port="swp9")
    cabling = dict((host, {"ens1f0np0": dict(switch="leaf1", port="swp%d" % int(host[-2:]))}) for host in HOSTS)
    findings, _location = findings_of(merged(), hosts, None, cabling)
    assert [(f["part"], f["id"]) for f in findings] == [("miswire", "gpu03/mlx5_0")], findings
    assert findings[0]["evidence"][0]["text"] == "LLDP: gpu03/mlx5_0 is plugged into leaf1 swp9, the plan says leaf1 swp3"
    assert findings_of(merged(), hosts)[0] == []
    cabling["gpu03"]["ens1f0np0"]["port"] = "swp9"
    assert findings_of(merged(), hosts, None, cabling)[0] == []


def test_two_hosts_cannot_name_the_end_of_a_failing_pair():
    tests = [t for t in merged("gpu02") if {t["server"], t["client"]} == {"gpu01", "gpu02"}]
    findings, location = findings_of(tests, hosts_with())
    assert findings == [] and "three hosts or more" in location["note"]
    assert findings_of([], {}) == ([], dict(pairs=0, note="no pair test ran: nothing to locate",
                                            switches=dict(read=[], unread={}, lldp=[])))


def test_the_traffic_check_carries_the_deltas_the_findings_read():
    """From the lab VM's captured ethtool -S around an ib_write_bw: only the counters that moved, and the port."""
    snap = dict((when, dict(ethtool=counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_virtio_%s.txt" % when)),
                            hw_counters={}, driver="virtio_net")) for when in ("before", "after"))
    item = dict(netdev="enp1s0", device="rxe0", port=1)
    record = counters.traffic_checks([dict(snap["before"], item=item)], [dict(snap["after"], item=item)], 3, 26)[0]
    assert (record["netdev"], record["device"]) == ("enp1s0", "rxe0")
    assert record["nic"] and all(value > 0 for value in record["nic"].values())
    fleet, _rails, evidence = run_inputs([dict(tool="ib_write_bw", server="node1", client="node2", server_device="rxe0",
                                               client_device="rxe0", status="passed", summary=None)],
                                         {"node1": {"checks": [record]}})
    assert evidence["endpoints"]["node1/rxe0"]["nic"] == record["nic"] and fleet["endpoints"]["node1/rxe0"]["netdev"] == "enp1s0"


def test_the_report_s_page_and_junit_carry_the_findings():
    tests, hosts = merged("gpu04"), hosts_with({"gpu04": {"rx_crc_errors_phy": 1840}})
    report = plan.build_report(tests, hosts)
    report["findings"], report["location"] = findings_of(tests, hosts)
    page = plan.render_html(report)
    assert "<h2>Fault location</h2>" in page and "gpu04/mlx5_0" in page and "replace the cable or optic" in page
    xml = junit.render_junit(report)
    assert '<testsuite name="findings" tests="1" failures="1"' in xml and 'name="cable gpu04/mlx5_0"' in xml


def test_the_switch_ports_counters_around_the_traffic_are_deltas_by_the_names_lldp_uses():
    """onyx_roce/nvue_roce state gathered give each port's counters; read before and after the traffic, the report
    takes the difference. A counter cleared between the reads counts from zero; an Onyx port is found as LLDP names it
    (Eth1/4) too; a switch read once, or not at all, is named with why."""
    deltas, unread = switch_port_deltas({
        "before": {"sw1": {"ports": {"1/4": {"in_errors": 100, "out_discards": 50}}},
                   "leaf1": {"ports": {"swp4": {"in_errors": 0, "carrier_transitions": 2}}},
                   "leaf2": {"ports": {"swp1": {"in_errors": 0}}},
                   "sw2": {"error": "The switch did not answer"}},
        "after": {"sw1": {"ports": {"1/4": {"in_errors": 1300, "out_discards": 20}}},
                  "leaf1": {"ports": {"swp4": {"in_errors": 0, "carrier_transitions": 5}}},
                  "sw2": {"ports": {"1/1": {"in_errors": 9}}}}})
    assert deltas["sw1/1/4"] == deltas["sw1/Eth1/4"] == {"in_errors": 1200, "out_discards": 20}
    assert deltas["leaf1/swp4"] == {"in_errors": 0, "carrier_transitions": 3} and "leaf1/Ethswp4" not in deltas
    assert unread == {"leaf2": "read only before the traffic", "sw2": "The switch did not answer"}
    assert switch_port_deltas(None) == ({}, {})


def test_a_switch_port_that_counted_receive_errors_adds_its_evidence_to_the_cable():
    """gpu04's pairs fail; the switch port the cabling plan puts it on (sw1 Eth1/4, as LLDP names it) counted 1,200
    receive errors during the traffic (Onyx's Rx error packets): the host-to-switch direction of its cable, two kinds
    of evidence. The report's location says which switches were read and why one was not."""
    cabling = dict((host, {"ens1f0np0": dict(switch="sw1", port="Eth1/%d" % int(host[-2:]))}) for host in HOSTS)
    counters_of = {"before": {"sw1": {"ports": dict(("1/%d" % n, {"in_errors": 3}) for n in range(1, 7))},
                              "sw2": {"error": "timed out"}},
                   "after": {"sw1": {"ports": dict(("1/%d" % n, {"in_errors": 1203 if n == 4 else 3})
                                                   for n in range(1, 7))}, "sw2": {"error": "timed out"}}}
    # The traffic checks read the hosts' NICs (clean here): the plan maps each tested netdev to its switch port.
    hosts = hosts_with(dict((host, {"rx_crc_errors_phy": 0}) for host in HOSTS))
    findings, location = findings_of(merged("gpu04"), hosts, None, cabling, counters_of)
    top = findings[0]
    assert (top["part"], top["id"]) == ("cable", "gpu04/mlx5_0"), findings
    assert [e["kind"] for e in top["evidence"]] == ["matrix", "switch_rx"]
    assert top["evidence"][1]["text"] == ("1200 receive errors on sw1 Eth1/4: the host-to-switch direction (host "
                                          "transmitter, cable or optic)")
    assert location["switches"] == dict(read=["sw1"], unread={"sw2": "timed out"}, lldp=[])
    # Without the switch's counters the matrix alone names the port for inspection only.
    alone = findings_of(merged("gpu04"), hosts, None, cabling)[0][0]
    assert [e["kind"] for e in alone["evidence"]] == ["matrix"] and alone["confidence"] == "low"


def test_a_gpu_dcgm_failed_on_is_a_finding_even_without_a_pair_test():
    """The gpu_health check carries DCGM's failed GPUs (gpu.dcgm_reading): the fault location names the GPU, with the
    pair matrix or without one."""
    hosts = hosts_with()
    hosts["gpu02"]["checks"].append(dict(name="gpu_health", status="failed", msg="DCGM Custom/software failed on GPU 3",
                                         command="", dcgm=dict(level=1, ran=True, version="3.1.0", failed_gpus=[3])))
    for tests in (merged(), []):
        findings, _location = findings_of(tests, hosts)
        assert [(f["part"], f["id"]) for f in findings] == [("gpu", "gpu02/gpu3")], findings
        assert findings[0]["evidence"] == [dict(kind="dcgm", text="DCGM diagnostics failed on GPU 3")]


def test_the_rdma_counters_and_the_mtu_of_a_traffic_check_reach_the_engine_with_the_site_s_loss_rate():
    """A traffic check's ``rdma`` (its hw_counters that moved) and ``mtu``: gpu02's port lost 0.5 % of what it sent,
    gpu05's was left at MTU 1500. Every pair passed; both are findings, the loss only at the default rate."""
    hosts = hosts_with()
    hosts["gpu02"]["checks"][0]["rdma"] = {"packet_seq_err": 500, "duplicate_request": 20}
    hosts["gpu02"]["checks"][0]["nic"] = {"tx_packets_phy": 100000}
    for host in HOSTS:
        hosts[host]["checks"][0]["mtu"] = 1500 if host == "gpu05" else 9000
    findings, _location = findings_of(merged(), hosts)
    assert [(f["id"], f["part"]) for f in findings] == [("gpu02/mlx5_0", "cable"), ("gpu05/mlx5_0", "nic_config")]
    assert "(520 in 100000 sent)" in findings[0]["evidence"][0]["text"]
    findings, _location = findings_of(merged(), hosts, loss_rate=0.01)
    assert [(f["id"], f["part"]) for f in findings] == [("gpu05/mlx5_0", "nic_config")]


def test_the_link_rate_of_a_traffic_check_reaches_the_engine():
    """A traffic check's ``speed_mbps``: gpu03's port trained at 200 Gb/s on a 400 Gb/s rail, every pair passed."""
    hosts = hosts_with()
    for host in HOSTS:
        hosts[host]["checks"][0]["speed_mbps"] = 200000 if host == "gpu03" else 400000
    findings, _location = findings_of(merged(), hosts)
    assert [(f["id"], f["part"], f["evidence"][0]["kind"]) for f in findings] == [("gpu03/mlx5_0", "cable", "rate")]


def test_the_pair_matrix_of_the_page_marks_failed_and_slow_pairs_and_the_part_a_finding_names():
    tests = merged("gpu04")
    for test in tests:
        if (test["server"], test["client"]) == ("gpu01", "gpu02"):
            test["summary"] = dict(bytes=65536, value=50.0, unit="Gb/s")
    hosts = hosts_with({"gpu04": {"rx_crc_errors_phy": 1840}})
    findings, location = findings_of(tests, hosts)
    [matrix] = pair_matrix(tests, findings, location["reference_gbps"])
    assert [(e["name"], e["part"]) for e in matrix["endpoints"]][2:4] == [("gpu03/mlx5_0", None), ("gpu04/mlx5_0", "cable")]
    cells = matrix["cells"]
    assert cells["gpu03/mlx5_0|gpu04/mlx5_0"]["status"] == "failed" and cells["gpu01/mlx5_0|gpu02/mlx5_0"]["status"] == "slow"
    assert cells["gpu01/mlx5_0|gpu03/mlx5_0"] == dict(status="passed", gbps=92.5, tests=["ib_write_bw:gpu01->gpu03"])
    page = "\n".join(plan.matrix_html([matrix]))
    assert "4. gpu04/mlx5_0 <strong" in page and "[cable]" in page and page.count("&#10007;") == 2 * 5 + 1
    # Above the drawing limit: the endpoints with a finding and the peers they failed with.
    [big] = pair_matrix(tests, findings, location["reference_gbps"], limit=4)
    page = "\n".join(plan.matrix_html([big]))
    assert big["drawn"] is False and "<li>gpu04/mlx5_0" in page and "gpu01/mlx5_0, gpu02/mlx5_0, gpu03/mlx5_0" in page


SCHEMA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "schemas", "validation-report.schema.json")


def test_the_reports_follow_the_published_schema_and_a_finding_it_does_not_know_is_caught():
    """docs/schemas/validation-report.schema.json against reports as the module writes them: a healthy run, a failing
    host with its findings and retests, a run without pairs, switches read and unread. (The validate peer tier checks
    every report of the lab against it too.)"""
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    def report(tests, hosts, **kwargs):
        built = plan.build_report(tests, hosts, generated=dict(time="2026-11-28T22:12:25Z", collection_version="1.0.0"))
        built["findings"], built["location"] = findings_of(built["tests"], built["hosts"], **kwargs)
        return json.loads(json.dumps(built))

    switch_reads = {"before": {"leaf1": {"ports": {"swp1": {"in_errors": 0}}}, "leaf2": {"error": "timed out"}},
                    "after": {"leaf1": {"ports": {"swp1": {"in_errors": 900}}}}}
    hung = hosts_with()
    hung["gpu01"]["checks"].append(_ras_check(nccl_ras.parse_status(
        corpus.read("nccl", "ras_status_2.29.1_missing_rank_doc.json")))[1])
    reports = [report(merged(), hosts_with()),
               report(merged("gpu04"), hosts_with({"gpu04": {"rx_crc_errors_phy": 1840}}), switch_counters=switch_reads),
               report([], hosts_with()),
               report(merged(), hung, addresses={"gpu03": ["172.16.64.245"]}),
               report([dict(t, status="failed", cause="late_start", summary=None) for t in merged()], hosts_with())]
    for built in reports:
        assert list(validator.iter_errors(built)) == [], built
    assert reports[1]["findings"] and reports[1]["location"]["switches"]["unread"]
    assert [f["id"] for f in reports[3]["findings"]] == ["gpu03/gpu1"]
    assert reports[3]["hosts"]["gpu01"]["checks"][-1]["ras_missing"][0]["host"] == "172.16.64.245"
    broken = json.loads(json.dumps(reports[1]))
    broken["findings"][0]["part"] = "rack"
    assert [e.json_path for e in validator.iter_errors(broken)] == ["$.findings[0].part"]


def _ras_check(status, launcher="gpu01"):
    """The nccl check record run_checks makes of a collective stopped at its timeout, with what RAS said."""
    run = dict(collective="all_reduce_perf", passed=False, reasons=["timeout"], command="",
               ras=dict(missing=nccl_ras.missing_ranks(status)))
    (check,) = nccl.run_checks([run], dict(kind="mpi", hosts=HOSTS[:2], ranks=2))
    assert check["status"] == "failed" and check["ras_missing"] == run["ras"]["missing"]
    return launcher, check


def test_a_rank_nccl_s_ras_found_missing_names_its_gpu_on_the_host_with_that_address():
    """NCCL's guide's status (2.29.1): rank 1 (GPU 1) of 172.16.64.245 is missing while rank 0 of the same host
    answers. The report maps the address to the inventory host and names GPU 1 of it; with DCGM failing that GPU too,
    two kinds of evidence make it a part to replace."""
    status = nccl_ras.parse_status(corpus.read("nccl", "ras_status_2.29.1_missing_rank_doc.json"))
    launcher, check = _ras_check(status)
    hosts = hosts_with()
    hosts[launcher]["checks"].append(check)
    addresses = nccl.host_addresses({"gpu03": {"ports": [dict(ipv4="172.16.64.245")]}}, {"gpu03": ["gpu03.example"]})
    assert addresses == {"gpu03": ["172.16.64.245", "gpu03.example"]}
    findings, _location = findings_of(merged(), hosts, addresses=addresses)
    assert [(f["part"], f["id"], f["confidence"], f["replace"]) for f in findings] == [
        ("gpu", "gpu03/gpu1", "low", False)], findings
    assert findings[0]["evidence"][0]["kind"] == "nccl_ras"
    assert findings[0]["evidence"][0]["text"].startswith(
        "NCCL's RAS: rank 1 (process 1524345, GPU 1 on gpu03 (172.16.64.245)) is missing from its communicator, "
        "unresponsive, while the host's other ranks answer (gpu01's nccl all_reduce_perf (mpi, 2 hosts))")
    hosts["gpu03"]["checks"].append(dict(name="gpu_health", status="failed", msg="", command="",
                                         dcgm=dict(level=1, ran=True, version="3.1.0", failed_gpus=[1])))
    findings, _location = findings_of(merged(), hosts, addresses=addresses)
    assert [(f["part"], f["id"], f["confidence"], f["replace"]) for f in findings] == [
        ("gpu", "gpu03/gpu1", "medium", True)]
    assert [e["kind"] for e in findings[0]["evidence"]] == ["dcgm", "nccl_ras"]
    # An address no host has is kept as the host's name: the operator still learns where the rank ran.
    findings, _location = findings_of(merged(), hosts_with() | {launcher: dict(status="failed", checks=[check])})
    assert [(f["part"], f["id"]) for f in findings] == [("gpu", "172.16.64.245/gpu1")]


def test_every_rank_of_a_host_missing_names_the_host_and_joins_the_matrix_s_host_finding():
    """The same status without the rank that answered: no rank on 172.16.64.245 answers, so the host (its node, its
    network or its NCCL processes) is named, not a GPU. Where every rail of that host also failed its pairs, RAS's
    word joins the matrix's host finding as one more kind of evidence."""
    status = nccl_ras.parse_status(corpus.read("nccl", "ras_status_2.29.1_missing_rank_doc.json"))
    for comm in status["communicators"]:
        comm["ranks"] = []
    launcher, check = _ras_check(status)
    hosts = hosts_with()
    hosts[launcher]["checks"].append(check)
    addresses = {"gpu04": ["172.16.64.245"]}
    findings, _location = findings_of(merged(), hosts, addresses=addresses)
    assert [(f["part"], f["id"], f["confidence"]) for f in findings] == [("host", "gpu04", "low")]
    assert "no rank on that host answers" in findings[0]["evidence"][0]["text"]
    # Both rails of gpu04 fail every pair: the matrix names the host, RAS adds its word.
    fleet, rails, evidence = run_inputs(merged(), hosts, addresses=addresses)
    endpoints = dict(fleet["endpoints"])
    rails = {"r0": rails["roce"], "r1": [(a.replace("mlx5_0", "mlx5_1"), b.replace("mlx5_0", "mlx5_1"), ok, bw)
                                         for a, b, ok, bw in rails["roce"]]}
    for name, wiring in list(endpoints.items()):
        endpoints[name] = dict(wiring, rail="r0")
        endpoints[name.replace("mlx5_0", "mlx5_1")] = dict(wiring, rail="r1", device="mlx5_1")
    outcomes = dict((r, [(a, b, "gpu04" not in a + b, bw) for a, b, _ok, bw in pairs]) for r, pairs in rails.items())
    result = locate(dict(fleet, endpoints=endpoints), outcomes, evidence)
    host = [f for f in result["findings"] if f["part"] == "host"]
    assert [(f["id"], [e["kind"] for e in f["evidence"]], f["confidence"]) for f in host] == [
        ("gpu04", ["matrix", "rails", "nccl_ras"], "high")], result["findings"]


def test_a_switch_s_own_lldp_table_read_with_its_counters_is_compared_with_the_plan():
    """A Cumulus switch's ``nv show interface lldp`` (NVIDIA's published sample, read by nvue_roce over SSH with its
    counters): swp1 hears server01 by its MAC, swp2 server02. The plan puts gpu01 on swp1: the switch side says the
    neighbour is another host, a miswire even though every pair passed. gpu02 on swp2 is planned as server02's port
    (its MAC as the table names it): no finding. A switch whose table could not be read is said so."""
    table = nvue_parsers.lldp_neighbours(corpus.read("lldp", "nv_show_interface_lldp_cl5.txt"))
    reads = {"before": {"leaf01": {"ports": {}, "lldp": table}, "leaf02": {"ports": {}, "lldp_error": "bad table"}},
             "after": {"leaf01": {"ports": {}, "lldp": table}, "leaf02": {"ports": {}}}}
    heard, read, unread = switch_lldp_of(reads)
    assert heard["leaf01/swp1"] == dict(host="server01", port="48:b0:2d:76:ee:8e") and unread == {"leaf02": "bad table"}
    assert read == ["leaf01"]
    hosts = hosts_with()
    hosts["gpu02"]["checks"][0]["mac"] = "48:b0:2d:86:c1:f8"
    cabling = {"gpu01": {"ens1f0np0": {"switch": "leaf01", "port": "swp1"}},
               "server02": {"ens1f0np0": {"switch": "leaf01", "port": "swp2"}}}
    findings, location = findings_of(merged(), hosts, cabling=cabling, switch_counters=reads)
    assert [(f["part"], f["id"]) for f in findings] == [("miswire", "gpu01/mlx5_0")], findings
    assert findings[0]["evidence"] == [dict(kind="switch_lldp", text=(
        "LLDP on leaf01 swp1: the neighbour is server01 48:b0:2d:76:ee:8e, the plan says gpu01 (gpu01/mlx5_0)"))]
    assert location["switches"]["lldp"] == ["leaf01"] and location["switches"]["lldp_unread"] == {"leaf02": "bad table"}
    # The MAC compare: gpu02 planned on swp2 whose neighbour is "server02"; named so in the plan's host, its own MAC
    # matches; another MAC on that port is a miswire.
    renamed = dict((("server02" if h == "gpu02" else h), v) for h, v in hosts.items())
    tests = [dict(t, server="server02" if t["server"] == "gpu02" else t["server"],
                  client="server02" if t["client"] == "gpu02" else t["client"]) for t in merged()]
    assert findings_of(tests, renamed, cabling={"server02": cabling["server02"]}, switch_counters=reads)[0] == []
    renamed["server02"]["checks"][0]["mac"] = "48:b0:2d:08:de:37"
    found = findings_of(tests, renamed, cabling={"server02": cabling["server02"]}, switch_counters=reads)[0]
    assert [(f["part"], f["id"]) for f in found] == [("miswire", "server02/mlx5_0")]
    assert "the neighbour's port is 48:b0:2d:86:c1:f8, not server02/mlx5_0's ens1f0np0 (48:b0:2d:08:de:37)" in \
        found[0]["evidence"][0]["text"]


def test_pauses_the_switch_port_received_from_a_failing_host_name_its_nic_with_the_host_s_own():
    """A Cumulus switch's PFC counters of the planned ports (nvue_roce pause_ports, NVIDIA's pfc-stats table summed
    over the priorities), read around a 60 s window: gpu04's switch port received 240,000 pause frames from it
    (4,000 a second, above the 1,000 a second the engine takes as a host that cannot drain its traffic). With the
    matrix, the host's NIC is named on two kinds of evidence; with the host's own pause counters, three. The planned
    ports reach the role through validate_cabling_ports."""
    table = nvue_parsers.pfc_stats(corpus.read("nvue", "nv_show_counters_qos_pfc_stats_5.5_doc.txt"))
    quiet = nvue_parsers.pause_totals(table)
    busy = dict(quiet, rx_pause=240000)
    cabling = dict((host, {"ens1f0np0": {"switch": "leaf01", "port": "swp%d" % (n + 1)}}) for n, host in enumerate(HOSTS))
    assert cabling_ports(cabling) == {"leaf01": ["swp1", "swp2", "swp3", "swp4", "swp5", "swp6"]}
    reads = {"before": {"leaf01": {"ports": {"swp4": quiet}}}, "after": {"leaf01": {"ports": {"swp4": busy}}}}
    hosts = hosts_with()
    for host in HOSTS:
        hosts[host]["checks"][0]["window_s"] = 60.0
    findings, _location = findings_of(merged("gpu04"), hosts, cabling=cabling, switch_counters=reads)
    top = findings[0]
    assert (top["part"], top["id"], top["confidence"]) == ("nic_port", "gpu04/mlx5_0", "medium"), findings
    assert top["evidence"][1] == dict(kind="switch_pause", text=(
        "leaf01 swp4 received 240000 pause frames from the host in 60 s: the host asks the fabric to stop sending"))
    hosts["gpu04"]["checks"][0]["nic"] = {"tx_prio3_pause": 180000}
    top = findings_of(merged("gpu04"), hosts, cabling=cabling, switch_counters=reads)[0][0]
    assert [e["kind"] for e in top["evidence"]] == ["matrix", "host_rx", "switch_pause"] and top["confidence"] == "high"
    # Without the window's length no rate is known: the pauses are no evidence.
    for host in HOSTS:
        hosts[host]["checks"][0].pop("window_s")
    hosts["gpu04"]["checks"][0].pop("nic")
    top = findings_of(merged("gpu04"), hosts, cabling=cabling, switch_counters=reads)[0][0]
    assert [e["kind"] for e in top["evidence"]] == ["matrix"]


def test_a_switch_whose_lldp_table_was_read_is_listed_whether_or_not_it_heard_anyone():
    """Which switches' counters and LLDP tables were read is the same from one run to the next: a leaf whose ports hear no host
    this time (the servers of its other ports powered off) was read all the same, and a run on other hosts does not
    change what the report says of it (the report is rewritten only when its outcome changed)."""
    empty = {}
    full = nvue_parsers.lldp_neighbours(corpus.read("lldp", "nv_show_interface_lldp_cl5.txt"))
    locations = []
    for table in (empty, full):
        reads = {"before": {"leaf01": {"ports": {}, "lldp": table}}, "after": {"leaf01": {"ports": {}, "lldp": table}}}
        heard, read, unread = switch_lldp_of(reads)
        assert read == ["leaf01"] and unread == {} and bool(heard) == bool(table)
        locations.append(findings_of(merged(), hosts_with(), switch_counters=reads)[1]["switches"])
    # Its counters too: read before and after, listed whatever ports they had.
    assert locations[0] == locations[1] == dict(read=["leaf01"], unread={}, lldp=["leaf01"]), locations
    # Read before the traffic, not after: read all the same (what it heard before is compared).
    reads = {"before": {"leaf01": {"ports": {}, "lldp": full}}, "after": {"leaf01": {"ports": {}, "lldp_error": "timed out"}}}
    assert switch_lldp_of(reads)[1:] == (["leaf01"], {})


def test_the_report_names_what_each_endpoint_s_nic_did_not_print():
    """A healthy run on NICs whose driver prints none of the physical and pause counters (virtio_net's real ethtool
    -S): no finding, and the location says which rules could not read them, per endpoint; a port whose counters
    were printed has no such note."""
    from ansible_collections.roce.fabric.plugins.module_utils.qos import counters  # pylint: disable=import-outside-toplevel
    virtio = counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_virtio_after.txt"))
    findings, location = findings_of(merged(), hosts_with({"gpu01": virtio, "gpu02": {"rx_crc_errors_phy": 0,
                                                                                      "rx_discards_phy": 0,
                                                                                      "rx_pci_signal_integrity": 0}}))
    assert findings == []
    assert sorted(location["not_reported"]) == ["gpu01/mlx5_0"]
    assert sorted(location["not_reported"]["gpu01/mlx5_0"]) == ["host_rx", "nic_rx", "pcie"]


def test_neighbours_without_a_system_name_are_kept_on_both_sides_for_the_cabling_check():
    """A NIC's firmware LLDP agent sends its MAC as port ID and no system name: the switch's table lists it with an
    empty host (derived from NVIDIA's sample: swp2's host blank). It was dropped, so the cabling check never saw the
    port. Now the switch side compares the MAC: server02's own keeps it clean, another's is a miswire. On the host
    side, a neighbour without a system name is held against the plan by its port."""
    table = nvue_parsers.lldp_neighbours(corpus.read("lldp", "nv_show_interface_lldp_cl5_no_system_name_derived.txt"))
    assert table["swp2"]["host"] is None and table["swp2"]["port"] == "48:b0:2d:86:c1:f8"
    reads = {"after": {"leaf01": {"ports": {}, "lldp": table}}}
    heard, _read, _unread = switch_lldp_of(reads)
    assert heard["leaf01/swp2"] == dict(host=None, port="48:b0:2d:86:c1:f8")
    hosts = dict((("server02" if h == "gpu02" else h), v) for h, v in hosts_with().items())
    tests = [dict(t, server="server02" if t["server"] == "gpu02" else t["server"],
                  client="server02" if t["client"] == "gpu02" else t["client"]) for t in merged()]
    cabling = {"server02": {"ens1f0np0": {"switch": "leaf01", "port": "swp2"}}}
    hosts["server02"]["checks"][0]["mac"] = "48:b0:2d:86:c1:f8"
    assert findings_of(tests, hosts, cabling=cabling, switch_counters=reads)[0] == []
    hosts["server02"]["checks"][0]["mac"] = "48:b0:2d:08:de:37"
    found = findings_of(tests, hosts, cabling=cabling, switch_counters=reads)[0]
    assert [(f["part"], f["id"]) for f in found] == [("miswire", "server02/mlx5_0")], found
    # The host side: its NIC hears a neighbour without a system name (lldpd's real answer for such a frame).
    neighbour = lldp.parse_neighbors(corpus.read("lldp", "lldpcli_json0_mac_only_neighbour_1.0.16.txt"))["swp7"]
    hosts = hosts_with()
    hosts["gpu03"]["checks"][0]["lldp"] = dict(switch=neighbour["switch"], port=neighbour["port"],
                                               chassis_id=neighbour["chassis_id"])
    cabling = {"gpu03": {"ens1f0np0": {"switch": "leaf01", "port": "swp3"}}}
    found = findings_of(merged(), hosts, cabling=cabling)[0]
    assert [(f["part"], f["id"]) for f in found] == [("miswire", "gpu03/mlx5_0")], found
    assert found[0]["evidence"][0]["text"] == ("LLDP: gpu03/mlx5_0 hears port 0c:42:a1:11:22:33 of a neighbour that "
                                               "sends no system name (chassis 0c:42:a1:11:22:33), the plan says "
                                               "leaf01 swp3")
