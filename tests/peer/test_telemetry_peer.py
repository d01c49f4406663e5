"""RDMA telemetry end to end: the rdma_exporter role on the lab's two QEMU VMs, scraped by a real Prometheus (prom1).

The VMs are the validate tier's (conftest.two_vms: booted once for both modules). Prometheus runs on this machine
and scrapes each VM's exporter through the port QEMU forwards to it (roce_lab_vm_forwards). What the exporter
reports is asked of Prometheus through its HTTP API, over a real ib_write_bw between the VMs, a Soft-RoCE device
removed and added again, and a real reboot; the metrics page itself is checked by Prometheus' promtool.
"""

import hashlib
import http.client
import os
import re
import shlex
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import conftest
from conftest import REPO
from door import Lab  # the lab's one door (conftest puts lab/ on the path)

INVENTORY = os.environ.get("ROCE_LAB_INVENTORY", conftest.INVENTORY)
LAB = Lab(INVENTORY)
HOSTS = ("node1", "node2")
PROM = "prom1"
# The exporter of each VM as this machine reaches it (the forwarded ports of inventories/lab/hosts.yml).
PAGES = {"node1": "http://127.0.0.1:29101/metrics", "node2": "http://127.0.0.1:29102/metrics"}
RXE = "modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev enp1s0)"
UNIT = "/etc/systemd/system/roce-rdma-exporter.service"
PROGRAM = "/usr/local/lib/roce-rdma-exporter.py"


def vm(host, command):
    proc = LAB.exec(host, ["sh", "-c", shlex.quote(command)])
    return proc.returncode, proc.stdout + proc.stderr


def play_argv(*extra, check=False, limit=None):
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "telemetry.yml"),
            "-e", "roce_telemetry_hosts=lab_vms"]
    for item in extra:
        argv += ["-e", item]
    if check:
        argv += ["--check", "--diff"]
    if limit:
        argv += ["--limit", limit]
    return argv


def recap(stdout):
    """{host: changed count} from the play recap (the controller's preflight, on localhost, left out)."""
    return dict((m.group(1), int(m.group(2))) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M)
                if m.group(1) != "localhost")


def play(*extra, check=False, limit=None):
    """playbooks/telemetry.yml on the VMs; (rc, output, {host: changed count})."""
    proc = subprocess.run(play_argv(*extra, check=check, limit=limit), capture_output=True, text=True, cwd=REPO, check=False)
    return proc.returncode, proc.stdout + proc.stderr, recap(proc.stdout)


def fingerprint(host):
    """What the role installs on a host, as text: the unit, the installed files' hashes, the service's state."""
    rc, out = vm(host, "cat %s 2>/dev/null; sha256sum %s 2>/dev/null; "
                       "systemctl is-enabled roce-rdma-exporter 2>/dev/null; systemctl is-active roce-rdma-exporter 2>/dev/null"
                 % (UNIT, PROGRAM))
    return hashlib.sha256(out.encode()).hexdigest(), out


def wait_until(what, predicate, timeout=60, interval=1.0):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ds waiting for %s (last: %r)" % (timeout, what, last))


def scalar(expr, at=None):
    """The single value of a PromQL query, or None when it has no result."""
    result = LAB.query(PROM, expr, at)
    assert len(result) <= 1, (expr, result)
    return float(result[0]["value"][1]) if result else None


def answers(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def target_up(host):
    return LAB.state(PROM)["targets"].get(host, {}).get("health") == "up"


@pytest.fixture(scope="module")
def telemetry(two_vms):
    for host in HOSTS:
        rc, out = vm(host, RXE)
        assert rc == 0, out
    LAB.up(PROM)
    try:
        rc, out, _changed = play()
        assert rc == 0, out[-4000:]
        for host in HOSTS:
            wait_until("Prometheus to scrape %s" % host, lambda h=host: target_up(h))
        yield HOSTS
    finally:
        LAB.down(PROM)


def test_a_second_run_and_check_mode_change_nothing(telemetry):
    """A second run on node1 and a check-mode run on node2, at once (each VM has one emulated CPU: in parallel they
    take the time of one run)."""
    before = dict((h, fingerprint(h)[0]) for h in HOSTS)
    second = subprocess.Popen(play_argv(limit="node1"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    check = subprocess.Popen(play_argv(check=True, limit="node2"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, cwd=REPO)
    second_out, check_out = second.communicate(timeout=900)[0], check.communicate(timeout=900)[0]
    assert second.returncode == 0 and recap(second_out) == {"node1": 0}, second_out[-3000:]
    assert check.returncode == 0 and recap(check_out) == {"node2": 0}, check_out[-3000:]
    assert dict((h, fingerprint(h)[0]) for h in HOSTS) == before


def test_the_service_is_hardened_and_runs_as_a_user_of_its_own(telemetry):
    rc, out = vm("node1", "systemctl show roce-rdma-exporter -p DynamicUser -p ProtectSystem -p NoNewPrivileges "
                          "-p CapabilityBoundingSet -p PrivateDevices -p ActiveState; "
                          "ps -o user=,args= -C python3 | grep roce-rdma-exporter")
    assert rc == 0, out
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith(" "))
    assert props["DynamicUser"] == "yes" and props["ProtectSystem"] == "strict" and props["NoNewPrivileges"] == "yes"
    assert props["PrivateDevices"] == "yes" and props["ActiveState"] == "active"
    assert props["CapabilityBoundingSet"] == "", props  # no capability at all
    process = [line for line in out.splitlines() if "roce-rdma-exporter.py" in line]
    assert process and not process[0].startswith("root"), process


def test_the_metrics_page_passes_promtool(telemetry):
    for host, url in PAGES.items():
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read()
        assert b'rdma_port_state{device="rxe0",netdev="enp1s0",port="1",state="ACTIVE"} 4.0' in page, (host, page[:2000])
        proc = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, check=False)
        assert proc.returncode == 0, (host, proc.stdout.decode() + proc.stderr.decode())


def sample(series, at):
    """``(value, scrape time)`` of the last sample of ``series`` Prometheus holds at ``at``, or None."""
    value, stamp = scalar(series, at), scalar("timestamp(%s)" % series, at)
    return None if value is None or stamp is None else (value, stamp)


def framed_rate(series, before, after):
    """The counter's rate between its last scrape at or before ``before`` and its first one at or after ``after``
    (waited for): the run's average over a window of real scrapes on either side of it, however late a loaded VM's
    scrapes come. The window's seconds are returned with it."""
    first = sample(series, before)
    assert first is not None and first[1] <= before, (series, first)

    def scraped_after():
        got = sample(series, time.time())
        return got if got is not None and got[1] >= after else None
    last = wait_until("a scrape of %s after the run" % series, scraped_after, 60, 0.5)
    return (last[0] - first[0]) / (last[1] - first[1]), last[1] - first[1]


def test_prometheus_sees_the_rdma_traffic_of_a_perftest_run(telemetry):
    """rxe0's transmitted bytes and packets: zero-ish before the run, well above it over the run."""
    rc, out = vm("node2", "pkill -x ib_write_bw; (timeout 60 ib_write_bw -d rxe0 -R -D 8 -s 65536 >/dev/null 2>&1 &); sleep 1")
    quiet_end = time.time()
    time.sleep(1)
    started = time.time()
    rc, out = vm("node1", "timeout 60 ib_write_bw -d rxe0 -R -D 8 -s 65536 10.78.0.2")
    ended = time.time()
    assert rc == 0, out
    # The busy rate is the run's average between the last scrape before it started and the first after it ended. On a
    # loaded machine the busy VM may answer no scrape during the run (the lab scrapes every second, with a timeout of
    # a second), and its first scrape after it may come late: the window is the scrapes', not a guess of seconds.
    tx_bytes = 'rdma_netdev_transmit_bytes_total{host="node1",device="rxe0"}'
    tx_packets = 'rdma_packets_sent_total{host="node1",device="rxe0"}'
    busy_bytes, window = framed_rate(tx_bytes, started, ended)
    busy_packets, packets_window = framed_rate(tx_packets, started, ended)
    idle_bytes = scalar("rate(%s[8s])" % tx_bytes, quiet_end)
    idle_packets = scalar("rate(%s[8s])" % tx_packets, quiet_end)
    # Soft-RoCE under TCG moves a few MB/s: the run is far above 100 kB/s, an idle link far below 10 kB/s.
    assert busy_bytes > 100000, (busy_bytes, window, out)
    assert busy_packets > 20, (busy_packets, packets_window)
    assert idle_bytes is not None and idle_bytes < 10000, idle_bytes
    assert idle_packets is not None and idle_packets < 5, idle_packets
    # The receiving side counts the same run.
    received, window = framed_rate('rdma_packets_received_total{host="node2",device="rxe0"}', started, ended)
    assert received > 20, (received, window)


def test_a_device_removed_and_added_again_is_followed(telemetry):
    assert scalar('rdma_exporter_devices{host="node1"}') == 1
    rc, out = vm("node1", "rdma link delete rxe0")
    assert rc == 0, out
    wait_until("Prometheus to see rxe0 gone", lambda: scalar('rdma_exporter_devices{host="node1"}', time.time()) == 0, 30)
    # Its series end with the scrape that no longer has them (Prometheus' staleness marker), not 5 minutes later.
    assert LAB.query(PROM, 'rdma_port_state{host="node1",device="rxe0"}', time.time()) == []
    rc, out = vm("node1", RXE)
    assert rc == 0, out
    wait_until("Prometheus to see rxe0 again", lambda: scalar('rdma_port_state{host="node1",device="rxe0"}') == 4, 30)
    assert scalar('rdma_exporter_devices{host="node1"}') == 1


def boot_id(host):
    """The host's boot id, or "" while it cannot be reached (rebooting)."""
    try:
        proc = LAB.exec(host, ["cat", "/proc/sys/kernel/random/boot_id"], timeout=30)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def test_the_service_comes_back_after_a_real_reboot(telemetry):
    boot = boot_id("node2")
    assert boot
    LAB.exec("node2", ["systemctl", "reboot"], timeout=60)
    wait_until("node2 to come back from its reboot", lambda: boot_id("node2") not in ("", boot), 600, 3)
    rc, out = vm("node2", "systemctl is-active roce-rdma-exporter")
    assert out.strip() == "active", out
    # The page is served again (without rxe0, which nothing made at boot here), and Prometheus scrapes it.
    wait_until("node2's exporter to answer", lambda: answers(PAGES["node2"]), 60)
    wait_until("Prometheus to scrape node2 again", lambda: target_up("node2"), 60)
    assert scalar('rdma_exporter_devices{host="node2"}', time.time()) == 0
    rc, out = vm("node2", RXE)
    assert rc == 0, out


BAD_INPUT = (
    ("rdma_exporter_port=70000", "rdma_exporter_port must be 1-65535"),
    ("rdma_exporter_listen_address='10.0.0.1; touch /tmp/x'", "an IPv4 or IPv6 address or empty"),
    ("rdma_exporter_listen_address=10.0.0.999", "or empty, not '10.0.0.999'"),
    ("rdma_exporter_path=/usr/local/lib", "ending in .py"),
    ("rdma_exporter_max_clients=0", "rdma_exporter_max_clients 1-64"),
    ("rdma_exporter_include_device='^(rxe'", "missing ), unterminated subpattern"),
)


def test_bad_input_is_refused_and_changes_nothing(telemetry):
    before = dict((h, fingerprint(h)[0]) for h in HOSTS)
    for extra, message in BAD_INPUT:
        rc, out, _changed = play(extra)
        assert rc != 0 and message in out, (extra, out[-3000:])
    assert dict((h, fingerprint(h)[0]) for h in HOSTS) == before


def test_it_listens_on_the_management_network_only_and_takes_expressions_unchanged(telemetry):
    """Hardening (issue 37, 6): the exporter (no authentication) listened on every address, the RoCE network's too.
    It listens on the management address now: the server end of the controller's SSH connection (QEMU's user
    network here, 10.0.2.15; the RoCE link is enp1s0, 10.78.0.0/24). The lab VMs have no default route, as a
    fabric-only host may not: the SSH connection alone decides. A device expression reaches the program as written
    through the unit's command line as the VM's systemd parses it; scrapes that come together share one read."""
    rc, out = vm("node1", "set -- $SSH_CONNECTION; echo $3; ip -4 route show default | wc -l; ss -Hltn 'sport = :9879'")
    assert rc == 0, out
    lines = out.split()
    management, default_routes = lines[0], lines[1]
    listening = [field for field in lines[2:] if field.endswith(":9879")]
    assert default_routes == "0", out
    assert listening == ["%s:9879" % management] and management == "10.0.2.15", out
    rc, out = vm("node2", "python3 -c \"import socket; s = socket.socket(); s.settimeout(5); "
                          "print('connect', s.connect_ex(('10.78.0.1', 9879)))\"")
    assert "connect 111" in out, out  # ECONNREFUSED on the RoCE network
    expression = "^rxe[0-9]+$"
    proc = subprocess.run(play_argv('{"rdma_exporter_include_device": "%s", "rdma_exporter_min_interval": 30}' % expression,
                                    limit="node1"), capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0 and recap(proc.stdout)["node1"] > 0, proc.stdout[-3000:]
    rc, out = vm("node1", "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value roce-rdma-exporter)/cmdline")
    argv = out.splitlines()
    assert argv[argv.index("--include-device") + 1] == expression and argv[argv.index("--min-interval") + 1] == "30", argv
    import concurrent.futures  # pylint: disable=import-outside-toplevel

    def reads(_n):
        # At most four scrapes are answered at once (rdma_exporter_max_clients): the others get 503 and come back
        # (Retry-After: 1), as Prometheus would on its next scrape; under emulation a connection may also be dropped
        # before it is read (the 10 s read timeout in a guest at CPUQuota=25 %). Within min_interval they share the
        # read all the same.
        for attempt in range(5):
            try:
                with urllib.request.urlopen(PAGES["node1"], timeout=20) as response:
                    page = response.read().decode()
                break
            except urllib.error.HTTPError as exc:
                assert exc.code == 503 and attempt < 4, exc
            except (ConnectionError, http.client.RemoteDisconnected):
                assert attempt < 4
            time.sleep(1)
        assert 'rdma_port_state{device="rxe0"' in page
        return re.search(r"^rdma_exporter_reads_total (\S+)$", page, re.M).group(1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        counts = set(pool.map(reads, range(8)))
    assert len(counts) == 1, counts  # eight scrapes at once, one read


def test_absent_removes_everything_and_a_second_removal_changes_nothing(telemetry):
    rc, out, changed = play("rdma_exporter_state=absent")
    assert rc == 0 and changed["node1"] > 0, out[-3000:]
    for host in HOSTS:
        rc, out = vm(host, "test -e %s || test -e %s || echo gone; systemctl is-active roce-rdma-exporter" % (UNIT, PROGRAM))
        assert out.startswith("gone") and "inactive" in out, (host, out)
    rc, out, changed = play("rdma_exporter_state=absent")
    assert rc == 0 and changed == {"node1": 0, "node2": 0}, out[-3000:]
    wait_until("Prometheus to see node1's exporter down", lambda: not target_up("node1"), 30)
