"""The job image of roce.fabric.rdma_image, run on a lab VM: ib_write_bw from inside the container against the other
VM, over the guests' real kernel RDMA stack (Soft-RoCE).

The image is built here with the role (podman, the inbox driver user space with perftest, on the lab's local Debian
base), its root file system exported and handed to node1, where runc (the OCI runtime podman itself runs here)
starts it the way a job container runs on an RDMA host: on the host's network namespace, with the RDMA character
devices (/dev/infiniband) passed in, an unlimited memlock limit and its own mount, PID, IPC and UTS namespaces.
ib_write_bw inside it connects through RDMA-CM to ib_write_bw on node2, and the result is read with the collection's
perftest parser. The same container without the devices finds no RDMA device, which shows that the test ran on
the image's own libibverbs, not the guest's.

What is left out: podman itself in the guest (runc is the part of it that makes the container) and a registry
(the root file system travels over the lab's SSH)."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import REPO
from door import Lab
from test_rdma_image_peer import BUILD, BUILDER_ARGS, play, result

for _entry in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep):
    if os.path.isdir(os.path.join(_entry, "ansible_collections", "roce", "fabric")):
        sys.path.insert(0, _entry)
        break
from ansible_collections.roce.fabric.plugins.module_utils.validate import perftest, process  # noqa: E402  pylint: disable=wrong-import-position

INVENTORY = os.environ.get("ROCE_LAB_INVENTORY", os.path.join(REPO, "inventories", "lab"))
LAB = Lab(INVENTORY)
NAME = "localhost/roce-fabric/rdma-job-test"
TAG = "perftest-vm-test"
RXE = "modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev enp1s0)"
BUNDLE = "/var/tmp/roce-lab-container"
SERVER_ADDRESS = "10.78.0.2"
PORT = 18600

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not (shutil.which("podman") and shutil.which("runc")),
                                reason="needs root, podman and runc")


def vm(host, command, **kwargs):
    proc = LAB.exec(host, ["sh", "-c", shlex.quote(command)], **kwargs)
    return proc.returncode, (proc.stdout or "") + (proc.stderr or "")


def oci_config(args, devices):
    """An OCI runtime configuration (runc spec's default, changed as a job container on an RDMA host is run): the
    host's network namespace, ``devices`` (path, major, minor) created and allowed, memlock unlimited, IPC_LOCK."""
    work = tempfile.mkdtemp(prefix="roce-oci.")
    try:
        subprocess.run(["runc", "spec"], cwd=work, check=True)
        with open(os.path.join(work, "config.json")) as handle:
            config = json.load(handle)
    finally:
        shutil.rmtree(work)
    process = config["process"]
    process["terminal"] = False
    process["args"] = args
    process["rlimits"] = [{"type": "RLIMIT_MEMLOCK", "hard": 18446744073709551615, "soft": 18446744073709551615},
                          {"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}]
    for kind in ("bounding", "effective", "permitted"):
        process["capabilities"][kind] = sorted(set(process["capabilities"].get(kind, []) + ["CAP_IPC_LOCK"]))
    process["capabilities"].pop("inheritable", None)
    process["capabilities"].pop("ambient", None)
    config["root"] = {"path": "rootfs", "readonly": False}
    config["hostname"] = "roce-job"
    linux = config["linux"]
    linux["namespaces"] = [ns for ns in linux["namespaces"] if ns["type"] != "network"]
    linux["devices"] = [{"path": path, "type": "c", "major": major, "minor": minor, "fileMode": 0o666, "uid": 0, "gid": 0}
                        for path, major, minor in devices]
    linux["resources"] = {"devices": [{"allow": False, "access": "rwm"}] + [
        {"allow": True, "type": "c", "major": major, "minor": minor, "access": "rw"} for _path, major, minor in devices]}
    return config


def rdma_char_devices(host):
    """The guest's RDMA character devices as ``(path, major, minor)``: uverbs of rxe0 and rdma_cm."""
    rc, out = vm(host, "for f in /dev/infiniband/*; do printf '%s %d %d\\n' $f 0x$(stat -c %t $f) 0x$(stat -c %T $f); done")
    assert rc == 0, out
    found = [(path, int(major), int(minor)) for path, major, minor in (line.split() for line in out.splitlines() if line.strip())]
    assert any(p.endswith("/rdma_cm") for p, _a, _b in found) and any("/uverbs" in p for p, _a, _b in found), found
    return found


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The perftest-only inbox image, built with the role and exported as a root file system tar."""
    work = tmp_path_factory.mktemp("image")
    host = dict(rdma_image_name=NAME, rdma_image_tag=TAG, rdma_image_base=Lab.base_image(), rdma_image_driver="inbox",
                rdma_image_mpi=False, rdma_image_dir=str(work / "ctx"), rdma_image_builder="podman",
                rdma_image_builder_args=BUILDER_ARGS)
    rc, tasks = play(work, dict(builder=host))
    built = result(tasks, "builder", BUILD)
    assert rc == 0 and built is not None, json.dumps(tasks)[-3000:]
    container = subprocess.run(["podman", "create", "--runtime", "runc", "%s:%s" % (NAME, TAG), "/bin/true"],
                               capture_output=True, text=True, check=True).stdout.strip()
    rootfs = str(work / "rootfs.tar")
    try:
        subprocess.run(["podman", "export", "--output", rootfs, container], check=True)
    finally:
        subprocess.run(["podman", "rm", container], capture_output=True, check=False)
    return rootfs


@pytest.fixture(scope="module")
def on_node1(two_vms, image):
    """node1 holds the container's bundle (root file system and no configuration yet); both VMs have rxe0."""
    for host in two_vms:
        rc, out = vm(host, RXE)
        assert rc == 0, out
    rc, out = vm("node1", "rm -rf %s && mkdir -p %s/rootfs" % (BUNDLE, BUNDLE))
    assert rc == 0, out
    started = time.time()
    with open(image, "rb") as handle:
        proc = LAB.exec("node1", ["tar", "-C", BUNDLE + "/rootfs", "-xf", "-"], stdin=handle, text=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    print("root file system of %d MB into node1 in %.1f s" % (os.path.getsize(image) // 2 ** 20, time.time() - started))
    yield "node1"
    vm("node1", "runc delete --force roce-job >/dev/null 2>&1; rm -rf %s" % BUNDLE)


def run_container(host, args, devices):
    config = json.dumps(oci_config(args, devices))
    rc, out = vm(host, "cat > %s/config.json && cd %s && timeout 120 runc run --bundle %s roce-job"
                 % (BUNDLE, BUNDLE, BUNDLE), input=config)
    return rc, out


def test_ib_write_bw_from_the_job_container_against_the_other_vm(on_node1):
    devices = rdma_char_devices("node1")
    server = ("ib_write_bw -d rxe0 -R -D 2 -s 65536 --report_gbits -p %d > /var/tmp/roce-ct-server.log 2>&1" % PORT)
    rc, out = vm("node2", "pkill -x ib_write_bw; (nohup sh -c %s >/dev/null 2>&1 &)" % shlex.quote(server))
    assert rc == 0, out
    deadline = time.time() + 60
    while time.time() < deadline:
        rc, out = vm("node2", "rdma -j resource show cm_id")
        listening = process.parse_cm_listeners(out) or set()
        if any(port == PORT for _pid, port in listening):
            break
        time.sleep(1)
    else:
        raise AssertionError("the server on node2 did not listen: %s" % out)
    rc, out = run_container(on_node1, ["/bin/sh", "-c", "echo pid=$$ host=$(hostname); "
                                       "exec ib_write_bw -d rxe0 -R -D 2 -s 65536 --report_gbits -p %d %s"
                                       % (PORT, SERVER_ADDRESS)], devices)
    assert rc == 0, out
    # The container's own PID and UTS namespaces, the image's perftest.
    assert "pid=1 host=roce-job" in out, out
    parsed = perftest.parse_perftest(out)
    assert parsed["kind"] == "bw" and parsed["settings"]["device"] == "rxe0", parsed
    bandwidth = perftest.summarize(parsed)["value"]
    assert bandwidth > 0, parsed
    print("ib_write_bw from the container on node1 to node2: %.3f Gb/s (Soft-RoCE under TCG)" % bandwidth)
    rc, server_out = vm("node2", "sleep 1; cat /var/tmp/roce-ct-server.log")
    assert perftest.summarize(perftest.parse_perftest(server_out))["value"] > 0, server_out

    # Without the devices passed in, the image's libibverbs finds no RDMA device.
    rc, out = run_container(on_node1, ["ibv_devices"], [])
    assert "rxe0" not in out, out
