# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The traffic check: which share of a port's RDMA traffic rode the contract's RoCE class.

Counter values come from the corpus (a Soft-RoCE VM around a real ib_write_bw, a ConnectX port's ethtool -S
posted to the netdev list); counter names from the drivers' documentation."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.qos import counters
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def vm_snapshot(when):
    return dict(driver="virtio_net",
                ethtool=counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_virtio_%s.txt" % when)),
                hw_counters=counters.parse_counter_lines(corpus.read("counters", "hw_counters_rxe_%s.txt" % when)))


def mlx5_snapshot(name):
    return dict(driver="mlx5_core", ethtool=counters.parse_ethtool_stats(corpus.read("counters", name)), hw_counters={})


def zeros(snapshot):
    return dict(snapshot, ethtool=dict((k, 0) for k in snapshot["ethtool"]))


# mlx5: kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst (per-priority and
# vport RDMA counters) and mlx5_ib's congestion counters; irdma: its driver's irdma_hw_stat_names.
MLX5_PRIORITY_NAMES = ["rx_prio3_bytes", "rx_prio3_packets", "rx_prio3_discards", "tx_prio3_bytes", "tx_prio3_packets",
                       "rx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause", "tx_prio3_pause_duration",
                       "rx_prio3_pause_transition", "rx_prio0_bytes", "tx_prio0_bytes"]
MLX5_HW = ["np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored", "np_ecn_marked_roce_packets", "out_of_sequence"]
IRDMA_HW = ["cnpSent", "cnpHandled", "cnpIgnored", "RxECNMrkd", "ip4OutOctets"]


def test_the_documented_per_priority_names_are_read_and_nothing_else():
    stats = dict((name, i + 1) for i, name in enumerate(MLX5_PRIORITY_NAMES))
    prios = counters.priority_stats(stats)
    assert sorted(prios) == [0, 3]
    assert prios[3] == {"rx_bytes": 1, "rx_packets": 2, "tx_bytes": 4, "tx_packets": 5, "rx_pause": 6, "tx_pause": 8}


@pytest.mark.parametrize("names", [MLX5_HW, IRDMA_HW])
def test_congestion_counters_under_one_name_per_driver(names):
    before = dict((name, 10) for name in names)
    after = dict((name, 10 + i) for i, name in enumerate(names))
    assert counters.congestion(counters.deltas(before, after)) == dict(cnp_sent=0, cnp_handled=1, cnp_ignored=2, ecn_marked=3)


def test_a_counter_that_went_down_is_left_out():
    assert counters.deltas({"a": 5, "b": 1, "c": 2}, {"a": 7, "b": 0, "d": 9}) == {"a": 2}


def test_soft_roce_without_a_capture_is_skipped_and_says_where_to_look():
    check = counters.traffic_check("enp1s0", vm_snapshot("before"), vm_snapshot("after"), 3, 26)
    assert check["status"] == "skipped" and check["share"] is None
    assert "no per-priority byte counters" in check["msg"] and "switch" in check["msg"]
    # The real rxe counters around the ib_write_bw: 2866 packets sent, 142 received.
    assert "packets_sent +2866, packets_received +142" in check["msg"]


def test_a_capture_of_what_this_host_sent_decides_on_soft_roce():
    good = dict(packets=6111, dscp={"26": 6111}, sent=dict(packets=2866, dscp={"26": 2866}))
    check = counters.traffic_check("enp1s0", vm_snapshot("before"), vm_snapshot("after"), 3, 26, capture=good)
    assert check["status"] == "passed" and check["share"] == 1.0
    assert check["msg"].startswith("2866 of 2866 RoCE v2 packets this host sent on enp1s0 carried DSCP 26")
    # The peer's packets in the capture do not count against this host; this host's own do.
    peer_drifted = dict(packets=3000, dscp={"0": 134, "26": 2866}, sent=dict(packets=2866, dscp={"26": 2866}))
    assert counters.traffic_check("enp1s0", {}, {}, 3, 26, capture=peer_drifted)["status"] == "passed"
    drifted = dict(packets=3000, dscp={"0": 2866, "26": 134}, sent=dict(packets=2866, dscp={"0": 2866}))
    check = counters.traffic_check("enp1s0", {}, {}, 3, 26, capture=drifted)
    assert check["status"] == "failed" and check["share"] == 0.0
    assert "DSCP 0: 2866" in check["msg"] and "RDMA-CM's default ToS" in check["msg"]
    assert counters.traffic_check("enp1s0", {}, {}, 3, 26, capture=dict(packets=3, dscp={"26": 3}))["status"] == "skipped"


def test_the_packets_off_the_contract_are_named_by_opcode_and_qp():
    """The capture's per-ToS detail says what the stray packets were: a CM exchange (UD to QP 1) or a connection's data."""
    detail = {"106": {"opcodes": {"sent 0x0a": 2800, "received 0x11": 140}, "qps": {"17": 2940}},
              "0": {"opcodes": {"sent 0x64": 1, "received 0x64": 1}, "qps": {"1": 2}}}
    capture = dict(packets=2942, dscp={"26": 2940, "0": 2}, sent=dict(packets=2801, dscp={"26": 2800, "0": 1}), detail=detail)
    assert counters.off_contract(capture, 26) == [
        "ToS 0 (DSCP 0): 2 packets, received UD SEND only x1, sent UD SEND only x1, to QP 1 (connection management)"]
    check = counters.traffic_check("enp1s0", {}, {}, 3, 26, capture=capture)
    # The one CM packet this host sent is not data: out of the share, and said so.
    assert check["status"] == "passed" and check["share"] == 1.0
    assert "Seen off the contract: ToS 0 (DSCP 0): 2 packets" in check["msg"]
    assert "The 1 connection-management packet(s) (QP 1) off the contract are not data" in check["msg"]
    # A refused client's tries, as the lab's VMs showed them: 7 rejects sent on ToS 0 beside 127 data packets on
    # the contract's class. Counted, the share was 94.8 % and the check failed; they are CM alone.
    retried = dict(packets=7700, dscp={"24": 7000, "0": 700}, sent=dict(packets=134, dscp={"24": 127, "0": 7}),
                   detail={"98": {"opcodes": {"sent 0x0a": 127, "received 0x11": 6866}, "qps": {"17": 6993}},
                           "0": {"opcodes": {"sent 0x64": 7, "received 0x64": 693}, "qps": {"1": 700}}})
    check = counters.traffic_check("enp1s0", {}, {}, 3, 24, capture=retried)
    assert check["status"] == "passed" and check["share"] == 1.0 and "The 7 connection-management" in check["msg"]
    # Data on a connection's QP off the contract reads as such, with unknown opcodes by number.
    detail["0"] = {"opcodes": {"sent 0x0a": 5, "sent 0x7f": 1}, "qps": {"18": 6}}
    assert counters.off_contract(capture, 26) == [
        "ToS 0 (DSCP 0): 6 packets, sent RC WRITE only x5, sent opcode 0x7f x1, to QP 18"]
    assert counters.off_contract(capture, 0) == ["ToS 106 (DSCP 26): 2940 packets, received RC ACK x140, sent RC WRITE only x2800, to QP 17"]
    assert counters.off_contract(dict(packets=3, dscp={"26": 3}), 26) == []


@pytest.mark.parametrize("name", ["ethtool_S_mlx5_5.15_netdev.txt", "ethtool_S_mlx5_6.5_netdev.txt"])
def test_mlx5_traffic_on_priority_0_fails_a_priority_3_contract(name):
    """The real ConnectX port carried everything on priority 0: a contract on priority 3 fails and says where it went."""
    after = mlx5_snapshot(name)
    check = counters.traffic_check("ens1f0", zeros(after), after, 3, 26)
    assert check["status"] == "failed" and check["share"] == 0.0
    assert "most on priority 0" in check["msg"] and "nic_qos" in check["msg"]
    assert check["evidence"]["tx"]["total"] == after["ethtool"]["tx_prio0_bytes"]
    # On priority 0 itself every byte is on the priority (no vport RDMA counters: the priorities' sum is the basis).
    check = counters.traffic_check("ens1f0", zeros(after), after, 0, 0)
    assert check["status"] == "passed" and check["share"] == 1.0
    assert check["evidence"]["tx"]["basis"] == "tx_prio0..7_bytes"


def test_mlx5_rdma_bytes_are_the_basis_where_the_driver_counts_them():
    before = dict(ethtool={"tx_prio3_bytes": 0, "tx_prio0_bytes": 0, "tx_vport_rdma_unicast_bytes": 0,
                           "rx_prio3_bytes": 0, "rx_vport_rdma_unicast_bytes": 0, "tx_prio3_pause": 4},
                  hw_counters={"np_cnp_sent": 1, "rp_cnp_handled": 1})
    after = dict(driver="mlx5_core",
                 ethtool={"tx_prio3_bytes": 9900000, "tx_prio0_bytes": 5000000, "tx_vport_rdma_unicast_bytes": 10000000,
                          "rx_prio3_bytes": 8000000, "rx_vport_rdma_unicast_bytes": 8000000, "tx_prio3_pause": 9},
                 hw_counters={"np_cnp_sent": 4, "rp_cnp_handled": 3})
    check = counters.traffic_check("ens1f0", before, after, 3, 26)
    # 99% of the RDMA bytes sent rode priority 3; the TCP bytes on priority 0 are not RDMA and do not count.
    assert check["status"] == "passed" and check["share"] == 0.99
    assert "cnp_sent +3, cnp_handled +2" in check["msg"]
    # No rx_prio3_pause in its counters: not reported, never 0.
    assert "rx not reported, tx 5 (ethtool -S prints no rx_prio3_pause)" in check["msg"], check["msg"]
    assert check["evidence"]["rx"]["pause"] is None and check["evidence"]["tx"]["pause"] == 5
    assert counters.traffic_check("ens1f0", before, after, 3, 26, min_share=0.995)["status"] == "failed"
    assert counters.traffic_check("ens1f0", before, after, 3, 26, min_bytes=20000000)["status"] == "skipped"


def test_pause_counters_the_driver_does_not_print_are_not_reported_never_zero():
    """mlx5 prints a priority's pause rows only once PFC is on for it (here a ConnectX port on kernel 6.5, the
    published counters): the traffic check said "PFC pause frames on priority 0 rx 0, tx 0". Now it says the
    driver did not print them. The before snapshot is the same port with every counter halved (its names are what
    matter here)."""
    after = counters.parse_ethtool_stats(corpus.read("counters", "ethtool_S_mlx5_6.5_netdev.txt"))
    before = dict((name, value // 2) for name, value in after.items())
    assert "rx_prio0_pause" not in after and "tx_prio0_pause" not in after
    check = counters.traffic_check("enp1s0f0np0", dict(ethtool=before), dict(ethtool=after, driver="mlx5_core"), 0, 0)
    assert "PFC pause frames on priority 0 rx not reported, tx not reported (ethtool -S prints no rx_prio0_pause, " \
           "tx_prio0_pause)" in check["msg"], check["msg"]
    assert check["evidence"]["rx"]["pause"] is None and check["evidence"]["tx"]["pause"] is None
