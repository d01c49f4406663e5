# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roce-rdma-exporter: the counters of every RDMA device and port, for Prometheus.

Reads /sys/class/infiniband (every file under counters/ and hw_counters/, port state, rate, GIDs), the RoCE
netdevs' statistics and, where the driver has them, their per-priority counters from ``ethtool -S``, when
Prometheus scrapes: no polling loop, so devices that appear, disappear or move to another network namespace are
seen at the next scrape. Needs no privilege beyond reading sysfs.

A scrape costs a read of every counter file and an ``ethtool`` process per netdev, so it is done once at a time and
kept for ``--min-interval`` seconds: scrapes that come together, or faster than that, get the same read (ten
parallel requests used to start forty ethtool processes). The server answers ``--max-clients`` requests at once and
turns the others away with 503. SR-IOV virtual functions are left out unless ``--vfs`` (each VF is a device with
its own series), and devices can be selected by name (``--include-device``, ``--exclude-device``) or driver
(``--exclude-driver``).

The metric names and what each comes from are in the collection's docs/telemetry.md. Installed by the
roce.fabric.rdma_exporter role beside the two collection files it runs on (the metric families of
plugins/module_utils/telemetry/rdma_metrics.py and the ethtool parsers of plugins/module_utils/qos/counters.py,
the validation's traffic check's own).

    roce_rdma_exporter.py [--listen-address ADDR] [--port 9879] [--sysfs /sys] [--no-ethtool] [--min-interval 5]
                          [--max-clients 4] [--vfs] [--include-device RE] [--exclude-device RE]
                          [--exclude-driver NAME]... [--once]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _import_metrics():
    """The collection's metric code: beside this program (as the role installs it), else a collections path."""
    roots = [HERE] + [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if p]
    last = None
    for root in roots:
        if root not in sys.path:
            sys.path.insert(0, root)
        try:
            from ansible_collections.roce.fabric.plugins.module_utils.telemetry import rdma_metrics  # pylint: disable=import-outside-toplevel
            return rdma_metrics
        except ImportError as exc:
            last = exc
            sys.path.remove(root)
    raise SystemExit("roce-rdma-exporter: the collection's telemetry code is not beside %s (%s)" % (HERE, last))


rdma_metrics = _import_metrics()

ETHTOOL_TIMEOUT = 2.0


def _ethtool_one(ethtool, netdev):
    """(output or None, failed) of ``ethtool -S netdev``; a driver without statistics is not a failure."""
    try:
        proc = subprocess.run([ethtool, "-S", netdev], capture_output=True, text=True, timeout=ETHTOOL_TIMEOUT,
                              env=dict(os.environ, LC_ALL="C"), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None, True
    if proc.returncode == 0:
        return proc.stdout, False
    return None, "no stats available" not in proc.stderr.lower()


def ethtool_stats(netdevs, ethtool="ethtool"):
    """``{netdev: ethtool -S output}`` and how many reads failed; the netdevs are read in parallel (one process
    each), so a scrape waits for the slowest, not for their sum."""
    out, errors = {}, 0
    if not netdevs:
        return out, errors
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(netdevs))) as pool:
        results = list(pool.map(lambda netdev: _ethtool_one(ethtool, netdev), netdevs))
    for netdev, (text, failed) in zip(netdevs, results):
        if text is not None:
            out[netdev] = text
        errors += 1 if failed else 0
    return out, errors


class RdmaCollector(object):
    """A prometheus_client collector that reads everything when it is collected (at each scrape), one read at a
    time, a read kept for ``min_interval`` seconds."""

    def __init__(self, sysfs="/sys", ethtool="ethtool", use_ethtool=True, gids=True, min_interval=5.0, include=None,
                 exclude=None, exclude_drivers=(), vfs=False):
        self.sysfs, self.ethtool, self.use_ethtool, self.gids = sysfs, ethtool, use_ethtool, gids
        self.min_interval = float(min_interval)
        self.select = dict(include=include, exclude=exclude, exclude_drivers=tuple(exclude_drivers or ()), vfs=vfs)
        self.lock = threading.Lock()
        self.kept = None
        self.kept_at = None
        self.reads = 0

    def families(self):
        """The metric families of the last read, made again when it is older than ``min_interval``; a scrape that
        comes while another reads waits for that read."""
        with self.lock:
            now = time.monotonic()
            if self.kept is None or now - self.kept_at >= self.min_interval:
                self.kept, self.kept_at = self.read(), time.monotonic()
            return self.kept

    def read(self):
        """The metric families of one read, as plain data, and the exporter's own figures."""
        self.reads += 1
        started = time.monotonic()
        snapshot = rdma_metrics.read_sysfs(self.sysfs, gids=self.gids, **self.select)
        stats, errors = {}, 0
        if self.use_ethtool:
            stats, errors = ethtool_stats(rdma_metrics.netdevs_for_ethtool(snapshot), self.ethtool)
        families = rdma_metrics.metric_families(snapshot, stats)
        families.append(dict(name="rdma_exporter_devices", type="gauge", help="RDMA devices seen at this scrape.",
                             samples=[({}, len(snapshot["devices"]))]))
        families.append(dict(name="rdma_exporter_ethtool_errors", type="gauge",
                             help="Netdevs whose ethtool -S read failed at this scrape.", samples=[({}, errors)]))
        families.append(dict(name="rdma_exporter_reads", type="counter",
                             help="Reads of sysfs and ethtool since the exporter started (scrapes within "
                                  "--min-interval of a read share it).", samples=[({}, self.reads)]))
        families.append(dict(name="rdma_exporter_scrape_duration_seconds", type="gauge",
                             help="Seconds this scrape took to read sysfs and ethtool.",
                             samples=[({}, time.monotonic() - started)]))
        return families

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily  # pylint: disable=import-outside-toplevel
        for family in self.families():
            names = []
            for labels, _value in family["samples"]:
                for key in labels:
                    if key not in names:
                        names.append(key)
            kind = CounterMetricFamily if family["type"] == "counter" else GaugeMetricFamily
            metric = kind(family["name"], family["help"], labels=names)
            for labels, value in family["samples"]:
                metric.add_metric([str(labels.get(key, "")) for key in names], value)
            yield metric


# Seconds a connection may take to send its request, and then to take the page, however it trickles its bytes.
REQUEST_DEADLINE = 10.0
# Connections held at once, for every scrape slot: one over it is closed at once, before any thread is started.
CONNECTIONS_PER_CLIENT = 4


def serve(registry, address, port, max_clients, deadline=REQUEST_DEADLINE):
    """The metrics page over HTTP, ``max_clients`` requests at a time (others get 503 at once) and at most
    ``max_clients`` x CONNECTIONS_PER_CLIENT connections held (one more is closed unanswered); each connection has
    ``deadline`` seconds to send its request and as long again to take the page, in all, not per read (a client
    sending a byte every few seconds is cut at the deadline). Returns the server, serving in a thread of its own."""
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer  # pylint: disable=import-outside-toplevel
    from socketserver import ThreadingMixIn  # pylint: disable=import-outside-toplevel
    from prometheus_client import make_wsgi_app  # pylint: disable=import-outside-toplevel
    import socket  # pylint: disable=import-outside-toplevel

    app = make_wsgi_app(registry)
    slots = threading.BoundedSemaphore(max_clients)
    connections = threading.BoundedSemaphore(max_clients * CONNECTIONS_PER_CLIENT)
    current = threading.local()

    def cut(connection):
        """The deadline ran out: the connection is shut down, so the read or write it waits on ends now."""
        try:
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def disarm():
        timer = getattr(current, "timer", None)
        if timer is not None:
            timer.cancel()
        current.timer = None

    def rearm(connection):
        """A new deadline for the connection of this thread."""
        disarm()
        timer = threading.Timer(deadline, cut, (connection,))
        timer.daemon = True
        timer.start()
        current.timer = timer

    def bounded(environ, start_response):
        # The request is read: its deadline ends. The collection is bounded by its own reads (ethtool's timeout);
        # the page then has a deadline of its own to be taken.
        disarm()
        if not slots.acquire(blocking=False):
            start_response("503 Service Unavailable", [("Content-Type", "text/plain"), ("Retry-After", "1")])
            rearm(current.connection)
            return [b"busy: too many scrapes at once\n"]
        try:
            page = [b"".join(app(environ, start_response))]
        finally:
            slots.release()
        rearm(current.connection)
        return page

    class Quiet(WSGIRequestHandler):
        # Each read and write is bounded too; the deadline bounds them all together.
        timeout = deadline

        def setup(self):
            WSGIRequestHandler.setup(self)
            current.connection = self.connection
            rearm(self.connection)

        def finish(self):
            try:
                WSGIRequestHandler.finish(self)
            finally:
                disarm()

        def log_message(self, *args):
            pass

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

        def process_request(self, request, client_address):
            # A connection over the cap is closed at once: no thread, no read.
            if not connections.acquire(blocking=False):
                self.shutdown_request(request)
                return
            ThreadingMixIn.process_request(self, request, client_address)

        def process_request_thread(self, request, client_address):
            try:
                ThreadingMixIn.process_request_thread(self, request, client_address)
            finally:
                connections.release()

    server = Server((address, port), Quiet)
    server.set_app(bounded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def expression(text):
    """A device name expression, checked when the program starts (not at the first scrape)."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError("%r is not a regular expression: %s" % (text, exc))
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description="Prometheus exporter of RDMA device, port and per-priority counters")
    parser.add_argument("--listen-address", default="", help="address to listen on (default: all)")
    parser.add_argument("--port", type=int, default=9879, help="TCP port (default 9879)")
    parser.add_argument("--sysfs", default="/sys", help="where sysfs is mounted (default /sys)")
    parser.add_argument("--ethtool", default="ethtool", help="the ethtool program (default: ethtool on PATH)")
    parser.add_argument("--no-ethtool", action="store_true", help="do not read per-priority counters with ethtool -S")
    parser.add_argument("--no-gids", action="store_true", help="do not count GID table entries (one read per entry)")
    parser.add_argument("--min-interval", type=float, default=5.0,
                        help="seconds a read is kept for the scrapes that follow (default 5)")
    parser.add_argument("--max-clients", type=int, default=4, help="requests answered at once (default 4)")
    parser.add_argument("--vfs", action="store_true", help="also read SR-IOV virtual functions")
    parser.add_argument("--include-device", type=expression,
                        help="read only the devices whose name matches this regular expression")
    parser.add_argument("--exclude-device", type=expression,
                        help="leave out the devices whose name matches this regular expression")
    parser.add_argument("--exclude-driver", action="append", default=[], help="leave out this driver's devices")
    parser.add_argument("--once", action="store_true", help="print one scrape's metrics page and exit")
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error("--port must be 1-65535")
    if not 0 <= args.min_interval <= 3600 or not 1 <= args.max_clients <= 64:
        parser.error("--min-interval must be 0-3600 seconds and --max-clients 1-64")

    from prometheus_client import CollectorRegistry, generate_latest  # pylint: disable=import-outside-toplevel
    registry = CollectorRegistry()
    registry.register(RdmaCollector(args.sysfs, args.ethtool, not args.no_ethtool, not args.no_gids,
                                    min_interval=args.min_interval, include=args.include_device,
                                    exclude=args.exclude_device, exclude_drivers=args.exclude_driver, vfs=args.vfs))
    if args.once:
        sys.stdout.write(generate_latest(registry).decode())
        return 0
    if args.listen_address:
        serve(registry, args.listen_address, args.port, args.max_clients)
    else:
        # Every address: IPv6 and IPv4 on one socket, or IPv4 alone on a host without IPv6.
        try:
            serve(registry, "::", args.port, args.max_clients)
        except OSError:
            serve(registry, "0.0.0.0", args.port, args.max_clients)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_args: stop.set())
    sys.stderr.write("roce-rdma-exporter: listening on %s:%d\n" % (args.listen_address or "*", args.port))
    sys.stderr.flush()
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
