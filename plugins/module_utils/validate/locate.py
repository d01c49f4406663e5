# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: from the pair matrix and the evidence read during the same traffic to the part to replace. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

An *endpoint* is one host's port on one rail (``host/rail``), wired to one switch port. The pair tests of a rail
(the circle-method round robin of ``schedule.py``) fail or come out slow; a fault of one part shows as a pattern:

- an endpoint whose pairs fail far more often than the rail's base rate (the transient failures every fabric has)
  is a suspect: the greedy explanation of ``suspects_of``, kept only while the failures left cannot be chance
  (a binomial tail, Bonferroni over the rail's endpoints). Isolated failures at the base rate are noise: counted,
  never a part;
- a suspect confirmed by its retest against an anchor (a host that passed with others) is a fault on its path;
- every endpoint of a host suspect (two rails or more): the host; most endpoints behind one switch: the switch.

The evidence of the same window names the part on the path (the rules of direction follow the mlx5 counter
definitions of the kernel's documentation): receive-side physical errors on both ends, or a link that went down,
the cable or optic between them; RDMA packets lost in the transport (out of sequence where they arrived,
sequence-error NAKs or repeated requests where they left, a share of the port's packets), the cable or optic of
that direction, the sender's when both ends saw it; transmit errors or discards on the switch port, the switch port; PCIe trained
below its capability under load, or AER errors on the device or its upstream port, the host PCIe link; pauses sent
or receive discards at the host, its NIC port; a neighbour that LLDP shows somewhere else than the cabling plan
(or off the rail's leaf), a miswired cable; an MTU unlike the rail's, the port's configuration; a link trained at a lower
rate than the rail's, the cable or optic (the port's speed setting the alternative); DCGM's failures or
GPUDirect far below host memory on the same host, the GPU. Each finding carries its evidence and a confidence:
``low`` on one kind of evidence, ``medium`` on two, ``high`` on three or more; only ``medium`` and ``high`` ask
for a replacement.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from operator import itemgetter

from ansible_collections.roce.fabric.plugins.module_utils.validate.schedule import anchor_retests, median, retest_bound

# The counters of ethtool -S (mlx5 names, Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst)
# that each rule reads, as deltas over the traffic window.
RX_PHY_ERRORS = ("rx_crc_errors_phy", "rx_symbol_err_phy", "rx_pcs_symbol_err_phy")
LINK_DOWN = ("link_down_events_phy",)
HOST_CONGESTION = ("rx_discards_phy", "tx_pause_storm_warning_events", "tx_pause_storm_error_events")
PCI_SIGNAL = ("rx_pci_signal_integrity", "tx_pci_signal_integrity", "outbound_pci_buffer_overflow")
# The RDMA transport's counters of the port (its hw_counters: mlx5's names, then Soft-RoCE's), as deltas. Packets that
# arrived after a gap: some were lost on the way in. Sequence-error NAKs the port received, and requests it got twice
# (its acknowledgement never reached the requester), packets its netdev refused to send (Soft-RoCE's send_err): what
# it sends is lost on the way out.
RDMA_IN_LOSS = ("out_of_sequence", "out_of_seq_request")
RDMA_OUT_LOSS = ("packet_seq_err", "rcvd_seq_err", "duplicate_request", "send_err")
# The packets those are a share of: the RDMA port's own count (Soft-RoCE), else all the port's packets (mlx5's ethtool).
RX_PACKETS = ("rcvd_pkts", "rx_packets_phy", "rx_packets")
TX_PACKETS = ("sent_pkts", "tx_packets_phy", "tx_packets")
# The share of a port's packets lost in the window that is evidence. A lossless RoCE fabric (PFC) drops none; a site
# whose fabric is not lossless (or a software RDMA device, which drops under load) sets its own (validation_report).
LOSS_RATE = 1e-4
# The netdev's carrier changes (sysfs, every driver) and the RDMA port's own count of link downs (Soft-RoCE).
HOST_LINK_DOWNS = ("link_downed",)
# A switch port's counters (Onyx "show interfaces ethernet", Cumulus "nv show interface counters"), as deltas.
SWITCH_RX_ERRORS = ("in_errors", "rx_errors", "rx_crc_errors")
SWITCH_TX = ("out_errors", "tx_errors", "out_discards", "tx_drops")
# Pre-FEC bit error rate above which the incoming direction is degrading (corrected bits / bits).
BER_LIMIT = 1e-6
# Pauses sent per second of window above which the host is a slow receiver.
PAUSE_RATE = 1000.0
# A benign few receive errors in a window are not evidence by themselves.
PHY_ERROR_MIN = 10
# The AER deltas of a port's PCI function and of the port above it (traffic_window's pcie reading).
AER_CORRECTABLE = ("aer_correctable", "upstream_aer_correctable")
AER_UNCORRECTABLE = ("aer_nonfatal", "aer_fatal", "upstream_aer_nonfatal", "upstream_aer_fatal")
# Correctable AER errors in one window that say a marginal link even while every pair passed.
AER_BURST = 10

PART_ACTIONS = {
    "cable": "replace the cable or optic between %(where)s",
    "miswire": "re-cable %(where)s",
    "switch_port": "move the link to another port of %(switch)s, or replace the port's optic; %(where)s",
    "pcie_link": "reseat the adapter or move it to another slot; check the riser or retimer at %(where)s",
    "nic_port": "replace the NIC (or its port) %(where)s",
    "nic_config": "correct the port's configuration: %(where)s",
    "gpu": "replace GPU %(where)s",
    "host": "take %(where)s out of service and inspect it (every rail fails with it)",
    "switch": "inspect switch %(where)s: most of its ports fail",
    "uplink": "replace the cable or optic of %(where)s (leaf to spine), or take it out of the ECMP group",
}


class LocateError(ValueError):
    """Input that cannot be located (names that do not match the fleet)."""


def binomial_tail(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p), summed directly (k small against n: Poisson-like terms)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(k, n + 1):
        term = math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
        total += term
        if term < 1e-18 * max(total, 1e-300) and i > n * p:
            break
    return min(total, 1.0)


def rail_outcomes(names, results, bw_fraction=0.93):
    """The pair matrix of one rail, judged pair by pair.

    ``names``: the rail's endpoints (``host/rail``) in schedule order; ``results``: ``(a, b, ok, bw_gbps)`` per pair
    test, ``ok`` False for a test that failed, ``bw_gbps`` None when it gave no number. A pair is bad when it failed
    or its bandwidth is below ``bw_fraction`` of the rail's reference (the median of its results: a robust best,
    which the noise of healthy links does not inflate as the maximum would).
    """
    index = dict((name, i) for i, name in enumerate(names))
    bws = [bw for _a, _b, ok, bw in results if ok and bw is not None]
    reference = median(bws) if bws else None
    limit = bw_fraction * reference if reference else -1.0
    # Counted in C (Counter over the columns): a fleet of 2,048 hosts has two million pairs a rail.
    counts = Counter(map(itemgetter(0), results))
    counts.update(map(itemgetter(1), results))
    unknown = set(counts) - set(index)
    if unknown:
        raise LocateError("a pair names an endpoint that is not on the rail: %s" % ", ".join(sorted(unknown)))
    tested = [counts.get(name, 0) for name in names]
    bad = [(index[a], index[b]) for a, b, ok, bw in results if not ok or (bw is not None and bw < limit)]
    return dict(names=list(names), bad=bad, tested=tested, pairs=len(results), reference=reference)


def rail_suspects(outcome, base_rate=None, alpha=1e-3):
    """The endpoints a rail's bad pairs point at: the greedy explanation (the endpoint in most bad pairs not yet
    explained, again and again), kept while its failures cannot be chance at ``base_rate`` (the share of pair tests
    that fail on a healthy fabric; estimated from what is left when not given), Bonferroni over the endpoints.

    Returns ``{"suspects": [{endpoint, failed, tested}], "bad_pairs": [(a, b)], "unexplained": count,
    "base_rate": p, "reference_gbps": x, "pairs": count}``.
    """
    names, bad, tested, total = outcome["names"], outcome["bad"], outcome["tested"], outcome["pairs"]
    left = list(bad)
    chosen = []
    explained = {}
    while left:
        counts = {}
        for ia, ib in left:
            counts[ia] = counts.get(ia, 0) + 1
            counts[ib] = counts.get(ib, 0) + 1
        top = max(counts, key=lambda i: (counts[i], -i))
        others = [pair for pair in left if top not in pair]
        # Its bad pairs with the suspects already chosen are explained by them: not tests of its own (one each with
        # the full matrix, none or a few with a sparse schedule).
        tests = max(tested[top] - explained.get(top, 0), counts[top], 1)
        if base_rate is not None:
            rate = base_rate
        else:
            pairs_left = max(total - sum(tested[i] for i in chosen), 1)
            rate = float(len(others)) / pairs_left
        rate = max(rate, 0.5 / max(total, 1))
        # Most of its pairs bad is no chance at any base rate (a healthy endpoint fails only with its bad partners and
        # by chance); fewer must beat the binomial tail.
        mostly = counts[top] * 2 > tests
        if counts[top] < 2 or not (mostly or binomial_tail(counts[top], tests, rate) * max(len(names), 1) <= alpha):
            break
        chosen.append(top)
        for ia, ib in left:
            if top in (ia, ib):
                other = ib if ia == top else ia
                explained[other] = explained.get(other, 0) + 1
        left = others
    suspects = [dict(endpoint=names[i], failed=sum(1 for pair in bad if i in pair), tested=tested[i]) for i in chosen]
    return {"suspects": suspects, "bad_pairs": [(names[a], names[b]) for a, b in bad], "unexplained": len(left),
            "base_rate": (float(len(left)) / total) if total else 0.0, "reference_gbps": outcome["reference"],
            "pairs": total}


def judge_rail(names, results, bw_fraction=0.93, alpha=1e-3, base_rate=None):
    """``rail_suspects`` of ``rail_outcomes``: one rail judged alone."""
    return rail_suspects(rail_outcomes(names, results, bw_fraction), base_rate, alpha)


def fleet_base_rate(outcomes):
    """The share of pair tests that fail on a healthy fabric: per rail, the bad pairs between endpoints that fail
    fewer than half their pairs (a dead host or a switch down is no chance), over the pairs between them; the median
    over the rails (so that a rail a switch takes down does not make its own failures look like chance)."""
    shares = []
    for outcome in outcomes:
        counts = [0] * len(outcome["names"])
        for ia, ib in outcome["bad"]:
            counts[ia] += 1
            counts[ib] += 1
        mostly = set(i for i, count in enumerate(counts) if count * 2 > max(outcome["tested"][i], 1))
        bad = sum(1 for ia, ib in outcome["bad"] if ia not in mostly and ib not in mostly)
        pairs = outcome["pairs"] - sum(outcome["tested"][i] for i in mostly)
        if pairs > 0:
            shares.append(float(bad) / pairs)
    if len(shares) < 3:
        return None
    return median(shares)


# --- evidence ---------------------------------------------------------------------------------------------------

def _sum(counters, names):
    return sum(int((counters or {}).get(name) or 0) for name in names)


def _pause_names(counters):
    return [name for name in (counters or {})
            if name.startswith("tx_prio") and name.endswith("_pause") or name == "tx_pause_ctrl_phy"]


def _pause_sent(counters):
    return sum(int((counters or {}).get(name) or 0) for name in _pause_names(counters))


# The rules of endpoint_evidence that read the NIC's ethtool -S counters, and the counters each needs (any one).
NIC_RULES = (
    ("nic_rx", "receive physical errors", RX_PHY_ERRORS + ("rx_corrected_bits_phy",)),
    ("host_rx", "receive discards, pause storms and pauses sent",
     HOST_CONGESTION + ("tx_prio0..7_pause", "tx_pause_ctrl_phy")),
    ("pcie", "PCIe signal integrity and buffer overflows at the NIC", PCI_SIGNAL),
)


def unreported(found):
    """What the rules could not read on an endpoint: ``{rule: text}`` for each rule of NIC_RULES none of whose
    counters its NIC printed (a driver's counters differ; what it did not print is not zero). {} without a NIC
    reading at all (nothing was read, not nothing printed)."""
    nic = (found or {}).get("nic")
    if not isinstance(nic, dict) or not nic:
        return {}
    out = {}
    for rule, what, names in NIC_RULES:
        printed = [name for name in names if name in nic] + (_pause_names(nic) if rule == "host_rx" else [])
        if not printed:
            out[rule] = "%s: not reported (its driver prints none of %s)" % (what, ", ".join(names))
    return out


def switch_rails(endpoints, readings):
    """Without a cabling plan: the rail each switch serves, as most of the ports that hear it over LLDP say."""
    heard = {}
    for name, found in (readings or {}).items():
        switch = ((found or {}).get("lldp") or {}).get("switch")
        rail = (endpoints.get(name) or {}).get("rail")
        if switch and rail is not None:
            heard.setdefault(switch, Counter())[rail] += 1
    return dict((switch, counts.most_common(1)[0][0]) for switch, counts in heard.items())


def _path(endpoint, wiring):
    """An endpoint's path in words: the port (its netdev) and the switch port it is wired to (when known: no cabling
    plan and no LLDP leave it unnamed)."""
    port = "%s (%s)" % (endpoint, wiring.get("netdev") or wiring.get("nic") or "?")
    if not wiring.get("switch") and not wiring.get("switch_port"):
        return port + " and its switch port (not known: no cabling plan, no LLDP)"
    return "%s - %s %s" % (port, wiring.get("switch") or "?", wiring.get("switch_port") or "?")


MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


def _short(name):
    return str(name or "").split(".", 1)[0].lower()


def switch_side_lldp(endpoint, wiring, heard):
    """What the switch's own LLDP table (``heard``: ``{host, port}`` of the planned switch port, as Cumulus's
    ``nv show interface lldp`` lists it) says against the plan: ``(kind, part, text)`` or None. The host is compared
    by its short name; the port by name, or by MAC address where the wiring knows the port's (lldpd's default port
    ID on a host)."""
    if not heard or not wiring.get("switch"):
        return None
    where = "LLDP on %s %s" % (wiring.get("switch"), wiring.get("switch_port"))
    if heard.get("host") and _short(heard["host"]) != _short(wiring.get("host")):
        return ("switch_lldp", "miswire", "%s: the neighbour is %s %s, the plan says %s (%s)"
                % (where, heard["host"], heard.get("port") or "", wiring.get("host"), endpoint))
    port = str(heard.get("port") or "")
    if MAC_RE.match(port):
        if wiring.get("mac") and port.lower() != str(wiring["mac"]).lower():
            return ("switch_lldp", "miswire", "%s: the neighbour's port is %s, not %s's %s (%s)"
                    % (where, port, endpoint, wiring.get("netdev"), wiring["mac"]))
    elif port and wiring.get("netdev") and port != wiring["netdev"]:
        return ("switch_lldp", "miswire", "%s: the neighbour's port is %s, the plan says %s (%s)"
                % (where, port, wiring["netdev"], endpoint))
    return None


def _link_caps(pcie):
    """``(width, speed)`` a PCIe link can train to: what both ends can, the function's maximum and the port above
    it's, where each was read (None where neither was)."""
    widths = [int(v) for v in (pcie.get("max_width"), pcie.get("upstream_max_width")) if v]
    speeds = [float(v) for v in (pcie.get("max_speed"), pcie.get("upstream_max_speed")) if v]
    return (min(widths) if widths else None), (min(speeds) if speeds else None)


def _below_capability(pcie):
    """How a PCIe link under load is below what it can train to, in words (empty when it is not)."""
    max_width, max_speed = _link_caps(pcie)
    out = []
    if pcie.get("width") and max_width and int(pcie["width"]) < max_width:
        out.append("x%s of x%s under load" % (pcie["width"], max_width))
    if pcie.get("speed") and max_speed and float(pcie["speed"]) < max_speed:
        out.append("%s of %s GT/s under load" % (pcie["speed"], max_speed))
    # The kernel's word at the driver's probe: a link on the path narrower than the device can train to. (A lower
    # speed alone there may be a power state at probe; the sampler judges speed under load.)
    kernel = pcie.get("kernel") or {}
    if kernel.get("width") and kernel.get("max_width") and int(kernel["width"]) < int(kernel["max_width"]):
        out.append("the kernel found its bandwidth limited by a x%s %s GT/s link at %s (capable of x%s %s GT/s, "
                   "%s of %s Gb/s)" % (kernel["width"], kernel.get("speed"), kernel.get("limited_at") or "an unknown "
                                       "device", kernel["max_width"], kernel.get("max_speed"),
                                       kernel.get("available_gbps"), kernel.get("capable_gbps")))
    return out


def transport_loss(rdma, nic, names, packet_names, loss_rate=None):
    """``"<lost>[ in <packets>]"``, an RDMA port's transport loss in the window (``names`` of its hw_counters) when
    it is evidence: at least ``PHY_ERROR_MIN`` events and, where a packet count is known (the first of
    ``packet_names`` in the RDMA or the NIC counters), at least ``loss_rate`` of the packets (default
    ``LOSS_RATE``); None otherwise."""
    lost = _sum(rdma, names)
    if lost < PHY_ERROR_MIN:
        return None
    rate = LOSS_RATE if loss_rate is None else float(loss_rate)
    packets = next((int(counters[name]) for name in packet_names for counters in (rdma, nic) if counters.get(name)), 0)
    if packets and float(lost) / packets < rate:
        return None
    return "%d%s" % (lost, (" in %d" % packets) if packets else "")


def _gbps(mbps):
    return "%g Gb/s" % (int(mbps) / 1000.0)


def endpoint_evidence(endpoint, wiring, found, switch_ports, rail_mtu=None, window_s=None, rails_of_switches=None,
                      switch_lldp=None, loss_rate=None, rail_speed=None):
    """What the window's evidence says about one endpoint's path: a list of ``(kind, part, text)``.

    ``found``: the endpoint's readings - ``nic`` (ethtool -S deltas), ``pcie`` (link under load and AER deltas:
    ``speed``, ``max_speed``, ``width``, ``max_width``, ``aer_correctable``, ``aer_nonfatal``, ``aer_fatal``,
    ``upstream_aer_correctable``...), ``rdma`` (the RDMA port's hw_counters deltas), ``lldp`` (``{switch, port}`` the
    host's neighbour), ``mtu``, ``speed_mbps`` (the link's rate); ``rail_mtu``, ``rail_speed``: the rail's
    (``rail_value_of``); ``loss_rate``: the share of packets lost that is evidence (``transport_loss``);
    ``switch_ports``: ``"switch/port"`` -> the switch port's counter deltas; ``rails_of_switches``: without a cabling
    plan (no ``switch`` in ``wiring``), the rail each switch serves (``switch_rails``), for the rail alignment;
    ``switch_lldp``: ``"switch/port"`` -> ``{host, port}``, the switches' own LLDP tables."""
    nic = (found or {}).get("nic") or {}
    out = []
    where = _path(endpoint, wiring)
    rx_phy = _sum(nic, RX_PHY_ERRORS)
    bits = int(nic.get("rx_bits_phy") or 0)
    ber = (float(nic.get("rx_corrected_bits_phy") or 0) / bits) if bits else 0.0
    port = switch_ports.get("%s/%s" % (wiring.get("switch"), wiring.get("switch_port"))) or {}
    switch_rx = _sum(port, SWITCH_RX_ERRORS)
    switch_tx = _sum(port, SWITCH_TX)
    rdma = (found or {}).get("rdma") or {}
    # One flap is a carrier change down and one up; the NIC's and the RDMA port's own counts are the same events.
    host_flaps = max(_sum(nic, LINK_DOWN), (int(nic.get("carrier_changes") or 0) + 1) // 2, _sum(rdma, HOST_LINK_DOWNS))
    flaps = host_flaps + int(port.get("carrier_transitions") or 0)
    if flaps:
        out.append(("link", "cable", "the link went down %s during the window (%s)"
                    % ("once" if flaps == 1 else "%d times" % flaps, where)))
    if rx_phy >= PHY_ERROR_MIN or ber > BER_LIMIT:
        out.append(("nic_rx", "cable", "%d receive physical errors at the host (pre-FEC BER %.1e): the switch-to-host "
                                       "direction (switch transmitter, cable or optic)" % (rx_phy, ber)))
    if switch_rx >= PHY_ERROR_MIN:
        out.append(("switch_rx", "cable", "%d receive errors on %s %s: the host-to-switch direction (host transmitter, "
                                          "cable or optic)" % (switch_rx, wiring.get("switch"), wiring.get("switch_port"))))
    if switch_tx >= PHY_ERROR_MIN:
        out.append(("switch_tx", "switch_port", "%d transmit errors or discards on %s %s"
                    % (switch_tx, wiring.get("switch"), wiring.get("switch_port"))))
    lost_in = transport_loss(rdma, nic, RDMA_IN_LOSS, RX_PACKETS, loss_rate)
    if lost_in:
        out.append(("rdma_rx", "cable", "RDMA packets out of sequence at %s (%s received): packets were lost on the "
                                        "way in (switch transmitter, cable or optic)" % (endpoint, lost_in)))
    lost_out = transport_loss(rdma, nic, RDMA_OUT_LOSS, TX_PACKETS, loss_rate)
    if lost_out:
        out.append(("rdma_tx", "cable", "sequence-error NAKs, repeated requests or failed sends at %s (%s sent): what "
                                        "it sends is lost on the way out (its transmitter, cable or optic)"
                    % (endpoint, lost_out)))
    pcie = (found or {}).get("pcie") or {}
    pcie_text = _below_capability(pcie)
    aer = _sum(pcie, AER_CORRECTABLE + AER_UNCORRECTABLE)
    if aer:
        pcie_text.append("%d AER errors on %s or its upstream port %s" % (aer, wiring.get("pci") or pcie.get("pci") or "?",
                                                                          wiring.get("upstream") or pcie.get("upstream_pci") or "?"))
    signal = _sum(nic, PCI_SIGNAL)
    if signal:
        pcie_text.append("%d PCIe signal integrity or buffer overflow events at the NIC" % signal)
    if pcie_text:
        out.append(("pcie", "pcie_link", "PCIe %s: %s" % (wiring.get("pci") or "?", "; ".join(pcie_text))))
    congestion = _sum(nic, HOST_CONGESTION)
    pauses = _pause_sent(nic)
    if congestion >= PHY_ERROR_MIN or (window_s and pauses / float(window_s) > PAUSE_RATE):
        out.append(("host_rx", "nic_port", "the host cannot drain what it receives: %d receive discards or pause "
                                           "storms, %d pauses sent" % (congestion, pauses)))
    # The same seen from the switch: its port received the host's pauses (PFC frames of every priority).
    switch_pauses = int(port.get("rx_pause") or 0)
    if window_s and switch_pauses / float(window_s) > PAUSE_RATE:
        out.append(("switch_pause", "nic_port", "%s %s received %d pause frames from the host in %.0f s: the host "
                                                "asks the fabric to stop sending" % (wiring.get("switch"),
                                                                                     wiring.get("switch_port"),
                                                                                     switch_pauses, window_s)))
    lldp = (found or {}).get("lldp")
    # A switch the wiring took from LLDP itself (no cabling plan) is no plan to compare LLDP with.
    planned = (wiring.get("switch"), wiring.get("switch_port")) if wiring.get("planned", True) else (None, None)
    if lldp and planned[0] and not lldp.get("switch"):
        # A neighbour that sends no system name: its port alone can be held against the plan.
        if lldp.get("port") and lldp["port"] != planned[1]:
            out.append(("lldp", "miswire", "LLDP: %s hears port %s of a neighbour that sends no system name (chassis "
                                           "%s), the plan says %s %s" % (endpoint, lldp["port"],
                                                                         lldp.get("chassis_id") or "?", planned[0],
                                                                         planned[1])))
    elif lldp and planned[0] and (lldp.get("switch"), lldp.get("port")) != planned:
        out.append(("lldp", "miswire", "LLDP: %s is plugged into %s %s, the plan says %s %s"
                    % (endpoint, lldp.get("switch"), lldp.get("port"), planned[0], planned[1])))
    elif lldp and not planned[0] and rails_of_switches:
        serves = rails_of_switches.get(lldp.get("switch"))
        if serves is not None and serves != wiring.get("rail"):
            out.append(("lldp", "miswire", "LLDP: %s (rail %s) is plugged into %s %s, whose other ports are on rail %s"
                        % (endpoint, wiring.get("rail"), lldp.get("switch"), lldp.get("port"), serves)))
    if planned[0]:
        switch_side = switch_side_lldp(endpoint, wiring, (switch_lldp or {}).get("%s/%s" % planned))
        if switch_side:
            out.append(switch_side)
    mtu = (found or {}).get("mtu")
    if rail_mtu and mtu and int(mtu) != int(rail_mtu):
        out.append(("mtu", "nic_config", "MTU %s on %s; the rail's other ports use %s" % (mtu, endpoint, rail_mtu)))
    speed = (found or {}).get("speed_mbps")
    # Slower than the rail only: a port faster than most of its rail is not the one that trained down.
    if rail_speed and speed and int(speed) < int(rail_speed):
        out.append(("rate", "cable", "the link runs at %s on %s; the rail's other ports run at %s (trained down: the "
                                     "cable or optic, or the port's speed setting)" % (_gbps(speed), endpoint,
                                                                                       _gbps(rail_speed))))
    return out


# Which part the evidence names, most specific first: (part, the evidence kinds that name it).
RULES = (
    ("miswire", ("lldp", "switch_lldp")),
    ("nic_config", ("mtu",)),
    ("pcie_link", ("pcie",)),
    ("switch_port", ("switch_tx",)),
    ("cable", ("link", "rate", "nic_rx", "switch_rx", "rdma_rx", "rdma_tx", "peer_rx")),
    ("nic_port", ("host_rx", "switch_pause")),
)


# The evidence that makes a finding even where every pair passed: the cabling, the configuration, a link that went
# down or trained to a lower rate, packets lost (the transport recovered them, at a cost), and a PCIe link in trouble
# (pcie_burst).
STANDALONE = ("lldp", "switch_lldp", "mtu", "link", "rate", "rdma_rx", "rdma_tx", "peer_rx")


def explain_losses(found_of, rails):
    """A loss seen from both ends names the sender: where an endpoint's received packets went missing (``rdma_rx``)
    and a peer it was tested with lost what it sent (``rdma_tx``), the receiver's reading becomes the sender's second
    piece of evidence (``peer_rx``) and leaves the receiver. ``found_of``: ``{endpoint: endpoint_evidence}``, changed
    in place; ``rails``: the pair results that say who was tested with whom."""
    receivers = set(name for name, found in found_of.items() if any(item[0] == "rdma_rx" for item in found))
    lost_out = set(name for name, found in found_of.items() if any(item[0] == "rdma_tx" for item in found))
    if not receivers or not lost_out:
        return
    peers = {}
    for results in rails.values():
        for a, b, _ok, _bw in results:
            if a in receivers and b in lost_out:
                peers.setdefault(a, set()).add(b)
            if b in receivers and a in lost_out:
                peers.setdefault(b, set()).add(a)
    for name in sorted(peers):
        received = [item for item in found_of[name] if item[0] == "rdma_rx"]
        senders = sorted(peers[name])
        found_of[name] = [item for item in found_of[name] if item[0] != "rdma_rx"]
        for peer in senders:
            found_of[peer].append(("peer_rx", "cable", "its peer %s: %s" % (name, received[0][2])))


def pcie_burst(found):
    """Whether an endpoint's PCIe reading is trouble by itself: below its capability under load, an uncorrectable
    AER error, or a burst of correctable ones (``AER_BURST`` in the window); a stray correctable error is not."""
    pcie = (found or {}).get("pcie") or {}
    return bool(_sum(pcie, AER_UNCORRECTABLE) or _sum(pcie, AER_CORRECTABLE) >= AER_BURST or _below_capability(pcie))


def rail_value_of(values):
    """A rail's MTU or link rate from its ports': the most common, a tie to the largest (a port left at a default MTU
    or trained down is the usual fault, and two ports alone cannot outvote each other)."""
    counts = Counter(int(v) for v in values)
    return max(counts, key=lambda value: (counts[value], value))


def _confidence(kinds):
    return "low" if kinds <= 1 else ("medium" if kinds == 2 else "high")


def _finding(part, identity, where, evidence, switch=None, alternatives=()):
    kinds = len(set(kind for kind, _text in evidence))
    confidence = _confidence(kinds)
    action = PART_ACTIONS[part] % dict(where=where, switch=switch or "the switch")
    if confidence == "low":
        action = "inspect (one kind of evidence only): " + action
    return dict(part=part, id=identity, confidence=confidence, evidence=[dict(kind=k, text=t) for k, t in evidence],
                action=action, replace=confidence != "low", alternatives=list(alternatives))


def classify_endpoint(endpoint, wiring, matrix_text, evidence):
    """The finding for one confirmed endpoint: the part its evidence names (RULES), or the NIC port on the matrix
    alone (low confidence, the cable and the switch port as alternatives)."""
    found = dict((kind, (part, text)) for kind, part, text in evidence)
    switch_port = "%s/%s" % (wiring.get("switch"), wiring.get("switch_port"))
    where = _path(endpoint, wiring)
    pci_where = "%s (%s), PCI %s" % (endpoint, wiring.get("netdev") or wiring.get("nic") or "?", wiring.get("pci") or "?")
    matrix = [("matrix", matrix_text)] if matrix_text else []
    for part, kinds in RULES:
        mine = [(kind, found[kind][1]) for kind in kinds if kind in found]
        if not mine:
            continue
        identity = switch_port if part == "switch_port" else endpoint
        others = [(kind, text) for kind, (_part, text) in found.items() if kind not in kinds]
        alternatives = []
        # One direction's errors only: the far transmitter is the alternative to the cable.
        if part == "cable" and set(k for k, _t in mine) <= {"nic_rx", "rdma_rx"}:
            alternatives = [dict(part="switch_port", id=switch_port)]
        # A rate alone: the port's speed setting (either end) is the alternative to the cable or optic.
        elif part == "cable" and set(k for k, _t in mine) == {"rate"}:
            alternatives = [dict(part="nic_config", id=endpoint), dict(part="switch_port", id=switch_port)]
        elif part == "cable" and set(k for k, _t in mine) <= {"switch_rx", "rdma_tx", "peer_rx"}:
            alternatives = [dict(part="nic_port", id=endpoint)]
        return _finding(part, identity, pci_where if part == "pcie_link" else where, matrix + mine + others,
                        wiring.get("switch"), alternatives)
    return _finding("nic_port", endpoint, where, matrix, wiring.get("switch"),
                    [dict(part="cable", id=endpoint), dict(part="switch_port", id=switch_port)])


def _ras_text(ranks, host):
    first = ranks[0]
    names = ", ".join(str(rank.get("rank")) for rank in ranks)
    where = host if first.get("address") in (None, host) else "%s (%s)" % (host, first["address"])
    state = "considered dead" if all(rank.get("dead") for rank in ranks) else "unresponsive"
    if len(ranks) == 1 and not first.get("whole_host"):
        return ("NCCL's RAS: rank %s (process %s, GPU %s on %s) is missing from its communicator, %s, while the "
                "host's other ranks answer (%s)" % (names, first.get("pid"), first.get("gpu"), where, state,
                                                    first.get("check")))
    return ("NCCL's RAS: rank%s %s on %s missing, %s, and no rank on that host answers (%s)"
            % ("s" if len(ranks) > 1 else "", names, where, state, first.get("check")))


def ras_host_finding(findings, host, ranks):
    """A host none of whose NCCL ranks answers RAS (the node, its network or its NCCL processes, not one GPU): the
    evidence joins the host's finding where the matrix made one (every rail failing), else it is a finding alone."""
    item = ("nccl_ras", _ras_text(ranks, host))
    for index, finding in enumerate(findings):
        if finding["part"] == "host" and finding["id"] == host:
            evidence = [(e["kind"], e["text"]) for e in finding["evidence"]] + [item]
            findings[index] = _finding("host", host, host, evidence)
            return
    findings.append(_finding("host", host, host, [item]))


def leaf_paths(outcome, switch_of, results, base_rate=None, alpha=1e-3):
    """The switches of one rail whose paths to the other leaves fail: ``[{switch, failed, tested, endpoints}]`` and
    the bad pairs they explain (as ``outcome["bad"]``'s index pairs).

    An endpoint that fails most of its pairs is its own fault and is left out (with its pairs). For each switch, its
    endpoints' pairs with endpoints of other switches ("crossing"): the endpoints whose share of bad crossing pairs
    stands out against the leaf's own are left out one by one (their own faults); when the rest - half of them at
    least - still fail more than chance allows at ``base_rate`` (binomial tail, Bonferroni over the rail's switches),
    while the pairs that stay on the switch do not, the fault is on the way out of the leaf -
    its uplinks or what is beyond them - not on a host, which would fail in a few endpoints only, nor the switch
    itself, whose own pairs would fail too. Costs one pass over the rail's results.
    """
    names, bad, tested = outcome["names"], outcome["bad"], outcome["tested"]
    index = dict((name, i) for i, name in enumerate(names))
    switch = [switch_of.get(name) for name in names]
    counts = [0] * len(names)
    for ia, ib in bad:
        counts[ia] += 1
        counts[ib] += 1
    mostly = set(i for i, count in enumerate(counts) if count * 2 > max(tested[i], 1))
    cross_n, cross_bad, same_n, same_bad = [0] * len(names), [0] * len(names), {}, {}
    bad_set = set(bad)
    for a, b, _ok, _bw in results:
        ia, ib = index[a], index[b]
        if ia in mostly or ib in mostly or switch[ia] is None or switch[ib] is None:
            continue
        failed = (ia, ib) in bad_set
        if switch[ia] == switch[ib]:
            same_n[switch[ia]] = same_n.get(switch[ia], 0) + 1
            same_bad[switch[ia]] = same_bad.get(switch[ia], 0) + failed
            continue
        for i in (ia, ib):
            cross_n[i] += 1
            cross_bad[i] += failed
    by_switch = {}
    for i, name in enumerate(names):
        if i not in mostly and switch[i] is not None and cross_n[i]:
            by_switch.setdefault(switch[i], []).append(i)
    rate = base_rate
    if rate is None:
        total = sum(cross_n) // 2 + sum(same_n.values())
        rate = float(sum(cross_bad) // 2 + sum(same_bad.values())) / max(total, 1)
    rate = max(rate, 0.5 / max(outcome["pairs"], 1))
    found, explained = [], set()
    for name, members in sorted(by_switch.items(), key=lambda item: str(item[0])):
        if len(members) < 4:
            continue
        # The endpoints that stand out against the leaf's own share are their own faults: left out, one by one.
        common = list(members)
        while len(common) > len(members) // 2:
            share = float(sum(cross_bad[i] for i in common)) / sum(cross_n[i] for i in common)
            worst = min(common, key=lambda i: binomial_tail(cross_bad[i], cross_n[i], share))
            if cross_bad[worst] < 2 or binomial_tail(cross_bad[worst], cross_n[worst], share) * len(common) > alpha:
                break
            common.remove(worst)
        failed, tests = sum(cross_bad[i] for i in common), sum(cross_n[i] for i in common)
        if failed < 3 or binomial_tail(failed, tests, rate) * len(by_switch) > alpha:
            continue
        if same_n.get(name) and binomial_tail(same_bad.get(name, 0), same_n[name], rate) * len(by_switch) <= alpha:
            continue  # its own pairs fail too: the switch, not the way out of it
        mine = set(members)
        pairs = [(ia, ib) for ia, ib in bad if (ia in mine) != (ib in mine) and ia not in mostly and ib not in mostly
                 and switch[ia] != switch[ib]]
        explained.update(pairs)
        found.append(dict(switch=name, failed=sum(cross_bad[i] for i in members), tested=sum(cross_n[i] for i in members),
                          endpoints=len(members), same_tested=same_n.get(name, 0), same_failed=same_bad.get(name, 0)))
    return found, explained


def rail_retests(endpoints, rails, bw_fraction=0.93, alpha=1e-3, paths=None):
    """Each rail's suspects and the anchor retests that would confirm them: ``{rail: (rail_suspects' summary,
    schedule.anchor_retests' plan)}`` (a plan without rounds where the rail has no suspect). ``endpoints``: the fleet's
    ``{endpoint: {rail, ...}}``; ``rails``: ``{rail: [(a, b, ok, bw_gbps), ...]}``. The suspects are judged against
    the base rate of the whole fleet; each is retested against an anchor, a host that passed with others."""
    judged = {}
    for rail, results in sorted(rails.items()):
        names = set(name for name, wiring in endpoints.items() if wiring.get("rail") == rail)
        if not names:
            names = set(map(itemgetter(0), results)) | set(map(itemgetter(1), results))
        judged[rail] = rail_outcomes(sorted(names), results, bw_fraction)
    base_rate = fleet_base_rate(list(judged.values()))
    planned = {}
    switch_of = dict((name, wiring.get("switch")) for name, wiring in endpoints.items())
    for rail, results in sorted(rails.items()):
        names = judged[rail]["names"]
        if paths is not None:
            # A leaf whose way out fails explains the bad pairs crossing it; they are no endpoint's.
            found, explained = leaf_paths(judged[rail], switch_of, results, base_rate, alpha)
            if found:
                paths[rail] = found
                judged[rail] = dict(judged[rail], bad=[pair for pair in judged[rail]["bad"] if pair not in explained])
        summary = rail_suspects(judged[rail], base_rate, alpha)
        plan = dict(suspects=[], rounds=[], untested=[])
        mine = set(entry["endpoint"] for entry in summary["suspects"])
        if mine:
            suspect_pairs = [pair for pair in summary["bad_pairs"] if pair[0] in mine or pair[1] in mine]
            passed = []
            for a, b, ok, _bw in results:
                if ok and a not in mine and b not in mine:
                    passed.append((a, b))
                    if len(passed) >= 4 * len(mine) + 8:
                        break
            plan = anchor_retests(suspect_pairs, names, passed)
        planned[rail] = (summary, plan)
    return planned


def locate(fleet, rails, evidence=None, retests=None, bw_fraction=0.93, alpha=1e-3, switch_share=0.5,
           gdr_fraction=0.7, loss_rate=None):
    """Every finding of one validation.

    ``fleet``: ``{"endpoints": {"host/rail": {host, rail, nic, netdev, pci, upstream, switch, switch_port}},
    "hosts": [...]}``; ``rails``: ``{rail: [(a, b, ok, bw_gbps), ...]}`` with endpoints named ``host/rail``;
    ``evidence``: ``{"endpoints": {endpoint: readings}, "switch_ports": {...}, "switch_lldp": {"switch/port": {host,
    port}}, "hosts": {host: {"dcgm": {"failed_gpus": [...]}, "gdr_gbps": x, "host_mem_gbps": y, "ras_missing":
    [{rank, gpu, pid, dead, whole_host, address, check}]}}, "window_s": seconds}``; ``retests``: the anchor retest of
    each suspect, ``{endpoint: ok}`` or a function of the endpoint that runs it (a suspect whose retest passed was
    transient; one not retested stays a suspect); ``loss_rate``: see ``transport_loss``. The retests of every rail
    are planned at once
    (``schedule.anchor_retests``: each suspect against an anchor that passed with others, no endpoint twice in a
    round).

    Returns ``{"findings": [...], "rails": {rail: judge_rail's summary}, "transient": [endpoints cleared by retest],
    "retest_rounds": the most rounds a rail's retests took, "retest_bound": ceil(log2 N) + 2}`` with the findings in
    the order to act on them (confidence, then evidence).
    """
    evidence = evidence or {}
    retests = retests or {}
    switch_ports = evidence.get("switch_ports") or {}
    readings = evidence.get("endpoints") or {}
    endpoints = dict(fleet.get("endpoints") or {})
    # Without a cabling plan, a port's switch is the one it hears over LLDP; the rail alignment (every rail's ports on
    # that rail's switches) stands in for the plan.
    unplanned = [name for name, wiring in endpoints.items() if not wiring.get("switch")]
    rails_of_switches = switch_rails(endpoints, readings) if unplanned else None
    for name in unplanned:
        heard = (readings.get(name) or {}).get("lldp") or {}
        if heard.get("switch"):
            endpoints[name] = dict(endpoints[name], switch=heard["switch"], switch_port=heard.get("port"),
                                   planned=False)
    summaries, suspects, transient = {}, {}, []
    rounds_needed = 0
    outcomes = {}
    paths = {}
    for rail, (summary, plan) in sorted(rail_retests(endpoints, rails, bw_fraction, alpha, paths).items()):
        summaries[rail] = dict((key, value) for key, value in summary.items() if key != "bad_pairs")
        rounds_needed = max(rounds_needed, len(plan["rounds"]))
        for rnd in plan["rounds"]:
            for suspect, _anchor in rnd:
                outcomes[suspect] = retests(suspect) if callable(retests) else retests.get(suspect)
        for entry in summary["suspects"]:
            if outcomes.get(entry["endpoint"]) is True:
                transient.append(entry["endpoint"])
                continue
            suspects[entry["endpoint"]] = entry
    findings = []
    # Hosts: every rail of the host suspect (two rails at least).
    by_host = {}
    for name, wiring in endpoints.items():
        by_host.setdefault(wiring.get("host"), []).append(name)
    absorbed = set()
    for host, names in sorted(by_host.items()):
        if len(names) >= 2 and all(name in suspects for name in names):
            text = "every rail of %s fails: %s" % (host, ", ".join(
                "%s %d of %d pairs" % (endpoints[n].get("rail"), suspects[n]["failed"], suspects[n]["tested"]) for n in sorted(names)))
            # Independent rails (other NICs, cables and switches) failing together: the host is what they share.
            evidence_list = [("matrix", text), ("rails", "%d independent rails" % len(names))]
            findings.append(_finding("host", host, host, evidence_list))
            absorbed.update(names)
    # Switches: most of a switch's endpoints suspect on its rail. Without a plan, the ports that hear no switch over
    # LLDP are grouped by rail: a switch that is down sends no LLDP.
    by_switch = {}
    for name, wiring in endpoints.items():
        if wiring.get("switch"):
            by_switch.setdefault(wiring.get("switch"), []).append(name)
    silent = {}
    for name in unplanned:
        if not endpoints[name].get("switch"):
            silent.setdefault(endpoints[name].get("rail"), []).append(name)
    for rail_name, names in sorted(silent.items(), key=lambda item: str(item[0])):
        bad = [name for name in names if name in suspects and name not in absorbed]
        if len(bad) >= 2 and len(bad) >= switch_share * len(names):
            evidence_list = [("matrix", "%d ports of rail %s fail their pairs" % (len(bad), rail_name)),
                             ("lldp", "none of them hears a switch over LLDP (no cabling plan names it)")]
            ports = ", ".join(sorted(bad)[:3]) + (" ..." if len(bad) > 3 else "")
            findings.append(_finding("switch", "rail %s: the switch %s hang off" % (rail_name, ports),
                                     "the switch of rail %s" % rail_name, evidence_list))
            absorbed.update(bad)
    for switch, names in sorted(by_switch.items(), key=lambda item: str(item[0])):
        bad = [name for name in names if name in suspects and name not in absorbed]
        if len(bad) >= 2 and len(bad) >= switch_share * len(names):
            text = "%d of the %d ports of %s fail their pairs" % (len(bad), len(names), switch)
            others = len([n for n in suspects if n not in absorbed and endpoints.get(n, {}).get("switch") != switch])
            evidence_list = [("matrix", text), ("topology", "the failing endpoints share %s only; %d suspects elsewhere"
                                                % (switch, others))]
            findings.append(_finding("switch", switch, switch, evidence_list))
            absorbed.update(bad)
    # Leaves whose way out fails: the uplink whose switch port counted errors, else the leaf's uplinks.
    host_ports = set("%s/%s" % (w.get("switch"), w.get("switch_port")) for w in endpoints.values() if w.get("switch"))
    for rail, found in sorted(paths.items()):
        for entry in found:
            leaf = entry["switch"]
            text = ("%d of the %d tests from %s's %d endpoints to other leaves failed or were slow, %d of its %d tests "
                    "within the leaf" % (entry["failed"], entry["tested"], leaf, entry["endpoints"], entry["same_failed"],
                                         entry["same_tested"]))
            counted = []
            for key, port in switch_ports.items():
                if key.startswith("%s/" % leaf) and key not in host_ports:
                    errors = _sum(port, SWITCH_RX_ERRORS) + _sum(port, SWITCH_TX)
                    if errors >= PHY_ERROR_MIN:
                        counted.append((errors, key))
            if counted:
                errors, key = max(counted)
                others = ["%s (%d)" % (k, e) for e, k in sorted(counted, reverse=True)[1:3]]
                findings.append(_finding("uplink", key, key, [
                    ("matrix", text), ("switch_rx", "%d receive or transmit errors on %s, a port no host of the plan is "
                                                    "on%s" % (errors, key, "; also " + ", ".join(others) if others else ""))]))
            else:
                why = ("no port of %s that no host is on counted errors" % leaf if switch_ports
                       else "the switches' counters were not read: which uplink is not known")
                findings.append(_finding("uplink", "%s/uplinks" % leaf, "the uplinks of %s" % leaf,
                                         [("matrix", text + "; " + why)]))
    # Endpoints: the part on the path.
    rail_mtus, rail_speeds = {}, {}
    for name, found in readings.items():
        rail = endpoints.get(name, {}).get("rail")
        if found.get("mtu"):
            rail_mtus.setdefault(rail, []).append(int(found["mtu"]))
        if found.get("speed_mbps"):
            rail_speeds.setdefault(rail, []).append(int(found["speed_mbps"]))
    rail_mtu = dict((rail, rail_value_of(values)) for rail, values in rail_mtus.items())
    rail_speed = dict((rail, rail_value_of(values)) for rail, values in rail_speeds.items())
    switch_heard = set(evidence.get("switch_lldp") or {})
    # What the evidence says of each endpoint that was read or is a suspect, the losses seen from both ends joined.
    found_of = {}
    for name in sorted(set(suspects) | set(readings) | set(
            n for n, w in endpoints.items() if "%s/%s" % (w.get("switch"), w.get("switch_port")) in switch_heard)):
        wiring = endpoints.get(name) or {}
        found_of[name] = endpoint_evidence(name, wiring, readings.get(name), switch_ports, rail_mtu.get(wiring.get("rail")),
                                           evidence.get("window_s"), rails_of_switches, evidence.get("switch_lldp"),
                                           loss_rate, rail_speed.get(wiring.get("rail")))
    explain_losses(found_of, rails)
    for name in sorted(suspects):
        if name in absorbed:
            continue
        wiring = endpoints.get(name) or {}
        entry = suspects[name]
        matrix = "%d of its %d pairs failed or were slow" % (entry["failed"], entry["tested"])
        if outcomes.get(name) is False:
            matrix += "; its retest against an anchor failed too"
        findings.append(classify_endpoint(name, wiring, matrix, found_of[name]))
    # Evidence without a failing matrix: a miswire, an MTU, a flap, a slower link, losses or a PCIe link that the
    # traffic survived.
    for name in sorted(found_of):
        if name in suspects or name in absorbed:
            continue
        wiring = endpoints.get(name) or {}
        found = [item for item in found_of[name]
                 if item[0] in STANDALONE or (item[0] == "pcie" and pcie_burst(readings.get(name)))]
        if found:
            findings.append(classify_endpoint(name, wiring, "", found))
    # GPUs: DCGM's failures, GPUDirect far below host memory on the same host, the ranks NCCL's RAS found missing.
    for host, found in sorted((evidence.get("hosts") or {}).items()):
        by_gpu = {}
        failed = ((found.get("dcgm") or {}).get("failed_gpus")) or []
        for gpu in failed:
            by_gpu.setdefault(str(gpu), []).append(("dcgm", "DCGM diagnostics failed on GPU %s" % gpu))
        gdr, mem = found.get("gdr_gbps"), found.get("host_mem_gbps")
        if gdr is not None and mem and float(gdr) < gdr_fraction * float(mem):
            gpu = found.get("gdr_gpu", failed[0] if failed else "?")
            by_gpu.setdefault(str(gpu), []).append(
                ("gdr", "GPUDirect %.1f Gb/s against %.1f Gb/s from host memory on the same pair: the GPU-NIC "
                        "path" % (float(gdr), float(mem))))
        missing = found.get("ras_missing") or []
        whole = [rank for rank in missing if rank.get("whole_host")]
        if whole:
            ras_host_finding(findings, host, whole)
        for rank in missing:
            if not rank.get("whole_host"):
                by_gpu.setdefault(str(rank.get("gpu")), []).append(("nccl_ras", _ras_text([rank], host)))
        for gpu, items in sorted(by_gpu.items()):
            findings.append(_finding("gpu", "%s/gpu%s" % (host, gpu), "%s on %s" % (gpu, host), items))
    order = {"high": 0, "medium": 1, "low": 2}
    findings.sort(key=lambda f: (order[f["confidence"]], -len(f["evidence"]), f["part"], str(f["id"])))
    return {"findings": findings, "rails": summaries, "transient": sorted(transient), "retest_rounds": rounds_needed,
            "retest_bound": retest_bound(max(len(by_host), 2))}
