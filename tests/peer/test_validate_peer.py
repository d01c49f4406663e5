"""The validate role end to end on the lab's two QEMU VMs joined by a Soft-RoCE link (lab_vms).

One boot for the whole module: discovery, rping and ib_write_bw through
playbooks/validate.yml, check mode, and faults (a foreign process holding a test's port, a stray
perftest server the role stops, a pair whose server address cannot be reached so its server hangs
until the timeout), each asserted in the report, with the VMs' process tables read from outside afterwards.
A host without RDMA devices is judged by unit tests (tests/unit/plugins/filter/test_validate_checks.py: the lab VM's
sysfs without its rxe0 through rdma_facts, the discovery record, the plan without a pair, the report).

MPI across the two VMs: the SSH trust the role sets up (host keys pinned, checking left on) and one
mpirun from node1 starting a rank on each VM. The VMs have no GPU and so no NCCL: the ranks run the
lab's stand-in for nccl-tests (lab/validate/mpi_standin/collective_perf.py, an MPI collective on host
memory that prints nccl-tests' table), which the role's log check must then flag for having no
NCCL log. Faults: a host whose key is not pinned, a hung rank, no mpirun, a malformed host.
"""

import base64
import json
import os
import re
import shlex
import subprocess

import jsonschema
import pytest

import conftest
from conftest import REPO, run_module
from door import Lab  # the lab's one door (conftest puts lab/ on the path)

# Another copy of the lab inventory (other loopback ports) can be named, so this runs beside VMs
# that a different checkout keeps up on the default ports.
INVENTORY = os.environ.get("ROCE_LAB_INVENTORY", conftest.INVENTORY)
HOSTS = ("node1", "node2")
# Created on the VMs' fabric NIC; the rdma_host role does this persistently, the test needs it only for its run.
RXE = "modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev enp1s0)"


LAB = Lab(INVENTORY)
with open(os.path.join(REPO, "docs", "schemas", "validation-report.schema.json")) as _schema:
    REPORT_SCHEMA = jsonschema.Draft202012Validator(json.load(_schema))
CAPTURE = os.path.join(REPO, "plugins", "module_utils", "qos", "dscp_capture.py")
TOS_FILE = "/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos"


def vm(host, command):
    proc = LAB.exec(host, ["sh", "-c", shlex.quote(command)])
    return proc.returncode, proc.stdout + proc.stderr


def playbook(tmp_path, *extra, check=False, traffic=False):
    """playbooks/validate.yml on the VMs. The traffic window (counters and a wire capture on each side, nine module
    calls a run) is opened only for the tests that assert on it (``traffic=True``): in the emulated VMs every module
    call costs seconds, and the other tests are about other things."""
    report = str(tmp_path / "report")
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "validate.yml"),
            "-e", "roce_validate_hosts=lab_vms", "-e", "validate_report_dir=%s" % report,
            # The switches' check has its own tier (peer onyx); the Onyx simulator is not up in this one.
            "-e", "roce_validate_switches=false"]
    if not traffic:
        argv += ["-e", "validate_qos_traffic=false"]
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
        # Every report of the lab against the published format (docs/schemas).
        errors = ["%s: %s" % (e.json_path, e.message) for e in REPORT_SCHEMA.iter_errors(data)]
        assert errors == [], errors
    return proc, data


def what_failed(proc, report):
    """A failed run's message: the play's own verdict line and each test and host check that did not pass, whole."""
    verdict = [line for line in proc.stdout.splitlines() if "Validation failed" in line or "fatal:" in line]
    failed = []
    if report:
        failed += [t for t in report["tests"] if t.get("status") != "passed"]
        for host, data in sorted(report.get("hosts", {}).items()):
            failed += [dict(c, host=host) for c in data.get("checks", []) if c.get("status") not in ("passed", "skipped")]
        failed += report.get("findings") or []
    return "\n".join(verdict[-5:] + [json.dumps(item, sort_keys=True) for item in failed]) or proc.stdout[-3000:]


def by_id(report):
    return dict((t["id"], t) for t in report["tests"])


def perftest_processes(host):
    rc, out = vm(host, "ps -eo pid,args | grep -E '(ib_write_bw|ib_read_bw|rping)( |$)' | grep -v grep || true")
    return [line for line in out.splitlines() if line.strip()]


def apply_qos(*extra):
    """The RoCE QoS contract on the VMs' Soft-RoCE NIC through the roce.fabric.nic_qos role, as host.yml applies it,
    but for the boot units that keep it across reboots (five module calls; the nic_qos tier and host.yml's tests
    cover them, and nothing here reboots on the contract)."""
    argv = ["ansible", "lab_vms", "-i", INVENTORY, "-m", "ansible.builtin.include_role", "-a", "name=roce.fabric.nic_qos",
            "-e", "nic_qos_persist=false"]
    for item in extra:
        argv += ["-e", item]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def vms(two_vms):
    # Booted once per session (conftest.two_vms) for this module and the telemetry one; VMs already up for this
    # inventory (a developer's loop) are reused, CI boots them from the clean image.
    for host in HOSTS:
        rc, out = vm(host, RXE)
        assert rc == 0, out
    apply_qos()
    yield HOSTS


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
    assert "ib_write_bw:node1->node2, ib_write_bw:node2->node1" in proc.stdout, proc.stdout[-3000:]
    tests = by_id(report)
    busy = tests["ib_write_bw:node1->node2"]
    assert busy["status"] == "failed" and busy["cause"] == "port_in_use"
    assert busy["server_msg"] == "port 18600 is in use by another process"
    lost = tests["ib_write_bw:node2->node1"]
    assert lost["status"] == "failed" and lost["cause"] in ("unreachable", "timeout"), lost
    assert lost["client_command"].endswith("-x 1 --tclass=106 --report_gbits -D 3 -s 65536 10.78.0.99")
    # The server of the unreachable pair waited for a client that never came: stopped at the timeout.
    assert lost["server_cause"] == "timeout"
    for host in vms:
        assert perftest_processes(host) == [], "stray or hung servers left on %s" % host
        # A run that fails at its end (a run_once check) leaves no validation lock behind on any host.
        assert vm(host, "test -e /var/lib/roce-fabric/validate.lock")[0] == 1, "a lock outlasted the failed run on %s" % host
    # The foreign listener is not ours: still there.
    assert vm("node1", "kill %s" % listener)[0] == 0


def capture(host, tmp_name):
    """Start counting RoCE v2 packets on the host's fabric NIC; returns a function that stops and reads the counts."""
    with open(CAPTURE) as handle:
        rc, out = vm(host, "cat > /root/roce_capture.py <<'PY'\n%sPY" % handle.read())
    assert rc == 0, out
    out_file, stop = "/root/%s.json" % tmp_name, "/root/%s.stop" % tmp_name
    rc, out = vm(host, "rm -f %s %s; setsid python3 /root/roce_capture.py enp1s0 300 %s %s >/root/%s.log 2>&1 < /dev/null &"
                       " sleep 1" % (out_file, stop, out_file, stop, tmp_name))
    assert rc == 0, out

    def finish():
        rc, out = vm(host, "touch %s; for i in $(seq 1 20); do [ -s %s ] && break; sleep 0.5; done; cat %s" % (stop, out_file, out_file))
        assert rc == 0, out
        return json.loads(out)
    return finish


def only_tos(found, tos):
    """True when the capture's RoCE v2 packets all carry ``tos``, but for a few RDMA-CM messages (UD to QP 1):
    a message of a connection opened before the ToS changed (its disconnect) may ride that connection's old ToS.
    Every packet of a connection's data (any other QP) must carry ``tos``."""
    detail = found.get("detail") or {}
    if found["packets"] <= 20 or found["tos"].get(str(tos), 0) <= 20:
        return False
    for other, entry in detail.items():
        if other == str(tos):
            continue
        ops = set(key.split(" ", 1)[1] for key in entry["opcodes"])
        if set(entry["qps"]) != {"1"} or ops != {"0x64"} or sum(entry["opcodes"].values()) > 4:
            return False
    return set(detail) | {str(tos)} == set(found["tos"]) | {str(tos)}


def sent_on_contract(traffic, dscp):
    """The report's ``traffic`` check of one host: passed, more than 20 RoCE v2 packets sent on ``dscp``, and any
    packet it sent off the contract a CM message (see only_tos), never a connection's data. Returns the counts."""
    sent = re.match(r"(\d+) of (\d+) RoCE v2 packets this host sent on enp1s0 carried DSCP %d" % dscp, traffic["msg"])
    assert traffic["status"] == "passed" and sent and int(sent.group(1)) > 20, traffic
    if sent.group(1) != sent.group(2):
        off = re.search(r"Seen off the contract: (.*?)\.", traffic["msg"])
        assert off and all(part.endswith("to QP 1 (connection management)") for part in off.group(1).split("; ")), traffic
        assert int(sent.group(2)) - int(sent.group(1)) <= 4, traffic
    return int(sent.group(1)), int(sent.group(2))


def test_rping_perftest_and_the_contracts_dscp_on_the_wire(vms, tmp_path):
    """rping and ib_write_bw between the VMs, and on the wire: RoCE v2 packets carry the contract's ToS
    once the NIC role applied it, and ToS 0 from a host that drifted from it (RDMA-CM's default ToS put back to 0).
    The contract here is not the default one (DSCP 24, not 26: ToS 98, not 106), so the NICs, perftest, NCCL's
    environment and the packets are seen to follow the inventory, not a value the role knows. rping has no ToS
    option, so its packets prove RDMA-CM's default ToS that the nic_qos role set; ib_write_bw's prove perftest's -T.
    (The default contract's ToS 106 on perftest's command line: test_faults_...; a check-mode run at the end.)"""
    contract = json.dumps({"roce_fabric_qos": {"mode": "lossless", "roce_dscp": 24, "roce_priority": 3}})
    for host in vms:
        rc, out = vm(host, "echo 0 > %s && cat %s" % (TOS_FILE, TOS_FILE))
        assert rc == 0 and out.strip() == "0", out
    try:
        # The role puts the contract on both VMs (0 -> 98), then the validation of that contract runs.
        apply_qos(contract)
        for host in vms:
            assert vm(host, "cat %s" % TOS_FILE)[1].strip() == "98"  # DSCP 24 << 2 | ECT(0)
        stop = capture("node1", "after")
        # No latency test in this run: ib_send_lat polls its completion queue on the VM's one emulated CPU, which the
        # window's capture and PCIe sampler share (its parsing is unit-tested on the Soft-RoCE VMs' real output).
        proc, report = playbook(tmp_path / "after", contract, '{"validate_tests": ["rping", "ib_write_bw"]}', traffic=True)
        after = stop()
        assert proc.returncode == 0 and report["passed"], what_failed(proc, report)
        check_pair_tests(report, tmp_path / "after", tos=98)
        assert only_tos(after, 98), json.dumps(after)
        # The evidence, for the record: RoCE v2 packets per ToS byte seen on node1's fabric NIC.
        print("RoCE v2 packets on node1 enp1s0 by ToS with the contract: %s" % after["tos"])
        for host in vms:
            checks = dict((c["name"], c) for c in report["hosts"][host]["checks"])
            assert checks["qos enp1s0"]["status"] == "passed" and '"roce_tos": 98' in checks["qos enp1s0"]["msg"]
            assert checks["qos nccl"]["status"] == "passed" and "NCCL_IB_TC=98" in checks["qos nccl"]["msg"]
            # The report carries the same proof: the role's own capture of what each VM sent, all on DSCP 24 (a
            # disconnect of a connection opened before the change may still ride ToS 0: CM only, never data).
            sent_on_contract(checks["traffic enp1s0"], 24)
            assert "packets_sent +" in checks["traffic enp1s0"]["msg"], checks["traffic enp1s0"]
            # The NIC's PCIe link while the traffic flowed (virtio-net behind QEMU's root port: x1 at 2.5 GT/s, all the
            # NIC can), its AER counters at both ends: read, and no finding made of them.
            link = checks["traffic enp1s0"]["pcie"]
            assert (link["pci"], link["upstream_pci"], link["width"], link["upstream_max_width"]) == (
                "0000:01:00.0", "0000:00:04.0", 1, 32), link
            assert link["busy_samples"] > 0 and link["below_samples"] == 0 and link["upstream_aer_correctable"] == 0, link
            print("report, %s: traffic enp1s0: %s" % (host, checks["traffic enp1s0"]["msg"]))
        bw = [t for t in report["tests"] if t["tool"] == "ib_write_bw"]
        assert bw and all("-T 98" in json.dumps(t) for t in bw), bw
        assert report["findings"] == [], report["findings"]
        # The anchor retests were planned after the pair rounds (the role's task ran on the controller) and found
        # nothing to retest: two hosts cannot tell which end of a pair is at fault.
        assert re.search(r"TASK \[roce\.fabric\.validate : Plan the anchor retests of the matrix's suspects\][^\n]*\n"
                         r"ok: \[node1 -> localhost\]", proc.stdout), proc.stdout[-3000:]
        retest_rounds = proc.stdout.split("Run the anchor retests, one launch per host]")[1].split("TASK [")[0]
        assert "skipping: [node1]" in retest_rounds and "included" not in retest_rounds, retest_rounds
        assert report["location"]["retests"] == [] and "three hosts or more" in report["location"]["note"]

        # A host that drifted from the contract is reported by name, with the change that fixes it: its NIC settings,
        # and its traffic (rping rides RDMA-CM's default ToS, now 0 on node2).
        assert vm("node2", "echo 0 > %s" % TOS_FILE)[0] == 0
        stop = capture("node1", "drift")
        proc, report = playbook(tmp_path / "drift", contract, '{"validate_tests": ["rping"]}', traffic=True)
        drifted = stop()
        # On the wire the drifted host's connection rides ToS 0 (the contrast to the contract's 98 above).
        assert drifted["tos"].get("0", 0) > 20, json.dumps(drifted)
        assert proc.returncode != 0 and "node2 qos enp1s0" in proc.stdout, proc.stdout[-3000:]
        drift = dict((c["name"], c) for c in report["hosts"]["node2"]["checks"])
        assert drift["qos enp1s0"]["status"] == "failed" and "default_roce_tos: 98" in drift["qos enp1s0"]["msg"], drift
        assert drift["traffic enp1s0"]["status"] == "failed", drift["traffic enp1s0"]
        assert re.match(r"0 of \d+ RoCE v2 packets this host sent on enp1s0 carried DSCP 24", drift["traffic enp1s0"]["msg"])
        assert "node2 traffic enp1s0" in proc.stdout
        # node1's settings are right; its side of the connection rides whatever class the connecting side chose,
        # so its traffic shows the drift too, and its message points at the peer's qos check.
        node1 = dict((c["name"], c) for c in report["hosts"]["node1"]["checks"])
        assert node1["qos enp1s0"]["status"] == "passed" and node1["qos nccl"]["status"] == "passed", node1
        assert node1["traffic enp1s0"]["status"] == "passed" or "DSCP 0: " in node1["traffic enp1s0"]["msg"], node1
        assert "qos check" in drift["traffic enp1s0"]["msg"]
    finally:
        apply_qos()
    for host in vms:
        assert vm(host, "cat %s" % TOS_FILE)[1].strip() == "106"
    # A check-mode run runs no benchmark and writes nothing.
    check_proc, _old = playbook(tmp_path / "check", check=True)
    assert check_proc.returncode == 0, check_proc.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "check" / "report"))
    for host in vms:
        assert perftest_processes(host) == []


def check_pair_tests(report, run_dir, tos):
    """The discovery check, the pair tests with perftest's arguments from the plan (the contract's ToS), the
    report's record of when and how it was made, and its page."""
    for host, address in (("node1", "10.78.0.1"), ("node2", "10.78.0.2")):
        check = report["hosts"][host]["checks"][0]
        assert check["name"] == "discovery" and check["status"] == "passed"
        assert "rxe0/1 Ethernet" in check["msg"] and "RoCE v2 GID 1" in check["msg"] and address in check["msg"]
    tests = by_id(report)
    assert sorted(tests) == ["ib_write_bw:node1->node2", "rping:node1->node2"]
    bw = tests["ib_write_bw:node1->node2"]
    assert bw["status"] == "passed" and bw["summary"]["unit"] == "Gb/s" and bw["summary"]["value"] > 0.001
    assert bw["client_command"].endswith("-R -T %d --report_gbits -D 3 -s 65536 10.78.0.1" % tos)
    assert bw["server_command"].endswith("ib_write_bw -d rxe0 -i 1 -p 18516 -R -T %d --report_gbits -D 3 -s 65536" % tos)
    assert tests["rping:node1->node2"]["msg"] == "ok"
    # When and how the report was made (hardening: it used to be null); never the extra variables.
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        version = re.search(r"^version: *(\S+)", handle.read(), re.M).group(1)
    generated = report["generated"]
    assert re.match(r"^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ$", generated["time"]), generated
    assert (generated["collection_version"], generated["inventory"], generated["command"]) == (
        version, "lab", "ansible-playbook -i lab"), generated
    assert "validate_tests" not in json.dumps(generated)
    page = open(os.path.join(str(run_dir / "report"), "report.html")).read()
    assert page.count("<svg") >= 1 and "10.78.0.1" in page
    for host in HOSTS:
        assert perftest_processes(host) == []


def test_rdma_counters_reads_the_real_port_and_refuses_bad_names(vms):
    """roce.fabric.rdma_counters on a VM: real ethtool -S of virtio_net (no per-priority counters) and the real
    Soft-RoCE hw_counters, which grow with the traffic; a bad or unknown name is a clear error."""
    args = dict(netdev="enp1s0", rdma_device="rxe0")
    first = run_module(INVENTORY, "node1", "roce.fabric.rdma_counters", args, check=True)
    assert not first.get("failed") and first["changed"] is False and first["commands"] == [], first
    assert first["driver"] == "virtio_net" and first["ethtool_error"] is None and first["priorities"] == {}
    assert "tx_queue_0_bytes" in first["ethtool"] and "sent_pkts" in first["hw_counters"], first
    rc, out = vm("node1", "ping -c 3 -i 0.2 10.78.0.2 >/dev/null")
    assert rc == 0, out
    second = run_module(INVENTORY, "node1", "roce.fabric.rdma_counters", args)
    assert second["ethtool"]["tx_queue_0_packets"] >= first["ethtool"]["tx_queue_0_packets"] + 3
    for bad, words in (("enp1s0/../x", "not an interface name"), ("nosuch0", "No network interface nosuch0")):
        result = run_module(INVENTORY, "node1", "roce.fabric.rdma_counters", dict(netdev=bad))
        assert result.get("failed") and words in result["msg"] and result["commands"] == [], result
    result = run_module(INVENTORY, "node1", "roce.fabric.rdma_counters", dict(netdev="enp1s0", rdma_device="rxe0;reboot"))
    assert result.get("failed") and "not an RDMA device name" in result["msg"], result


def test_work_dirs_another_user_made_first_are_refused_and_nothing_is_written(vms, tmp_path):
    """On a shared host, nobody made the validation's and perftest's directories first, with links in them to a
    file root owns: the role and the module refuse by name, and the file and the directories stay as they were."""
    plant = ("rm -rf /var/tmp/planted /var/tmp/planted-pt /root/victim; echo keep > /root/victim;"
             " mkdir -m 0777 /var/tmp/planted && ln -s /root/victim /var/tmp/planted/roce_dscp_capture.py"
             " && chown -h -R nobody /var/tmp/planted && ln -s /root /var/tmp/planted-pt && echo ok")
    rc, out = vm("node1", plant)
    assert rc == 0 and out.strip() == "ok", out
    state = "cat /root/victim; ls -la /var/tmp/planted | tail -n +2 | awk '{print $1, $3, $NF}'; ls -ld /var/tmp/planted-pt"
    before = vm("node1", state)
    try:
        # The traffic window's capture is what the role puts in validate_work_dir.
        proc, report = playbook(tmp_path, '{"validate_tests": ["rping"], "validate_work_dir": "/var/tmp/planted"}',
                                traffic=True)
        # node1 stops there; node2, whose folder is its own, goes on, and the play fails at the end.
        assert proc.returncode != 0, proc.stdout[-3000:]
        assert report is None or report["passed"] is False or "node1" not in json.dumps(report.get("tests", [])), report
        assert ("refusing /var/tmp/planted: it is owned by nobody" in proc.stdout
                and "nothing was changed" in proc.stdout), proc.stdout[-3000:]
        # A folder below it, where nobody may swap what lies below (/var/tmp/planted is theirs and not sticky), is
        # refused before anything is made (issue 15: the role did not check the folders above its own). The module's
        # own contract (check mode, made once 0700, no change, removed) is unit-tested through main() on a real
        # filesystem (tests/unit/plugins/modules/test_private_dir.py); the role made its folders on the VMs above.
        result = run_module(INVENTORY, "node1", "roce.fabric.private_dir", dict(path="/var/tmp/planted/own/work"))
        assert result.get("failed") and result["changed"] is False, result
        assert "/var/tmp/planted above it is owned by nobody" in result["msg"], result
        result = run_module(INVENTORY, "node1", "roce.fabric.perftest",
                            dict(tool="rping", mode="server", port=7190, run_dir="/var/tmp/planted-pt", fail_on_error=False))
        assert result["passed"] is False and result["cause"] == "unsafe_run_dir", result
        assert "refusing /var/tmp/planted-pt: it is a symbolic link (to /root)" in result["msg"]
        assert vm("node1", state) == before and before[1].startswith("keep\n")
        assert vm("node1", "ls /root/7190.* 2>/dev/null; pgrep -x rping")[1].strip() == ""
    finally:
        vm("node1", "rm -rf /var/tmp/planted /var/tmp/planted-pt /root/victim /var/tmp/roce-fabric-own")


def plant_lock(owner, boot):
    """A validation lock of another run on both VMs, taken now in boot ``boot`` ("" = the VM's current boot)."""
    record = ("import json, time; boot = %r or open('/proc/sys/kernel/random/boot_id').read().strip(); "
              "print(json.dumps(dict(owner=%r, since=time.time(), boot_id=boot)))" % (boot, owner))
    for host in HOSTS:
        rc, out = vm(host, "mkdir -p -m 0700 /var/lib/roce-fabric && python3 -c %s > /var/lib/roce-fabric/validate.lock"
                           " && chmod 0600 /var/lib/roce-fabric/validate.lock && echo ok" % shlex.quote(record))
        assert rc == 0 and out.strip() == "ok", out


def test_a_second_validation_of_a_locked_host_is_refused_and_an_abandoned_lock_taken_over(vms, tmp_path):
    """Hardening (issue 15 item 8): two validations at once shared the hosts' test ports and run directory, and the
    cleanup of one stopped the other's test servers. A host that another run holds now fails by name with nothing
    run on it and that run's lock kept; a lock left by a run of an earlier boot is taken over; and the run's own
    lock is gone when it ends."""
    plant_lock("other-run-20261125", "")
    try:
        proc, report = playbook(tmp_path, '{"validate_tests": ["rping"]}')
        assert proc.returncode != 0 and report is None, proc.stdout[-3000:]
        assert "/var/lib/roce-fabric/validate.lock is locked: held by run other-run-20261125" in proc.stdout, proc.stdout[-3000:]
        for host in HOSTS:
            assert '"owner": "other-run-20261125"' in vm(host, "cat /var/lib/roce-fabric/validate.lock")[1]
            assert perftest_processes(host) == []

        plant_lock("crashed-run-20261124", "00000000-0000-4000-8000-000000000000")
        # Taken over: the run passes (its discovery and QoS checks; no pair test needed to hold the lock).
        proc, report = playbook(tmp_path, '{"validate_tests": []}')
        assert proc.returncode == 0 and report["passed"] is True, what_failed(proc, report)
        for host in HOSTS:
            assert vm(host, "test -e /var/lib/roce-fabric/validate.lock")[0] == 1, "the run's lock outlasted it on %s" % host
    finally:
        for host in HOSTS:
            vm(host, "rm -f /var/lib/roce-fabric/validate.lock")


STANDIN_DIR = "/usr/local/lib/roce-lab/nccl-tests"
MPI_KEY = "/root/.ssh/id_ed25519_roce_mpi"
# Root's trust, accepted knowingly (the default is the dedicated account, test_collectives_..._dedicated_user). The
# SSH runs leave the QoS contract unread (validate_qos: null; one module call less per host and run); the collectives'
# run reads it.
MPI_VARS = dict(validate_tests=[], validate_qos=None, validate_mpi_ssh=True, validate_nccl_launcher="mpi",
                validate_mpi_ssh_user="root", validate_mpi_ssh_allow_root=True,
                validate_nccl_mpi_hosts=list(HOSTS), validate_nccl_gpus_per_host=1, validate_nccl_numa_nodes=[0],
                validate_nccl_benchmark="nccl_tests", validate_nccl_tests_dir=STANDIN_DIR,
                validate_nccl_min_bytes="64K", validate_nccl_max_bytes="1M", validate_nccl_require_net="any",
                validate_nccl_timeout=120)


def mpi_processes(host):
    rc, out = vm(host, "ps -eo pid,args | grep -E '(orted|mpirun|_perf)( |$)' | grep -v grep || true")
    return [line for line in out.splitlines() if line.strip()]


def test_mpi_ssh_in_check_mode_on_hosts_without_the_key(vms, tmp_path):
    """Hardening: validate_mpi_ssh under --check used to fail on a fresh host (a slurp of the key it had not made)."""
    keys = "/root/.ssh/id_ed25519_roce_mpi /root/.ssh/id_ed25519_roce_mpi.pub"
    for host in vms:
        assert vm(host, "for f in %s; do [ ! -e $f ] || mv $f $f.saved; done" % keys)[0] == 0
    try:
        proc, report = playbook(tmp_path, json.dumps(dict(MPI_VARS, validate_nccl=False)), check=True)
        assert proc.returncode == 0, proc.stdout[-3000:]
        for host in vms:
            assert vm(host, "ls /root/.ssh/id_ed25519_roce_mpi")[0] != 0, "check mode made a key"
    finally:
        for host in vms:
            vm(host, "for f in %s; do [ ! -e $f.saved ] || mv $f.saved $f; done" % keys)


@pytest.fixture(scope="module")
def mpi_ready(vms, tmp_path_factory):
    """The stand-in installed on both VMs and the role's SSH trust set up (a run without NCCL)."""
    with open(os.path.join(REPO, "lab", "validate", "mpi_standin", "collective_perf.py"), "rb") as handle:
        payload = base64.b64encode(b"#!/usr/bin/python3\n" + handle.read()).decode()
    for host in vms:
        rc, out = vm(host, "mkdir -p %s && echo %s | base64 -d > %s/all_reduce_perf && cp %s/all_reduce_perf %s/alltoall_perf"
                           " && chmod 755 %s/*_perf" % (STANDIN_DIR, payload, STANDIN_DIR, STANDIN_DIR, STANDIN_DIR, STANDIN_DIR))
        assert rc == 0, out
    proc, _report = playbook(tmp_path_factory.mktemp("ssh"), json.dumps(dict(MPI_VARS, validate_nccl=False)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return vms


def test_mpi_ssh_trust_keeps_host_key_checking(mpi_ready, tmp_path):
    rc, out = vm("node1", "ssh -i %s -o BatchMode=yes 10.78.0.2 hostname" % MPI_KEY)
    assert (rc, out.strip()) == (0, "node2"), out
    rc, out = vm("node2", "ssh -i %s -o BatchMode=yes 10.78.0.1 hostname" % MPI_KEY)
    assert (rc, out.strip()) == (0, "node1"), out
    # Checking is on: the same login with an empty known_hosts is refused, not accepted blindly.
    rc, out = vm("node1", "ssh -i %s -o BatchMode=yes -o UserKnownHostsFile=/dev/null 10.78.0.2 hostname" % MPI_KEY)
    assert rc != 0 and "Host key verification failed" in out, out
    # Hardening: each key only from its host's RoCE address, restricted. node1 logging in from its other address
    # (enp2s0, 10.78.1.1) with the same key and node2's pinned host key is refused.
    keys = vm("node2", "cat /root/.ssh/authorized_keys")[1]
    assert 'from="10.78.0.1",restrict ssh-ed25519 ' in keys and keys.count("roce-fabric-mpi@node1") == 1, keys
    rc, out = vm("node1", "ssh -i %s -o BatchMode=yes -o HostKeyAlias=10.78.0.2 -b 10.78.1.1 10.78.1.2 hostname" % MPI_KEY)
    assert rc != 0 and "Permission denied" in out, out
    # Each host's key once in authorized_keys, each host pinned once; a second run changes nothing.
    before = [vm(h, "cat /root/.ssh/authorized_keys /root/.ssh/known_hosts")[1] for h in HOSTS]
    assert before[0].count("roce-fabric-mpi@node2") == 1 and before[1].count("roce-fabric-mpi@node1") == 1
    proc, _report = playbook(tmp_path, json.dumps(dict(MPI_VARS, validate_nccl=False)))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "node2                      : ok=" in proc.stdout and " changed=0 " in proc.stdout.split("node2  ")[-1], \
        proc.stdout[-1500:]
    assert [vm(h, "cat /root/.ssh/authorized_keys /root/.ssh/known_hosts")[1] for h in HOSTS] == before


MPI_USER = "roce-mpi"
MPI_HOME = "/home/roce-mpi"


def test_collectives_across_the_vms_through_mpirun_as_a_dedicated_user(mpi_ready, tmp_path):
    """The collectives through mpirun as the default dedicated MPI account, which the role makes (issue 37, 7: the
    trust was root's by default); its files are the user's, root's own trust is not touched. Then the links a user
    can plant in its own home (issue 37, 2: root followed them, and the next run handed /etc/shadow to the user or
    wrote into /etc) are refused, with their targets unchanged: the public key planted as a link to /etc/shadow here,
    the other links by the judge's unit tests."""
    dedicated = dict(MPI_VARS)
    for key in ("validate_mpi_ssh_user", "validate_mpi_ssh_allow_root", "validate_qos"):
        dedicated.pop(key)
    # One collective: each is the same mpirun through the role (all_to_all's table and bus bandwidth are unit tests on
    # nccl-tests' output from the GPU machine, tests/unit/plugins/module_utils/test_validate_nccl.py).
    dedicated["validate_nccl_collectives"] = ["all_reduce"]
    for host in HOSTS:
        vm(host, "pkill -u {0}; userdel -r {0} 2>/dev/null; rm -f /etc/security/limits.d/roce-fabric-mpi.conf; true".format(MPI_USER))
    root_trust = [vm(h, "cat /root/.ssh/authorized_keys /root/.ssh/known_hosts")[1] for h in HOSTS]
    targets = "stat -c '%U:%G %a %s %Y %n' /etc /etc/shadow; ls -d /etc/authorized_keys /etc/known_hosts /etc/id_ed25519_roce_mpi* 2>&1"
    try:
        proc, report = playbook(tmp_path, json.dumps(dedicated))
        check_collectives(proc, report)
        for host in HOSTS:
            rc, out = vm(host, "stat -c '%U %a %n' {0}/.ssh {0}/.ssh/*".format(MPI_HOME))
            assert rc == 0 and len(out.splitlines()) == 5, out
            assert all(line.startswith(MPI_USER + " ") for line in out.splitlines()), out
            assert "%s 700 %s/.ssh\n" % (MPI_USER, MPI_HOME) in out and "600 %s/.ssh/id_ed25519_roce_mpi\n" % MPI_HOME in out
            assert 'from="10.78.0.' in vm(host, "cat %s/.ssh/authorized_keys" % MPI_HOME)[1]
            assert vm(host, "cat /etc/security/limits.d/roce-fabric-mpi.conf")[1].endswith("roce-mpi - memlock unlimited\n")
        assert [vm(h, "cat /root/.ssh/authorized_keys /root/.ssh/known_hosts")[1] for h in HOSTS] == root_trust

        quick = json.dumps(dict(dedicated, validate_nccl=False))
        before = vm("node1", targets)[1]
        # The public key made a link to /etc/shadow, by the user.
        vm("node1", "su -s /bin/sh {0} -c 'ln -sf /etc/shadow {1}/.ssh/id_ed25519_roce_mpi.pub'".format(MPI_USER, MPI_HOME))
        proc, _report = playbook(tmp_path / "pub", quick)
        assert proc.returncode != 0 and "%s/.ssh/id_ed25519_roce_mpi.pub is a symbolic link" % MPI_HOME in proc.stdout, proc.stdout[-3000:]
        assert "nothing was changed" in proc.stdout
        assert vm("node1", targets)[1] == before, "a planted link changed its target"
        # ~/.ssh itself a link to /etc is the same read (stat without following) judged by mpi_ssh_path_problems,
        # unit-tested with a linked .ssh (tests/unit/plugins/filter/test_validate_checks.py).
    finally:
        for host in HOSTS:
            vm(host, "pkill -u {0}; userdel -r {0} 2>/dev/null; rm -f /etc/security/limits.d/roce-fabric-mpi.conf; true".format(MPI_USER))


def check_collectives(proc, report):
    # The stand-in is not NCCL: its run has no NCCL log, which the log check must flag.
    assert proc.returncode != 0 and "node1 nccl all_reduce (mpi, 2 hosts)" in proc.stdout, proc.stdout[-3000:]
    checks = dict((c["name"], c) for c in report["hosts"]["node1"]["checks"])
    for collective, perf in (("all_reduce", "all_reduce_perf"),):
        check = checks["nccl %s (mpi, 2 hosts)" % collective]
        assert check["status"] == "failed"
        reasons = check["msg"].split("; ")[2:]
        assert [r.split(":")[0] for r in reasons] == ["no_nccl_log"], check["msg"]
        assert "2 ranks on node1,node2" in check["msg"]
        table = check["tables"][0]
        assert [(r["rank"], r["host"]) for r in table["ranks"]] == [(0, "node1"), (1, "node2")]
        # Every rank got the discovered NCCL environment through mpirun, on both hosts.
        assert all(r["detail"].endswith("NCCL_IB_HCA =rxe0:1") for r in table["ranks"]), table["ranks"]
        assert [row["size"] for row in table["rows"]] == [65536, 262144, 1048576]
        # The stand-in prints nccl-tests' two decimals, so on a slow host a small size's bandwidth may read 0.00:
        # check each row against its own time instead of against zero.
        factor = 1.0 if collective == "all_reduce" else 0.5
        for row in table["rows"]:
            side = row["out_of_place"]
            assert side["wrong"] == 0 and side["time_us"] > 0, row
            algbw = row["size"] / side["time_us"] / 1e3
            assert abs(side["algbw"] - algbw) <= 0.006 + 0.01 * algbw, row
            assert abs(side["busbw"] - algbw * factor) <= 0.006 + 0.01 * algbw, row
        assert table["avg_busbw"] > 0 and table["wrong_total"] == 0
        command = check["command"]
        # Not root: mpirun would refuse to run as root without --allow-run-as-root.
        assert command.startswith("/usr/bin/mpirun --mca coll_hcoll_enable 0 "
                                  "--mca oob_tcp_if_include enp1s0 --mca btl_tcp_if_include enp1s0")
        assert "-H 10.78.0.1:1 -x HCOLL_ENABLE_MCAST_ALL=0" in command
        assert "/usr/bin/numactl --cpunodebind=0 --membind=0 %s/%s -b 64K -e 1M" % (STANDIN_DIR, perf) in command
        assert "StrictHostKeyChecking" not in command
    assert report["hosts"]["node2"]["status"] == "passed"
    for host in HOSTS:
        assert mpi_processes(host) == []


def standin_run(**args):
    base = dict(launcher="mpi", hosts=["10.78.0.1", "10.78.0.2"], gpus=1, benchmark="nccl_tests",
                nccl_tests_dir=STANDIN_DIR, collectives=["all_reduce"], min_bytes="64K", max_bytes="64K",
                ssh_key=MPI_KEY, fail_on_error=False)
    base.update(args)
    return run_module(INVENTORY, "node1", "roce.fabric.nccl_test", base)


def test_mpi_faults(mpi_ready):
    # node2's second address (enp2s0) is not pinned in known_hosts: SSH refuses it, mpirun cannot start.
    result = standin_run(hosts=["10.78.0.1", "10.78.1.2"], timeout=60)
    run = result["runs"][0]
    assert result["passed"] is False and run["rc"] != 0
    assert "SSH refused a host whose key is not in known_hosts" in run["reasons"][0], run["reasons"]
    # Rank 1 (node2) hangs before the first collective: stopped at the timeout on both hosts.
    result = standin_run(env=dict(ROCE_LAB_STANDIN_HANG="1"), timeout=20)
    run = result["runs"][0]
    assert result["passed"] is False and run["rc"] in (124, 137)
    assert run["reasons"][0].startswith("timed out after 20s"), run["reasons"]
    for host in HOSTS:
        assert mpi_processes(host) == [], "ranks or daemons left on %s" % host
    # Tools missing and bad input: a clear error before anything runs.
    result = standin_run(mpirun="/usr/local/bin/no-mpirun")
    assert result["failed"] and "'/usr/local/bin/no-mpirun' not found: install Open MPI" in result["msg"]
    result = standin_run(hosts=["10.78.0.1", "10.78.0.2;reboot"])
    assert result["failed"] and result["msg"] == "launcher=mpi: malformed MPI host '10.78.0.2;reboot'"
    result = standin_run(gpus=2, numa_nodes=[0])
    assert result["failed"] and "1 NUMA nodes for 2 ranks per host" in result["msg"]
    for host in HOSTS:
        assert mpi_processes(host) == []


def test_mpi_ssh_absent_removes_the_trust_and_bad_options_change_nothing(mpi_ready, tmp_path):
    """validate_mpi_ssh=absent takes back what the role set up: the MPI keys, their authorized_keys lines and the
    known_hosts pins. Bad settings are refused before anything changes: an account the host lacks, and root's trust
    without a forced command (the settings' judge, module_utils/validate/ssh.py settings_problems, is the first task
    of the role; its other refusals, a forced command on two lines and a from= pattern with a quote, are unit tests)."""
    state = "cat /root/.ssh/authorized_keys /root/.ssh/known_hosts; ls /root/.ssh"
    before = [vm(h, state)[1] for h in HOSTS]
    for bad in (dict(validate_mpi_ssh_user="nosuchmpi", validate_mpi_ssh_create_user=False),
                # Root's trust without a forced command, not accepted knowingly.
                dict(validate_mpi_ssh_allow_root=False)):
        proc, _report = playbook(tmp_path / "bad", json.dumps(dict(MPI_VARS, validate_nccl=False, **bad)))
        assert proc.returncode != 0 and "nothing was changed" in proc.stdout, proc.stdout[-2000:]
        assert [vm(h, state)[1] for h in HOSTS] == before
    quick = dict(MPI_VARS, validate_nccl=False, validate_mpi_ssh="absent", validate_qos_traffic=False)
    proc, _report = playbook(tmp_path / "absent", json.dumps(quick))
    assert proc.returncode == 0, proc.stdout[-3000:]
    for host in HOSTS:
        text = vm(host, state)[1]
        assert "roce-fabric-mpi@" not in text and "id_ed25519_roce_mpi" not in text, text
        assert not any(line.startswith(("node1", "node2", "10.78.0.")) for line in text.splitlines()), text
    rc, out = vm("node1", "ssh -o BatchMode=yes 10.78.0.2 hostname")
    assert rc != 0, out
    # A second removal changes nothing: mpi_ssh_trust's unit tests (state=absent twice); the role's second run of the
    # trust changing nothing is test_mpi_ssh_trust_keeps_host_key_checking.
