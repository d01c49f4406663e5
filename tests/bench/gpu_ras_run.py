"""The GPU-machine capture of NCCL's RAS answers (NCCL 2.24 and later; JSON from 2.28.7): while the validate role's
NCCL benchmark runs one rank per GPU, the RAS port every NCCL process serves on localhost (28028) is asked for its
status, as text and as JSON, through the collection's RAS client (``module_utils/validate/nccl_ras.py``: the wire
protocol ``ncclras`` speaks, ``CLIENT PROTOCOL 2``, ``SET FORMAT json``, ``VERBOSE STATUS``). With two GPUs or
more, one rank that does not hold the RAS port is then stopped (SIGSTOP, a hung process) and RAS is asked again: the
stopped rank is reported missing.

    OUT=<dir> python3 tests/bench/gpu_ras_run.py [--ranks N] [--hang-wait S]

Writes ``ras_status.json``, ``ras_status.txt`` (and ``ras_hung.json``, ``ras_hung.txt`` with a rank stopped) and
``nccl_bench.txt`` under ``$OUT``; prints what it did. Runs on the GPU machine (PyTorch with CUDA).
"""

import argparse
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(os.path.dirname(os.path.dirname(HERE)), "roles", "validate", "files", "nccl_bench.py")
PORT = 28028
# The collection's RAS client (module_utils/validate/nccl_ras.py, standard library only), loaded from this checkout.
_SPEC = importlib.util.spec_from_file_location(
    "nccl_ras", os.path.join(os.path.dirname(os.path.dirname(HERE)), "plugins", "module_utils", "validate", "nccl_ras.py"))
NCCL_RAS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(NCCL_RAS)
SINGLE = """
import os, torch, torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29561")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.ones(64 << 20, device="cuda:0")
print("one rank, all_reduce of 256 MiB in a loop", flush=True)
while True:
    dist.all_reduce(x)
    torch.cuda.synchronize()
"""


def ras(fmt, timeout=60.0):
    """RAS's ``VERBOSE STATUS`` on localhost in ``fmt`` (``json``, or None: text), through the collection's client."""
    return NCCL_RAS.query(("127.0.0.1", PORT), timeout=timeout, fmt=fmt)


def listening():
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        return True
    except OSError:
        return False


def port_owner():
    """The process listening on the RAS port (/proc: the machine may have no ss)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[1].endswith(":%04X" % PORT) and fields[3] == "0A":
                inodes.add("socket:[%s]" % fields[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes for fd in os.listdir("/proc/%s/fd" % pid)):
                return int(pid)
        except OSError:
            continue
    return None


def workers(parent):
    out = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=0, help="ranks (default: every GPU)")
    parser.add_argument("--hang-wait", type=float, default=30.0, help="seconds between the stop and the query")
    args = parser.parse_args()
    out = os.environ["OUT"]
    ranks = args.ranks or int(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                             check=True).stdout.count("GPU "))
    log = open(os.path.join(out, "nccl_bench.txt"), "w")
    if ranks >= 2:
        argv = [sys.executable, BENCH, "--nproc", str(ranks), "--ops", "all_reduce", "-b", "256M", "-e", "256M",
                "-n", "100000", "-w", "5", "--port", "29561"]
    else:
        # One GPU: a one-rank NCCL communicator of PyTorch's, all-reducing in a loop (nccl_bench needs two GPUs).
        argv = [sys.executable, "-c", SINGLE]
    bench = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 180
        while not listening():
            if bench.poll() is not None or time.time() > deadline:
                raise SystemExit("the NCCL job ended or RAS never listened (rc %s)" % bench.poll())
            time.sleep(1)
        time.sleep(15)  # the communicators up and the collectives running
        print("ranks %d, RAS on port %d (pid %s), workers %s" % (ranks, PORT, port_owner(), workers(bench.pid)))
        for fmt, name in (("json", "ras_status.json"), (None, "ras_status.txt")):
            text = ras(fmt)
            with open(os.path.join(out, name), "w") as handle:
                handle.write(text)
            print("%s: %d bytes" % (name, len(text)))
        if ranks >= 2:
            owner = port_owner()
            stopped = [pid for pid in workers(bench.pid) if pid != owner][0]
            os.kill(stopped, signal.SIGSTOP)
            print("stopped worker pid %d; asking again in %.0f s" % (stopped, args.hang_wait))
            time.sleep(args.hang_wait)
            for fmt, name in (("json", "ras_hung.json"), (None, "ras_hung.txt")):
                text = ras(fmt, timeout=120)
                with open(os.path.join(out, name), "w") as handle:
                    handle.write(text)
                print("%s: %d bytes" % (name, len(text)))
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
        bench.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
