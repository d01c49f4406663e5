"""Benchmark: a no-op ``playbooks/nic_firmware.yml`` on a fleet of the lab's namespace GPU hosts, from 8 to 64.

    tests/run env > /dev/null; python tests/bench/fleet_bench.py [--sizes 8,16,32,64] [--runs 3] [--serial 25%]

Writes an inventory of the largest size (``fleetNN``: namespace hosts of lab/firmware/peer_host.py, each with its own
sshd and one dual-port ConnectX-6 Dx answered by the firmware simulator, the lab's group variables) in a folder of
its own, on a bridge of its own (``rfab7``, 10.76.0.0/24) and a lab folder of its own, so that the lab's own hosts
are left alone. Starts every host, converges them once (the lab's firmware settings, one reboot each, all hosts at
once), then times the no-op play on the first N hosts for each size with ``--forks N``: its median wall time, the
time per host, and the CPU seconds of everything it started (Ansible, ssh, the hosts' sshd and modules, which run on
this machine too). A no-op run must report no change and reboot no host. Needs root. Stops the hosts at the end.

``--serial`` is the rolling play's batch (``roce_reboot_serial``); the no-op still runs that play, which checks each
host's reboot state and verifies the running values batch by batch.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAB_INVENTORY = os.path.join(REPO, "inventories", "lab")
sys.path.insert(0, os.path.join(REPO, "lab"))
sys.path.insert(0, HERE)
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position
from pipelining_bench import measured_playbook  # noqa: E402  pylint: disable=wrong-import-position

BRIDGE = "rfab7"
NET = "10.76.0"


def write_inventory(folder, count):
    hosts = {}
    for index in range(1, count + 1):
        hosts["fleet%02d" % index] = {
            "ansible_host": "%s.%d" % (NET, 10 + index), "roce_lab_peer": "netns_host",
            "roce_lab_firmware_tools": ["mlxconfig"],
            "roce_lab_nics": [{"model": "ConnectX6DX", "pci": "0000:3b:00.0", "functions": 2,
                               "netdevs": ["ens1f0np0", "ens1f1np1"], "numa_node": 0}]}
    inventory = {"all": {"vars": {"roce_lab_bridge": BRIDGE, "roce_lab_bridge_address": NET + ".1/24"},
                         "children": {"gpu_nodes": {"children": {"lab_netns_hosts": {"hosts": hosts}}},
                                      "lab_ssh_hosts": {"children": {"gpu_nodes": None}}}}}
    os.makedirs(os.path.join(folder, "group_vars"))
    with open(os.path.join(folder, "hosts.yml"), "w") as handle:
        json.dump(inventory, handle, indent=1)
    for name in ("all.yml", "gpu_nodes.yml", "lab_netns_hosts.yml", "lab_ssh_hosts.yml"):
        shutil.copy(os.path.join(LAB_INVENTORY, "group_vars", name), os.path.join(folder, "group_vars", name))
    return sorted(hosts)


def play(inventory, hosts, forks, extra):
    argv = ["ansible-playbook", "-i", inventory, "--forks", str(forks), "--limit", ",".join(hosts),
            os.path.join(REPO, "playbooks", "nic_firmware.yml")]
    for key, value in extra.items():
        argv += ["-e", json.dumps({key: value})]
    proc, wall, cpu = measured_playbook(argv)
    try:
        stats = json.loads(proc.stdout)["stats"]
    except (ValueError, KeyError):
        raise SystemExit("no result (rc=%d): %s %s" % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    if proc.returncode != 0:
        raise SystemExit("the play failed: %s" % json.dumps(stats)[:2000])
    return wall, cpu, sum(s.get("changed", 0) for s in stats.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="8,16,32,64")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--serial", default="25%", help="roce_reboot_serial of the rolling play (default 25%%)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="roce-fleet.")
    folder = os.path.join(work, "inventory")
    names = write_inventory(folder, max(sizes))
    lab = Lab(folder, lab_dir=os.path.join(work, "lab"))
    os.environ["ROCE_LAB_DIR"] = lab.dir
    extra = {"roce_reboot_serial": args.serial}
    lines = ["fleet_bench: no-op playbooks/nic_firmware.yml on namespace hosts, roce_reboot_serial=%s, forks = hosts, "
             "%d run(s) each, %d CPU(s)" % (args.serial, args.runs, os.cpu_count())]
    try:
        began = time.time()
        lab.labctl("up", *names)
        lines.append("started %d hosts in %.1f s" % (len(names), time.time() - began))
        wall, cpu, changed = play(folder, names, len(names), dict(extra, roce_reboot_serial=len(names),
                                                                  roce_allow_all_at_once=True))
        lines.append("converged %d hosts in %.1f s (%d changes, one reboot each)" % (len(names), wall, changed))
        reboots = dict((name, lab.reboots(name)) for name in names)
        lines.append("| hosts | forks | wall median (range) | per host | CPU-s median | CPU-s per host |")
        lines.append("|---|---|---|---|---|---|")
        base = None
        for size in sizes:
            walls, cpus = [], []
            for _run in range(args.runs):
                wall, cpu, changed = play(folder, names[:size], size, extra)
                if changed:
                    raise SystemExit("a no-op run on %d hosts changed %d tasks" % (size, changed))
                walls.append(wall)
                cpus.append(cpu)
            median = statistics.median(walls)
            base = base or median / size
            lines.append("| %d | %d | %.1f s (%.1f-%.1f) | %.2f s | %.1f | %.2f |" % (
                size, size, median, min(walls), max(walls), median / size, statistics.median(cpus),
                statistics.median(cpus) / size))
            print(lines[-1], flush=True)
        again = dict((name, lab.reboots(name)) for name in names)
        if again != reboots:
            raise SystemExit("a no-op run rebooted hosts: %s" % [n for n in names if again[n] != reboots[n]])
        lines.append("no-op runs rebooted no host and changed nothing")
    finally:
        lab.labctl("down", check=False)
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
