"""Benchmark: the whole test suite (or any tier of ``tests/run``), its wall time and the CPU it needs: the floor.

    python3 tests/bench/suite_bench.py [--out FILE] [-- COMMAND...]      (default command: tests/run all)

Runs the command from the repository root and samples the machine every second while it runs:

- ``/proc/stat``: the CPU seconds the machine spent busy (user, nice, system, irq, softirq) and stolen by the
  hypervisor, and how many of the seconds had every core busy (at least 90 %);
- every process: its CPU seconds by program name (``qemu-system-x86``, ``python3``, ``ansible-playbook`` ...),
  the last value seen of each process, so processes that live less than a second are missed: they are the
  "short-lived" line (busy CPU minus what was attributed);
- the command's own log lines (``== X finished ... in N s``), with the moment each was read.

The report gives the wall time, the busy CPU seconds and the floor they set on this machine (busy CPU seconds over
the number of cores: the suite cannot end sooner without less work or more cores), the tiers' times as the log states
them, and where the CPU went. The command's exit status is the benchmark's. Needs nothing but Python's standard
library, so it can time a fresh clone's ``.ci/run`` (which makes the virtual environment itself).
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TICK = os.sysconf("SC_CLK_TCK")
FINISHED = re.compile(r"== (?P<what>.+?) finished(?: with rc=(?P<rc>\d+))? in (?P<secs>\d+) s")
ALL_PASSED = re.compile(r"== all tiers passed in (?P<secs>\d+) s")
PF_KTHREAD = 0x00200000
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def read_stat():
    """(busy, idle, steal) CPU seconds of the machine since its start, from the first line of /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(f) for f in handle.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq) / TICK, (idle + iowait) / TICK, steal / TICK


def proc_stats():
    """(pid, program name, the fields of /proc/<pid>/stat after the name) of every process that can be read."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as handle:
                head, tail = handle.read().rsplit(")", 1)
        except OSError:
            continue
        yield int(pid), head.split("(", 1)[1], tail.split()


def process_times():
    """{(pid, start time): (program name, CPU seconds so far)} of every process that can be read; kernel threads are
    one name."""
    seen = {}
    for pid, name, fields in proc_stats():
        if int(fields[6]) & PF_KTHREAD:
            name = "kernel threads"
        # utime and stime of the process itself: its children are counted when they are seen themselves.
        seen[(pid, fields[19])] = (name, (int(fields[11]) + int(fields[12])) / TICK)
    return seen


class Sampler(threading.Thread):
    """Samples the machine every ``interval`` seconds until stopped."""

    def __init__(self, interval):
        super().__init__(daemon=True)
        self.interval = interval
        self.done = threading.Event()
        self.start_stat = read_stat()
        self.baseline = process_times()
        self.last = {}
        self.full_seconds = 0.0
        self.samples = 0
        self.timeline = []  # (seconds since the start, busy share of the machine in that sample)
        self.began = time.time()
        self.cores = os.cpu_count() or 1

    def run(self):
        previous = read_stat()
        while not self.done.wait(self.interval):
            self.sample(previous)
            previous = read_stat()

    def sample(self, previous):
        now = read_stat()
        busy, idle = now[0] - previous[0], now[1] - previous[1]
        share = busy / (busy + idle) if busy + idle > 0 else 0.0
        if share >= 0.9:
            self.full_seconds += self.interval
        self.timeline.append((time.time() - self.began, share))
        self.samples += 1
        self.last.update(process_times())

    def stop(self):
        self.done.set()
        self.join()
        end = read_stat()
        self.last.update(process_times())
        by_name = collections.Counter()
        for key, (name, cpu) in self.last.items():
            # A process that ran before the command started counts only what it used since.
            by_name[name] += cpu - self.baseline.get(key, (name, 0.0))[1]
        return {"busy": end[0] - self.start_stat[0], "idle": end[1] - self.start_stat[1],
                "steal": end[2] - self.start_stat[2], "by_name": by_name}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--top", type=int, default=12, help="program names to list")
    parser.add_argument("--bucket", type=int, default=300, help="seconds per line of the busy timeline")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command (default: tests/run all)")
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"] or [os.path.join(REPO, "tests", "run"), "all"]

    sampler = Sampler(args.interval)
    began = time.time()
    sampler.start()
    tiers = []
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        plain = ANSI.sub("", line)
        match = FINISHED.search(plain)
        if match:
            tiers.append((time.time() - began, match.group("what"), int(match.group("secs")), match.group("rc")))
    rc = proc.wait()
    wall = time.time() - began
    usage = sampler.stop()

    cores = sampler.cores
    busy = usage["busy"]
    attributed = sum(v for v in usage["by_name"].values() if v > 0)
    lines = ["suite_bench: %s (rc=%d) on %d CPU(s), sampled every %.1f s" % (" ".join(command), rc, cores, args.interval),
             "wall %.0f s; busy CPU %.0f s, idle %.0f s, stolen %.0f s; the machine was %.0f %% busy on average, "
             "every core busy (>= 90 %%) for %.0f s (%.0f %% of the run)" % (
                 wall, busy, usage["idle"], usage["steal"], 100.0 * busy / (wall * cores) if wall else 0,
                 sampler.full_seconds, 100.0 * sampler.full_seconds / wall if wall else 0),
             "floor on this machine: %.0f s (busy CPU over %d cores): the command cannot end sooner here without "
             "less work" % (busy / cores, cores),
             "", "| ended at | what | took | rc |", "|---|---|---|---|"]
    for at, what, secs, tier_rc in tiers:
        lines.append("| %.0f s | %s | %d s | %s |" % (at, what, secs, tier_rc if tier_rc is not None else ""))
    lines += ["", "| from | to | machine busy |", "|---|---|---|"]
    buckets = collections.OrderedDict()
    for at, share in sampler.timeline:
        buckets.setdefault(int(at // args.bucket), []).append(share)
    for index, shares in buckets.items():
        lines.append("| %d s | %d s | %.0f %% |" % (index * args.bucket, min((index + 1) * args.bucket, wall),
                                                    100.0 * sum(shares) / len(shares)))
    lines += ["", "| program | CPU-s | share of busy |", "|---|---|---|"]
    for name, cpu in usage["by_name"].most_common(args.top):
        lines.append("| %s | %.0f | %.0f %% |" % (name, cpu, 100.0 * cpu / busy if busy else 0))
    lines.append("| short-lived processes (under %.0f s, not sampled) | %.0f | %.0f %% |" % (
        args.interval, max(busy - attributed, 0), 100.0 * max(busy - attributed, 0) / busy if busy else 0))
    report = "\n".join(lines) + "\n"
    sys.stdout.write("\n" + report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report)
    return rc


if __name__ == "__main__":
    sys.exit(main())
