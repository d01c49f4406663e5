# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA exporter's metric families on real sysfs and ethtool output (fixtures/telemetry, fixtures/counters).

The sysfs tree of the lab's Soft-RoCE device is rebuilt file by file from its capture; the mlx5 per-priority
counters come from public ethtool -S output. The exporter program itself runs its collector on the rebuilt tree,
and its page is read back by prometheus_client's own parser.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess


import pytest

from ansible_collections.roce.fabric.plugins.module_utils.telemetry import rdma_metrics
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PROGRAM = os.path.join(REPO, "roles", "rdma_exporter", "files", "roce_rdma_exporter.py")
RXE = "sysfs_rxe0_6.1.txt"


def expect(name):
    return dict(item.split("=", 1) for item in corpus.meta("telemetry", name)["expect"].split())


def build_tree(root, captured, device="rxe0", netdev_mtu="4200"):
    """The captured files of one device under <root>/devices/virtual/infiniband/<device>, linked from class/."""
    dev = os.path.join(root, "devices", "virtual", "infiniband", device)
    netdev = None
    for line in captured.splitlines():
        path, sep, value = line.partition(":")
        if not sep:
            continue
        full = os.path.join(dev, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as handle:
            handle.write(value + "\n")
        if path == "parent":
            netdev = value
    os.makedirs(os.path.join(root, "class", "infiniband"), exist_ok=True)
    os.symlink(os.path.relpath(dev, os.path.join(root, "class", "infiniband")), os.path.join(root, "class", "infiniband", device))
    net = os.path.join(root, "class", "net", netdev, "statistics")
    os.makedirs(net)
    with open(os.path.join(root, "class", "net", netdev, "mtu"), "w") as handle:
        handle.write(netdev_mtu + "\n")
    for stat, value in (("tx_bytes", "1000"), ("rx_bytes", "2000"), ("tx_packets", "10"), ("rx_packets", "20")):
        with open(os.path.join(net, stat), "w") as handle:
            handle.write(value + "\n")
    return dev


@pytest.fixture
def rxe_tree(tmp_path):
    build_tree(str(tmp_path), corpus.read("telemetry", RXE))
    return str(tmp_path)


def families_by_name(families):
    return dict((f["name"], f) for f in families)


def value(family, **labels):
    found = [v for l, v in family["samples"] if all(l.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, (family["name"], labels, family["samples"])
    return found[0]


def test_the_captured_soft_roce_device_is_read_as_the_kernel_wrote_it(rxe_tree):
    want = expect(RXE)
    snapshot = rdma_metrics.read_sysfs(rxe_tree)
    assert [d["name"] for d in snapshot["devices"]] == [want["device"]]
    device = snapshot["devices"][0]
    assert device["driver"] == want["driver"] and device["hw_counters"] == {}
    port = device["ports"][0]
    assert (port["port"], port["netdev"], port["gids"]) == (1, want["netdev"], int(want["gids"]))
    assert len(port["hw_counters"]) == int(want["hw_counters"]) and "lifespan" not in port["hw_counters"]
    assert port["counters"] == {}  # rdma_rxe has no counters/ directory
    assert snapshot["netdevs"]["enp1s0"]["mtu"] == "4200"


def test_metric_families_of_the_soft_roce_device(rxe_tree):
    want = expect(RXE)
    families = families_by_name(rdma_metrics.metric_families(rdma_metrics.read_sysfs(rxe_tree)))
    port = dict(device="rxe0", port="1", netdev="enp1s0")
    assert value(families["rdma_port_state"], state="ACTIVE", **port) == int(want["state"])
    assert value(families["rdma_port_physical_state"], state="LinkUp", **port) == 5
    assert value(families["rdma_port_rate_bytes_per_second"], **port) == float(want["rate_bps"]) / 8
    assert value(families["rdma_port_gids"], **port) == int(want["gids"])
    assert value(families["rdma_netdev_mtu_bytes"], **port) == 4200
    assert value(families["rdma_netdev_transmit_bytes"], **port) == 1000
    # Every hw_counters file by the driver's name, the common ones by a name of their own.
    generic = families["rdma_port_hw_stat"]
    assert len(generic["samples"]) == int(want["hw_counters"]) and generic["type"] == "counter"
    assert value(generic, counter="sent_pkts", driver="rxe", **port) == int(want["sent_pkts"])
    assert value(families["rdma_packets_sent"], **port) == int(want["sent_pkts"])
    assert value(families["rdma_packets_received"], **port) == int(want["rcvd_pkts"])
    assert value(families["rdma_sequence_error_naks"], **port) == 48
    assert value(families["rdma_out_of_sequence_packets"], **port) == 0
    assert "rdma_cnp_sent" not in families  # Soft-RoCE has no DCQCN counters
    assert "rdma_port_stat" not in families
    info = families["rdma_device_info"]["samples"][0][0]
    assert info == dict(device="rxe0", driver="rxe", node_type="1: CA", fw_ver="")


def test_a_device_that_disappears_or_appears_is_followed(rxe_tree):
    assert len(rdma_metrics.read_sysfs(rxe_tree)["devices"]) == 1
    os.unlink(os.path.join(rxe_tree, "class", "infiniband", "rxe0"))
    assert rdma_metrics.read_sysfs(rxe_tree)["devices"] == []
    build_tree(os.path.join(rxe_tree, "other"), corpus.read("telemetry", RXE), device="rxe1")
    os.symlink(os.path.join(rxe_tree, "other", "devices", "virtual", "infiniband", "rxe1"),
               os.path.join(rxe_tree, "class", "infiniband", "rxe1"))
    assert [d["name"] for d in rdma_metrics.read_sysfs(rxe_tree)["devices"]] == ["rxe1"]
    assert rdma_metrics.read_sysfs(os.path.join(rxe_tree, "nothing-here")) == dict(devices=[], netdevs={})


@pytest.mark.parametrize("name", ["ethtool_S_mlx5_5.15_netdev.txt", "ethtool_S_mlx5_6.5_netdev.txt"])
def test_per_priority_counters_from_mlx5_ethtool_output(name):
    """The validation's ethtool parser, the exporter's second user: per-priority bytes and packets."""
    snapshot = dict(devices=[dict(name="mlx5_0", driver="mlx5_core", ports=[dict(
        port=1, netdev="eth2", link_layer="Ethernet", state="4: ACTIVE", counters={}, hw_counters={})])], netdevs={})
    assert rdma_metrics.netdevs_for_ethtool(snapshot) == ["eth2"]
    families = families_by_name(rdma_metrics.metric_families(snapshot, {"eth2": corpus.read("counters", name)}))
    want = dict(item.split("=", 1) for item in corpus.meta("counters", name)["expect"].split())
    labels = dict(device="mlx5_0", port="1", netdev="eth2", priority="0")
    assert value(families["rdma_priority_bytes"], direction="tx", **labels) == int(want["prio0_tx_bytes"])
    assert value(families["rdma_priority_bytes"], direction="rx", **labels) == int(want["prio0_rx_bytes"])
    assert "rdma_rdma_bytes" not in families  # these ports have no vport_rdma counters (expect: rdma=none)
    assert {l["priority"] for l, _v in families["rdma_priority_bytes"]["samples"]} == {want["priorities"]}


def test_infiniband_port_counters_are_kept_and_data_words_become_bytes():
    # The kernel's names for the port counters of a device with a MAD agent (counters/), in 4-octet words.
    snapshot = dict(devices=[dict(name="mlx5_0", ports=[dict(port=1, netdev="", counters={
        "port_xmit_data": "250", "port_rcv_data": "100", "port_xmit_packets": "3", "symbol_error": "0"}, hw_counters={})])])
    families = families_by_name(rdma_metrics.metric_families(snapshot))
    assert value(families["rdma_port_transmit_bytes"]) == 1000 and value(families["rdma_port_receive_bytes"]) == 400
    assert value(families["rdma_port_stat"], counter="port_xmit_data") == 250
    assert value(families["rdma_port_stat"], counter="symbol_error") == 0


@pytest.mark.parametrize("text, parsed", [
    ("4: ACTIVE", (4, "ACTIVE")), ("1: DOWN", (1, "DOWN")), ("5: LinkUp", (5, "LinkUp")), ("", None), ("ACTIVE", None)])
def test_state_files(text, parsed):
    assert rdma_metrics.parse_state(text) == parsed


@pytest.mark.parametrize("text, bps", [
    ("2.5 Gb/sec (1X SDR)", 2.5e9), ("100 Gb/sec (4X EDR)", 100e9), ("400 Gb/sec (4X NDR)", 400e9), ("", None),
    ("10 Mb/sec", 10e6)])
def test_rate_files(text, bps):
    assert rdma_metrics.parse_rate(text) == bps


def test_counters_that_do_not_read_as_numbers_are_left_out():
    snapshot = dict(devices=[dict(name="x", hw_counters={"a": "12", "b": "n/a"}, ports=[])])
    family = families_by_name(rdma_metrics.metric_families(snapshot))["rdma_device_hw_stat"]
    assert [(l["counter"], v) for l, v in family["samples"]] == [("a", 12)]


def load_program():
    spec = importlib.util.spec_from_file_location("roce_rdma_exporter", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_exporter_page_is_valid_exposition_with_help_and_counters(rxe_tree):
    parser = pytest.importorskip("prometheus_client.parser")
    registry_mod = pytest.importorskip("prometheus_client")
    program = load_program()
    registry = registry_mod.CollectorRegistry()
    registry.register(program.RdmaCollector(rxe_tree, use_ethtool=False))
    page = registry_mod.generate_latest(registry).decode()
    parsed = dict((f.name, f) for f in parser.text_string_to_metric_families(page))
    assert parsed["rdma_packets_sent"].type == "counter"
    assert re.search(r'^rdma_packets_sent_total\{device="rxe0",netdev="enp1s0",port="1"\} 10170\.0$', page, re.M), page
    assert parsed["rdma_exporter_devices"].samples[0].value == 1
    for family in parsed.values():
        assert family.documentation, family.name
        assert re.match(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$", family.name)
    # No sample name repeats with the same labels (Prometheus would refuse the page).
    keys = [(s.name, tuple(sorted(s.labels.items()))) for f in parsed.values() for s in f.samples]
    assert len(keys) == len(set(keys))
    # Prometheus' own linter, where it is installed (tests/run setup installs Debian's prometheus).
    promtool = shutil.which("promtool")
    if promtool:
        proc = subprocess.run([promtool, "check", "metrics"], input=page, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ethtool_failures_are_counted_not_fatal(rxe_tree, tmp_path):
    program = load_program()
    fake = tmp_path / "ethtool"
    fake.write_text("#!/bin/sh\necho 'Cannot get stats strings information: Operation not supported' >&2\nexit 94\n")
    fake.chmod(0o755)
    families = families_by_name(program.RdmaCollector(rxe_tree, ethtool=str(fake)).families())
    assert families["rdma_exporter_ethtool_errors"]["samples"] == [({}, 1)]
    assert "rdma_priority_bytes" not in families and "rdma_packets_sent" in families


def test_gid_counting_reads_past_holes_and_stops_after_a_long_unused_run(rxe_tree):
    gids = os.path.join(rxe_tree, "devices", "virtual", "infiniband", "rxe0", "ports", "1", "gids")
    used = "fe80:0000:0000:0000:5054:00ff:fe72:5712"
    # A hole left by a removed address, then another address: both in-use entries are counted.
    with open(os.path.join(gids, "5"), "w") as handle:
        handle.write(used + "\n")
    assert rdma_metrics.read_sysfs(rxe_tree)["devices"][0]["ports"][0]["gids"] == 3
    # An entry after more than GID_GAP unused ones in a row is past what a scrape reads (documented).
    with open(os.path.join(gids, str(6 + rdma_metrics.GID_GAP)), "w") as handle:
        handle.write(used + "\n")
    assert rdma_metrics.read_sysfs(rxe_tree)["devices"][0]["ports"][0]["gids"] == 3
    assert rdma_metrics.read_sysfs(rxe_tree, gids=False)["devices"][0]["ports"][0]["gids"] is None


def test_scrapes_that_come_together_share_one_read(rxe_tree, tmp_path):
    """Hardening (issue 37, 6): every concurrent scrape ran a full collection (10 parallel requests started 40 ethtool
    processes in 0.2 s on a node). One read at a time now, kept for min_interval: ten scrapes at once run ethtool
    once."""
    import concurrent.futures
    program = load_program()
    runs = tmp_path / "runs"
    fake = tmp_path / "ethtool"
    fake.write_text("#!/bin/sh\necho x >> %s\nsleep 0.2\necho 'NIC statistics:'\n" % runs)
    fake.chmod(0o755)
    collector = program.RdmaCollector(rxe_tree, ethtool=str(fake), min_interval=30)
    with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
        pages = list(pool.map(lambda _n: collector.families(), range(10)))
    assert collector.reads == 1 and len(runs.read_text().splitlines()) == 1
    assert all(page is pages[0] for page in pages)
    fresh = program.RdmaCollector(rxe_tree, ethtool=str(fake), min_interval=0)
    fresh.families()
    fresh.families()
    assert fresh.reads == 2


def test_the_server_answers_a_bounded_number_of_scrapes_at_once(rxe_tree):
    """Over max_clients at once, a scrape is turned away with 503 at once instead of starting another thread."""
    import socket
    import threading
    import urllib.error
    import urllib.request
    registry_mod = pytest.importorskip("prometheus_client")
    program = load_program()
    registry = registry_mod.CollectorRegistry()
    gate, entered = threading.Event(), threading.Event()

    class Slow(program.RdmaCollector):
        def read(self):
            entered.set()
            gate.wait(10)
            return super(Slow, self).read()

    registry.register(Slow(rxe_tree, use_ethtool=False, min_interval=0))
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = program.serve(registry, "127.0.0.1", port, max_clients=1)
    try:
        first = threading.Thread(target=lambda: urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=20).read())
        first.start()
        # The first scrape holds the only slot while it reads; a second one now is turned away at once.
        assert entered.wait(10), "the first scrape never reached the collector"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5)
        assert refused.value.code == 503 and refused.value.headers["Retry-After"] == "1"
        gate.set()
        first.join(20)
        page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=20).read().decode()
        assert "rdma_exporter_devices" in page
    finally:
        gate.set()
        server.shutdown()


def test_clients_that_trickle_their_requests_hold_neither_threads_nor_connections(rxe_tree):
    """Clients sending a byte every few seconds held a thread each for as long as they went on (the timeout was per
    read: 31 threads at 40 s). Now a connection has one deadline for its request, and at most max_clients x 4
    connections are held: one more is closed at once, without a thread. A real scrape still gets its page."""
    import http.client
    import select
    import socket
    import threading
    import time
    import urllib.request
    registry_mod = pytest.importorskip("prometheus_client")
    program = load_program()
    registry = registry_mod.CollectorRegistry()
    registry.register(program.RdmaCollector(rxe_tree, use_ethtool=False, min_interval=0))
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    before = threading.active_count()
    server = program.serve(registry, "127.0.0.1", port, max_clients=1, deadline=3)
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
    cap = 1 * program.CONNECTIONS_PER_CLIENT
    clients, closed_at = [], {}
    try:
        started = time.monotonic()
        for _n in range(10):
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            client.sendall(request[:1])
            client.setblocking(False)
            clients.append(client)
        assert threading.active_count() - before <= 2 + 2 * cap, "a thread and a timer per held connection at most"
        # Every connection goes on trickling a byte every half second; when does the server close each?
        sent = 1
        while len(closed_at) < len(clients) and time.monotonic() - started < 10:
            readable, _w, _x = select.select([c for i, c in enumerate(clients) if i not in closed_at], [], [], 0.5)
            for client in readable:
                index = clients.index(client)
                try:
                    if client.recv(1) == b"":
                        closed_at[index] = time.monotonic() - started
                except OSError:
                    closed_at[index] = time.monotonic() - started
            sent = min(sent + 1, len(request) - 1)
            for index, client in enumerate(clients):
                if index not in closed_at:
                    try:
                        client.send(request[sent:sent + 1])
                    except OSError:
                        closed_at[index] = time.monotonic() - started
        at_once = sorted(t for t in closed_at.values() if t < 1.5)
        later = sorted(t for t in closed_at.values() if t >= 1.5)
        # The ones over the cap closed at once; the held ones cut at the deadline, while still sending.
        assert len(at_once) == 10 - cap and len(later) == cap, closed_at
        assert max(later) < 5.5, closed_at
        # Once their threads have ended (a moment after the close), a real scrape gets its page.
        page = ""
        for _attempt in range(20):
            try:
                page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
                break
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        assert "rdma_exporter_devices" in page
    finally:
        for client in clients:
            client.close()
        server.shutdown()


def test_virtual_functions_are_left_out_unless_asked_and_devices_can_be_selected(rxe_tree):
    """136 visible devices (128 VFs) made 17,680 series on one node: VFs are left out by default."""
    dev = os.path.join(rxe_tree, "class", "infiniband", "rxe0")
    assert [d["name"] for d in rdma_metrics.read_sysfs(rxe_tree)["devices"]] == ["rxe0"]
    assert rdma_metrics.read_sysfs(rxe_tree, exclude_drivers=("rxe",))["devices"] == []
    assert rdma_metrics.read_sysfs(rxe_tree, include="^mlx5_")["devices"] == []
    assert rdma_metrics.read_sysfs(rxe_tree, exclude="^rxe")["devices"] == []
    assert rdma_metrics.selected("mlx5_4", "mlx5_core", True) is False
    assert rdma_metrics.selected("mlx5_4", "mlx5_core", True, vfs=True) is True
    assert os.path.isdir(dev)
    # A virtual function as sysfs shows one: its PCI function has a physfn link (to the PF it belongs to).
    vf = build_tree(os.path.join(rxe_tree, "vf"), corpus.read("telemetry", RXE), device="rxe9")
    os.makedirs(os.path.join(vf, "device"), exist_ok=True)
    os.symlink("../../0000:17:00.0", os.path.join(vf, "device", "physfn"))
    os.symlink(os.path.join(rxe_tree, "vf", "devices", "virtual", "infiniband", "rxe9"),
               os.path.join(rxe_tree, "class", "infiniband", "rxe9"))
    assert [d["name"] for d in rdma_metrics.read_sysfs(rxe_tree)["devices"]] == ["rxe0"]
    assert [d["name"] for d in rdma_metrics.read_sysfs(rxe_tree, vfs=True)["devices"]] == ["rxe0", "rxe9"]
    assert [d["name"] for d in rdma_metrics.read_sysfs(rxe_tree, vfs=True, include="9$")["devices"]] == ["rxe9"]


def test_a_bad_device_expression_stops_the_exporter_at_start(capsys):
    program = load_program()
    with pytest.raises(SystemExit) as stopped:
        program.main(["--include-device", "^(rxe", "--once"])
    assert stopped.value.code == 2
    assert "'^(rxe' is not a regular expression: missing )" in capsys.readouterr().err
