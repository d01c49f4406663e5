# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's stand-in for nccl-tests' all_reduce_perf / alltoall_perf (installed under both names).

The lab VMs have no GPU, so there is no NCCL to run. This program takes nccl-tests' arguments,
runs the same collective with MPI (mpi4py) on host memory, checks every element of the result,
times it with MPI_Wtime and prints the results in nccl-tests' table layout, so that the
collection's MPI launch (SSH, mpirun, -x environment, NUMA pinning, timeouts) and its parser run
end to end across hosts. It says what it is in its first line, prints no NCCL log lines, and
its numbers are host-memory MPI numbers over TCP, not NCCL's.

Extra for fault tests: ROCE_LAB_STANDIN_HANG=<rank> makes that rank sleep forever before the
first collective (a hung benchmark).
"""

import argparse
import array
import os
import socket
import sys
import time

from mpi4py import MPI


def size_arg(text):
    text = text.strip().upper()
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if text.endswith(suffix):
            return int(text[:-1]) * scale
    return int(text)


def main():
    op = "alltoall" if "alltoall" in os.path.basename(sys.argv[0]) else "all_reduce"
    parser = argparse.ArgumentParser()
    parser.add_argument("-b", "--minbytes", type=size_arg, default=size_arg("32M"))
    parser.add_argument("-e", "--maxbytes", type=size_arg, default=size_arg("32M"))
    parser.add_argument("-f", "--stepfactor", type=int, default=2)
    parser.add_argument("-n", "--iters", type=int, default=20)
    parser.add_argument("-w", "--warmup_iters", type=int, default=5)
    parser.add_argument("-g", "--ngpus", type=int, default=1)
    parser.add_argument("-c", "--check", type=int, default=1)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    lead = rank == 0
    factor = 2.0 * (world - 1) / world if op == "all_reduce" else float(world - 1) / world
    me = "%s %d %s %s" % (socket.gethostname(), os.getpid(), ",".join(str(c) for c in sorted(os.sched_getaffinity(0))),
                          os.environ.get("NCCL_IB_HCA", "-"))
    everyone = comm.gather(me, root=0)
    if lead:
        print("# roce.fabric lab stand-in for nccl-tests: MPI %s on host memory over TCP, not NCCL" % op)
        print("# Collective test starting: %s_perf_mpi_standin" % op)
        print("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d validation: %d"
              % (args.minbytes, args.maxbytes, args.stepfactor, args.warmup_iters, args.iters, args.check))
        print("#\n# Using devices")
        for index, entry in enumerate(everyone):
            host, pid, cpus, hca = entry.split(" ")
            print("#  Rank %2d Group  0 Pid %6s on %10s device  0 [cpu] host memory cpus %s NCCL_IB_HCA %s"
                  % (index, pid, host, cpus, hca))
        print("#\n#%66s%35s" % ("out-of-place", "in-place"))
        layout = "#%12s%14s%10s%8s%8s%9s%8s%8s%7s%9s%8s%8s%7s"
        print(layout % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                        "time", "algbw", "busbw", "#wrong"))
        print(layout % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
        sys.stdout.flush()
    hang = os.environ.get("ROCE_LAB_STANDIN_HANG")
    if hang is not None and int(hang) == rank:
        while True:
            time.sleep(3600)
    busbws, wrong_total, size = [], 0, args.minbytes
    while size <= args.maxbytes:
        count = size // 4
        count -= count % world
        chunk = count // world
        if op == "all_reduce":
            send = array.array("f", [float(rank + 1)]) * count
            recv = array.array("f", [0.0]) * count
            expected = [float(world * (world + 1) // 2)] * world
        else:
            send = array.array("f", [0.0]) * count
            for peer in range(world):
                send[peer * chunk:(peer + 1) * chunk] = array.array("f", [float(rank * world + peer)]) * chunk
            recv = array.array("f", [0.0]) * count
            expected = [float(peer * world + rank) for peer in range(world)]

        def run():
            if op == "all_reduce":
                comm.Allreduce([send, MPI.FLOAT], [recv, MPI.FLOAT], op=MPI.SUM)
            else:
                comm.Alltoall([send, MPI.FLOAT], [recv, MPI.FLOAT])
        run()
        wrong = sum(1 for peer in range(world) for value in recv[peer * chunk:(peer + 1) * chunk]
                    if value != expected[peer]) if args.check else 0
        wrong = comm.allreduce(wrong, op=MPI.SUM)
        for _round in range(args.warmup_iters):
            run()
        comm.Barrier()
        start = MPI.Wtime()
        for _round in range(args.iters):
            run()
        elapsed = comm.allreduce((MPI.Wtime() - start) / args.iters, op=MPI.MAX)
        algbw = count * 4 / elapsed / 1e9
        busbw = algbw * factor
        busbws.append(busbw)
        wrong_total += wrong
        if lead:
            measured = "%9.1f%8.2f%8.2f%7d" % (elapsed * 1e6, algbw, busbw, wrong)
            redop = "sum" if op == "all_reduce" else "none"
            print(" %12d%14d%10s%8s%8d%s%s" % (count * 4, count, "float", redop, -1, measured,
                                               "%9s%8s%8s%7s" % ("N/A", "N/A", "N/A", "N/A")))
            sys.stdout.flush()
        size *= args.stepfactor
    if lead:
        print("# Out of bounds values : %d %s" % (wrong_total, "OK" if wrong_total == 0 else "FAILED"))
        print("# Avg bus bandwidth    : %g " % (sum(busbws) / len(busbws)))
        print("#\n# Collective test concluded: %s_perf_mpi_standin" % op)
    return 0


if __name__ == "__main__":
    sys.exit(main())
