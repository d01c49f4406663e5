"""The validate role end to end on the lab's two QEMU VMs joined by a Soft-RoCE link (rdma_nodes).

One boot for the whole module: discovery, rping, ib_write_bw and ib_send_lat through
playbooks/validate.yml, check mode, and faults (a foreign process holding a test's port, a stray
perftest server the role stops, a pair whose server address cannot be reached so its server hangs
until the timeout, a host without RDMA devices), each asserted in the report, with the VMs' process
tables read from outside afterwards.
"""

import json
import os
import shlex
import subprocess
import sys

import pytest

import conftest
from conftest import LAB_DIR, LABCTL, REPO

# Another copy of the lab inventory (other loopback ports) can be named, so this runs beside VMs
# that a different checkout keeps up on the default ports.
INVENTORY = os.environ.get("ROCE_LAB_INVENTORY", conftest.INVENTORY)
HOSTS = ("node1", "node2")
# Created on the VMs' fabric NIC; the rdma_host role does this persistently, the test needs it only for its run.
RXE = "modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev enp1s0)"


def labctl(*args):
    subprocess.run([sys.executable, LABCTL, "--inventory", os.path.join(INVENTORY, "hosts.yml"), "--lab-dir", LAB_DIR]
                   + list(args), check=True, stdout=subprocess.DEVNULL)


def vm(host, command):
    proc = subprocess.run([sys.executable, LABCTL, "--inventory", os.path.join(INVENTORY, "hosts.yml"), "--lab-dir", LAB_DIR,
                           "exec", host, "--", "sh", "-c", shlex.quote(command)], capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def playbook(tmp_path, *extra, check=False):
    report = str(tmp_path / "report")
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "validate.yml"),
            "-e", "roce_validate_hosts=validate_lab", "-e", "validate_report_dir=%s" % report]
    for item in extra:
        argv += ["-e", item]
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    path = os.path.join(report, "report.json")
    data = None
    if os.path.exists(path):
        with open(path) as handle:
            data = json.load(handle)
    return proc, data


def by_id(report):
    return dict((t["id"], t) for t in report["tests"])


def perftest_processes(host):
    rc, out = vm(host, "ps -eo pid,args | grep -E '(ib_write_bw|ib_read_bw|rping)( |$)' | grep -v grep || true")
    return [line for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def vms():
    if os.geteuid() != 0:
        pytest.skip("the lab VMs need root")
    # VMs already up for this inventory (a developer's loop) are reused; CI boots them from the clean image.
    labctl("up", "--keep-state", *HOSTS)
    try:
        for host in HOSTS:
            rc, out = vm(host, RXE)
            assert rc == 0, out
        yield HOSTS
    finally:
        labctl("down", *HOSTS)


def test_rping_and_write_bw_between_the_vms(vms, tmp_path):
    proc, report = playbook(tmp_path, '{"validate_tests": ["rping", "ib_write_bw", "ib_send_lat"]}')
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert report["passed"] is True, json.dumps(report["tests"], indent=1)[:4000]
    for host, address in (("node1", "10.78.0.1"), ("node2", "10.78.0.2")):
        check = report["hosts"][host]["checks"][0]
        assert check["name"] == "discovery" and check["status"] == "passed"
        assert "rxe0/1 Ethernet" in check["msg"] and "RoCE v2 GID 1" in check["msg"] and address in check["msg"]
    tests = by_id(report)
    assert sorted(tests) == ["ib_send_lat:node1->node2", "ib_write_bw:node1->node2", "rping:node1->node2"]
    bw = tests["ib_write_bw:node1->node2"]
    assert bw["status"] == "passed" and bw["summary"]["unit"] == "Gb/s" and bw["summary"]["value"] > 0.001
    assert bw["client_command"].endswith("-R --report_gbits -D 3 -s 65536 10.78.0.1")
    assert bw["server_command"].endswith("ib_write_bw -d rxe0 -i 1 -p 18516 -R --report_gbits -D 3 -s 65536")
    assert tests["rping:node1->node2"]["msg"] == "ok"
    lat = tests["ib_send_lat:node1->node2"]
    assert lat["status"] == "passed" and lat["summary"]["unit"] == "usec" and lat["summary"]["bytes"] == 2
    page = open(os.path.join(str(tmp_path / "report"), "report.html")).read()
    assert page.count("<svg") == 2 and "10.78.0.1" in page
    for host in vms:
        assert perftest_processes(host) == []
    # Same results give the same report: a second write changes nothing is covered by the unit tests;
    # here a check-mode run must run no benchmark and write nothing.
    check_proc, _old = playbook(tmp_path / "check", check=True)
    assert check_proc.returncode == 0, check_proc.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "check" / "report"))


def test_faults_port_in_use_unreachable_pair_and_hang(vms, tmp_path):
    # Socket exchange (no -R) so the ports are TCP ports. On node1 a foreign TCP listener holds the port
    # the first test gets (18600): not a perftest server, so it is reported, never stopped. On node2 a
    # stray ib_write_bw server from an earlier run sits on the second test's port (18601): the role stops it.
    rc, out = vm("node1", "setsid python3 -c 'import socket,time; s=socket.socket(); s.bind((\"0.0.0.0\", 18600)); "
                          "s.listen(1); time.sleep(600)' >/dev/null 2>&1 < /dev/null & echo $!; sleep 2")
    assert rc == 0, out
    # $! is the listener itself (setsid execs it in place); pgrep -f would also match this very shell.
    listener = out.split()[0]
    rc, out = vm("node2", "setsid ib_write_bw -p 18601 >/dev/null 2>&1 < /dev/null & sleep 1; pgrep -f 'ib_write_bw -p 18601'")
    assert rc == 0, out
    pairs = [dict(server="node1", client="node2"), dict(server="node2", client="node1", server_address="10.78.0.99")]
    proc, report = playbook(tmp_path, json.dumps(dict(validate_tests=["ib_write_bw"], validate_pairs=pairs,
                                                      validate_port_base=18600, validate_timeout=20,
                                                      validate_perftest_rdma_cm=False)))
    assert proc.returncode != 0, "the play must fail at the end when a test failed"
    assert "Validation failed: 2 failed tests or checks" in proc.stdout, proc.stdout[-3000:]
    tests = by_id(report)
    busy = tests["ib_write_bw:node1->node2"]
    assert busy["status"] == "failed" and busy["cause"] == "port_in_use"
    assert busy["server_msg"] == "port 18600 is in use by another process"
    lost = tests["ib_write_bw:node2->node1"]
    assert lost["status"] == "failed" and lost["cause"] in ("unreachable", "timeout"), lost
    assert lost["client_command"].endswith("-x 1 --report_gbits -D 3 -s 65536 10.78.0.99")
    # The server of the unreachable pair waited for a client that never came: stopped at the timeout.
    assert lost["server_cause"] == "timeout"
    for host in vms:
        assert perftest_processes(host) == [], "stray or hung servers left on %s" % host
    # The foreign listener is not ours: still there.
    assert vm("node1", "kill %s" % listener)[0] == 0


def test_host_without_rdma_devices(vms, tmp_path):
    rc, out = vm("node2", "rdma link delete rxe0")
    assert rc == 0, out
    try:
        proc, report = playbook(tmp_path)
        assert proc.returncode != 0
        node2 = report["hosts"]["node2"]
        assert node2["status"] == "failed"
        assert node2["checks"][0]["msg"].startswith("no active RDMA port (0 RDMA devices)")
        assert report["hosts"]["node1"]["status"] == "passed"
        assert report["tests"] == []
    finally:
        vm("node2", RXE)
