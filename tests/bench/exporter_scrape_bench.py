"""Benchmark: what one scrape of the RDMA exporter costs (issue 17: under 50 ms for 8 devices of 100 counters each).

    tests/run env > /dev/null; python tests/bench/exporter_scrape_bench.py [--devices 8] [--counters 100] [--runs 51]

1. A sysfs tree of its own under a temporary directory: ``--devices`` RDMA devices, one port each, with the files
   of the Soft-RoCE device captured from the lab's kernel (fixtures/telemetry/sysfs_rxe0_6.1.txt: state, rate,
   GID table of 1024 entries, its 15 hw_counters) and as many more hw_counters files as make ``--counters``.
   The extra counters are numbered (``bench_counter_NNN``): the cost is in the reads, whatever the names.
2. The exporter's collector, the same code Prometheus runs on a scrape (read sysfs, build the families, render
   the page with prometheus_client), ``--runs`` times: with GID counting and without (``--no-gids``), and with
   ``ethtool -S`` of each device's netdev. The lab machine has no RoCE NIC, so "ethtool" there is a stand-in
   program that prints the public mlx5 ``ethtool -S`` sample of the corpus (fixtures/counters): the cost of one
   process per netdev and of parsing a real mlx5 page, not of the driver answering.
Prints the median, the lowest and the highest, and the counters per scrape.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "fixtures", "telemetry", "sysfs_rxe0_6.1.txt")
PROGRAM = os.path.join(REPO, "roles", "rdma_exporter", "files", "roce_rdma_exporter.py")
MLX5_SAMPLE = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "fixtures", "counters", "ethtool_S_mlx5_6.5_netdev.txt")


def load_program():
    spec = importlib.util.spec_from_file_location("roce_rdma_exporter", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def captured_files():
    """``{path under the device: content}`` from the captured tree (header lines start with %%)."""
    files = {}
    with open(FIXTURE) as handle:
        for line in handle:
            if line.startswith("%%") or ":" not in line:
                continue
            path, _sep, value = line.rstrip("\n").partition(":")
            files[path] = value
    return files


def build_tree(root, devices, counters):
    files = captured_files()
    base = [p for p in files if p.startswith("ports/1/hw_counters/")]
    for index in range(devices):
        name = "rxe%d" % index
        dev = os.path.join(root, "devices", "virtual", "infiniband", name)
        for path, value in files.items():
            if path == "parent":
                value = "bench%d" % index
            elif path == "ports/1/gid_attrs/ndevs/0":
                value = "bench%d" % index
            full = os.path.join(dev, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as handle:
                handle.write(value + "\n")
        for extra in range(max(0, counters - len(base))):
            with open(os.path.join(dev, "ports", "1", "hw_counters", "bench_counter_%03d" % extra), "w") as handle:
                handle.write("%d\n" % (extra * 1000))
        os.makedirs(os.path.join(root, "class", "infiniband"), exist_ok=True)
        os.symlink(os.path.relpath(dev, os.path.join(root, "class", "infiniband")), os.path.join(root, "class", "infiniband", name))
        net = os.path.join(root, "class", "net", "bench%d" % index)
        os.makedirs(os.path.join(net, "statistics"))
        with open(os.path.join(net, "mtu"), "w") as handle:
            handle.write("4200\n")
        for stat in ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets"):
            with open(os.path.join(net, "statistics", stat), "w") as handle:
                handle.write("12345\n")


def measure(program, root, runs, gids, ethtool):
    from prometheus_client import CollectorRegistry, generate_latest  # pylint: disable=import-outside-toplevel
    registry = CollectorRegistry()
    registry.register(program.RdmaCollector(root, ethtool or "ethtool", bool(ethtool), gids))
    times, samples = [], 0
    for _run in range(runs):
        started = time.perf_counter()
        page = generate_latest(registry)
        times.append(time.perf_counter() - started)
        samples = sum(1 for line in page.decode().splitlines() if line and not line.startswith("#"))
    return times, samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--counters", type=int, default=100)
    parser.add_argument("--runs", type=int, default=51)
    args = parser.parse_args()
    program = load_program()
    with tempfile.TemporaryDirectory(prefix="exporter-bench-") as root:
        build_tree(root, args.devices, args.counters)
        stand_in = os.path.join(root, "ethtool")
        with open(stand_in, "w") as handle:
            handle.write("#!/bin/sh\ngrep -v '^%%%%' %s\n" % MLX5_SAMPLE)
        os.chmod(stand_in, 0o755)
        print("exporter scrape: %d devices x %d hw_counters, %d runs each, %s" % (
            args.devices, args.counters, args.runs, "%d CPUs" % os.cpu_count()))
        for label, gids, ethtool in (("with GID counting", True, None), ("without GID counting (--no-gids)", False, None),
                                     ("GIDs and ethtool -S per netdev", True, stand_in)):
            times, samples = measure(program, root, args.runs, gids, ethtool)
            ms = [t * 1000 for t in times]
            print("  %-36s median %6.1f ms  min %6.1f  max %6.1f  (%d samples on the page)" % (
                label, statistics.median(ms), min(ms), max(ms), samples))


if __name__ == "__main__":
    sys.exit(main())
