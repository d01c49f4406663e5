"""Benchmark: what one Ansible module call costs on a lab VM (QEMU TCG), with and without the guest's bytecode cache.

    tests/run env > /dev/null; flock /tmp/roce-vm.lock python tests/bench/vm_module_bench.py [--runs 7] [--keep]

Every peer tier that uses the lab VMs pays this price per task, so it sets the lab's speed (issue 19). Ansible runs a
module from a zip archive, and Python compiles every source file of that archive again at each call; the guest image
keeps the compiled code instead (lab/rdma/guest/roce_lab_bytecode.py, loaded by a .pth file at start-up).

1. Ansible's floor on this machine: ``ansible localhost -m ansible.builtin.ping`` (``--runs`` times).
2. ``ansible node1 -m ansible.builtin.ping`` with the cache (first call not counted: it fills the cache).
3. The same with the cache switched off in the guest (its .pth removed, the cache emptied).
4. ``roce.fabric.rdma_facts`` (a module of the collection, more module_utils) with and without the cache.
Prints the median, the lowest and the highest of each. Boots node1 from a clean overlay (labctl up) and stops it at
the end unless --keep. Needs root (QEMU, the lab).
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INVENTORY = os.path.join(REPO, "inventories", "lab")
sys.path.insert(0, os.path.join(REPO, "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab(INVENTORY)
HOST = "node1"
PTH = "/usr/lib/python3/dist-packages/roce_lab_bytecode.pth"
CACHE = "/var/cache/roce-lab-bytecode"


def call(host, module, args=""):
    argv = ["ansible", host, "-i", INVENTORY, "-m", module, "-o"] + (["-a", args] if args else [])
    if host == "localhost":
        argv += ["-e", "ansible_python_interpreter=%s" % sys.executable]
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit("%s on %s failed: %s" % (module, host, (proc.stdout + proc.stderr)[-2000:]))
    return time.time() - started


def series(label, runs, host, module, args=""):
    seconds = [call(host, module, args) for dummy in range(runs)]
    row = (label, statistics.median(seconds), min(seconds), max(seconds), runs)
    print("%-52s median %5.2f s  (%5.2f-%5.2f, %d runs)" % row, flush=True)
    return statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="leave node1 running (with the cache switched off)")
    args = parser.parse_args()
    started = time.time()
    LAB.labctl("up", HOST, stdout=None)
    print("node1 booted in %.0f s" % (time.time() - started))
    facts = ("roce.fabric.rdma_facts", "gpu_topology=false")
    try:
        floor = series("Ansible's floor (localhost, ping)", args.runs, "localhost", "ansible.builtin.ping")
        call(HOST, "ansible.builtin.ping")
        call(HOST, *facts)
        cached = series("node1 ping, bytecode cache", args.runs, HOST, "ansible.builtin.ping")
        cached_facts = series("node1 rdma_facts, bytecode cache", args.runs, HOST, *facts)
        proc = LAB.exec(HOST, ["sh", "-c", shlex.quote("rm -f %s && rm -rf %s" % (PTH, CACHE))])  # one shell word over ssh
        if proc.returncode != 0:
            raise SystemExit("could not switch the cache off: %s" % proc.stderr)
        plain = series("node1 ping, no cache", args.runs, HOST, "ansible.builtin.ping")
        plain_facts = series("node1 rdma_facts, no cache", args.runs, HOST, *facts)
    finally:
        if not args.keep:
            LAB.labctl("down", HOST, stdout=None)
    print("in the VM (median minus the floor): ping %.2f s cached, %.2f s without; rdma_facts %.2f s cached, %.2f s "
          "without" % (cached - floor, plain - floor, cached_facts - floor, plain_facts - floor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
