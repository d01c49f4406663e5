# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fault location (module_utils/validate/locate.py): the matrix's suspects, the rules that name a part from the
window's evidence (on real ethtool -S, AER and link samples of the corpus), and the fleet model's faults on a small
fleet (tests/fleet/model.py; tests/bench/locate_bench.py runs the large ones)."""

from __future__ import annotations

import random

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.qos.counters import deltas, parse_counter_lines, parse_ethtool_stats
from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers as nvue_parsers
from ansible_collections.roce.fabric.plugins.module_utils.validate import lldp, locate, pcie
from ansible_collections.roce.fabric.tests.fleet import model
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

WIRING = dict(host="gpu01", rail="r0", nic="mlx5_0", netdev="ens1np0", pci="0000:18:00.0", upstream="0000:17:01.0",
              switch="leaf-r0-0", switch_port="swp1")


def rail(names, bad_with=(), transient=(), bw=400.0):
    """The full matrix of ``names``: pairs with an endpoint of ``bad_with`` fail, the pairs of ``transient`` too."""
    results = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ok = a not in bad_with and b not in bad_with and (a, b) not in transient
            results.append((a, b, ok, bw if ok else None))
    return results


def test_the_binomial_tail():
    assert locate.binomial_tail(0, 10, 0.1) == 1.0
    assert locate.binomial_tail(11, 10, 0.1) == 0.0
    assert abs(locate.binomial_tail(1, 10, 0.1) - (1 - 0.9 ** 10)) < 1e-12
    assert abs(locate.binomial_tail(10, 10, 0.5) - 0.5 ** 10) < 1e-15


def test_an_endpoint_that_fails_with_everyone_is_the_suspect_and_a_chance_failure_is_not():
    names = ["h%d/r0" % i for i in range(8)]
    judged = locate.judge_rail(names, rail(names, bad_with=["h3/r0"], transient=[("h0/r0", "h5/r0")]))
    assert [s["endpoint"] for s in judged["suspects"]] == ["h3/r0"]
    assert judged["suspects"][0] == dict(endpoint="h3/r0", failed=7, tested=7)
    assert judged["unexplained"] == 1 and judged["pairs"] == 28
    # A pair slower than 93 % of the rail's median is as bad as a failed one.
    slow = [(a, b, ok, 150.0 if "h6/r0" in (a, b) else bw) for a, b, ok, bw in rail(names)]
    assert [s["endpoint"] for s in locate.judge_rail(names, slow)["suspects"]] == ["h6/r0"]
    assert locate.judge_rail(names, rail(names))["suspects"] == []
    with pytest.raises(locate.LocateError, match="not on the rail"):
        locate.judge_rail(names[:2], rail(names[:3]))


def nic_delta(name):
    """A real ethtool -S sample as the counters after the window, every counter zero before it."""
    after = parse_ethtool_stats(corpus.read("counters", name))
    return deltas(dict((counter, 0) for counter in after), after)


def test_receive_discards_and_pauses_sent_name_the_host_side_nic_port():
    # The kernel 6.5 ConnectX sample: 441,063,206,498 receive discards and 44,414,017 pauses sent.
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"nic": nic_delta("ethtool_S_mlx5_6.5_netdev.txt")}, {},
                                     window_s=60)
    assert [(kind, part) for kind, part, _text in found] == [("host_rx", "nic_port")]
    finding = locate.classify_endpoint("gpu01/r0", WIRING, "7 of its 7 pairs failed or were slow", found)
    assert (finding["part"], finding["id"], finding["confidence"], finding["replace"]) == ("nic_port", "gpu01/r0",
                                                                                           "medium", True)
    assert [e["kind"] for e in finding["evidence"]] == ["matrix", "host_rx"]


def test_pcie_aer_at_the_upstream_port_names_the_host_pcie_link_and_a_full_link_does_not():
    aer = pcie.aer_delta(corpus.read("pcie", "aer_dev_fatal_abi.txt"), corpus.read("pcie", "aer_dev_correctable_abi.txt"))
    assert aer == 2  # TOTAL_ERR_COR 2 against no errors
    full = pcie.link_files(corpus.read("pcie", "link_h100x1_gen5_x16.txt"))
    assert locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": full}, {}) == []
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": dict(full, upstream_aer_correctable=aer)}, {})
    assert [(kind, part) for kind, part, _text in found] == [("pcie", "pcie_link")]
    assert "2 AER errors on 0000:18:00.0 or its upstream port 0000:17:01.0" in found[0][2]
    narrow = locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": dict(full, width=8)}, {})
    assert "x8 of x16 under load" in narrow[0][2]


def test_the_kernel_s_word_on_a_narrower_link_names_the_pcie_link_where_it_is_limited_even_with_pairs_passing():
    """The kernel's line at probe (public dmesg samples): a device limited by a x1 link at 0000:00:00.0 though it
    can do x16 is PCIe link evidence, a finding of its own (the traffic may pass, slower); a ConnectX-5 at its own
    x8 says nothing; a link slower at probe but as wide is left to the sampler under load (a power state)."""
    limited = pcie.kernel_limits(corpus.read("pcie", "kernel_bw_limited_x1_of_x16_rpi_issue712.txt"))["0000:01:00.0"]
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": {"kernel": limited}}, {})
    assert [(kind, part) for kind, part, _text in found] == [("pcie", "pcie_link")]
    assert ("the kernel found its bandwidth limited by a x1 8.0 GT/s link at 0000:00:00.0 (capable of x16 8.0 GT/s, "
            "7.876 of 126.016 Gb/s)") in found[0][2]
    assert locate.pcie_burst({"pcie": {"kernel": limited}}) is True
    findings = locate.locate(LAB_PAIR, {"roce": [("node1/rxe0", "node2/rxe0", True, 90.0)]},
                             {"endpoints": {"node1/rxe0": {"pcie": {"kernel": limited}}}})["findings"]
    assert [(f["id"], f["part"], f["confidence"]) for f in findings] == [("node1/rxe0", "pcie_link", "low")]
    healthy = pcie.kernel_limits(corpus.read("pcie", "kernel_bw_mlx5_cx5_x8_arm_nas_issue16.txt"))["0004:01:00.0"]
    assert locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": {"kernel": healthy}}, {}) == []
    assert locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": {"kernel": dict(limited, width=16, speed=2.5)}}, {}) == []


def test_the_kernel_s_older_wording_of_a_narrower_link_names_the_pcie_link_too():
    """Older kernels print the speed as ``5 GT/s`` and without ``PCIe`` (a ConnectX-4 Lx limited to x4 at 5 GT/s,
    capable of x8 at 8 GT/s: Xilinx's published dmesg). It was not read, so a narrowed NIC link gave no finding."""
    limited = pcie.kernel_limits(corpus.read(
        "pcie", "kernel_bw_mlx5_cx4lx_5gt_x4_of_8gt_x8_old_wording_xilinx.txt"))["0000:01:00.0"]
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"pcie": {"kernel": limited}}, {})
    assert [(kind, part) for kind, part, _text in found] == [("pcie", "pcie_link")]
    assert ("the kernel found its bandwidth limited by a x4 5.0 GT/s link at 0000:00:00.0 (capable of x8 8.0 GT/s, "
            "16.0 of 63.008 Gb/s)") in found[0][2]


@pytest.mark.parametrize("nic, port, part, alternatives", [
    ({"rx_crc_errors_phy": 400}, {"in_errors": 300}, "cable", []),
    ({"link_down_events_phy": 2}, {}, "cable", []),
    ({"rx_crc_errors_phy": 400}, {}, "cable", [{"part": "switch_port", "id": "leaf-r0-0/swp1"}]),
    ({}, {"in_errors": 300}, "cable", [{"part": "nic_port", "id": "gpu01/r0"}]),
    ({"rx_crc_errors_phy": 400}, {"out_discards": 5000}, "switch_port", []),
    ({"rx_crc_errors_phy": 3}, {}, "nic_port", [{"part": "cable", "id": "gpu01/r0"},
                                                {"part": "switch_port", "id": "leaf-r0-0/swp1"}]),
])
def test_the_direction_of_physical_errors(nic, port, part, alternatives):
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"nic": nic}, {"leaf-r0-0/swp1": port} if port else {})
    finding = locate.classify_endpoint("gpu01/r0", WIRING, "5 of its 7 pairs failed or were slow", found)
    assert finding["part"] == part and finding["alternatives"] == alternatives
    assert finding["id"] == ("leaf-r0-0/swp1" if part == "switch_port" else "gpu01/r0")
    # A few receive errors alone are no evidence: the matrix alone is low confidence, no replacement.
    assert finding["confidence"] == ("low" if part == "nic_port" else finding["confidence"])


def test_lldp_against_the_plan_and_the_mtu_against_the_rail():
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"lldp": {"switch": "leaf-r1-0", "port": "swp1"}, "mtu": 1500},
                                     {}, rail_mtu=9000)
    assert [kind for kind, _part, _text in found] == ["lldp", "mtu"]
    finding = locate.classify_endpoint("gpu01/r0", WIRING, "7 of its 7 pairs failed", found)
    assert finding["part"] == "miswire" and finding["confidence"] == "high"
    assert "LLDP: gpu01/r0 is plugged into leaf-r1-0 swp1, the plan says leaf-r0-0 swp1" in [e["text"] for e in finding["evidence"]]
    assert locate.endpoint_evidence("gpu01/r0", WIRING, {"lldp": {"switch": "leaf-r0-0", "port": "swp1"}, "mtu": 9000},
                                    {}, rail_mtu=9000) == []


@pytest.mark.parametrize("kind", [kind for kind in model.FAULTS if kind != "uplink"])  # one leaf: no uplink in use
def test_each_fault_of_the_fleet_model_is_named_first_on_eight_hosts(kind):
    fleet = model.Fleet(8, rails=4)
    rng = random.Random(kind)
    for seed in range(6):
        fault = model.pick(fleet, kind, rng)
        rails, evidence, retest = model.run(fleet, [fault], seed, switch_read=1.0)
        result = locate.locate(fleet.describe(), rails, evidence, retest)
        first = result["findings"][0]
        assert first["part"] == {"mtu": "nic_config"}.get(kind, kind) and first["id"] in fault["ids"], result["findings"][:3]
        # A GPU that DCGM passes (the model's 30 %) has GPUDirect's contrast only, and an MTU its port's pairs only
        # when too few fail to stand out: one kind of evidence, low confidence.
        if kind not in ("gpu", "mtu"):
            assert first["confidence"] in ("medium", "high") and first["replace"]
        assert result["retest_rounds"] <= result["retest_bound"]


def test_a_healthy_fleet_gets_no_finding_and_a_suspect_cleared_by_its_retest_is_transient():
    fleet = model.Fleet(16, rails=4)
    for seed in range(5):
        rails, evidence, retest = model.run(fleet, [], seed)
        assert locate.locate(fleet.describe(), rails, evidence, retest)["findings"] == []
    names = ["h%d/r0" % i for i in range(8)]
    endpoints = dict((name, dict(WIRING, host=name.split("/")[0], switch_port="swp%d" % i)) for i, name in enumerate(names))
    flaky = rail(names, transient=[("h0/r0", "h%d/r0" % i) for i in range(1, 6)])
    suspect = locate.locate({"endpoints": endpoints}, {"r0": flaky}, {}, {"h0/r0": False})
    assert [(f["part"], f["id"]) for f in suspect["findings"]] == [("nic_port", "h0/r0")]
    assert "its retest against an anchor failed too" in suspect["findings"][0]["evidence"][0]["text"]
    cleared = locate.locate({"endpoints": endpoints}, {"r0": flaky}, {}, {"h0/r0": True})
    assert cleared["findings"] == [] and cleared["transient"] == ["h0/r0"]


def test_the_host_s_lldp_neighbour_from_lldpcli_against_the_cabling_plan():
    heard = lldp.parse_neighbors(corpus.read("lldp", "lldpcli_json0_host_1.0.16.txt"))["ens1np0"]
    assert (heard["switch"], heard["port"], heard["port_id_type"]) == ("leaf-r0-0", "swp1", "ifname")
    reading = {"lldp": {"switch": heard["switch"], "port": heard["port"]}}
    assert locate.endpoint_evidence("gpu01/r0", WIRING, reading, {}) == []
    moved = locate.endpoint_evidence("gpu01/r0", dict(WIRING, switch_port="swp2"), reading, {})
    assert [(kind, part) for kind, part, _text in moved] == [("lldp", "miswire")]
    # lldpd's defaults on the host's side: the MAC as port ID, the interface name as description.
    leaf = lldp.parse_neighbors(corpus.read("lldp", "lldpcli_json0_leaf_1.0.16.txt"))["swp1"]
    assert (leaf["port_id_type"], leaf["port"]) == ("mac", "ens1np0")
    with pytest.raises(lldp.LldpError):
        lldp.parse_neighbors("Interface: ens1np0, via: LLDP")
    assert lldp.parse_neighbors('{"lldp": [{}]}') == {}


def test_without_a_cabling_plan_lldp_gives_the_switches_and_the_rail_alignment_finds_a_miswire():
    fleet = model.Fleet(8, rails=4)
    rng = random.Random(3)
    for seed in range(4):
        fault = model.pick(fleet, "miswire", rng)
        rails, evidence, retest = model.run(fleet, [fault], seed, lldp_all=True)
        result = locate.locate(fleet.describe(plan=False), rails, evidence, retest)
        named = [(f["part"], f["id"]) for f in result["findings"][:2]]
        assert sorted(named) == sorted(("miswire", endpoint) for endpoint in fault["ids"]), result["findings"][:3]
        assert "whose other ports are on rail" in " ".join(e["text"] for e in result["findings"][0]["evidence"])
    # A switch that is down sends no LLDP: the ports of its rail that hear nothing and fail are its.
    fault = model.pick(fleet, "switch", rng)
    rails, evidence, retest = model.run(fleet, [fault], 11, lldp_all=True)
    result = locate.locate(fleet.describe(plan=False), rails, evidence, retest)
    rail = fault["ids"][0].split("-")[1]
    assert result["findings"][0]["part"] == "switch" and result["findings"][0]["id"].startswith("rail %s: " % rail)
    assert result["findings"][0]["confidence"] == "medium" and len(result["findings"]) == 1, result["findings"]
    rails, evidence, retest = model.run(fleet, [], 12, lldp_all=True)
    assert locate.locate(fleet.describe(plan=False), rails, evidence, retest)["findings"] == []


def test_the_switch_s_own_lldp_table_against_the_plan():
    # NVIDIA's sample of nv show interface lldp: swp1 hears server01 by its MAC, swp51 hears spine01 swp1.
    table = nvue_parsers.lldp_neighbours(corpus.read("lldp", "nv_show_interface_lldp_cl5.txt"))
    wiring = dict(WIRING, host="server01", switch="leaf01", switch_port="swp1", mac="48:b0:2d:76:ee:8e")
    assert locate.switch_side_lldp("server01/r0", wiring, table["swp1"]) is None
    other_port = locate.switch_side_lldp("server01/r0", dict(wiring, mac="48:b0:2d:86:c1:f8"), table["swp1"])
    assert other_port[:2] == ("switch_lldp", "miswire") and "not server01/r0's ens1np0" in other_port[2]
    other_host = locate.switch_side_lldp("server02/r0", dict(wiring, host="server02.example.com"), table["swp1"])
    assert "the neighbour is server01 48:b0:2d:76:ee:8e, the plan says server02.example.com" in other_host[2]
    # The host's name from LLDP against the inventory's FQDN: the short names are the same host.
    assert locate.switch_side_lldp("server01/r0", dict(wiring, host="server01.example.com"), table["swp1"]) is None
    # A miswire seen from both ends is named with high confidence.
    fleet = model.Fleet(8, rails=4)
    fault = model.pick(fleet, "miswire", random.Random(5))
    rails, evidence, retest = model.run(fleet, [fault], 3, switch_read=1.0)
    first = locate.locate(fleet.describe(), rails, evidence, retest)["findings"][0]
    assert first["part"] == "miswire" and first["confidence"] == "high"
    assert set(e["kind"] for e in first["evidence"]) == {"matrix", "lldp", "switch_lldp"}


def rxe_delta(case, role):
    """The Soft-RoCE port's hw_counters over one ib_write_bw of the lab (fixtures/counters: captured on the VMs)."""
    def read(when):
        return parse_counter_lines(corpus.read("counters", "hw_counters_rxe_%s_%s_%s.txt" % (case, role, when)))
    return dict((k, v) for k, v in deltas(read("before"), read("after")).items() if v)


LAB_PAIR = dict(endpoints={"node1/rxe0": dict(host="node1", rail="rail0", netdev="enp1s0"),
                           "node2/rxe0": dict(host="node2", rail="rail0", netdev="enp1s0")},
                hosts=["node1", "node2"])


def test_a_rate_cut_link_drops_what_its_sender_sends_and_names_the_sender_s_link():
    # The real capture: tbf at a tenth of the rate on node2's enp1s0; rxe counts the packets its netdev refused.
    sender, receiver = rxe_delta("tbf", "sender"), rxe_delta("tbf", "receiver")
    assert sender["send_err"] == 517327 - 316614 and sender["sent_pkts"] == 527
    found = locate.endpoint_evidence("node2/rxe0", LAB_PAIR["endpoints"]["node2/rxe0"], {"rdma": sender}, {},
                                     loss_rate=0.01)
    assert [(kind, part) for kind, part, _text in found] == [("rdma_tx", "cable")]
    assert "at node2/rxe0 (200713 in 527 sent)" in found[0][2]
    assert locate.endpoint_evidence("node1/rxe0", LAB_PAIR["endpoints"]["node1/rxe0"], {"rdma": receiver}, {},
                                    loss_rate=0.01) == []
    # The pair passed (its bandwidth is all two hosts have): the loss alone makes a finding, low confidence.
    result = locate.locate(LAB_PAIR, {"rail0": [("node1/rxe0", "node2/rxe0", True, 0.0038)]},
                           {"endpoints": {"node1/rxe0": {"rdma": receiver}, "node2/rxe0": {"rdma": sender}}},
                           loss_rate=0.01)
    assert [(f["id"], f["part"], f["confidence"], f["replace"]) for f in result["findings"]] == [
        ("node2/rxe0", "cable", "low", False)]
    assert result["findings"][0]["alternatives"] == [{"part": "nic_port", "id": "node2/rxe0"}]
    assert "no cabling plan, no LLDP" in result["findings"][0]["action"]


def test_soft_roce_s_own_drops_stay_under_the_lab_s_rate_and_a_loss_seen_from_both_ends_names_the_sender():
    sender, receiver = rxe_delta("healthy", "sender"), rxe_delta("healthy", "receiver")
    # A healthy link of the lab: Soft-RoCE under emulation drops about half a percent on arrival.
    assert (receiver["out_of_seq_request"], receiver["rcvd_pkts"]) == (68, 13434)
    assert (sender["rcvd_seq_err"], sender["sent_pkts"]) == (66, 15214)
    readings = {"endpoints": {"node1/rxe0": {"rdma": receiver}, "node2/rxe0": {"rdma": sender}}}
    pair = {"rail0": [("node1/rxe0", "node2/rxe0", True, 0.068)]}
    assert locate.locate(LAB_PAIR, pair, readings, loss_rate=0.01)["findings"] == []
    # At the default rate (a lossless fabric drops nothing) the same counters are a loss, seen from both ends: the
    # receiver's packets out of sequence and the sender's NAKs name the sender's path, with two kinds of evidence.
    findings = locate.locate(LAB_PAIR, pair, readings)["findings"]
    assert [(f["id"], f["part"], f["confidence"]) for f in findings] == [("node2/rxe0", "cable", "medium")]
    assert [e["kind"] for e in findings[0]["evidence"]] == ["rdma_tx", "peer_rx"]
    assert "its peer node1/rxe0: RDMA packets out of sequence at node1/rxe0 (68 in 13434 received)" in (
        findings[0]["evidence"][1]["text"])
    # Fewer than ten lost packets are never evidence, whatever their share.
    assert locate.transport_loss({"out_of_seq_request": 9, "rcvd_pkts": 10}, {}, locate.RDMA_IN_LOSS,
                                 locate.RX_PACKETS) is None


def test_a_flap_an_mtu_and_an_aer_burst_make_findings_though_every_pair_passed():
    pair = {"rail0": [("node1/rxe0", "node2/rxe0", True, 0.04)]}
    full = pcie.link_files(corpus.read("pcie", "link_h100x1_gen5_x16.txt"))
    readings = {"node1/rxe0": {"nic": {"carrier_changes": 2}, "rdma": {"link_downed": 1}, "mtu": 4200},
                "node2/rxe0": {"mtu": 1500, "pcie": dict(full, upstream_aer_correctable=20)}}
    findings = locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"]
    assert sorted((f["id"], f["part"]) for f in findings) == [("node1/rxe0", "cable"), ("node2/rxe0", "nic_config")]
    flap = [f for f in findings if f["part"] == "cable"][0]
    assert flap["evidence"][0]["text"].startswith("the link went down once")
    # The MTU is the rail's most common, a tie going to the larger: two ports cannot outvote each other.
    assert locate.rail_value_of([4200, 1500]) == 4200 and locate.rail_value_of([1500, 1500, 9000]) == 1500
    # The AER burst with a healthy MTU: the PCIe link; a stray correctable error is not a finding.
    readings["node2/rxe0"]["mtu"] = 4200
    findings = locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"]
    assert sorted((f["id"], f["part"]) for f in findings) == [("node1/rxe0", "cable"), ("node2/rxe0", "pcie_link")]
    readings["node2/rxe0"]["pcie"] = dict(full, upstream_aer_correctable=3)
    assert locate.pcie_burst(readings["node2/rxe0"]) is False
    assert [f["id"] for f in locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"]] == ["node1/rxe0"]
    assert locate.pcie_burst({"pcie": dict(full, width=8)}) is True


def test_a_link_trained_below_its_rail_s_rate_names_its_cable_with_the_speed_setting_as_alternative():
    slow = int(corpus.read("counters", "sysfs_speed_virtio_set_10000.txt"))
    pair = {"rail0": [("node1/rxe0", "node2/rxe0", True, 0.04)]}
    readings = {"node1/rxe0": {"speed_mbps": 10 * slow}, "node2/rxe0": {"speed_mbps": slow}}
    findings = locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"]
    assert [(f["id"], f["part"], f["confidence"]) for f in findings] == [("node2/rxe0", "cable", "low")]
    assert findings[0]["evidence"][0]["kind"] == "rate"
    assert "runs at 10 Gb/s on node2/rxe0; the rail's other ports run at 100 Gb/s" in findings[0]["evidence"][0]["text"]
    assert [a["part"] for a in findings[0]["alternatives"]] == ["nic_config", "switch_port"]
    # The same rate on both ends, or a rate the driver does not know (None), is no finding.
    readings["node2/rxe0"]["speed_mbps"] = 10 * slow
    assert locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"] == []
    readings["node2/rxe0"]["speed_mbps"] = None
    assert locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"] == []
    # A port faster than most of its rail is not the one that trained down.
    found = locate.endpoint_evidence("gpu01/r0", WIRING, {"speed_mbps": 400000}, {}, rail_speed=200000)
    assert found == []
    # With the sender's own losses in the same window (a link cut to a tenth): the cable on two kinds of evidence.
    sender = corpus.read("counters", "hw_counters_rxe_tbf_sender_after.txt")
    rdma = dict((k, int(v)) for k, v in (line.split(":", 1) for line in sender.splitlines()))
    readings["node2/rxe0"] = {"speed_mbps": slow, "rdma": rdma}
    findings = locate.locate(LAB_PAIR, pair, {"endpoints": readings})["findings"]
    assert [(f["id"], f["part"], f["confidence"]) for f in findings] == [("node2/rxe0", "cable", "medium")]
    assert sorted(e["kind"] for e in findings[0]["evidence"]) == ["rate", "rdma_tx"]
    assert findings[0]["alternatives"] == [] and findings[0]["replace"] is True


def test_the_lab_s_swapped_cables_name_the_port_that_lldp_shows_on_the_other_leaf():
    # The real capture: node1's two fabric cables swapped between the lab's leaves; its pairs failed.
    heard = lldp.parse_neighbors(corpus.read("lldp", "lldpcli_json0_lab_vm_miswired_1.0.16.txt"))
    plan = dict(LAB_PAIR["endpoints"])
    plan["node1/rxe0"] = dict(plan["node1/rxe0"], switch="leaf-r0", switch_port="swp1")
    plan["node2/rxe0"] = dict(plan["node2/rxe0"], switch="leaf-r0", switch_port="swp2")
    readings = {"node1/rxe0": {"lldp": dict(switch=heard["enp1s0"]["switch"], port=heard["enp1s0"]["port"])},
                "node2/rxe0": {"lldp": {"switch": "leaf-r0", "port": "swp2"}}}
    pair = {"rail0": [("node1/rxe0", "node2/rxe0", False, None)]}
    findings = locate.locate(dict(LAB_PAIR, endpoints=plan), pair, {"endpoints": readings})["findings"]
    assert [(f["id"], f["part"]) for f in findings] == [("node1/rxe0", "miswire")]
    assert findings[0]["evidence"][0]["text"] == "LLDP: node1/rxe0 is plugged into leaf-r1 swp1, the plan says leaf-r0 swp1"


def test_one_percent_lost_through_the_lab_s_leaf_names_the_sender_at_the_lab_s_rate_and_the_default():
    # The real capture: tc netem loss 1% on node2's enp1s0, the VMs cabled through a Linux bridge (no drop of its own).
    sender, receiver = rxe_delta("netem1", "sender"), rxe_delta("netem1", "receiver")
    assert (sender["rcvd_seq_err"], sender["sent_pkts"], receiver["out_of_seq_request"]) == (40, 7877, 42)
    readings = {"node1/rxe0": {"rdma": receiver}, "node2/rxe0": {"rdma": sender}}
    pair = {"rail0": [("node1/rxe0", "node2/rxe0", True, 0.013)]}
    for rate in (None, 0.001):
        findings = locate.locate(LAB_PAIR, pair, {"endpoints": readings}, loss_rate=rate)["findings"]
        assert [(f["id"], f["part"], f["confidence"]) for f in findings] == [("node2/rxe0", "cable", "medium")]
        assert [e["kind"] for e in findings[0]["evidence"]] == ["rdma_tx", "peer_rx"]
    # The lab's socket link of before dropped up to 0.87 % by itself: at that rate this loss is not evidence.
    assert locate.locate(LAB_PAIR, pair, {"endpoints": readings}, loss_rate=0.01)["findings"] == []


def test_a_rule_whose_counters_the_nic_does_not_print_says_so():
    """virtio_net (the lab VM's, its real ethtool -S) prints none of the physical, pause and PCIe counters mlx5 does:
    the rules that read them found nothing, which is no evidence of health. The report says which could not judge."""
    from ansible_collections.roce.fabric.plugins.module_utils.qos import counters  # pylint: disable=import-outside-toplevel
    virtio = counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_virtio_after.txt"))
    gaps = locate.unreported({"nic": virtio})
    assert sorted(gaps) == ["host_rx", "nic_rx", "pcie"]
    assert gaps["host_rx"].startswith("receive discards, pause storms and pauses sent: not reported (its driver prints "
                                      "none of rx_discards_phy, tx_pause_storm_warning_events")
    mlx5 = counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_mlx5_6.5_netdev.txt"))
    assert "host_rx" not in locate.unreported({"nic": mlx5}), "its discards and global pauses are printed"
    assert locate.unreported({}) == {} and locate.unreported({"nic": {}}) == {}, "nothing read is not nothing printed"


@pytest.mark.parametrize("schedule", ["full", "sparse"])
def test_a_bad_uplink_is_named_not_the_leaf_or_its_hosts(schedule):
    # 96 hosts on three leaves a rail, four spines: a quarter of the tests leaving the faulty leaf cross the bad link.
    fleet = model.Fleet(96, rails=2, schedule=schedule)
    rng = random.Random(schedule)
    for seed in range(4):
        fault = model.pick(fleet, "uplink", rng)
        rails, evidence, retest = model.run(fleet, [fault], seed, switch_read=1.0)
        findings = locate.locate(fleet.describe(), rails, evidence, retest)["findings"]
        assert [(f["part"], f["id"]) for f in findings] == [("uplink", fault["ids"][0])], findings[:3]
        assert findings[0]["replace"] and "within the leaf" in findings[0]["evidence"][0]["text"]
        # Without the switches' counters the matrix still says where: the leaf's uplinks, to inspect.
        evidence["switch_ports"] = {}
        blind = locate.locate(fleet.describe(), rails, evidence, retest)["findings"]
        assert [(f["part"], f["id"], f["replace"]) for f in blind] == [("uplink", fault["switch"] + "/uplinks", False)]
        assert "counters were not read" in blind[0]["evidence"][0]["text"]


def test_one_endpoint_failing_half_its_pairs_is_no_uplink_fault():
    fleet = model.Fleet(96, rails=2)
    rng = random.Random(7)
    for seed in range(3):
        fault = model.pick(fleet, "mtu", rng)
        rails, evidence, retest = model.run(fleet, [fault], seed, switch_read=1.0)
        findings = locate.locate(fleet.describe(), rails, evidence, retest)["findings"]
        assert findings and all(f["part"] != "uplink" for f in findings)
        assert (findings[0]["part"], findings[0]["id"]) == ("nic_config", fault["endpoint"])
