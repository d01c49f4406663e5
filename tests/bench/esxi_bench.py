"""Benchmark: ESXi ATS and VM keys (playbooks/esxi_ats.yml) on a simulated vCenter cluster.

    eval "$(tests/run env)"; python tests/bench/esxi_bench.py [--hosts 2 4 8] [--vms-per-host 4]

For each cluster size (default 2, 4 and 8 hosts with 4 GPU VMs each, so 8 hosts = 32 VMs):
1. First run: atsSupport configured, every host in turn put in maintenance mode, rebooted, checked, its
   VMs' peer-to-peer keys and NUMA affinity set and its VMs powered back on.
2. The same play again: must make no change, no reboot and no mutating API call.
Reports wall time and SOAP API calls (counted by the simulator, per method), per host and in total.
The simulator (govmomi vcsim with the lab's additions) runs on 127.0.0.1:8990 with a 0.5 s reboot.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# A vcsim of its own size: the lab's vcsim build and its state endpoint.
sys.path.insert(0, os.path.join(REPO, "lab", "common"))
sys.path.insert(0, os.path.join(REPO, "lab", "esxi"))
import peer_vcsim  # noqa: E402

PORT = 8990
PASSWORD = "bench-Secret-1"
MUTATING = ("UpdateOptions", "ReconfigVM_Task", "PowerOffVM_Task", "PowerOnVM_Task", "RebootHost_Task",
            "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task")


def start(hosts, vms, directory):
    secret = os.path.join(directory, "vcsim-password")
    with open(os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        handle.write(PASSWORD + "\n")
    proc = subprocess.Popen([peer_vcsim.build(), "-l", "127.0.0.1:%d" % PORT, "-host", str(hosts), "-vm", str(vms),
                             "-username", "bench", "-password-file", secret, "-reboot-seconds", "0.5"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while peer_vcsim.state(PORT) is None:
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit("vcsim did not start")
        time.sleep(0.2)
    return proc


def write_inventory(directory, names):
    inventory = dict(all=dict(children=dict(esxi_hosts=dict(hosts=dict((n, None) for n in names)))))
    with open(os.path.join(directory, "hosts.yml"), "w") as handle:
        yaml.safe_dump(inventory, handle)
    os.makedirs(os.path.join(directory, "group_vars"))
    group = dict(ansible_connection="local", ansible_python_interpreter=sys.executable,
                 esxi_ats_vcenter_hostname="127.0.0.1", esxi_ats_vcenter_port=PORT, esxi_ats_vcenter_username="bench",
                 esxi_ats_vcenter_password=PASSWORD, esxi_ats_vcenter_validate_certs=False, esxi_ats_datacenter="DC0",
                 esxi_ats_vm_power_off_state="powered-off", esxi_ats_power_off_vms=True, esxi_ats_reboot_poll_interval=1,
                 esxi_ats_reboot_timeout=60)
    with open(os.path.join(directory, "group_vars", "esxi_hosts.yml"), "w") as handle:
        yaml.safe_dump(group, handle)


def play(directory):
    started = time.time()
    proc = subprocess.run(["ansible-playbook", "-i", directory, os.path.join(REPO, "playbooks", "esxi_ats.yml")],
                          capture_output=True, text=True, cwd=REPO, check=False)
    elapsed = time.time() - started
    if proc.returncode != 0:
        raise SystemExit("play failed:\n%s" % proc.stdout[-4000:])
    changed = sum(int(part.split("=")[1]) for line in proc.stdout.splitlines() if " : ok=" in line
                  for part in line.split() if part.startswith("changed="))
    return elapsed, changed


def measure(hosts, vms_per_host):
    with tempfile.TemporaryDirectory(prefix="esxi-bench-") as directory:
        return _measure(hosts, vms_per_host, directory)


def _measure(hosts, vms_per_host, directory):
    proc = start(hosts, hosts * vms_per_host, directory)
    try:
        names = sorted(peer_vcsim.state(PORT)["hosts"])
        write_inventory(directory, names)
        rows = {}
        for run in ("first", "no-op"):
            reboots_before = sum(h["reboots"] for h in peer_vcsim.state(PORT)["hosts"].values())
            peer_vcsim.reset_calls(PORT)
            elapsed, changed = play(directory)
            state = peer_vcsim.state(PORT)
            calls = state["calls"]
            total = sum(calls.values())
            rows[run] = dict(seconds=round(elapsed, 1), changed_tasks=changed, api_calls=total,
                             api_calls_per_host=round(total / float(hosts), 1),
                             mutating=dict((k, v) for k, v in sorted(calls.items()) if k in MUTATING),
                             reboots=sum(h["reboots"] for h in state["hosts"].values()) - reboots_before,
                             seconds_per_host=round(elapsed / hosts, 2))
        final = peer_vcsim.state(PORT)
        assert all(h["runtime"]["VMkernel.Boot.atsSupport"] is True for h in final["hosts"].values())
        assert rows["no-op"]["mutating"] == {} and rows["no-op"]["changed_tasks"] == 0 and rows["no-op"]["reboots"] == 0
        return rows
    finally:
        proc.terminate()
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--vms-per-host", type=int, default=4)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    results = {}
    header = ("hosts", "vms", "run", "seconds", "s/host", "api", "api/host", "reboots", "mutating calls")
    print("%-6s %-5s %-6s %9s %8s %9s %13s %8s  %s" % header)
    for hosts in args.hosts:
        rows = measure(hosts, args.vms_per_host)
        results[hosts] = rows
        for run, row in rows.items():
            print("%-6d %-5d %-6s %9.1f %8.2f %9d %13.1f %8d  %s" % (
                hosts, hosts * args.vms_per_host, run, row["seconds"], row["seconds_per_host"], row["api_calls"],
                row["api_calls_per_host"], row["reboots"], json.dumps(row["mutating"], sort_keys=True)))
        sys.stdout.flush()
    if len(args.hosts) > 1:
        small, large = min(args.hosts), max(args.hosts)
        ratio = results[large]["no-op"]["seconds"] / results[small]["no-op"]["seconds"]
        print("no-op time grows x%.2f for x%.2f hosts (linear would be x%.2f)" % (ratio, large / float(small), large / float(small)))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
