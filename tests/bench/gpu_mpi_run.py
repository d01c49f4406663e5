# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MPI launch of the NCCL benchmark on a GPU machine, as the nccl_test module builds it.

Builds the mpirun command line with the collection's own _nccl.mpirun_argv (one rank per GPU,
HCOLL off, -x environment per application context, each rank under numactl on its GPU's NUMA
node from sysfs), runs roles/validate/files/nccl_bench.py under it, then parses the table and
checks the NCCL log (on the ranks' output) with the collection's parsers, and prints the result
beside a local (torch.multiprocessing) run of the same sizes.

    python3 tests/bench/gpu_mpi_run.py [--gpus 2] [--max-bytes 1G] [--host localhost]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The collection's parsers and the benchmark's path, loaded the way the comparison benchmark does.
from nccl_vs_torch import BENCH, nccl  # noqa: E402 pylint: disable=wrong-import-position


def gpu_numa_nodes(count):
    out = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True,
                         text=True, check=True).stdout.split()
    nodes = []
    for bus_id in out[:count]:
        domain, rest = bus_id.split(":", 1)
        path = "/sys/bus/pci/devices/%s:%s/numa_node" % (domain[-4:].lower(), rest.lower())
        with open(path) as handle:
            nodes.append(int(handle.read().strip()))
    return nodes


def summarize(label, text, command):
    print("== %s\n$ %s" % (label, command))
    tables = nccl.parse_all_results(text)
    check = nccl.check_log(text)
    for table in tables:
        print("  %s avg busbw %.2f GB/s, max %.2f GB/s, wrong %d, ranks %s" % (
            table["collective"], table["avg_busbw"], table["max_busbw"], table["wrong_total"],
            ["%s/%d pid %d" % (r["host"], r["device"], r["pid"]) for r in table["ranks"]]))
        for row in table["rows"]:
            side = row["in_place"] if row["in_place"]["busbw"] is not None else row["out_of_place"]
            print("    %12d B  %8.2f GB/s" % (row["size"], side["busbw"]))
    print("  log check: %s" % json.dumps(dict(passed=check["passed"], transports=check["transports"],
                                              findings=[f["code"] for f in check["findings"]])))
    return tables, check


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--max-bytes", default="1G")
    parser.add_argument("--ops", default="all_reduce,all_to_all")
    args = parser.parse_args()
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("mpirun not found")
    numactl = shutil.which("numactl")
    nodes = gpu_numa_nodes(args.gpus)
    program = [sys.executable, BENCH, "--ops", args.ops, "-b", "1M", "-e", args.max_bytes, "-f", "4", "-n", "20"]
    env = {"NCCL_DEBUG": "INFO", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29550"}
    argv = nccl.mpirun_argv(mpirun, [args.host], args.gpus, program, env=env, numa_nodes=nodes if numactl else None,
                            numactl=numactl or "numactl", as_root=os.geteuid() == 0)
    print("GPU NUMA nodes: %s, numactl: %s" % (nodes, numactl))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=500, check=False)
    print("mpirun rc %d" % proc.returncode)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        print("cause: %s" % nccl.mpi_failure(proc.stdout + proc.stderr))
        return 1
    mpi_tables, mpi_check = summarize("mpirun, %d ranks" % args.gpus, proc.stdout + "\n" + proc.stderr,
                                      " ".join(argv))
    local = [sys.executable, BENCH, "--ops", args.ops, "-b", "1M", "-e", args.max_bytes, "-f", "4", "-n", "20",
             "--nproc", str(args.gpus), "--port", "29551", "--numa=" + ",".join(str(n) for n in nodes)]
    proc = subprocess.run(local, capture_output=True, text=True, timeout=500, check=False,
                          env=dict(os.environ, NCCL_DEBUG="INFO"))
    summarize("local launch (torch.multiprocessing)", proc.stdout + "\n" + proc.stderr, " ".join(local))
    ok = all(nccl.results_verdict(t)[0] for t in mpi_tables) and mpi_check["passed"]
    print("mpi run %s" % ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
