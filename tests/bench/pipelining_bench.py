"""Benchmark: a no-op ``playbooks/host.yml`` on the lab's namespace GPU hosts (gpu1, gpu2) with Ansible's pipelining
on and off.

    tests/run env > /dev/null; python tests/bench/pipelining_bench.py [--runs 5] [--hosts gpu1,gpu2]

Starts the hosts (``labctl up``), converges them once, then runs the play alternately with ``ansible_pipelining``
true and false (as extra variables, which win over the inventory), each ``--runs`` times. Reports per mode the
median wall time, the CPU seconds of everything the run started (Ansible on the controller, ssh, and the hosts'
sshd and module processes, which run on this machine too: read from the children's rusage of the benchmark and the
sshd's). Every no-op run must report zero changed tasks. Needs root (the lab). Stops the hosts at the end unless --keep.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INVENTORY = os.path.join(REPO, "inventories", "lab")
sys.path.insert(0, os.path.join(REPO, "lab"))
sys.path.insert(0, HERE)
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position
from suite_bench import proc_stats  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab(INVENTORY)


def sshd_cpu():
    """CPU seconds of every sshd on the machine so far, with their finished children (the lab's hosts run theirs)."""
    tick = os.sysconf("SC_CLK_TCK")
    # utime, stime, cutime, cstime
    return sum(sum(int(f) for f in fields[11:15]) / tick for _pid, name, fields in proc_stats() if name == "sshd")


def measured_run(argv):
    """Run ``ansible-playbook`` argv with the JSON callback: (process, wall seconds, CPU seconds of what it started on
    the controller - its workers, ssh -, CPU seconds of the lab hosts' sshd and their children)."""
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before_sshd = sshd_cpu()
    began = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    wall = time.time() - began
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    controller = (after_children.ru_utime - before_children.ru_utime + after_children.ru_stime
                  - before_children.ru_stime)
    return proc, wall, controller, sshd_cpu() - before_sshd


def measured_playbook(argv):
    """``measured_run``: (process, wall seconds, CPU seconds of everything it started, the lab hosts' sshd and their
    children included)."""
    proc, wall, controller, hosts = measured_run(argv)
    return proc, wall, controller + hosts


def play(hosts, pipelining):
    argv = ["ansible-playbook", "-i", INVENTORY, "--limit", ",".join(hosts), os.path.join(REPO, "playbooks", "host.yml")]
    if pipelining is not None:
        argv += ["-e", json.dumps({"ansible_pipelining": pipelining})]
    proc, wall, cpu = measured_playbook(argv)
    if proc.returncode != 0:
        raise SystemExit("host.yml failed (rc=%d)\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-2000:]))
    stats = json.loads(proc.stdout)["stats"]
    tasks = sum(stats[h]["ok"] + stats[h]["changed"] for h in hosts)
    changed = sum(stats[h]["changed"] for h in hosts)
    return wall, cpu, tasks, changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hosts", default="gpu1,gpu2")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    hosts = args.hosts.split(",")
    LAB.up(*hosts)
    try:
        wall, cpu, tasks, changed = play(hosts, None)
        print("converge: %.1f s, %d tasks, %d changed" % (wall, tasks, changed), flush=True)
        results = {True: [], False: []}
        for run in range(args.runs):
            for mode in (True, False):
                wall, cpu, tasks, changed = play(hosts, mode)
                if changed:
                    raise SystemExit("a no-op run changed %d tasks (pipelining %s)" % (changed, mode))
                results[mode].append((wall, cpu))
                print("run %d pipelining %-5s: %5.1f s wall, %5.1f CPU-s, %d tasks on %d hosts, 0 changed" % (
                    run + 1, mode, wall, cpu, tasks, len(hosts)), flush=True)
        print("\npipelining  wall median (range)     CPU-s median (range)")
        for mode in (True, False):
            walls = [w for w, _c in results[mode]]
            cpus = [c for _w, c in results[mode]]
            print("%-10s  %5.1f s (%4.1f-%4.1f)       %5.1f (%4.1f-%4.1f)" % (
                mode, statistics.median(walls), min(walls), max(walls), statistics.median(cpus), min(cpus), max(cpus)))
    finally:
        if not args.keep:
            LAB.down(*hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
