"""Benchmark: one roce.fabric.onyx_roce task on a converged switch, and on a fleet of them, over real SSH.

    tests/run env > /dev/null; python tests/bench/onyx_noop_bench.py [--switches 64] [--forks 16] [--runs 7]

Issue 19's switch targets: a no-op task on one converged switch (the seed's RoCE setup on 32 ports) at most 2 s
wall, Ansible's start included; the same task on 64 switches with forks 16 at most 3 times one switch.

1. Every simulated switch gets the setup once (not timed).
2. Ansible's own floor: the same play with a task that does nothing on the controller (``--runs`` times).
3. The no-op task on one switch (``--runs`` times): must send no configuration command.
4. The no-op task on all switches with ``--forks`` (``--runs`` times, at least 3).
Prints the median, the lowest and the highest of each, SSH logins and configuration commands counted by the
simulators themselves, and the ratios. Runs as any user; uses loopback ports 22301 and up and a lab directory
of its own.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "lab"))
sys.path.insert(0, HERE)
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position
from onyx_bench import SETUP, counters, play, write_inventory  # noqa: E402  pylint: disable=wrong-import-position

TASK = {"roce.fabric.onyx_roce": {"roce_mode": SETUP["roce_switch_roce_mode"], "vlans": SETUP["roce_switch_vlans"],
                                  "ports": SETUP["roce_switch_ports"], "pfc": SETUP["roce_switch_pfc"]}}


def playbook(path, task):
    with open(path, "w") as handle:
        yaml.safe_dump([dict(name="One task", hosts="roce_switches", gather_facts=False, tasks=[dict(task, name="t")])], handle)
    return path


def series(label, runs, inventory, book, forks, lab, names, limit=None):
    before = counters(lab, names)
    seconds = [play(inventory, book, forks, limit) for dummy in range(runs)]
    after = counters(lab, names)
    row = dict(label=label, median=statistics.median(seconds), low=min(seconds), high=max(seconds), runs=runs,
               logins=(after["logins"] - before["logins"]) // runs,
               config=after["config_commands"] - before["config_commands"])
    print("%-44s median %5.2f s  (%5.2f-%5.2f, %d runs)  %3d logins/run  %d configuration commands"
          % (label, row["median"], row["low"], row["high"], runs, row["logins"], row["config"]), flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=64)
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="onyx-noop-bench-")
    inventory = os.path.join(work, "hosts.yml")
    lab_dir = os.path.join(work, "lab")
    write_inventory(inventory, args.switches, lab_dir)
    names = ["bsw%02d" % (i + 1) for i in range(args.switches)]
    configure = playbook(os.path.join(work, "configure.yml"), TASK)
    floor = playbook(os.path.join(work, "floor.yml"), {"ansible.builtin.meta": "noop"})
    lab = Lab(inventory, lab_dir)
    started = time.time()
    lab.up()
    print("%d simulated switches (32 ports each) up in %.1f s; load average %s" % (
        args.switches, time.time() - started, " ".join("%.2f" % x for x in os.getloadavg())), flush=True)
    try:
        play(inventory, configure, args.forks)
        rows = [
            series("Ansible alone (a task that does nothing)", args.runs, inventory, floor, 1, lab, names[:1], names[0]),
            series("onyx_roce no-op, one switch", args.runs, inventory, configure, 1, lab, names[:1], names[0]),
            series("onyx_roce no-op, %d switches, forks %d" % (args.switches, args.forks), max(3, args.runs // 2),
                   inventory, configure, args.forks, lab, names),
        ]
    finally:
        lab.labctl("down", check=False)
    floor_s, one, many = (row["median"] for row in rows)
    print("one switch: %.2f s (target at most 2 s), of which Ansible alone %.2f s" % (one, floor_s))
    print("%d switches / one switch: %.2f (target at most 3)" % (args.switches, many / one))
    print("any configuration command in a no-op run: %s" % ("yes" if rows[1]["config"] or rows[2]["config"] else "no"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
