# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the validation's orchestration on a fleet of the lab's namespace hosts, round by round against one
launch per host.

    tests/run env > /dev/null; python tests/bench/validate_fleet_bench.py [--sizes 8,16,32] [--execution rounds]
        [--schedule full] [--duration 2] [--forks 64] [--keep-reports DIR]

Each host is a namespace host of lab/firmware/peer_host.py (its own network namespace and sshd, on a bridge of its
own, ``rfab8``, 10.79.0.0/22, and a lab folder of its own, so the lab's own hosts are left alone), with an RDMA port in
a sysfs tree of its own whose GID is the host's address, and a stand-in ``ib_write_bw``: a real TCP server and client
between the namespaces (perftest's socket exchange) that print captured perftest output after ``--duration`` seconds.
It measures the orchestration, not a network. ``playbooks/validate.yml`` runs on the first N hosts for each size
(``--forks`` min(N, forks)) with one pair test a round (ib_write_bw; no GPU, NCCL, switch or traffic-window step), and
prints, per size: the rounds, the wall time and what it spent above the tests' own time (per round), the host-task
runs (task results on the hosts that were not skipped; per host), the controller's CPU seconds (ansible-playbook and
everything it started: workers, ssh) and the hosts' (their sshd and what ran under it: modules and the stand-in),
whether every test passed, and with ``--execution launch`` what a slot cost above its test: the launched parts'
span (the first test's start to the last one's end, from the report's ``began`` and ``ended``) over the slots, less
``--duration``. Needs root. Stops the hosts at the end.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAB_INVENTORY = os.path.join(REPO, "inventories", "lab")
FIXTURE = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "fixtures", "perftest",
                       "write_bw_mlx5_gbits_100g.txt")
sys.path.insert(0, os.path.join(REPO, "lab"))
sys.path.insert(0, HERE)
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position
from pipelining_bench import measured_run  # noqa: E402  pylint: disable=wrong-import-position

BRIDGE = "rfab8"
NET = "10.79"

STAND_IN = r'''#!/usr/bin/python3
import socket, sys, time
port = int(sys.argv[sys.argv.index("-p") + 1])
fixture = "".join(line for line in open({fixture!r}) if not line.startswith("%%"))
if "." not in sys.argv[-1]:  # a client's last word is its server's address
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port)); listener.listen(1)
    print("* Waiting for client to connect... *", flush=True)
    conn, _ = listener.accept(); conn.recv(16); conn.sendall(b"ok"); conn.close()
    print(fixture, end=""); sys.exit(0)
try:
    conn = socket.create_connection((sys.argv[-1], port), timeout=3)
except OSError:
    print(" Couldn't connect to %s:%d" % (sys.argv[-1], port)); sys.exit(1)
conn.sendall(b"hello"); conn.recv(16); conn.close()
time.sleep({duration})
print(fixture, end="")
'''


def address(index):
    return "%s.%d.%d" % (NET, index // 250, index % 250 + 10)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def sysfs(root, ip):
    """One RoCE v2 port whose GID is the host's IPv4 address (rdma_facts' reading of the server's address)."""
    port = os.path.join(root, "sys", "class", "infiniband", "rxe0", "ports", "1")
    write(os.path.join(port, "state"), "4: ACTIVE")
    write(os.path.join(port, "phys_state"), "5: LinkUp")
    write(os.path.join(port, "rate"), "100 Gb/sec (4X EDR)")
    write(os.path.join(port, "link_layer"), "Ethernet")
    parts = [int(p) for p in ip.split(".")]
    write(os.path.join(port, "gids", "0"), "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(parts))
    write(os.path.join(port, "gid_attrs", "types", "0"), "RoCE v2")
    write(os.path.join(port, "gid_attrs", "ndevs", "0"), "eth0")


def write_inventory(work, count, duration):
    tools = os.path.join(work, "tools")
    os.makedirs(tools)
    with open(os.path.join(tools, "ib_write_bw"), "w") as handle:
        handle.write(STAND_IN.format(fixture=FIXTURE, duration=duration))
    os.chmod(os.path.join(tools, "ib_write_bw"), 0o755)
    hosts = {}
    for index in range(count):
        name = "vfleet%03d" % (index + 1)
        root = os.path.join(work, "sysfs", name)
        sysfs(root, address(index))
        hosts[name] = {"ansible_host": address(index), "roce_lab_peer": "netns_host", "roce_lab_firmware_tools": [],
                       "roce_lab_nics": [], "validate_sysfs_root": root, "validate_tools_dir": tools,
                       "validate_work_dir": os.path.join(work, "run", name)}
    folder = os.path.join(work, "inventory")
    inventory = {"all": {"vars": {"roce_lab_bridge": BRIDGE, "roce_lab_bridge_address": NET + ".0.1/22"},
                         "children": {"bench_hosts": {"children": {"lab_netns_hosts": {"hosts": hosts}}},
                                      "lab_ssh_hosts": {"children": {"bench_hosts": None}}}}}
    os.makedirs(os.path.join(folder, "group_vars"))
    with open(os.path.join(folder, "hosts.yml"), "w") as handle:
        json.dump(inventory, handle, indent=1)
    for name in ("lab_netns_hosts.yml", "lab_ssh_hosts.yml"):
        shutil.copy(os.path.join(LAB_INVENTORY, "group_vars", name), os.path.join(folder, "group_vars", name))
    return folder, sorted(hosts)


def host_task_runs(data, by_task=None):
    """Task results on hosts that were not skipped (the module runs the play made), from the JSON callback's output:
    a loop's items each, an until loop's attempts each, an include none (its tasks are counted where they ran).
    ``by_task``: a dict given the count of each task's name."""
    count = 0
    for play in data.get("plays", []):
        for task in play.get("tasks", []):
            runs = 0
            for result in task.get("hosts", {}).values():
                items = result.get("results")
                # A loop's items (each names its loop variable); a module's own list called results (a launched
                # part's records, as async_status returns them) is one run.
                if isinstance(items, list) and items and all(isinstance(item, dict) and "ansible_loop_var" in item
                                                             for item in items):
                    runs += sum(1 for item in items if not item.get("skipped") and not item.get("include"))
                elif not result.get("skipped") and not result.get("include"):
                    runs += int(result.get("attempts") or 1)  # an until loop's polls each
            count += runs
            if by_task is not None and runs:
                name = task.get("task", {}).get("name", "?")
                by_task[name] = by_task.get(name, 0) + runs
    return count


def play(folder, hosts, forks, execution, schedule, duration, report):
    argv = ["ansible-playbook", "-i", folder, "--forks", str(forks), "--limit", ",".join(hosts),
            os.path.join(REPO, "playbooks", "validate.yml"), "-e", "roce_validate_hosts=bench_hosts",
            "-e", json.dumps(dict(validate_tests=["ib_write_bw"], validate_perftest_duration=duration,
                                  validate_perftest_rdma_cm=False, validate_min_bw_gbps=1, validate_report_dir=report,
                                  validate_gpu_health=False, validate_nccl=False, validate_qos={},
                                  validate_qos_traffic=False, validate_switch_counters=False,
                                  validate_execution=execution, validate_schedule=schedule,
                                  roce_validate_switches=False, validate_require_rdma=True))]
    proc, wall, controller_cpu, hosts_cpu = measured_run(argv)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit("no result (rc=%d): %s %s" % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    with open(os.path.join(report, "report.json")) as handle:
        result = json.load(handle)
    timed = [t for t in result["tests"] if t.get("began") is not None and t.get("ended") is not None]
    slots = len(set(t.get("slot") for t in timed))
    per_slot = ((max(t["ended"] for t in timed) - min(t["began"] for t in timed)) / slots - duration) if slots else None
    by_task = {}
    runs = host_task_runs(data, by_task)
    return dict(wall=wall, controller_cpu=controller_cpu, hosts_cpu=hosts_cpu, runs=runs, by_task=by_task,
                per_slot=per_slot,
                rc=proc.returncode, passed=result["passed"], tests=len(result["tests"]),
                rounds=len(set(t.get("round") for t in result["tests"])),
                failed=[(t["id"], t.get("cause")) for t in result["tests"] if t["status"] != "passed"][:5])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="8,16,32")
    parser.add_argument("--execution", default="launch", choices=["launch", "rounds"])
    parser.add_argument("--schedule", default="full", choices=["full", "sparse", "auto"])
    parser.add_argument("--duration", type=int, default=2)
    parser.add_argument("--forks", type=int, default=64)
    parser.add_argument("--keep-reports", metavar="DIR",
                        help="copy each size's report.json here, and the host-task runs of each task (tasks-N.json)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="roce-vfleet.")
    folder, names = write_inventory(work, max(sizes), args.duration)
    lab = Lab(folder, lab_dir=os.path.join(work, "lab"))
    os.environ["ROCE_LAB_DIR"] = lab.dir
    lines = ["validate_fleet_bench: playbooks/validate.yml on namespace hosts, execution=%s, schedule=%s, one "
             "ib_write_bw a round of %d s (stand-in over TCP), forks min(N, %d), %d CPU(s)"
             % (args.execution, args.schedule, args.duration, args.forks, os.cpu_count()),
             "| hosts | rounds | wall s | above the tests' own time | host-task runs | per host | controller CPU-s | "
             "per host | hosts' CPU-s | a slot above its test | all passed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    try:
        began = time.time()
        lab.labctl("up", *names)
        print("started %d hosts in %.1f s" % (len(names), time.time() - began), flush=True)
        for size in sizes:
            report = os.path.join(work, "report-%d" % size)
            got = play(folder, names[:size], min(size, args.forks), args.execution, args.schedule, args.duration,
                       report)
            above = got["wall"] - got["rounds"] * args.duration
            lines.append("| %d | %d | %.1f | %.1f s (%.1f s a round) | %d | %.0f | %.1f | %.2f | %.1f | %s | %s%s |" % (
                size, got["rounds"], got["wall"], above, above / max(got["rounds"], 1), got["runs"],
                got["runs"] / float(size), got["controller_cpu"], got["controller_cpu"] / size, got["hosts_cpu"],
                "not measured" if got["per_slot"] is None else "%.2f s" % got["per_slot"], got["passed"],
                "" if got["passed"] else " (rc %d; %s)" % (got["rc"], got["failed"])))
            print(lines[-1], flush=True)
            if args.keep_reports:
                os.makedirs(args.keep_reports, exist_ok=True)
                shutil.copy(os.path.join(report, "report.json"), os.path.join(args.keep_reports, "report-%d.json" % size))
                with open(os.path.join(args.keep_reports, "tasks-%d.json" % size), "w") as handle:
                    json.dump(got["by_task"], handle, indent=1, sort_keys=True)
    finally:
        lab.labctl("down", check=False)
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
