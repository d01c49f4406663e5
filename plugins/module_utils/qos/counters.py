# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure functions over traffic counters, and the RoCE traffic check computed from two snapshots.

PRIVATE to the roce.fabric collection: may change without notice.

A snapshot is what ``roce.fabric.rdma_counters`` returns for one port: ``ethtool`` (``ethtool -S`` of the
netdev as a dict, or None), ``hw_counters`` (the RDMA port's ``hw_counters`` files as a dict) and
``driver``. Counter names, as the drivers document them:

- mlx5 ``ethtool -S`` (kernel ``Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst``):
  ``rx_prio[p]_bytes``, ``rx_prio[p]_packets``, ``tx_prio[p]_bytes``, ``tx_prio[p]_packets``,
  ``rx_prio[p]_pause``, ``tx_prio[p]_pause`` per priority p, and ``rx_vport_rdma_unicast_bytes`` /
  ``tx_vport_rdma_unicast_bytes`` for the RDMA traffic of the port;
- RDMA ``hw_counters`` (``/sys/class/infiniband/<dev>/ports/<n>/hw_counters``): mlx5_ib ``np_cnp_sent``,
  ``rp_cnp_handled``, ``rp_cnp_ignored``, ``np_ecn_marked_roce_packets``; irdma (its ``irdma_hw_stat_names``)
  ``cnpSent``, ``cnpHandled``, ``cnpIgnored``, ``RxECNMrkd``; Soft-RoCE (rdma_rxe) ``sent_pkts``, ``rcvd_pkts``.

A wire capture (``qos/dscp_capture.py``, which roce.fabric.traffic_window runs) counts RoCE v2 packets by ToS byte; it is the
evidence for software RDMA devices (Soft-RoCE, siw), whose packets go through the netdev where a capture
sees them. Hardware RoCE bypasses the kernel's packet path, so its evidence is the NIC's per-priority counters.
"""

from __future__ import annotations

import re

PRIO_RE = re.compile(r"^(rx|tx)_prio([0-7])_(bytes|packets|pause)$")
RDMA_BYTES = {"rx": "rx_vport_rdma_unicast_bytes", "tx": "tx_vport_rdma_unicast_bytes"}

# What the report calls a congestion counter, and its name per driver (first found wins).
CONGESTION = (
    ("cnp_sent", ("np_cnp_sent", "cnpSent")),
    ("cnp_handled", ("rp_cnp_handled", "cnpHandled")),
    ("cnp_ignored", ("rp_cnp_ignored", "cnpIgnored")),
    ("ecn_marked", ("np_ecn_marked_roce_packets", "RxECNMrkd")),
    ("packets_sent", ("sent_pkts",)),
    ("packets_received", ("rcvd_pkts",)),
)


def _int(text):
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def parse_ethtool_stats(text):
    """``ethtool -S`` output as {counter: int}; lines whose value is not an integer are left out."""
    stats = {}
    for line in text.splitlines():
        name, sep, value = line.strip().rpartition(":")
        if not sep or not name.strip():
            continue
        number = _int(value)
        if number is not None:
            stats[name.strip()] = number
    return stats


def parse_counter_lines(text):
    """``grep -H . <dir>/*`` output (``name:value`` lines) as {name: int}: a sysfs counter directory."""
    counters = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        number = _int(value) if sep else None
        if number is not None:
            counters[name.rsplit("/", 1)[-1]] = number
    return counters


def deltas(before, after):
    """after - before per counter present in both; a counter that went down (reset, wrap) is left out."""
    out = {}
    for name, value in (after or {}).items():
        old = (before or {}).get(name)
        if isinstance(old, int) and isinstance(value, int) and value >= old:
            out[name] = value - old
    return out


def priority_stats(stats):
    """{priority: {"rx_bytes": n, "tx_pause": n, ...}} from mlx5-style per-priority names; {} when none."""
    out = {}
    for name, value in stats.items():
        match = PRIO_RE.match(name)
        if match:
            out.setdefault(int(match.group(2)), {})["%s_%s" % (match.group(1), match.group(3))] = value
    return out


def congestion(hw_delta):
    """The congestion counters' changes under driver-neutral names, only those the driver has."""
    out = {}
    for label, names in CONGESTION:
        for name in names:
            if name in hw_delta:
                out[label] = hw_delta[name]
                break
    return out


def _size(count):
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return ("%d %s" % (value, unit)) if unit == "B" else ("%.1f %s" % (value, unit))
        value /= 1000.0
    return "%d B" % count


def _pct(share):
    return "%.1f%%" % (100.0 * share)


def counter_share(eth_delta, priority):
    """The share of the port's RDMA bytes that rode ``priority``, per direction, from ethtool deltas.

    Returns (shares, evidence): shares {"tx": f, "rx": f} for the directions with traffic, evidence the
    numbers behind them. The denominator is the RDMA byte count where the driver has one (mlx5's
    vport_rdma counters), else the bytes of every priority. None when there are no per-priority byte counters.
    """
    prios = priority_stats(eth_delta)
    if not any(("%s_bytes" % d) in values for values in prios.values() for d in ("rx", "tx")):
        return None, None
    shares, evidence = {}, {}
    for direction in ("tx", "rx"):
        key = "%s_bytes" % direction
        on_prio = prios.get(priority, {}).get(key, 0)
        total = eth_delta.get(RDMA_BYTES[direction])
        basis = RDMA_BYTES[direction]
        if total is None:
            total = sum(values.get(key, 0) for values in prios.values())
            basis = "%s_prio0..7_bytes" % direction
        busiest = max(prios, key=lambda p: prios[p].get(key, 0))
        # A pause counter the driver does not print (per-priority pauses before PFC is on, some drivers never) is
        # not reported, never 0.
        evidence[direction] = dict(on_priority=on_prio, total=total, basis=basis, busiest=busiest,
                                   pause=prios.get(priority, {}).get("%s_pause" % direction))
        if total > 0:
            shares[direction] = min(1.0, float(on_prio) / total)
    return shares, evidence


# Base Transport Header opcodes (InfiniBand Architecture Specification Vol. 1, "OpCode field" table): RC 0x00-0x1f,
# UD 0x60-0x7f. The ones perftest, rping and the CM send.
BTH_OPCODES = {0x04: "RC SEND only", 0x06: "RC WRITE first", 0x07: "RC WRITE middle", 0x08: "RC WRITE last",
               0x0a: "RC WRITE only", 0x0c: "RC READ request", 0x10: "RC READ response only", 0x11: "RC ACK",
               0x64: "UD SEND only"}


def off_contract(capture, dscp):
    """What the captured packets that did not carry ``dscp`` were, from the capture's per-ToS ``detail``.

    Returns [] when all did, else one string per other ToS, e.g. "ToS 0 (DSCP 0): 2 packets, sent UD SEND only
    x1, received UD SEND only x1, to QP 1 (connection management)". QP 1 is the General Services QP that carries
    the RDMA CM's handshake and disconnect messages; any other QP is a connection's data.
    """
    out = []
    for tos, entry in sorted(((capture or {}).get("detail") or {}).items(), key=lambda item: int(item[0])):
        if int(tos) >> 2 == int(dscp) or not isinstance(entry, dict):
            continue
        ops = []
        for key, count in sorted((entry.get("opcodes") or {}).items()):
            direction, _space, code = key.partition(" ")
            name = BTH_OPCODES.get(int(code, 16), "opcode " + code) if code.startswith("0x") else "opcode " + code
            ops.append("%s %s x%d" % (direction, name, count))
        qps = sorted((entry.get("qps") or {}), key=int)
        where = ", to QP %s" % ", ".join(qps) if qps else ""
        if qps == ["1"]:
            where += " (connection management)"
        out.append("ToS %s (DSCP %d): %d packets, %s%s" % (tos, int(tos) >> 2, sum((entry.get("opcodes") or {}).values()),
                                                           ", ".join(ops), where))
    return out


def management_packets(capture, dscp, sent_only):
    """How many captured packets off ``dscp`` were connection management alone: a ToS whose packets all went to QP 1
    (the General Services QP: the RDMA CM's requests, replies, rejects and disconnects), those this host sent when
    ``sent_only``. Not data: a refused connection's tries (a launched slot's client before its server listens) make
    a few, on whatever class the rejecting side answers."""
    count = 0
    for tos, entry in ((capture or {}).get("detail") or {}).items():
        if not isinstance(entry, dict) or int(tos) >> 2 == int(dscp) or sorted(entry.get("qps") or {}) != ["1"]:
            continue
        count += sum(int(n) for key, n in (entry.get("opcodes") or {}).items()
                     if not sent_only or key.startswith("sent "))
    return count


def pause_words(priority, evidence):
    """``PFC pause frames on priority 3 rx 12, tx 0``, each direction whose counter the driver did not print named
    as not reported (``tx not reported: ethtool -S prints no tx_prio3_pause``)."""
    parts, missing = [], []
    for direction in ("rx", "tx"):
        value = (evidence.get(direction) or {}).get("pause")
        if value is None:
            parts.append("%s not reported" % direction)
            missing.append("%s_prio%d_pause" % (direction, priority))
        else:
            parts.append("%s %d" % (direction, value))
    unprinted = " (ethtool -S prints no %s)" % ", ".join(missing) if missing else ""
    return "PFC pause frames on priority %d %s%s" % (priority, ", ".join(parts), unprinted)


def traffic_check(netdev, before, after, priority, dscp, capture=None, min_share=0.95, min_bytes=1000000,
                  min_packets=20):
    """The report check ``traffic <netdev>``: did the RDMA traffic between two snapshots ride the RoCE class?

    ``before``/``after``: rdma_counters snapshots of the port; ``capture``: {"packets": n, "dscp": {"26": n}}
    from a wire capture over the same window, or None. Returns {"status", "msg", "share", "evidence"}.
    """
    eth_delta = deltas((before or {}).get("ethtool"), (after or {}).get("ethtool"))
    hw = congestion(deltas((before or {}).get("hw_counters"), (after or {}).get("hw_counters")))
    hw_text = (" RDMA counters: %s." % ", ".join("%s +%d" % (k, v) for k, v in hw.items())) if hw else ""
    fix = (" The RDMA traffic does not ride the class the fabric protects: check the NIC's trust mode and DSCP map,"
           " RDMA-CM's default ToS (roce.fabric.nic_qos), NCCL_IB_TC and perftest's ToS. A connection's class is"
           " chosen by the side that opens it, so a peer's wrong RDMA-CM ToS shows here too: see each host's qos check.")
    driver = (after or {}).get("driver") or "unknown"
    shares, evidence = counter_share(eth_delta, priority)
    if shares is not None:
        totals = dict((d, evidence[d]["total"]) for d in evidence)
        if max(totals.values() or [0]) < min_bytes:
            return dict(status="skipped", share=None, evidence=dict(evidence, hw=hw),
                        msg="only %s of RDMA traffic on %s in the window (under %s); no share to judge.%s"
                        % (_size(max(totals.values() or [0])), netdev, _size(min_bytes), hw_text))
        share = min(shares.values())
        parts = []
        for d in ("tx", "rx"):
            if d in shares:
                e = evidence[d]
                parts.append("%s %s of %s (%s%s)" % ("sent" if d == "tx" else "received", _size(e["on_priority"]),
                                                     _size(e["total"]), _pct(shares[d]),
                                                     "" if e["busiest"] == priority else "; most on priority %d" % e["busiest"]))
        msg = "priority %d carried the RDMA bytes of %s: %s; %s (ethtool -S, driver %s).%s" % (
            priority, netdev, ", ".join(parts), pause_words(priority, evidence), driver, hw_text)
        passed = share >= min_share
        return dict(status="passed" if passed else "failed", share=round(share, 4), evidence=dict(evidence, hw=hw),
                    msg=msg if passed else msg + " Under the threshold %s." % _pct(min_share) + fix)
    if capture and isinstance(capture.get("packets"), int):
        # The packets this host sent say what its own settings do; all packets include its peers'.
        view = capture["sent"] if isinstance(capture.get("sent"), dict) else capture
        whose = "this host sent" if view is not capture else "seen"
        management = management_packets(capture, dscp, sent_only=view is not capture)
        total = int(view.get("packets") or 0) - management
        counts = dict((str(k), int(v)) for k, v in (view.get("dscp") or {}).items())
        if total < min_packets:
            return dict(status="skipped", share=None, evidence=dict(capture=capture, hw=hw),
                        msg="the capture on %s saw %d RoCE v2 packets %s (under %d); no share to judge.%s"
                        % (netdev, total, whose, min_packets, hw_text))
        on = counts.get(str(dscp), 0)
        share = float(on) / total
        seen = ", ".join("DSCP %s: %d" % (k, counts[k]) for k in sorted(counts, key=int))
        others = off_contract(capture, dscp)
        off_text = (" Seen off the contract: %s." % "; ".join(others)) if others else ""
        if management:
            off_text += (" The %d connection-management packet(s) (QP 1) off the contract are not data and are left"
                         " out of the share." % management)
        template = ("%d of %d RoCE v2 packets %s on %s carried DSCP %d, the contract's (%s; wire capture: software"
                    " RDMA sends through the netdev; by DSCP: %s).%s%s")
        msg = template % (on, total, whose, netdev, dscp, _pct(share), seen, off_text, hw_text)
        passed = share >= min_share
        return dict(status="passed" if passed else "failed", share=round(share, 4), evidence=dict(capture=capture, hw=hw),
                    msg=msg if passed else msg + " Under the threshold %s." % _pct(min_share) + fix)
    return dict(status="skipped", share=None, evidence=dict(hw=hw),
                msg="%s (driver %s) has no per-priority byte counters in ethtool -S and its RDMA traffic was not"
                    " captured: read the class it rode on the switch's per-priority counters.%s" % (netdev, driver, hw_text))


def traffic_checks(before_results, after_results, priority, dscp, captures=None, min_share=0.95, min_bytes=1000000):
    """The ``traffic <netdev>`` check records of one host's traffic window, from the port snapshots before and after
    (each with its ``item``: ``netdev``, ``device``; a ``msg`` where it could not be read) and the captures' counts
    (``{netdev: counts}``; a port without is judged on its counters alone). A port whose counters could not be read
    is a failed check that says why."""
    captures = captures or {}
    checks = []
    for before, after in zip(before_results or [], after_results or []):
        item = before.get("item") or {}
        netdev = item.get("netdev")
        name = "traffic %s" % netdev
        if "msg" in before or "msg" in after:
            checks.append({"name": name, "status": "failed",
                           "msg": "%s: the counters could not be read: %s" % (netdev, before.get("msg", after.get("msg"))),
                           "command": "roce.fabric.rdma_counters on %s" % netdev})
            continue
        check = traffic_check(netdev, before, after, priority, dscp, capture=captures.get(netdev),
                              min_share=float(min_share), min_bytes=int(min_bytes))
        command = "roce.fabric.rdma_counters (ethtool -S %s, %s hw_counters) before and after%s" % (
            netdev, item.get("device"), " + wire capture of UDP 4791" if netdev in captures else "")
        record = {"name": name, "status": check["status"], "msg": check["msg"], "command": command,
                  "netdev": netdev, "device": item.get("device")}
        # The window's counter deltas, the evidence the report's fault location reads (only those that moved).
        nic = dict((key, value) for key, value in deltas(before.get("ethtool") or {}, after.get("ethtool") or {}).items()
                   if value)
        # How often the carrier went down or up in the window (sysfs, every driver), with the NIC's own counters.
        if isinstance(before.get("carrier_changes"), int) and isinstance(after.get("carrier_changes"), int):
            if after["carrier_changes"] > before["carrier_changes"]:
                nic["carrier_changes"] = after["carrier_changes"] - before["carrier_changes"]
        if nic:
            record["nic"] = nic
        # The RDMA port's counters that moved (transport retries and sequence errors among them), and the MTU.
        rdma = dict((key, value) for key, value in deltas(before.get("hw_counters") or {},
                                                          after.get("hw_counters") or {}).items() if value)
        if rdma:
            record["rdma"] = rdma
        if after.get("mtu"):
            record["mtu"] = after["mtu"]
        # The link's rate (Mb/s) at the window's end, where the driver knows it.
        if after.get("speed"):
            record["speed_mbps"] = after["speed"]
        # Its MAC address, as a switch's LLDP table names the port (lldpd's default port ID on a host).
        if after.get("mac"):
            record["mac"] = after["mac"]
        # The window's length, for the rates of what the counters counted (pauses a second).
        if isinstance(before.get("read_at"), (int, float)) and isinstance(after.get("read_at"), (int, float)) and \
                after["read_at"] > before["read_at"]:
            record["window_s"] = round(after["read_at"] - before["read_at"], 1)
        checks.append(record)
    return checks
