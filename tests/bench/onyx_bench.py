"""Benchmark: roce.fabric.roce_switch against simulated Onyx switches over real SSH.

    tests/run env > /dev/null; python tests/bench/onyx_bench.py [--switches 16]

1. One factory switch (32 ports) gets the seed's full RoCE setup on all 32 ports.
2. The same play again (must be a no-op: no configuration command).
3. The same play on N switches at once (forks N), compared with the time for one.
Reports SSH logins, configuration commands sent and wall time, from the simulators' own state.
Runs as any user; uses loopback ports 22301 and up and a lab directory of its own.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

SETUP = dict(
    roce_switch_roce_mode="lossless",
    roce_switch_vlans=[dict(id=111, name="roce", access_ports=["1/1-1/32"])],
    roce_switch_ports=[dict(ports=["1/1-1/32"], mtu=9216, trust="L3", pfc=True,
                            ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])],
    roce_switch_pfc=dict(enabled=True, priorities=[3]),
)
PLAY = [dict(name="RoCE on the benchmark switches", hosts="roce_switches", gather_facts=False,
             roles=[dict(role="roce.fabric.roce_switch")])]


def write_inventory(path, count, lab_dir):
    hosts = {}
    for index in range(count):
        hosts["bsw%02d" % (index + 1)] = dict(ansible_host="127.0.0.1", ansible_port=22301 + index, ansible_user="admin",
                                              ansible_password="admin", roce_lab_peer="onyx_switch",
                                              roce_lab_onyx_version="3.10.4006", roce_lab_onyx_ports=32)
    with open(path, "w") as handle:
        # Host keys are checked (the role's default): the lab writes each simulator's key where the inventory says.
        variables = dict(SETUP, onyx_known_hosts_file=os.path.join(lab_dir, "switches", "known_hosts"))
        yaml.safe_dump(dict(all=dict(vars=variables, children=dict(roce_switches=dict(hosts=hosts)))), handle)


def counters(lab, names):
    totals = dict(logins=0, config_commands=0)
    for name in names:
        state = lab.state(name)
        totals["logins"] += state["logins"]
        totals["config_commands"] += sum(1 for c in state["commands"] if c["mode"].startswith("config") and c["line"] != "exit")
    return totals


def play(inventory, playbook, forks, limit=None):
    argv = ["ansible-playbook", "-i", inventory, playbook, "-f", str(forks)]
    if limit:
        argv += ["--limit", limit]
    started = time.time()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
    return time.time() - started


def measure(inventory, playbook, lab, names, forks, limit=None):
    before = counters(lab, names)
    seconds = play(inventory, playbook, forks, limit)
    after = counters(lab, names)
    return dict(seconds=round(seconds, 1), logins=after["logins"] - before["logins"],
                config_commands=after["config_commands"] - before["config_commands"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=16)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="onyx-bench-")
    inventory = os.path.join(work, "hosts.yml")
    playbook = os.path.join(work, "play.yml")
    lab_dir = os.path.join(work, "lab")
    write_inventory(inventory, args.switches, lab_dir)
    with open(playbook, "w") as handle:
        yaml.safe_dump(PLAY, handle)
    lab = Lab(inventory, lab_dir)
    names = ["bsw%02d" % (i + 1) for i in range(args.switches)]
    lab.up()
    try:
        results = {}
        results["one switch, factory state"] = measure(inventory, playbook, lab, names[:1], 1, limit=names[0])
        results["one switch, no-op re-run"] = measure(inventory, playbook, lab, names[:1], 1, limit=names[0])
        lab.reset(names[0])
        results["one switch again (for the ratio)"] = measure(inventory, playbook, lab, names[:1], 1, limit=names[0])
        lab.reset(names[0])
        results["%d switches, forks %d" % (args.switches, args.switches)] = measure(inventory, playbook, lab, names, args.switches)
        results["%d switches, no-op re-run" % args.switches] = measure(inventory, playbook, lab, names, args.switches)
    finally:
        lab.labctl("down", check=False)
    for label, values in results.items():
        print("%-32s %6.1f s  %3d SSH logins  %4d configuration commands" % (label, values["seconds"], values["logins"], values["config_commands"]))
    one = results["one switch again (for the ratio)"]["seconds"]
    many = results["%d switches, forks %d" % (args.switches, args.switches)]["seconds"]
    print("ratio %d switches / one switch: %.2f (target: at most 2)" % (args.switches, many / one))
    return 0


if __name__ == "__main__":
    sys.exit(main())
