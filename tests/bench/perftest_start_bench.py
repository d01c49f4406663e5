# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: how long roce.fabric.perftest takes to start a server, on the lab's Soft-RoCE VM with the real tools.

    tests/run env > /dev/null; flock /tmp/roce-vm.lock python tests/bench/perftest_start_bench.py [--runs 5] [--keep]

Every pair test of the validate role starts a server first, and the client starts only once the module says the server
listens. The module used to wait for perftest's banner ("Waiting for client to connect"), but perftest writes it
through stdio, which holds it in a buffer while the output goes to a file: the banner reached the file only when the
server ended, so every server start waited the whole ``start_timeout`` (15 s by default). The module now reads the
server's RDMA-CM id (``rdma resource show cm_id``, state LISTEN on the test's port) or its TCP socket.

1. On node1: ``ib_write_bw -R`` started with its output to a file, as the module starts it; the seconds until its
   RDMA-CM id listens, and whether the banner reached the file within ``--banner-wait`` seconds.
2. ``roce.fabric.perftest`` mode=server (ib_write_bw, rdma_cm, then rping) through Ansible, ``--runs`` times each,
   then mode=cleanup; the median, lowest and highest whole module call, and Ansible's floor on this machine.
Boots node1 from a clean overlay (labctl up) and stops it at the end unless --keep. Needs root (QEMU, the lab).
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The same lab door, inventory and VM as the module call benchmark.
from vm_module_bench import HOST, INVENTORY, LAB, REPO  # noqa: E402  pylint: disable=wrong-import-position
RXE = "modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev enp1s0)"

# Run in the VM: seconds until the server's RDMA-CM id listens, whether the banner is in its output file then, and
# when (if ever) the banner reaches the file while the server waits for a client.
PROBE = """
import subprocess, time
out = open("/root/bench.out", "w")
server = subprocess.Popen(["ib_write_bw", "-R", "-p", "18599"], stdout=out, stderr=subprocess.STDOUT)
start, listen, banner_then, banner = time.time(), None, None, None
while time.time() - start < %(wait)d:
    seen = "Waiting for client" in open("/root/bench.out").read()
    if listen is None and ":18599" in subprocess.run(["rdma", "res", "show", "cm_id"], capture_output=True, text=True).stdout:
        listen, banner_then = time.time() - start, seen
    if banner is None and seen:
        banner = time.time() - start
    time.sleep(0.1)
server.terminate()
server.wait()
print("RDMA-CM id listening after %%s s (banner in the file then: %%s); banner in the file while it waited: %%s" %% (
    "%%.2f" %% listen if listen is not None else "never", banner_then,
    "after %%.2f s" %% banner if banner is not None else "never in %(wait)d s"))
"""


def vm(command):
    proc = LAB.exec(HOST, ["sh", "-c", shlex.quote(command)])
    if proc.returncode != 0:
        raise SystemExit("%s failed on %s: %s" % (command[:60], HOST, proc.stdout + proc.stderr))
    return proc.stdout


def call(host, module, args):
    argv = ["ansible", host, "-i", INVENTORY, "-m", module, "-o", "-a", json.dumps(args)]
    if host == "localhost":
        argv += ["-e", "ansible_python_interpreter=%s" % sys.executable]
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    took = time.time() - started
    if proc.returncode != 0:
        raise SystemExit("%s on %s failed: %s" % (module, host, (proc.stdout + proc.stderr)[-2000:]))
    return took, proc.stdout


def series(label, runs, args):
    seconds = []
    for dummy in range(runs):
        took, out = call(HOST, "roce.fabric.perftest", dict(args, mode="server"))
        if "listening on port" not in out:
            raise SystemExit("the server did not say it listens: %s" % out[-1000:])
        seconds.append(took)
        call(HOST, "roce.fabric.perftest", dict(mode="cleanup", port=args["port"]))
    row = (label, statistics.median(seconds), min(seconds), max(seconds), runs)
    print("%-52s median %5.2f s  (%5.2f-%5.2f, %d runs)" % row, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--banner-wait", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="leave node1 running")
    args = parser.parse_args()
    LAB.up(HOST)
    try:
        vm(RXE)
        print("ib_write_bw -R, output to a file: %s" % vm("python3 -c %s" % shlex.quote(PROBE % dict(wait=args.banner_wait))).strip(),
              flush=True)
        floor = [call("localhost", "ansible.builtin.ping", {})[0] for dummy in range(args.runs)]
        print("%-52s median %5.2f s" % ("Ansible's floor (localhost, ping)", statistics.median(floor)), flush=True)
        common = dict(port=18600, device="rxe0", timeout=30, run_dir="/var/tmp/roce-bench", fail_on_error=True)
        series("perftest server, ib_write_bw -R (start_timeout 15)", args.runs, dict(common, tool="ib_write_bw", rdma_cm=True))
        series("perftest server, rping", args.runs, dict(common, tool="rping", rdma_cm=True))
    finally:
        if not args.keep:
            LAB.down(HOST)


if __name__ == "__main__":
    main()
