# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RDMA telemetry: the counters of every RDMA device and port as Prometheus metric families.

PRIVATE to the roce.fabric collection: may change without notice.

Two users: the RDMA exporter (``roles/rdma_exporter/files/roce_rdma_exporter.py``, installed on hosts and in the
Kubernetes DaemonSet's image) and the unit tests. ``read_sysfs`` is the only function that reads anything (files
under ``/sys``, nothing else); everything after it is pure: a snapshot in, metric families out.

A snapshot::

    {"devices": [{"name": "rxe0", "driver": "rxe", "node_type": "1: CA", "hw_counters": {...},
                  "ports": [{"port": 1, "state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "10 Gb/sec (1X QDR)",
                             "link_layer": "Ethernet", "netdev": "enp1s0", "gids": 2,
                             "counters": {...}, "hw_counters": {...}}]}],
     "netdevs": {"enp1s0": {"mtu": 4200, "statistics": {"tx_bytes": 1, ...}}}}

Metric names are the same whatever the driver; the driver's own counter name is kept as the ``counter`` label of
``rdma_port_hw_stat_total`` and ``rdma_device_hw_stat_total`` (every file under ``hw_counters/``) and
``rdma_port_stat_total`` (every file under ``counters/``, the InfiniBand port counters). Names follow Prometheus'
conventions as ``promtool check metrics`` applies them (base units, ``_total`` on counters, no type in a name). The counters every
RoCE fabric watches get a name of their own, from the driver's name (``COMMON_HW_COUNTERS``, documented in
docs/telemetry.md). Per-priority bytes, packets and pause frames come from ``ethtool -S`` of the port's netdev,
read by the parsers of the validation's traffic check (``qos/counters.py``).
"""

from __future__ import annotations

import os
import re

from ansible_collections.roce.fabric.plugins.module_utils.qos.counters import CONGESTION, parse_ethtool_stats, priority_stats

# Files under hw_counters/ that are settings, not counters: ib_core adds "lifespan" (how long, in ms, the kernel
# keeps a read of the hardware statistics) to every hw_counters directory.
NOT_COUNTERS = ("lifespan",)

# The counters a RoCE fabric watches, under one name whatever the driver: (name, help, driver names, first found).
# The congestion entries are the validation report's own (qos/counters.py CONGESTION); the driver names come from
# the drivers' statistics tables: mlx5_ib (drivers/infiniband/hw/mlx5/counters.c), irdma (irdma_hw_stat_names),
# erdma (erdma_descs: tx_packets_cnt ...; Alibaba Cloud kernels keep the hw_ prefix of the first posting), and
# rdma_rxe (rxe_hw_counters.c, captured from the lab's kernel in fixtures/telemetry).
_CONGESTION = dict(CONGESTION)
COMMON_HW_COUNTERS = (
    ("cnp_sent", "Congestion notification packets (CNPs) this device sent: it received ECN-marked RoCE packets.",
     _CONGESTION["cnp_sent"]),
    ("cnp_handled", "CNPs this device received and slowed its sending for (DCQCN reaction point).",
     _CONGESTION["cnp_handled"]),
    ("cnp_ignored", "CNPs this device received and ignored.", _CONGESTION["cnp_ignored"]),
    ("ecn_marked_packets", "RoCE packets that arrived with the ECN congestion mark.", _CONGESTION["ecn_marked"]),
    ("out_of_sequence_packets", "Packets received out of sequence (a packet was lost on the way).",
     ("out_of_sequence", "out_of_seq_request")),
    ("duplicate_requests", "Duplicate requests received (the sender retransmitted).", ("duplicate_request",)),
    ("sequence_error_naks", "NAKs for a packet sequence error this device received: it had to retransmit.",
     ("packet_seq_err", "rcvd_seq_err")),
    ("local_ack_timeouts", "Times an ACK did not come in time and this device retransmitted.",
     ("local_ack_timeout_err",)),
    ("retry_exceeded_errors", "Connections that failed after the transport retry count ran out.",
     ("retry_exceeded_err",)),
    ("rnr_retry_exceeded_errors", "Connections that failed after the receiver-not-ready retry count ran out.",
     ("rnr_nak_retry_err", "retry_rnr_exceeded_err")),
    ("packets_sent", "RDMA packets sent, as the driver counts them.",
     _CONGESTION["packets_sent"] + ("tx_packets_cnt", "hw_tx_packets_cnt")),
    ("packets_received", "RDMA packets received, as the driver counts them.",
     _CONGESTION["packets_received"] + ("rx_packets_cnt", "hw_rx_packets_cnt")),
    ("bytes_sent", "RDMA bytes sent, as the driver counts them.", ("tx_bytes_cnt", "hw_tx_bytes_cnt")),
    ("bytes_received", "RDMA bytes received, as the driver counts them.", ("rx_bytes_cnt", "hw_rx_bytes_cnt")),
)
# InfiniBand port counters (counters/) with a name of their own. port_xmit_data and port_rcv_data count 4-octet
# words (InfiniBand Architecture Specification, PortCounters): bytes are the value times 4.
PORT_COUNTERS = (
    ("port_transmit_bytes", "Bytes the port sent (counters/port_xmit_data x 4).", "port_xmit_data", 4),
    ("port_receive_bytes", "Bytes the port received (counters/port_rcv_data x 4).", "port_rcv_data", 4),
    ("port_transmit_packets", "Packets the port sent (counters/port_xmit_packets).", "port_xmit_packets", 1),
    ("port_receive_packets", "Packets the port received (counters/port_rcv_packets).", "port_rcv_packets", 1),
    ("port_receive_errors", "Packets the port received with errors (counters/port_rcv_errors).", "port_rcv_errors", 1),
    ("port_transmit_discards", "Packets the port discarded instead of sending (counters/port_xmit_discards).",
     "port_xmit_discards", 1),
    ("port_link_downed", "Times the link went down (counters/link_downed).", "link_downed", 1),
)
NETDEV_STATISTICS = (
    ("netdev_transmit_bytes", "Bytes the port's netdev sent (/sys/class/net/<netdev>/statistics/tx_bytes): for "
     "software RDMA (Soft-RoCE, siw) the RDMA traffic itself.", "tx_bytes"),
    ("netdev_receive_bytes", "Bytes the port's netdev received (statistics/rx_bytes).", "rx_bytes"),
    ("netdev_transmit_packets", "Packets the port's netdev sent (statistics/tx_packets).", "tx_packets"),
    ("netdev_receive_packets", "Packets the port's netdev received (statistics/rx_packets).", "rx_packets"),
)
NETDEV_STATISTICS_FILES = tuple(entry[2] for entry in NETDEV_STATISTICS)
RDMA_VPORT_BYTES = (("rx", "rx_vport_rdma_unicast_bytes"), ("tx", "tx_vport_rdma_unicast_bytes"))

_STATE = re.compile(r"^\s*(\d+)\s*:\s*(\S.*?)\s*$")
_RATE = re.compile(r"^\s*([0-9.]+)\s*(Gb|Mb|Tb)/sec")
_NAME = re.compile(r"^[A-Za-z0-9_.:-]+$")


# --- reading (the only function with I/O) ---------------------------------------------------------------------------

def _read(path):
    """A sysfs file's text, stripped, or None. One open, one read: sysfs files are small and a scrape reads
    hundreds of them."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def _counter_dir(path):
    out = {}
    try:
        names = os.listdir(path)
    except OSError:
        return out
    for name in names:
        if name in NOT_COUNTERS:
            continue
        value = _read(os.path.join(path, name))
        if value is not None:
            out[name] = value
    return out


# The kernel fills a RoCE port's GID table from the front (the default GIDs first, then one entry per address of
# the netdev, each in the first free entry), so the entries in use sit at the start with at most a few holes left
# by removed addresses. Reading stops after this many unused entries in a row instead of reading every entry (a
# Soft-RoCE port has 1024, an mlx5 port 255): one scrape stays cheap on a host with many devices.
GID_GAP = 64


def _gid_count(path, gap=GID_GAP):
    """Entries in use of a port's GID table (unused ones read as all zeros), up to ``gap`` unused in a row."""
    count = 0
    unused = 0
    index = 0
    while unused < gap:
        value = _read(os.path.join(path, str(index)))
        if value is None:
            break  # past the end of the table
        if value.replace("0", "").replace(":", ""):
            count += 1
            unused = 0
        else:
            unused += 1
        index += 1
    return count if index else None


def _port_netdev(dev_dir, port_dir):
    for candidate in (os.path.join(port_dir, "gid_attrs", "ndevs", "0"), os.path.join(dev_dir, "parent")):
        name = _read(candidate)
        if name and _NAME.match(name):
            return name
    try:
        nets = sorted(os.listdir(os.path.join(dev_dir, "device", "net")))
    except OSError:
        nets = []
    return nets[0] if len(nets) == 1 else None


def _driver(dev_dir, name):
    try:
        return os.path.basename(os.readlink(os.path.join(dev_dir, "device", "driver")))
    except OSError:
        pass
    # Software devices have no PCI device: Soft-RoCE names its devices after nothing, so the class link tells.
    try:
        target = os.readlink(dev_dir)
    except OSError:
        target = ""
    if "/virtual/" in target or _read(os.path.join(dev_dir, "parent")):
        for prefix, driver in (("rxe", "rxe"), ("siw", "siw")):
            if name.startswith(prefix):
                return driver
    return None


def selected(name, driver, virtual_function, include=None, exclude=None, exclude_drivers=(), vfs=False):
    """Whether a device is read: SR-IOV virtual functions only with ``vfs`` (a node with 128 VFs would otherwise
    carry every VF's series: 136 devices made 17,680), then ``include`` (a regular expression the device name must
    match), ``exclude`` (one it must not match) and ``exclude_drivers`` (driver names)."""
    if virtual_function and not vfs:
        return False
    if include and not re.search(include, name):
        return False
    if exclude and re.search(exclude, name):
        return False
    return (driver or "") not in (exclude_drivers or ())


def read_sysfs(root="/sys", gids=True, include=None, exclude=None, exclude_drivers=(), vfs=False):
    """A snapshot of every RDMA device under ``<root>/class/infiniband`` (see the module docstring) that
    ``selected`` keeps."""
    base = os.path.join(root, "class", "infiniband")
    snapshot = dict(devices=[], netdevs={})
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return snapshot
    for name in names:
        dev_dir = os.path.join(base, name)
        driver = _driver(dev_dir, name)
        if not selected(name, driver, os.path.lexists(os.path.join(dev_dir, "device", "physfn")), include, exclude,
                        exclude_drivers, vfs):
            continue
        device = dict(name=name, driver=driver, node_type=_read(os.path.join(dev_dir, "node_type")),
                      fw_ver=_read(os.path.join(dev_dir, "fw_ver")),
                      hw_counters=_counter_dir(os.path.join(dev_dir, "hw_counters")), ports=[])
        try:
            ports = sorted(os.listdir(os.path.join(dev_dir, "ports")), key=lambda p: int(p) if p.isdigit() else 0)
        except OSError:
            ports = []
        for port in ports:
            if not port.isdigit():
                continue
            port_dir = os.path.join(dev_dir, "ports", port)
            entry = dict(port=int(port), state=_read(os.path.join(port_dir, "state")),
                         phys_state=_read(os.path.join(port_dir, "phys_state")),
                         rate=_read(os.path.join(port_dir, "rate")),
                         link_layer=_read(os.path.join(port_dir, "link_layer")),
                         netdev=_port_netdev(dev_dir, port_dir),
                         counters=_counter_dir(os.path.join(port_dir, "counters")),
                         hw_counters=_counter_dir(os.path.join(port_dir, "hw_counters")),
                         gids=_gid_count(os.path.join(port_dir, "gids")) if gids else None)
            device["ports"].append(entry)
            netdev = entry["netdev"]
            if netdev and netdev not in snapshot["netdevs"]:
                net_dir = os.path.join(root, "class", "net", netdev)
                stats = {}
                for stat in NETDEV_STATISTICS_FILES:
                    value = _read(os.path.join(net_dir, "statistics", stat))
                    if value is not None:
                        stats[stat] = value
                snapshot["netdevs"][netdev] = dict(mtu=_read(os.path.join(net_dir, "mtu")), statistics=stats)
        snapshot["devices"].append(device)
    return snapshot


# --- pure functions --------------------------------------------------------------------------------------------------

def parse_state(text):
    """``4: ACTIVE`` -> (4, "ACTIVE"); None for anything else."""
    match = _STATE.match(text or "")
    return (int(match.group(1)), match.group(2)) if match else None


def parse_rate(text):
    """A port's ``rate`` file (``100 Gb/sec (4X EDR)``, ``2.5 Gb/sec (1X SDR)``) in bits per second, or None."""
    match = _RATE.match(text or "")
    if not match:
        return None
    scale = dict(Mb=1e6, Gb=1e9, Tb=1e12)[match.group(2)]
    return float(match.group(1)) * scale


def _number(text):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _family(families, name, kind, help_text):
    if name not in families:
        families[name] = dict(name=name, type=kind, help=help_text, samples=[])
    return families[name]


def metric_families(snapshot, ethtool=None, prefix="rdma"):
    """Prometheus metric families from a snapshot, as plain data: ``[{name, type, help, samples: [(labels, value)]}]``.

    ``ethtool``: ``{netdev: ethtool -S output}`` for the RoCE netdevs (what the driver has per priority).
    Counter names carry no ``_total``: the client library adds it when it writes a counter.
    """
    families = {}

    def add(name, kind, help_text, labels, value):
        if value is not None:
            _family(families, "%s_%s" % (prefix, name), kind, help_text)["samples"].append((labels, value))

    for device in snapshot.get("devices") or []:
        dev_labels = dict(device=device["name"])
        info = dict(dev_labels, driver=device.get("driver") or "", node_type=device.get("node_type") or "",
                    fw_ver=device.get("fw_ver") or "")
        add("device_info", "gauge", "An RDMA device: its driver, node type and firmware (value 1).", info, 1)
        for counter, text in sorted((device.get("hw_counters") or {}).items()):
            add("device_hw_stat", "counter", "Every device-wide file under hw_counters/, by the driver's name.",
                dict(dev_labels, driver=device.get("driver") or "", counter=counter), _number(text))
        for port in device.get("ports") or []:
            labels = dict(device=device["name"], port=str(port["port"]), netdev=port.get("netdev") or "")
            state, phys = parse_state(port.get("state")), parse_state(port.get("phys_state"))
            if state:
                add("port_state", "gauge", "The port's logical state (4 ACTIVE, 1 DOWN); its name in the label.",
                    dict(labels, state=state[1]), state[0])
            if phys:
                add("port_physical_state", "gauge", "The port's physical state (5 LinkUp, 3 Disabled); its name in the label.",
                    dict(labels, state=phys[1]), phys[0])
            rate = parse_rate(port.get("rate"))
            add("port_rate_bytes_per_second", "gauge", "The port's link rate (the rate file, in bytes: Gb/s x 1.25e8).",
                labels, rate / 8 if rate is not None else None)
            add("port_gids", "gauge", "Non-zero entries of the port's GID table.", labels, port.get("gids"))
            add("port_info", "gauge", "A port: its link layer (value 1).",
                dict(labels, link_layer=port.get("link_layer") or ""), 1)
            counters = dict((k, _number(v)) for k, v in (port.get("counters") or {}).items())
            for counter, value in sorted(counters.items()):
                add("port_stat", "counter", "Every file under the port's counters/ (InfiniBand port counters), "
                    "by the kernel's name; port_xmit_data and port_rcv_data count 4-octet words.",
                    dict(labels, counter=counter), value)
            for name, help_text, source, scale in PORT_COUNTERS:
                if counters.get(source) is not None:
                    add(name, "counter", help_text, labels, counters[source] * scale)
            hw = dict((k, _number(v)) for k, v in (port.get("hw_counters") or {}).items())
            for counter, value in sorted(hw.items()):
                add("port_hw_stat", "counter", "Every file under the port's hw_counters/, by the driver's name.",
                    dict(labels, driver=device.get("driver") or "", counter=counter), value)
            for name, help_text, sources in COMMON_HW_COUNTERS:
                for source in sources:
                    if hw.get(source) is not None:
                        add(name, "counter", help_text + " Driver counter: %s." % "/".join(sources), labels, hw[source])
                        break
            netdev = port.get("netdev")
            net = (snapshot.get("netdevs") or {}).get(netdev) if netdev else None
            if net:
                add("netdev_mtu_bytes", "gauge", "The MTU of the port's netdev.", labels, _number(net.get("mtu")))
                stats = net.get("statistics") or {}
                for name, help_text, source in NETDEV_STATISTICS:
                    add(name, "counter", help_text, labels, _number(stats.get(source)))
            if netdev and ethtool and ethtool.get(netdev):
                _ethtool_families(add, labels, parse_ethtool_stats(ethtool[netdev]))
    return sorted(families.values(), key=lambda f: f["name"])


def _ethtool_families(add, labels, stats):
    kinds = dict(bytes=("priority_bytes", "Bytes per priority (ethtool -S rx_prioN_bytes/tx_prioN_bytes)."),
                 packets=("priority_packets", "Packets per priority (ethtool -S rx_prioN_packets/tx_prioN_packets)."),
                 pause=("priority_pause_frames", "PFC pause frames per priority (ethtool -S rx_prioN_pause/tx_prioN_pause)."))
    for priority, values in sorted(priority_stats(stats).items()):
        for key, value in sorted(values.items()):
            direction, _sep, kind = key.partition("_")
            name, help_text = kinds[kind]
            add(name, "counter", help_text, dict(labels, direction=direction, priority=str(priority)), value)
    for direction, source in RDMA_VPORT_BYTES:
        add("rdma_bytes", "counter", "The port's RDMA bytes (ethtool -S rx/tx_vport_rdma_unicast_bytes).",
            dict(labels, direction=direction), stats.get(source))


def netdevs_for_ethtool(snapshot):
    """The RoCE netdevs of a snapshot (ports whose link layer is Ethernet), each once, in order."""
    seen = []
    for device in snapshot.get("devices") or []:
        for port in device.get("ports") or []:
            if port.get("netdev") and (port.get("link_layer") or "").lower() == "ethernet" and port["netdev"] not in seen:
                seen.append(port["netdev"])
    return seen
