"""Benchmark: one roce.fabric.nvue_roce task on a converged Cumulus switch, and on a fleet of them.

    tests/run env > /dev/null; python tests/bench/nvue_noop_bench.py [--switches 16] [--forks 16] [--runs 7] [--transport rest|ssh]

Issue 16 repeats issue 19's switch benchmark for NVUE: a no-op task on one converged switch (RoCE mode, trust, PFC,
ECN, VLAN 111 on 32 access ports, MTU 9216) and the same task on ``--switches`` switches with ``--forks``, through
the REST API (HTTPS, certificate checked) or nv over SSH (host key checked).

1. Every simulated switch gets the setup once (not timed).
2. Ansible's own floor: the same play with a task that does nothing on the controller (``--runs`` times).
3. The no-op task on one switch (``--runs`` times): must make no request that changes anything.
4. The no-op task on all switches with ``--forks`` (``--runs`` times, at least 3).
Prints the median, the lowest and the highest of each, the requests the simulators counted and the ratio.
Uses loopback ports 28801 and up (REST) or 22401 and up (SSH) and a lab directory of its own.
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
from onyx_bench import play  # noqa: E402  pylint: disable=wrong-import-position
from onyx_noop_bench import playbook  # noqa: E402  pylint: disable=wrong-import-position

TASK = {"roce.fabric.nvue_roce": dict(
    roce_mode="lossless", trust="l3", pfc=dict(enabled=True, priorities=[3]),
    ecn=[dict(traffic_class=3, min_bytes=150000, max_bytes=1500000)],
    vlans=[dict(id=111, access_ports=["swp1-32"])], ports=[dict(ports=["swp1-32"], mtu=9216)])}


def write_inventory(path, count, lab_dir, transport):
    hosts = {}
    for index in range(count):
        host = dict(ansible_host="127.0.0.1", ansible_user="cumulus", ansible_password="bench-Secret-1",
                    roce_lab_peer="nvue_switch", roce_lab_cumulus_version="5.9.2", roce_lab_cumulus_ports=32,
                    nvue_api_port=28801 + index, nvue_transport=transport)
        if transport == "ssh":
            host.update(ansible_port=22401 + index, roce_lab_cumulus_rest=False)
        hosts["bleaf%02d" % (index + 1)] = host
    variables = dict(nvue_ca_path=os.path.join(lab_dir, "switches", "nvue-ca.pem"),
                     nvue_known_hosts_file=os.path.join(lab_dir, "switches", "known_hosts"))
    with open(path, "w") as handle:
        yaml.safe_dump(dict(all=dict(vars=variables, children=dict(roce_switches=dict(hosts=hosts)))), handle)


def counters(lab, names):
    totals = dict(requests=0, mutating=0, applies=0)
    for name in names:
        state = lab.state(name)
        totals["requests"] += len(state["requests"])
        totals["mutating"] += sum(1 for r in state["requests"] if r["method"] not in ("GET",)
                                  and not (r["method"] == "SSH" and r["path"].startswith("nv config show")))
        totals["applies"] += state["applies"]
    return totals


def series(label, runs, inventory, book, forks, lab, names, limit=None):
    before = counters(lab, names)
    seconds = [play(inventory, book, forks, limit) for dummy in range(runs)]
    after = counters(lab, names)
    row = dict(label=label, median=statistics.median(seconds), low=min(seconds), high=max(seconds), runs=runs,
               requests=(after["requests"] - before["requests"]) // runs, mutating=after["mutating"] - before["mutating"],
               applies=after["applies"] - before["applies"])
    print("%-46s median %5.2f s  (%5.2f-%5.2f, %d runs)  %3d requests/run  %d changing requests, %d applies"
          % (label, row["median"], row["low"], row["high"], runs, row["requests"], row["mutating"], row["applies"]), flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=16)
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--transport", choices=["rest", "ssh"], default="rest")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="nvue-noop-bench-")
    inventory = os.path.join(work, "hosts.yml")
    lab_dir = os.path.join(work, "lab")
    write_inventory(inventory, args.switches, lab_dir, args.transport)
    names = ["bleaf%02d" % (i + 1) for i in range(args.switches)]
    configure = playbook(os.path.join(work, "configure.yml"), TASK)
    floor = playbook(os.path.join(work, "floor.yml"), {"ansible.builtin.meta": "noop"})
    lab = Lab(inventory, lab_dir)
    started = time.time()
    lab.up()
    print("%d simulated Cumulus switches (%s) up in %.1f s; load average %s" % (
        args.switches, args.transport, time.time() - started, " ".join("%.2f" % x for x in os.getloadavg())), flush=True)
    try:
        play(inventory, configure, args.forks)
        rows = [
            series("Ansible alone (a task that does nothing)", args.runs, inventory, floor, 1, lab, names[:1], names[0]),
            series("nvue_roce no-op (%s), one switch" % args.transport, args.runs, inventory, configure, 1, lab, names[:1], names[0]),
            series("nvue_roce no-op (%s), %d switches, forks %d" % (args.transport, args.switches, args.forks),
                   max(3, args.runs // 2), inventory, configure, args.forks, lab, names),
        ]
    finally:
        lab.labctl("down", check=False)
    floor_s, one, many = (row["median"] for row in rows)
    print("one switch: %.2f s (the Onyx target: at most 2 s), of which Ansible alone %.2f s" % (one, floor_s))
    print("%d switches / one switch: %.2f (the Onyx target: at most 3)" % (args.switches, many / one))
    print("any changing request in a no-op run: %s" % ("yes" if rows[1]["mutating"] or rows[2]["mutating"] else "no"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
