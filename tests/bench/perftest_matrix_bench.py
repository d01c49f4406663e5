# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the ib_write_bw matrix of the validate role, pairs in parallel rounds against one at a time.

Part 1 (planner): for N hosts, the number of pair tests of the full matrix and the rounds the
planner makes (no host in two tests of a round), and the time at the role's default 5 s per test.

Part 2 (measured): playbooks/validate.yml on N inventory hosts that are this machine (local
connection), each with its own sysfs tree holding one active RoCE port, and a stand-in
ib_write_bw that runs for --duration seconds and prints captured perftest output. It is run
with --forks N (tests of a round run at once) and with --forks 1 (one test at a time), and the
wall time of each is printed. The stand-in measures the orchestration, not a network.

    python3 tests/bench/perftest_matrix_bench.py [--hosts 4] [--duration 4]
Run with the project's environment (eval "$(tests/run env)").
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "fixtures", "perftest",
                       "write_bw_mlx5_gbits_100g.txt")

STAND_IN = """#!{python}
import sys, time
client = not sys.argv[-1].startswith("-") and sys.argv[-2] not in ("-p", "-s", "-D", "-d", "-i")
if not client:
    print("* Waiting for client to connect... *", flush=True)
    time.sleep({duration} + 0.3)
else:
    time.sleep({duration})
sys.stdout.write(open({fixture!r}).read())
"""


def load_validate():
    """plan.py through ``ansible_collections.roce.fabric`` (its imports need the collection's name): a folder where
    that name is this checkout."""
    sys.path.insert(0, HERE)
    import collection_path  # pylint: disable=import-outside-toplevel
    collection_path.add("perftest-matrix-collection-")
    return importlib.import_module("ansible_collections.roce.fabric.plugins.module_utils.validate.plan")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def sysfs(root, index):
    port = os.path.join(root, "sys", "class", "infiniband", "rxe0", "ports", "1")
    write(os.path.join(root, "sys", "class", "infiniband", "rxe0", "parent"), "bench%d" % index)
    write(os.path.join(port, "state"), "4: ACTIVE")
    write(os.path.join(port, "phys_state"), "5: LinkUp")
    write(os.path.join(port, "rate"), "100 Gb/sec (4X EDR)")
    write(os.path.join(port, "link_layer"), "Ethernet")
    write(os.path.join(port, "gids", "0"), "0000:0000:0000:0000:0000:ffff:7f00:%04x" % (0x0100 + index))
    write(os.path.join(port, "gid_attrs", "types", "0"), "RoCE v2")
    write(os.path.join(port, "gid_attrs", "ndevs", "0"), "bench%d" % index)


def planner_table(validate):
    print("planner: full matrix, one test per pair")
    print("%6s %7s %7s %12s %12s" % ("hosts", "tests", "rounds", "serial@5s", "parallel@5s"))
    for n in (2, 3, 4, 8, 16, 32, 64):
        hosts = dict(("h%02d" % i, dict(ports=[dict(device="mlx5_0", port=1, rate_gbps=100, ipv4="10.0.%d.%d" % (i // 250, i % 250 + 1))]))
                     for i in range(n))
        plan = validate.plan(hosts, ["ib_write_bw"], schedule="full")
        print("%6d %7d %7d %11ds %11ds" % (n, len(plan["tests"]), len(plan["rounds"]), 5 * len(plan["tests"]),
                                           5 * len(plan["rounds"])))


def run_playbook(workdir, forks, hosts, duration, execution="rounds"):
    report = os.path.join(workdir, "report-forks%d" % forks)
    argv = ["ansible-playbook", "-i", os.path.join(workdir, "hosts.yml"), os.path.join(ROOT, "playbooks", "validate.yml"),
            "--forks", str(forks), "-e", "roce_validate_hosts=bench",
            "-e", json.dumps(dict(validate_tests=["ib_write_bw"], validate_perftest_duration=duration,
                                  validate_min_bw_gbps=1, validate_report_dir=report, validate_port_base=28700,
                                  validate_gpu_health=False, validate_nccl=False, validate_execution=execution))]
    start = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.time() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
        raise SystemExit("playbook failed with --forks %d" % forks)
    with open(os.path.join(report, "report.json")) as handle:
        data = json.load(handle)
    return elapsed, data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--duration", type=int, default=4)
    parser.add_argument("--execution", default="rounds", choices=["rounds", "launch"],
                        help="the validate role's validate_execution (rounds: the play runs one round after the other)")
    args = parser.parse_args()
    validate = load_validate()
    planner_table(validate)
    workdir = tempfile.mkdtemp(prefix="perftest-matrix-")
    try:
        tools = os.path.join(workdir, "tools")
        os.makedirs(tools)
        tool = os.path.join(tools, "ib_write_bw")
        with open(tool, "w") as handle:
            handle.write(STAND_IN.format(python=sys.executable, duration=args.duration, fixture=FIXTURE))
        os.chmod(tool, 0o755)
        inventory = dict(all=dict(children=dict(bench=dict(hosts={}))))
        for index in range(args.hosts):
            root = os.path.join(workdir, "h%d" % index)
            sysfs(root, index + 1)
            inventory["all"]["children"]["bench"]["hosts"]["h%d" % index] = dict(
                ansible_connection="local", ansible_python_interpreter=sys.executable, validate_sysfs_root=root,
                validate_tools_dir=tools, validate_work_dir=os.path.join(workdir, "work-h%d" % index))
        with open(os.path.join(workdir, "hosts.yml"), "w") as handle:
            json.dump(inventory, handle)
        print("\nmeasured: %d hosts on this machine, stand-in ib_write_bw of %d s per test" % (args.hosts, args.duration))
        results = {}
        for forks in (args.hosts, 1):
            elapsed, report = run_playbook(workdir, forks, args.hosts, args.duration, args.execution)
            rounds = sorted(set(t["round"] for t in report["tests"]))
            results[forks] = elapsed
            print("--forks %-2d tests %d, rounds %d, all passed %s, playbook wall time %.1f s" % (
                forks, len(report["tests"]), len(rounds), report["passed"], elapsed))
        print("parallel rounds saved %.1f s of %.1f s (%.2fx)" % (results[1] - results[args.hosts], results[1],
                                                                  results[1] / results[args.hosts]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
