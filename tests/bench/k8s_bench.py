"""Benchmark: the k8s_rdma_network role's full set against an empty kube-apiserver, then a no-op re-run.

    eval "$(tests/run env)"; python tests/bench/k8s_bench.py [--networks 8]

Starts a kube-apiserver of the lab's kind (host k8sbench on 127.0.0.1:6445, etcd 23795, defined in a
temporary inventory so it never meets the lab's own k8s1) empty, applies every component (Multus, CNI plugins,
SR-IOV CNI and device plugin, RDMA shared device plugin, whereabouts, DHCP daemon, MPI operator)
and N NetworkAttachmentDefinitions, then runs the same play again. For each run it reports the
wall time and the write requests the server received from the play's user, counted from the
API server's audit log (create/update/patch/delete; server-side dry runs and access reviews,
which store nothing, are listed apart). Target: the no-op run sends no write at all.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB_DIR = os.environ.get("ROCE_LAB_DIR", os.path.join(REPO, ".lab"))
HOST = "k8sbench"
PORT = 6445
ETCD_PORT = 23795
AUDIT = os.path.join(LAB_DIR, "k8s", HOST, "audit.log")
INVENTORY = None
MUTATING = ("create", "update", "patch", "delete", "deletecollection")


def write_inventory(directory):
    """An inventory with one cluster, the benchmark's own API server."""
    path = os.path.join(directory, "hosts.yml")
    host = {"roce_lab_peer": "kube_apiserver", "roce_lab_k8s_port": PORT, "roce_lab_etcd_port": ETCD_PORT,
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "k8s_rdma_network_kubeconfig": os.path.join(LAB_DIR, "k8s", HOST, "kubeconfig"),
            # No kubelet or controllers: nothing rolls out and nodes advertise nothing.
            "k8s_rdma_network_wait_rollout": False, "k8s_rdma_network_node_check_retries": 0}
    with open(path, "w") as handle:
        json.dump({"all": {"children": {"k8s_clusters": {"hosts": {HOST: host}}}}}, handle)
    return path


def labctl(*args):
    subprocess.run([sys.executable, os.path.join(REPO, "lab", "labctl.py"), "--inventory",
                    INVENTORY, "--lab-dir", LAB_DIR] + list(args), check=True, stdout=subprocess.DEVNULL)


def variables(networks):
    """The full set: every component, networks split over SR-IOV (half), host-device and macvlan."""
    sriov = max(1, networks // 2)
    hostdev = max(1, (networks - sriov) // 2)
    macvlan = networks - sriov - hostdev
    return {
        "k8s_rdma_network_sriov_resources": [
            {"pf_name": "ens%df0np0" % (i + 1), "vlan_id": 100 + i, "res_name": "sriov_%d" % (100 + i),
             "network_name": "sriov%d" % (100 + i), "ipam_range": "10.%d.0.0/24" % (100 + i)} for i in range(sriov)],
        "k8s_rdma_network_rdma_shared_device_plugin": True,
        "k8s_rdma_network_rdma_shared_resources": [{"name": "rdma_shared_ens192", "ifnames": ["ens192"]}],
        "k8s_rdma_network_host_device_networks": [
            {"name": "hostdev-%d" % i, "device": "ens%d" % (192 + i), "ipam_range": "10.%d.0.0/24" % (192 + i)} for i in range(hostdev)],
        "k8s_rdma_network_macvlan_networks": [
            {"name": "macvlan-%d" % i, "master": "ens%dnp0" % (2 + i), "ipam_type": "dhcp"} for i in range(macvlan)],
        "k8s_rdma_network_mpi_operator": True,
    }


def audit_lines():
    with open(AUDIT) as handle:
        return handle.readlines()


def count(lines):
    writes = collections.Counter()
    other = collections.Counter()
    for line in lines:
        event = json.loads(line)
        if event["user"]["username"] != "admin" or event["verb"] not in MUTATING:
            continue
        resource = event["objectRef"].get("resource")
        if "dryRun=All" in event.get("requestURI", "") or resource == "selfsubjectaccessreviews":
            other["%s %s" % (event["verb"], resource)] += 1
        else:
            writes["%s %s" % (event["verb"], resource)] += 1
    return writes, other


def run(extra, label):
    before = len(audit_lines())
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    started = time.time()
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, "--limit", HOST, "-e", "@" + extra,
                           os.path.join(REPO, "playbooks", "kubernetes.yml")],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    elapsed = time.time() - started
    if proc.returncode != 0:
        sys.exit("%s failed (rc=%d):\n%s\n%s" % (label, proc.returncode, proc.stdout[-4000:], proc.stderr[-2000:]))
    stats = json.loads(proc.stdout)["stats"][HOST]
    writes, other = count(audit_lines()[before:])
    print("%-22s wall %6.1f s  changed tasks %d  writes %3d  %s"
          % (label, elapsed, stats["changed"], sum(writes.values()), json.dumps(dict(sorted(writes.items())))))
    if other:
        print("%-22s (not stored: %s)" % ("", json.dumps(dict(sorted(other.items())))))
    return sum(writes.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", type=int, default=8)
    args = parser.parse_args()
    global INVENTORY  # pylint: disable=global-statement
    workdir = tempfile.mkdtemp(prefix="k8s-bench-")
    INVENTORY = write_inventory(workdir)
    labctl("up", HOST)
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(variables(args.networks), handle)
        print("k8s_rdma_network: all components, %d NetworkAttachmentDefinitions, empty kube-apiserver (lab host %s)" % (args.networks, HOST))
        run(handle.name, "full set, empty server")
        noop = run(handle.name, "no-op re-run")
        os.unlink(handle.name)
        print("target (no-op run writes nothing): %s" % ("met" if noop == 0 else "MISSED"))
        return 0 if noop == 0 else 1
    finally:
        labctl("down", HOST)
        os.unlink(INVENTORY)
        os.rmdir(workdir)


if __name__ == "__main__":
    sys.exit(main())
