# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU health before a large job: clocks, ECC, host<->device copy bandwidth with NUMA pinning.

Prints one JSON document. For every GPU (index from nvidia-smi, matched to CUDA by PCI bus id):
- ``clocks``: SM/memory clocks now and their maxima; with ``--lock-clocks`` the SM clock is
  locked to its maximum (``nvidia-smi -i N -lgc MAX,MAX``) for the copy test and reset after
  (``nvidia-smi -i N -rgc``), each command's rc and output recorded (drivers in VMs often refuse);
- ``ecc``: ECC mode, volatile corrected/uncorrected counts, pending retired pages/remapped rows;
- ``copy``: host->device and device->host GB/s from pinned memory, the process pinned to the
  CPUs of the GPU's NUMA node (``/sys/bus/pci/devices/<bdf>/local_cpulist``), and the same
  from pageable memory for comparison.
With ``--dcgm-level N`` (1-4) it runs NVIDIA DCGM's diagnostics where ``dcgmi`` is installed (``dcgmi diag -r N
-j``, bounded) and keeps their output (``dcgm``: level, found, rc, output, timed_out).
The exit code is 0 when every GPU answers; thresholds are judged by the caller.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

BASE_QUERY = "index,name,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem"
QUERY = ("index,name,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,clocks.applications.graphics,"
         "ecc.mode.current,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,"
         "retired_pages.pending,remapped_rows.pending,remapped_rows.failure,temperature.gpu,power.draw")
ENV = dict(os.environ, LC_ALL="C", LANG="C")
NA = ("[N/A]", "N/A", "[Not Supported]", "Not Supported")


def run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, check=False,
                          universal_newlines=True)
    return dict(cmd=" ".join(argv), rc=proc.returncode, output=proc.stdout.strip())


# Seconds a DCGM level may take (as module_utils/validate/dcgm.py TIMEOUTS).
DCGM_TIMEOUTS = {1: 300, 2: 1200, 3: 3600, 4: 7200}


def dcgm_diag(level):
    """DCGM's diagnostics at ``level`` where dcgmi is installed, its output kept for the caller's judge."""
    dcgmi = shutil.which("dcgmi")
    if not dcgmi:
        return dict(level=level, found=False)
    argv = [dcgmi, "diag", "-r", str(level), "-j"]
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, check=False,
                              universal_newlines=True, timeout=DCGM_TIMEOUTS.get(level, 300))
    except subprocess.TimeoutExpired:
        return dict(level=level, found=True, cmd=" ".join(argv), timed_out=True)
    return dict(level=level, found=True, cmd=" ".join(argv), rc=proc.returncode, output=proc.stdout, timed_out=False)


def query():
    result = run(["nvidia-smi", "--query-gpu=" + QUERY, "--format=csv,nounits"])
    if result["rc"] != 0 and "not a valid field" in result["output"]:
        # Older drivers lack some fields (remapped rows); keep what every driver answers.
        result = run(["nvidia-smi", "--query-gpu=" + BASE_QUERY, "--format=csv,nounits"])
    if result["rc"] != 0:
        raise SystemExit("nvidia-smi failed (rc %d): %s" % (result["rc"], result["output"]))
    lines = [line for line in result["output"].splitlines() if line.strip()]
    # The header prints canonical names (clocks.current.sm for clocks.sm): key by the query's order.
    keys = (QUERY if len(lines[0].split(",")) == len(QUERY.split(",")) else BASE_QUERY).split(",")
    rows = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        rows.append({k: (None if v in NA else v) for k, v in zip(keys, cells)})
    for row in rows:
        for key in QUERY.split(","):
            row.setdefault(key, None)
    return rows, result


def sysfs_bdf(bus_id):
    # nvidia-smi prints 00000000:3B:00.0; sysfs uses 0000:3b:00.0.
    domain, rest = bus_id.split(":", 1)
    return ("%04x:%s" % (int(domain, 16), rest)).lower()


def numa_cpus(bdf):
    base = "/sys/bus/pci/devices/%s" % bdf
    node, cpus = None, None
    try:
        with open(base + "/numa_node") as handle:
            node = int(handle.read().strip())
        with open(base + "/local_cpulist") as handle:
            cpus = handle.read().strip()
    except (OSError, ValueError):
        pass
    return node, cpus


def parse_cpulist(text):
    cpus = set()
    for part in (text or "").split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.update(range(int(low), int(high) + 1))
        elif part.strip():
            cpus.add(int(part))
    return cpus


def copy_bandwidth(torch, device, nbytes, iters, pinned):
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    host.fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    results = {}
    for name, dst, src in (("h2d", dev, host), ("d2h", host, dev)):
        for _round in range(2):
            dst.copy_(src, non_blocking=pinned)
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _round in range(iters):
            dst.copy_(src, non_blocking=pinned)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3 / iters
        results[name] = round(nbytes / seconds / 1e9, 2)
    del host, dev
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1073741824", help="bytes per copy (default 1 GiB)")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--lock-clocks", action="store_true", help="lock SM clocks at maximum during the copy test, then reset")
    parser.add_argument("--no-copy", action="store_true", help="skip the copy bandwidth test")
    parser.add_argument("--dcgm-level", type=int, choices=[0, 1, 2, 3, 4], default=0,
                        help="run DCGM's diagnostics at this level where dcgmi is installed (0: not)")
    args = parser.parse_args(argv)
    rows, raw = query()
    report = dict(query_command=raw["cmd"], query_output=raw["output"], gpus=[])
    torch = None
    if not args.no_copy:
        import torch as torch_module
        torch = torch_module
    cuda_by_bus = {}
    if torch is not None:
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            if hasattr(props, "pci_bus_id"):
                bus = "%04x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), props.pci_bus_id, props.pci_device_id)
            else:
                bus = sysfs_bdf(rows[index]["pci.bus_id"]) if index < len(rows) else None
            cuda_by_bus[bus] = index
    original = os.sched_getaffinity(0)
    for row in rows:
        gpu = dict(index=int(row["index"]), name=row["name"], bus_id=row["pci.bus_id"],
                   clocks=dict(sm=row["clocks.sm"], sm_max=row["clocks.max.sm"], mem=row["clocks.mem"],
                               mem_max=row["clocks.max.mem"], applications_graphics=row["clocks.applications.graphics"]),
                   ecc=dict(mode=row["ecc.mode.current"], corrected=row["ecc.errors.corrected.volatile.total"],
                            uncorrected=row["ecc.errors.uncorrected.volatile.total"],
                            retired_pages_pending=row["retired_pages.pending"],
                            remapped_rows_pending=row["remapped_rows.pending"],
                            remapped_rows_failure=row["remapped_rows.failure"]),
                   temperature_c=row["temperature.gpu"], power_w=row["power.draw"], commands=[])
        bdf = sysfs_bdf(row["pci.bus_id"])
        node, cpus = numa_cpus(bdf)
        gpu["numa_node"], gpu["local_cpulist"] = node, cpus
        if args.lock_clocks and row["clocks.max.sm"]:
            top = row["clocks.max.sm"]
            lock = run(["nvidia-smi", "-i", row["index"], "-lgc", "%s,%s" % (top, top)])
            gpu["commands"].append(lock)
            gpu["clocks"]["locked"] = lock["rc"] == 0
        if torch is not None and bdf in cuda_by_bus:
            cuda = cuda_by_bus[bdf]
            pinned_cpus = parse_cpulist(cpus) & original if cpus else set()
            if pinned_cpus:
                os.sched_setaffinity(0, pinned_cpus)
            gpu["pinned_to_cpus"] = cpus if pinned_cpus else None
            device = torch.device("cuda", cuda)
            torch.cuda.set_device(device)
            size = int(args.size)
            gpu["copy"] = dict(bytes=size, iters=args.iters,
                               pinned=copy_bandwidth(torch, device, size, args.iters, True),
                               pageable=copy_bandwidth(torch, device, size, max(2, args.iters // 2), False))
            os.sched_setaffinity(0, original)
            after = run(["nvidia-smi", "-i", row["index"], "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"])
            gpu["clocks"]["sm_after_copy"] = after["output"]
        if args.lock_clocks and row["clocks.max.sm"]:
            gpu["commands"].append(run(["nvidia-smi", "-i", row["index"], "-rgc"]))
        report["gpus"].append(gpu)
    if args.dcgm_level:
        report["dcgm"] = dcgm_diag(args.dcgm_level)
    json.dump(report, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
