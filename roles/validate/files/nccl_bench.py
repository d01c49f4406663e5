# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NCCL collective benchmark on PyTorch's NCCL backend, printed in the nccl-tests table layout.

Used by the roce.fabric validate role where nccl-tests is not installed. Bus bandwidth is
computed as nccl-tests does (busbw = algbw * factor; all_reduce 2(n-1)/n, all_to_all (n-1)/n),
the time of a size is the slowest rank's mean time per operation (CUDA events around the loop), and every size is checked
for wrong values once before it is timed (``#wrong`` column).

One process per GPU on this host:
    python3 nccl_bench.py --nproc 2 --ops all_reduce,all_to_all
Across hosts, started by torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set):
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-endpoint host1:29500 nccl_bench.py
or by Open MPI's mpirun, one rank per GPU (MASTER_ADDR and MASTER_PORT passed with -x):
    mpirun -np 16 -H host1:8,host2:8 -x MASTER_ADDR=host1 -x MASTER_PORT=29512 python3 nccl_bench.py
torch.distributed.all_reduce works in place and all_to_all_single out of place, so the other
half of each row prints N/A.
"""

from __future__ import annotations

import argparse
import os
import sys

VERSION = "1.0"


def parse_size(text):
    text = text.strip().upper()
    scale = 1
    for suffix, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if text.endswith(suffix):
            text, scale = text[:-1], factor
            break
    return int(text) * scale


def sizes(min_bytes, max_bytes, factor):
    size = min_bytes
    while size <= max_bytes:
        yield size
        size *= factor


def bus_factor(op, n):
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    return float(n - 1) / n


def check_values(torch, dist, op, count, rank, world, device):
    """Run the collective once on known data; return the number of wrong elements."""
    count -= count % world
    if op == "all_reduce":
        data = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(data)
        expected = world * (world + 1) / 2.0
        return int((data != expected).sum().item())
    chunk = count // world
    send = torch.empty(count, dtype=torch.float32, device=device)
    for peer in range(world):
        send[peer * chunk:(peer + 1) * chunk] = float(rank * world + peer)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    wrong = 0
    for peer in range(world):
        wrong += int((recv[peer * chunk:(peer + 1) * chunk] != float(peer * world + rank)).sum().item())
    return wrong


def time_op(torch, dist, op, count, iters, warmup, device):
    count -= count % dist.get_world_size()
    if op == "all_reduce":
        buf = torch.ones(count, dtype=torch.float32, device=device)

        def run():
            dist.all_reduce(buf)
    else:
        send = torch.ones(count, dtype=torch.float32, device=device)
        recv = torch.empty_like(send)

        def run():
            dist.all_to_all_single(recv, send)
    for _round in range(warmup):
        run()
    # The timed loop starts once every rank is idle: the barrier's own work must not be timed.
    dist.barrier()
    torch.cuda.synchronize(device)
    # GPU time between two events on the collective's stream: the host's launch and synchronize
    # latencies stay out of the measurement, which matters for the small sizes.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _round in range(iters):
        run()
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end) / 1e3 / iters
    slowest = torch.tensor([elapsed], dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return slowest.item(), count


def cpulist(text):
    """CPUs of a sysfs cpulist such as '0-15,32-47'."""
    cpus = set()
    for part in text.strip().split(","):
        if "-" in part:
            first, last = part.split("-")
            cpus.update(range(int(first), int(last) + 1))
        elif part:
            cpus.add(int(part))
    return cpus


def pin_to_numa_node(node):
    """Run this process on the CPUs of NUMA node ``node`` (below 0: leave it where it is)."""
    if node < 0:
        return
    with open("/sys/devices/system/node/node%d/cpulist" % node) as handle:
        os.sched_setaffinity(0, cpulist(handle.read()))


def emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def worker(local_rank, args, world, rank_base):
    import torch
    import torch.distributed as dist

    rank = rank_base + local_rank
    if args.numa and local_rank < len(args.numa):
        pin_to_numa_node(args.numa[local_rank])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    if "RANK" not in os.environ:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    lead = rank == 0
    if lead:
        emit("# roce.fabric nccl_bench %s torch %s nccl %s" % (
            VERSION, torch.__version__, ".".join(str(v) for v in torch.cuda.nccl.version())))
    for op in args.ops:
        factor = bus_factor(op, world)
        if lead:
            emit("# Collective test starting: %s_perf_torch" % op)
            emit("# nThread 1 nGpus 1 nRanks %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d "
                 "validation: 1" % (world, args.min_bytes, args.max_bytes, args.factor, args.warmup, args.iters))
            emit("#")
            emit("# Using devices")
        names = [None] * world
        me = "%s %d %d %s" % (os.uname()[1], local_rank, os.getpid(), torch.cuda.get_device_name(device))
        dist.all_gather_object(names, me)
        if lead:
            for index, name in enumerate(names):
                host, dev, pid, model = name.split(" ", 3)
                emit("#  Rank %2d Group  0 Pid %6s on %10s device %2s %s" % (index, pid, host, dev, model))
            emit("#")
            emit("#%66s%35s" % ("out-of-place", "in-place"))
            emit("#%12s%14s%10s%8s%8s%9s%8s%8s%7s%9s%8s%8s%7s" % (
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong"))
            emit("#%12s%14s%10s%8s%8s%9s%8s%8s%7s%9s%8s%8s%7s" % (
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
        busbws = []
        wrong_total = 0
        for size in sizes(args.min_bytes, args.max_bytes, args.factor):
            count = size // 4
            wrong = check_values(torch, dist, op, count, rank, world, device)
            total = torch.tensor([wrong], dtype=torch.int64, device=device)
            dist.all_reduce(total)
            wrong = int(total.item())
            wrong_total += wrong
            seconds, count = time_op(torch, dist, op, count, args.iters, args.warmup, device)
            nbytes = count * 4
            algbw = nbytes / seconds / 1e9
            busbw = algbw * factor
            busbws.append(busbw)
            if lead:
                measured = "%9.1f%8.2f%8.2f%7d" % (seconds * 1e6, algbw, busbw, wrong)
                missing = "%9s%8s%8s%7s" % ("N/A", "N/A", "N/A", "N/A")
                redop = "sum" if op == "all_reduce" else "none"
                out_of_place, in_place = (missing, measured) if op == "all_reduce" else (measured, missing)
                emit(" %12d%14d%10s%8s%8d%s%s" % (nbytes, count, "float", redop, -1, out_of_place, in_place))
        if lead:
            emit("# Out of bounds values : %d %s" % (wrong_total, "OK" if wrong_total == 0 else "FAILED"))
            emit("# Avg bus bandwidth    : %g " % (sum(busbws) / len(busbws)))
            emit("#")
            emit("# Collective test concluded: %s_perf_torch" % op)
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="all_reduce,all_to_all",
                        help="comma-separated collectives: all_reduce, all_to_all")
    parser.add_argument("-b", "--min-bytes", default="1M")
    parser.add_argument("-e", "--max-bytes", default="1G")
    parser.add_argument("-f", "--factor", type=int, default=4, help="size multiplier between rows")
    parser.add_argument("-n", "--iters", type=int, default=20)
    parser.add_argument("-w", "--warmup", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=0, help="processes on this host (default: all GPUs)")
    parser.add_argument("--port", type=int, default=29512, help="rendezvous port for a single-host run")
    parser.add_argument("--numa", default="", help="NUMA node of each local GPU, comma-separated: each process "
                        "runs on its GPU's node (-1: not pinned)")
    args = parser.parse_args(argv)
    args.ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    try:
        args.numa = [int(node) for node in args.numa.split(",") if node.strip()]
    except ValueError:
        parser.error("--numa takes comma-separated NUMA node numbers, got '%s'" % args.numa)
    for op in args.ops:
        if op not in ("all_reduce", "all_to_all"):
            parser.error("unknown collective '%s'" % op)
    args.min_bytes, args.max_bytes = parse_size(args.min_bytes), parse_size(args.max_bytes)
    if args.min_bytes < 4 or args.max_bytes < args.min_bytes or args.factor < 2:
        parser.error("need 4 <= min-bytes <= max-bytes and factor >= 2")
    import torch
    import torch.multiprocessing as mp

    # Started by mpirun (Open MPI, or an MPICH-style PMI launcher): take the rank from its environment;
    # MASTER_ADDR/MASTER_PORT come from the launcher's -x.
    for rank_var, size_var, local_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                                          ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID")):
        if rank_var in os.environ and "RANK" not in os.environ:
            os.environ["RANK"], os.environ["WORLD_SIZE"] = os.environ[rank_var], os.environ[size_var]
            os.environ["LOCAL_RANK"] = os.environ.get(local_var, "0")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank = int(os.environ["RANK"])
        local = int(os.environ.get("LOCAL_RANK", "0"))
        worker(local, args, int(os.environ["WORLD_SIZE"]), rank - local)
        return 0
    nproc = args.nproc or torch.cuda.device_count()
    if nproc < 2:
        sys.stderr.write("nccl_bench: need at least 2 GPUs on this host (found %d)\n" % torch.cuda.device_count())
        return 2
    mp.spawn(worker, args=(args, nproc, 0), nprocs=nproc, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
