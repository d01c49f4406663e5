"""Benchmark: playbooks/host.yml (RDMA drivers, firmware, SR-IOV, RDMA namespaces, one rolling reboot)
on the lab's two QEMU VMs, first run from clean VMs and a no-op re-run.

    tests/run env > /dev/null; flock /tmp/roce-vm.lock python tests/bench/host_bench.py [--noop-runs N] [--keep]

Boots node1 and node2 from clean overlays (labctl up), runs the play twice and reports, per run,
the wall time, the tasks that ran on each host (ok + changed from the play recap), the changed
tasks, and the reboots each VM really made (boots counted on its serial console, outside the VM).
Target: the no-op re-runs report zero changes and zero reboots, the first run reboots each host at
most once, and the no-op's median wall time is at most 60 s (issue "Fast"). Needs root (QEMU, the lab).
Stops the VMs at the end unless --keep.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INVENTORY = os.path.join(REPO, "inventories", "lab")
HOSTS = ("node1", "node2")
sys.path.insert(0, os.path.join(REPO, "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab(INVENTORY)


def labctl(*args):
    LAB.labctl(*args, stdout=None)


def boots(host):
    with open(LAB.artifact(host, "console"), errors="replace") as handle:
        return handle.read().count("%s login:" % host)


def play():
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    before = dict((h, boots(h)) for h in HOSTS)
    started = time.time()
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "host.yml"),
                           "-e", "roce_gpu_hosts=lab_vms"],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    wall = time.time() - started
    try:
        stats = json.loads(proc.stdout)["stats"]
    except (ValueError, KeyError):
        raise SystemExit("the play produced no result (rc=%d): %s" % (proc.returncode, proc.stderr[-2000:]))
    if proc.returncode != 0:
        raise SystemExit("the play failed (rc=%d): %s" % (proc.returncode, json.dumps(stats)))
    return dict(wall=wall, hosts=dict((h, dict(tasks=stats[h]["ok"] + stats[h]["changed"], changed=stats[h]["changed"],
                                               reboots=boots(h) - before[h])) for h in HOSTS))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the VMs running")
    parser.add_argument("--noop-runs", type=int, default=3, help="no-op re-runs to take the median of (default 3)")
    args = parser.parse_args()
    started = time.time()
    labctl("up", *HOSTS)
    boot = time.time() - started
    try:
        first = play()
        noops = [play() for _run in range(max(1, args.noop_runs))]
    finally:
        if not args.keep:
            labctl("down", *HOSTS)
    print("host play on %d lab VMs (QEMU TCG), VM boot %.0fs" % (len(HOSTS), boot))
    print("%-12s %8s  %s" % ("run", "wall", "  ".join("%-28s" % h for h in HOSTS)))
    walls = sorted(run["wall"] for run in noops)
    median = walls[len(walls) // 2] if len(walls) % 2 else (walls[len(walls) // 2 - 1] + walls[len(walls) // 2]) / 2
    for label, run in [("first", first)] + [("no-op %d" % (i + 1), run) for i, run in enumerate(noops)]:
        cells = ["tasks %3d changed %2d reboots %d" % (v["tasks"], v["changed"], v["reboots"]) for v in run["hosts"].values()]
        print("%-12s %7.0fs  %s" % (label, run["wall"], "  ".join("%-28s" % c for c in cells)))
    print("no-op median %.0fs (range %.0f-%.0fs, %d runs)" % (median, walls[0], walls[-1], len(walls)))
    ok = all(v["changed"] == 0 and v["reboots"] == 0 for run in noops for v in run["hosts"].values()) and \
        all(v["reboots"] <= 1 for v in first["hosts"].values())
    print("target (no-op: 0 changes, 0 reboots; first run: at most 1 reboot per host): %s" % ("met" if ok else "NOT met"))
    fast = median <= 60
    print("target (no-op median at most 60 s): %s" % ("met" if fast else "NOT met"))
    return 0 if ok and fast else 1


if __name__ == "__main__":
    sys.exit(main())
