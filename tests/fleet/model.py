# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet model for the fault location (plugins/module_utils/validate/locate.py): N hosts x R rails, each rail's
host ports on that rail's leaves (``hosts_per_leaf`` a leaf), seeded noise and injected faults. Not shipped.

It produces what a validation reads, in the tools' formats where the corpus has them: ``ethtool -S`` text before and
after the window (mlx5 counter names), the AER files of the kernel's ABI document and the four link files of sysfs,
and the host's LLDP neighbour as ``lldpcli -f json0`` prints it, each read back through the collection's own parsers;
the pair results as ``(a, b, ok, bw_gbps)``; switch port counters and DCGM / GPUDirect results as the readings the
engine takes (no real sample of those tools' output is in the corpus yet).

The switches' counters are missing from 20 % of the runs. Noise: every healthy pair's bandwidth is the line rate
times uniform(1 - noise, 1 + noise); 1 % of pair tests fail transiently; 0.5 % of healthy ports see a benign few
receive errors. A fault and what it does:

=============  ==========================================================================================
nic_port       the port's pairs fail (90 %) or run at a third; receive discards at the host
cable          pairs slow (20-70 %) or failing (30 %); receive errors at both ends, at times a link flap
switch_port    pairs slow or failing; transmit errors and discards on the switch port, receive errors at the host
pcie_link      pairs at half rate (x8 of x16, or 16 of 32 GT/s, under load); AER errors at the upstream port (half)
gpu            the matrix is fine; DCGM fails the GPU (70 %); GPUDirect at a third of host memory
host           every pair of every rail of the host fails
switch         every pair through the leaf fails
miswire        two ports of one host swapped between their rails' leaves: their pairs fail, LLDP shows it
mtu            the port's MTU is 1500 on a 9000 rail: half its pairs fail
uplink         one leaf-to-spine link: the tests that leave the leaf and whose path ECMP hashes onto that spine
               (a quarter, with four spines) slow or failing as a cable's; receive errors on the leaf's uplink port
=============  ==========================================================================================

A leaf has one uplink to each of its rail's ``spines`` (ports ``swp<hosts_per_leaf + 1 + s>``); a test between two
leaves takes the spine its pair hashes to (CRC-32 of the two names and the rail), as ECMP on RoCE v2's UDP source
port would; a test within a leaf never leaves it.
"""

from __future__ import annotations

import json
import random
import zlib

from ansible_collections.roce.fabric.plugins.module_utils.qos.counters import deltas, parse_ethtool_stats
from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers as nvue_parsers
from ansible_collections.roce.fabric.plugins.module_utils.validate import lldp, pcie
from ansible_collections.roce.fabric.plugins.module_utils.validate.schedule import circle_rounds, sparse_rounds

FAULTS = ("nic_port", "cable", "switch_port", "pcie_link", "gpu", "host", "switch", "miswire", "mtu", "uplink")
ETHTOOL_NAMES = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_crc_errors_phy", "rx_symbol_err_phy",
                 "rx_corrected_bits_phy", "rx_bits_phy", "link_down_events_phy", "rx_discards_phy",
                 "tx_pause_ctrl_phy", "rx_pci_signal_integrity")
AER_NAMES = ("Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover", "Replay Timer Timeout",
             "Advisory Non-Fatal", "Corrected Internal Error", "Header Log Overflow")


def ethtool_text(counters):
    """``ethtool -S`` as mlx5 prints it: a header, then one indented ``name: value`` line per counter."""
    return "NIC statistics:\n" + "".join("     %s: %d\n" % (name, counters.get(name, 0)) for name in ETHTOOL_NAMES)


def aer_text(receiver_errors):
    lines = ["%s %d" % (name, receiver_errors if name == "Receiver Error" else 0) for name in AER_NAMES]
    return "\n".join(lines + ["TOTAL_ERR_COR %d" % receiver_errors]) + "\n"


def lldp_json0(interface, switch, port, chassis_mac="56:da:ac:79:56:12"):
    """``lldpcli -f json0 show neighbors details`` on the host, in the shape of the captured sample
    (fixtures/lldp/lldpcli_json0_host_1.0.16.txt): the switch's name, its port as an ifname port ID."""
    return json.dumps({"lldp": [{"interface": [{
        "name": interface, "via": "LLDP", "rid": "1", "age": "0 day, 00:00:04",
        "chassis": [{"id": [{"type": "mac", "value": chassis_mac}], "name": [{"value": switch}]}],
        "port": [{"id": [{"type": "ifname", "value": port}], "descr": [{"value": port}], "ttl": [{"value": "120"}]}],
    }]}]}, indent=2)


def nv_lldp_table(rows):
    """Cumulus Linux's ``nv show interface lldp`` table, laid out as the sample of NVIDIA's NVUE reference
    (fixtures/lldp/nv_show_interface_lldp_cl5.txt): ``rows`` of (interface, speed, type, remote host, remote port)."""
    header = ("Interface", "Speed", "Type", "Remote Host", "Remote Port")
    widths = [max(len(str(row[i])) for row in [header] + list(rows)) for i in range(5)]

    def line(cells):
        return "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(cells))

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(row) for row in rows]) + "\n"


def link_text(width, max_width=16, speed="32.0 GT/s PCIe", max_speed="32.0 GT/s PCIe"):
    """The four link files (current_link_speed, current_link_width, max_link_speed, max_link_width) as cat prints them."""
    return "%s\n%d\n%s\n%d\n" % (speed, width, max_speed, max_width)


class Fleet(object):
    def __init__(self, hosts, rails=8, hosts_per_leaf=32, line_gbps=400.0, schedule="full", sparse=None, spines=4):
        self.hosts = ["h%04d" % i for i in range(hosts)]
        self.hosts_per_leaf = hosts_per_leaf
        self.spines = spines
        self.rails = ["r%d" % r for r in range(rails)]
        self.line_gbps = line_gbps
        self.endpoints = {}
        for i, host in enumerate(self.hosts):
            for r, rail in enumerate(self.rails):
                self.endpoints["%s/%s" % (host, rail)] = dict(
                    host=host, rail=rail, nic="mlx5_%d" % r, netdev="ens%dnp0" % (r + 1),
                    pci="0000:%02x:00.0" % (0x18 + 0x10 * r), upstream="0000:%02x:01.0" % (0x17 + 0x10 * r),
                    mac="02:72:%02x:%02x:%02x:00" % (i // 256, i % 256, r),
                    switch="leaf-%s-%d" % (rail, i // hosts_per_leaf), switch_port="swp%d" % (i % hosts_per_leaf + 1))
        # The pair tests' rounds: the full matrix, or the sparse first pass with the leaves as its groups (``sparse``
        # rounds, the schedule's default when None).
        self.leaf = dict((host, i // hosts_per_leaf) for i, host in enumerate(self.hosts))
        if schedule == "full":
            self.rounds = circle_rounds(self.hosts)
        else:
            self.rounds = sparse_rounds(self.hosts, self.leaf, sparse)["rounds"]

    def describe(self, plan=True):
        """What the engine is told of the fleet: with ``plan``, each port's switch and switch port (the site's cabling
        plan); without, the switch of each port is what LLDP says."""
        if plan:
            return {"hosts": list(self.hosts), "endpoints": self.endpoints}
        return {"hosts": list(self.hosts), "endpoints": dict(
            (name, dict((k, v) for k, v in wiring.items() if k not in ("switch", "switch_port")))
            for name, wiring in self.endpoints.items())}


def pick(fleet, kind, rng):
    """A fault of ``kind`` on a part chosen at random: ``{kind, ids (what the right finding names), ...}``."""
    host = rng.choice(fleet.hosts)
    rail = rng.choice(fleet.rails)
    endpoint = "%s/%s" % (host, rail)
    wiring = fleet.endpoints[endpoint]
    if kind == "switch_port":
        return dict(kind=kind, endpoint=endpoint, ids=["%s/%s" % (wiring["switch"], wiring["switch_port"])])
    if kind == "gpu":
        gpu = rng.randrange(len(fleet.rails))
        return dict(kind=kind, host=host, gpu=gpu, ids=["%s/gpu%d" % (host, gpu)])
    if kind == "host":
        return dict(kind=kind, host=host, ids=[host])
    if kind == "switch":
        return dict(kind=kind, switch=wiring["switch"], ids=[wiring["switch"]])
    if kind == "uplink":
        spine = rng.randrange(fleet.spines)
        return dict(kind=kind, switch=wiring["switch"], spine=spine,
                    ids=["%s/swp%d" % (wiring["switch"], fleet.hosts_per_leaf + 1 + spine)])
    if kind == "miswire":
        other = rng.choice([r for r in fleet.rails if r != rail])
        second = "%s/%s" % (host, other)
        return dict(kind=kind, endpoint=endpoint, second=second, ids=[endpoint, second])
    return dict(kind=kind, endpoint=endpoint, ids=[endpoint])


def run(fleet, faults, seed, noise=0.05, transient=0.01, benign=0.005, gpus=True, switch_read=0.8, lldp_all=False):
    """One validation of the fleet with ``faults``: ``(rails, evidence, retest)`` where ``retest(endpoint)`` is the
    outcome of that endpoint's test against a healthy anchor (what the retest round would give). The switches are
    read in ``switch_read`` of the runs (else their counters are missing, as when the switch stage cannot log in);
    ``lldp_all`` gives every port's LLDP neighbour (for a fleet described without its cabling plan)."""
    rng = random.Random(seed)
    switches_read = rng.random() < switch_read
    bad_endpoint = {}   # endpoint -> how its pairs behave: ("fail", p) or ("slow", factor, p_fail)
    readings = {}
    switch_ports = {}
    host_info = {}
    dead_hosts = set(f["host"] for f in faults if f["kind"] == "host")
    dead_switches = set(f["switch"] for f in faults if f["kind"] == "switch")
    nic = {}
    for fault in faults:
        kind = fault["kind"]
        endpoint = fault.get("endpoint")
        if kind == "nic_port":
            bad_endpoint[endpoint] = ("mixed", 0.9, 0.33)
            nic[endpoint] = dict(rx_discards_phy=rng.randint(10 ** 4, 10 ** 6))
        elif kind == "cable":
            bad_endpoint[endpoint] = ("mixed", 0.3, rng.uniform(0.2, 0.7))
            nic[endpoint] = dict(rx_crc_errors_phy=rng.randint(100, 10000), rx_symbol_err_phy=rng.randint(100, 10000),
                                 link_down_events_phy=rng.choice([0, 0, 1, 2]))
            wiring = fleet.endpoints[endpoint]
            switch_ports["%s/%s" % (wiring["switch"], wiring["switch_port"])] = dict(in_errors=rng.randint(100, 10000))
        elif kind == "switch_port":
            bad_endpoint[endpoint] = ("mixed", 0.3, rng.uniform(0.2, 0.7))
            nic[endpoint] = dict(rx_crc_errors_phy=rng.randint(50, 5000))
            wiring = fleet.endpoints[endpoint]
            switch_ports["%s/%s" % (wiring["switch"], wiring["switch_port"])] = dict(
                out_errors=rng.randint(100, 10000), out_discards=rng.randint(0, 10000))
        elif kind == "pcie_link":
            bad_endpoint[endpoint] = ("mixed", 0.0, rng.uniform(0.45, 0.55))
            if rng.random() < 0.5:
                readings.setdefault(endpoint, {})["pcie_width"] = 8
            else:
                readings.setdefault(endpoint, {})["pcie_speed"] = "16.0 GT/s PCIe"
            if rng.random() < 0.5:
                readings[endpoint]["upstream_aer"] = rng.randint(5, 500)
        elif kind == "gpu":
            failed = [fault["gpu"]] if rng.random() < 0.7 else []
            host_info[fault["host"]] = dict(dcgm=dict(failed_gpus=failed), gdr_gbps=fleet.line_gbps * rng.uniform(0.2, 0.4),
                                            host_mem_gbps=fleet.line_gbps * rng.uniform(0.95, 1.0), gdr_gpu=fault["gpu"])
        elif kind == "miswire":
            for mine, theirs in ((endpoint, fault["second"]), (fault["second"], endpoint)):
                bad_endpoint[mine] = ("mixed", 1.0, 0.0)
                other = fleet.endpoints[theirs]
                readings.setdefault(mine, {})["lldp"] = dict(switch=other["switch"], port=other["switch_port"])
        elif kind == "mtu":
            bad_endpoint[endpoint] = ("mixed", 0.5, 1.0)
            readings.setdefault(endpoint, {})["mtu"] = 1500
    bad_uplink = {}   # (leaf, spine) -> how the tests through it behave
    for fault in faults:
        if fault["kind"] == "uplink":
            bad_uplink[(fault["switch"], fault["spine"])] = ("mixed", 0.3, rng.uniform(0.2, 0.7))
            switch_ports[fault["ids"][0]] = dict(in_errors=rng.randint(100, 10000))
    for host in dead_hosts:
        for rail in fleet.rails:
            bad_endpoint["%s/%s" % (host, rail)] = ("mixed", 1.0, 0.0)
    for name, wiring in fleet.endpoints.items():
        if wiring["switch"] in dead_switches:
            bad_endpoint[name] = ("mixed", 1.0, 0.0)

    def outcome(a, b):
        """(ok, bw) of one pair test between two endpoints of a rail."""
        if rng.random() < transient:
            return False, None
        factor = 1.0
        behaviours = [bad_endpoint.get(a), bad_endpoint.get(b)]
        if bad_uplink:
            left, right = fleet.endpoints[a]["switch"], fleet.endpoints[b]["switch"]
            if left != right:
                spine = zlib.crc32(("%s %s" % (a, b)).encode()) % fleet.spines
                behaviours += [bad_uplink.get((left, spine)), bad_uplink.get((right, spine))]
        for behaviour in behaviours:
            if behaviour:
                _how, p_fail, slow = behaviour
                if rng.random() < p_fail:
                    return False, None
                factor = min(factor, slow if slow else 1.0)
        return True, fleet.line_gbps * factor * rng.uniform(1 - noise, 1 + noise)

    rails = {}
    for rail in fleet.rails:
        results = []
        for rnd in fleet.rounds:
            for a, b in rnd:
                ea, eb = "%s/%s" % (a, rail), "%s/%s" % (b, rail)
                ok, bw = outcome(ea, eb)
                results.append((ea, eb, ok, bw))
        rails[rail] = results

    # The readings, through the tools' formats and the collection's parsers.
    evidence = {}
    if lldp_all:
        # A switch that is down sends no LLDP, and a host that is down is not read at all.
        for name, wiring in fleet.endpoints.items():
            if wiring["switch"] not in dead_switches and wiring["host"] not in dead_hosts:
                readings.setdefault(name, {}).setdefault("lldp", dict(switch=wiring["switch"], port=wiring["switch_port"]))
    for name in fleet.endpoints:
        extra = nic.get(name)
        if extra is None and rng.random() < benign:
            extra = dict(rx_crc_errors_phy=rng.randint(1, 5))
        found = readings.get(name, {})
        if extra is None and not found:
            continue
        before = dict((counter, rng.randint(0, 10 ** 6)) for counter in ("rx_packets", "tx_packets"))
        before["rx_bits_phy"] = 10 ** 15
        after = dict(before)
        after["rx_bits_phy"] = before["rx_bits_phy"] + 4 * 10 ** 12
        after["rx_corrected_bits_phy"] = rng.randint(0, 10)
        for counter, value in (extra or {}).items():
            after[counter] = after.get(counter, 0) + value
        entry = {"nic": deltas(parse_ethtool_stats(ethtool_text(before)), parse_ethtool_stats(ethtool_text(after)))}
        if "pcie_width" in found or "pcie_speed" in found or "upstream_aer" in found:
            link = pcie.link_files(link_text(found.get("pcie_width", 16), speed=found.get("pcie_speed", "32.0 GT/s PCIe")))
            entry["pcie"] = dict(link, upstream_aer_correctable=pcie.aer_delta(aer_text(0), aer_text(found.get("upstream_aer", 0))))
        if "lldp" in found:
            netdev = fleet.endpoints[name]["netdev"]
            heard = lldp.parse_neighbors(lldp_json0(netdev, found["lldp"]["switch"], found["lldp"]["port"]))[netdev]
            entry["lldp"] = dict(switch=heard["switch"], port=heard["port"])
        if "mtu" in found:
            entry["mtu"] = found["mtu"]
        evidence[name] = entry
    # The rail's MTU from the ports that report one: every other port of the faulty one's rail at 9000.
    wrong_mtu = set(f["endpoint"] for f in faults if f["kind"] == "mtu")
    for name in sorted(wrong_mtu):
        rail = fleet.endpoints[name]["rail"]
        for host in fleet.hosts[:5]:
            other = "%s/%s" % (host, rail)
            if other not in wrong_mtu:
                evidence.setdefault(other, {"nic": {}})["mtu"] = 9000
    if gpus:
        for host in fleet.hosts:
            if host not in host_info and rng.random() < 0.02:
                mem = fleet.line_gbps * rng.uniform(0.95, 1.0)
                host_info[host] = dict(dcgm=dict(failed_gpus=[]), gdr_gbps=mem * rng.uniform(0.9, 1.0), host_mem_gbps=mem)

    def retest(endpoint):
        """True when the endpoint passes its test against a healthy anchor (a transient failure 1 % of the time)."""
        behaviour = bad_endpoint.get(endpoint)
        if behaviour:
            _how, p_fail, slow = behaviour
            return rng.random() >= p_fail and (slow or 1.0) >= 0.93
        return rng.random() >= transient

    # The switches' own LLDP tables (when they are read): a miswired port's planned switch port hears the other one.
    switch_lldp = {}
    if switches_read:
        for fault in faults:
            if fault["kind"] != "miswire":
                continue
            for mine, theirs in ((fault["endpoint"], fault["second"]), (fault["second"], fault["endpoint"])):
                planned, other = fleet.endpoints[mine], fleet.endpoints[theirs]
                table = nvue_parsers.lldp_neighbours(nv_lldp_table([(planned["switch_port"], "400G", "swp",
                                                                     other["host"], other["mac"])]))
                heard = table[planned["switch_port"]]
                switch_lldp["%s/%s" % (planned["switch"], planned["switch_port"])] = dict(host=heard["host"],
                                                                                          port=heard["port"])
    return rails, dict(endpoints=evidence, switch_ports=switch_ports if switches_read else {}, hosts=host_info,
                       switch_lldp=switch_lldp, window_s=60), retest
