"""Benchmark: starting the lab's two QEMU VMs from a clean state, booted (``ROCE_LAB_VM_SNAPSHOTS=0``) against
restored from their snapshots (lab/rdma/peer_qemu.py).

    tests/run env > /dev/null; flock /tmp/roce-vm.lock python tests/bench/vm_start_bench.py [--runs 3]

Each run is ``labctl down node1 node2`` then ``labctl up node1 node2`` (the two start in parallel, as every tier starts
them), timed from outside, with the CPU time the two QEMU processes used until both answered SSH (read from /proc:
QEMU daemonizes). A restored run that finds no snapshot saves one first. Prints the median and the range of each
mode. Needs root (QEMU, the lab). Leaves the VMs stopped.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab()  # the lab inventory, inventories/lab
HOSTS = ("node1", "node2")


def qemu_cpu_seconds(host):
    """User + system CPU seconds of the VM's QEMU process so far."""
    with open(os.path.join(LAB.dir, "vms", host, "qemu.pid")) as handle:
        pid = handle.read().strip()
    with open("/proc/%s/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(snapshots):
    LAB.labctl("down", *HOSTS)
    env = dict(os.environ, ROCE_LAB_VM_SNAPSHOTS="1" if snapshots else "0")
    began = time.time()
    LAB.labctl("up", *HOSTS, env=env)
    wall = time.time() - began
    cpu = sum(qemu_cpu_seconds(host) for host in HOSTS)
    how = []
    for host in HOSTS:
        with open(os.path.join(LAB.dir, "vms", host, "boot-seconds")) as handle:
            how.append("%s %s" % (host, handle.read().strip()))
    return wall, cpu, how


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = {}
    for mode, snapshots in (("booted", False), ("restored", True)):
        walls, cpus = [], []
        for run in range(args.runs):
            wall, cpu, how = start(snapshots)
            walls.append(wall)
            cpus.append(cpu)
            print("%-9s run %d: %6.1f s wall, QEMU CPU %6.1f s (%s)" % (mode, run + 1, wall, cpu, "; ".join(how)),
                  flush=True)
        results[mode] = (walls, cpus)
    LAB.labctl("down", *HOSTS)
    print("\nmode       wall median (range)        QEMU CPU median (range), two VMs")
    for mode, (walls, cpus) in results.items():
        print("%-9s  %6.1f s (%5.1f-%5.1f)       %6.1f s (%5.1f-%5.1f)" % (
            mode, statistics.median(walls), min(walls), max(walls), statistics.median(cpus), min(cpus), max(cpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
