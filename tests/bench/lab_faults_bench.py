"""Benchmark: faults injected one at a time into the lab's real Soft-RoCE link, each validated once, and what the
report's fault location names for it; then healthy runs, which must raise no finding.

    tests/run env > /dev/null; flock /tmp/roce-vm.lock python tests/bench/lab_faults_bench.py [--healthy 20]
        [--faults ratecut,flap,aer,mtu,miswire,loss] [--loss 1] [--out FILE] [--keep]

The two lab VMs (node1, node2: Debian's kernel, Soft-RoCE rxe0 on enp1s0, one QEMU socket link between them) run
``playbooks/validate.yml`` as an operator would (the traffic window on, the switches off: the VMs' link has no
switch). Each fault is injected on a real part of that link:

- ``loss``: ``tc qdisc ... netem loss 1%`` (``--loss``) on the sending side's enp1s0 (its transmitter or cable);
- ``ratecut``: a link trained at a tenth of its rate, as a real NIC's shows it: ``tc qdisc ... tbf`` at a tenth of the
  healthy runs' bandwidth on the same side (a link that cannot carry what is sent; Soft-RoCE counts the packets its
  netdev refused in ``send_err``), and the port's link rate a tenth of the rail's (virtio_net reports the rate
  ``ethtool -s`` sets: every run of the benchmark sets both ports to ``RAIL_MBPS`` first, so the healthy runs read
  one rate on both ends);
- ``flap``: QEMU's ``set_link fab0 off`` then ``on`` while ib_write_bw runs (a link that goes down and comes back);
- ``aer``: twenty correctable errors injected at the NIC's PCIe root port (``pcie_aer_inject_error rp1 RCVR``)
  while ib_write_bw runs, which the guest's AER driver counts (a marginal PCIe link);
- ``mtu``: one port's MTU put back to 1500 while the other keeps the lab's 4200 (a port left unconfigured);
- ``miswire``: the receiver's two fabric cables swapped between the lab's leaf switches (its enp1s0 into leaf1's
  port, its enp2s0 into leaf2's), unplugged (QEMU ``set_link ... off``) while they move and plugged again; the
  leaves' lldpd tells the guest's lldpd where each port now is, and the validation compares that with the lab's
  cabling plan (``validate_cabling``, inventories/lab/group_vars/gpu_nodes.yml).

A fault is named right when the report's first finding is the expected part on the expected port; for the link's
faults, a cable finding on either end of the one cable. Not injected here (no lab part to inject it on): a PCIe link
trained narrower (QEMU's emulated NICs can only train x1). Prints one row per run and a summary; ``--out`` writes the same text.
Boots the VMs if they are not up (labctl up) and leaves them running with ``--keep``. Needs root (QEMU, the lab).
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INVENTORY = os.path.join(REPO, "inventories", "lab")
sys.path.insert(0, os.path.join(REPO, "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab(INVENTORY)
HOSTS = ("node1", "node2")
# The VMs' leaf switches (inventories/lab/hosts.yml): read with the traffic, as a site's validation reads them.
SWITCHES = "cumulus_switches"
LEAVES = ("leaf1", "leaf2")
NETDEV = "enp1s0"
# The link rate both ports report (Mb/s): virtio_net knows none until ethtool sets one.
RAIL_MBPS = 100000
RXE = ("modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev %s)"
       % NETDEV)
# The loss on the sender's link, in percent. On the lab's leaf (a Linux bridge between QEMU taps) a healthy Soft-RoCE
# link loses nothing (0.00 % in every reading of this benchmark's healthy runs); through QEMU's UDP socket link, the
# lab's wiring before the leaves, the emulation itself dropped up to 0.87 % of the packets and hid an injected loss.
LOSS = 1
DEFAULT_FAULTS = ("loss", "ratecut", "flap", "aer", "mtu", "miswire")
# The plan's ib_write_bw puts node1 as server, node2 as client: node2 sends the data.
SENDER, RECEIVER = "node2", "node1"
# The lab's link is one cable between the two VMs' enp1s0: a cable finding on either end names that cable (the
# report says which end its evidence came from: the sender's when it saw its own losses, the receiver's when only the
# receiver did, the way in to it).
LINK = (("%s/rxe0" % SENDER, "cable"), ("%s/rxe0" % RECEIVER, "cable"))
# Scenario: (host the fault is on, the first findings that name it right (endpoint, part)).
EXPECTED = {
    "loss": (SENDER, LINK),
    "ratecut": (SENDER, LINK),
    "flap": (RECEIVER, LINK),
    "aer": (RECEIVER, (("%s/rxe0" % RECEIVER, "pcie_link"),)),
    "mtu": (SENDER, (("%s/rxe0" % SENDER, "nic_config"),)),
    "miswire": (RECEIVER, (("%s/rxe0" % RECEIVER, "miswire"),)),
}
# The receiver's two cables swapped between the leaves; the same moves put them back.
SWAP = [(("leaf2", "swp1"), ("leaf1", "swp9")), (("leaf1", "swp1"), ("leaf2", "swp1")),
        (("leaf1", "swp9"), ("leaf1", "swp1"))]


def vm(host, command, check=True):
    proc = LAB.exec(host, ["sh", "-c", shlex.quote(command)])
    if check and proc.returncode != 0:
        raise SystemExit("%s on %s failed: %s" % (command, host, proc.stdout + proc.stderr))
    return proc.stdout


def validate(report_dir):
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "validate.yml"),
            "-e", "roce_validate_hosts=lab_vms", "-e", "validate_report_dir=%s" % report_dir,
            "-e", "roce_validate_switches=false",
            # The leaves' port counters and LLDP tables (their NVUE simulators; leaf2's over SSH lists what the lab's
            # leaf of that name hears), without their QoS checks.
            "-e", "validate_switch_counters=true", "-e", "roce_switch_hosts=%s" % SWITCHES]
    started = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    path = os.path.join(report_dir, "report.json")
    if not os.path.exists(path):
        raise SystemExit("no report: %s" % (proc.stdout + proc.stderr)[-3000:])
    with open(path) as handle:
        return json.load(handle), time.time() - started


def during_traffic(host, action):
    """Run ``action`` once ib_write_bw runs on ``host`` (a thread polling the guest's process table)."""
    def watch():
        deadline = time.time() + 300
        while time.time() < deadline:
            if vm(host, "pgrep -x ib_write_bw || true").strip():
                action()
                return
            time.sleep(0.5)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def flap(host):
    LAB.monitor(host, "set_link fab0 off")
    time.sleep(2)
    LAB.monitor(host, "set_link fab0 on")


def aer_burst(host, count=20):
    # One at a time: errors that come faster than the guest's AER handler are reported once ("multiple received").
    for dummy in range(count):
        LAB.monitor(host, "pcie_aer_inject_error rp1 RCVR")
        time.sleep(0.3)


def neighbour(host):
    """The switch LLDP shows on ``host``'s enp1s0, or None while it shows none or two (an old one not yet aged out)."""
    found = json.loads(vm(host, "lldpcli -f json0 show neighbors")).get("lldp") or [{}]
    mine = [i for i in found[0].get("interface") or [] if i.get("name") == NETDEV]
    return mine[0]["chassis"][0]["name"][0]["value"] if len(mine) == 1 else None


def swap_cables(host, expected_leaf):
    """Unplug ``host``'s two fabric NICs, swap their cables between the leaves, plug them again; return once LLDP on
    its enp1s0 shows ``expected_leaf`` alone."""
    for nic in ("fab0", "fab1"):
        LAB.monitor(host, "set_link %s off" % nic)
    LAB.recable(SWAP)
    for nic in ("fab0", "fab1"):
        LAB.monitor(host, "set_link %s on" % nic)
    deadline = time.time() + 60
    while neighbour(host) != expected_leaf:
        if time.time() > deadline:
            raise SystemExit("LLDP on %s never showed %s alone" % (host, expected_leaf))
        time.sleep(1)


def link_rate(mbps):
    return "ethtool -s %s speed %d duplex full" % (NETDEV, mbps)


def inject(name, host, healthy_gbps, loss=LOSS):
    """Arm fault ``name`` on ``host``; returns (the thread that injects during the traffic or None, the undo)."""
    if name == "loss":
        vm(host, "tc qdisc replace dev %s root netem loss %s%%" % (NETDEV, loss))
        return None, lambda: vm(host, "tc qdisc del dev %s root" % NETDEV)
    if name == "ratecut":
        kbit = max(int(healthy_gbps * 1e6 / 10), 64)
        vm(host, "tc qdisc replace dev %s root tbf rate %dkbit burst 16kb latency 50ms && %s" % (
            NETDEV, kbit, link_rate(RAIL_MBPS // 10)))
        return None, lambda: vm(host, "tc qdisc del dev %s root && %s" % (NETDEV, link_rate(RAIL_MBPS)))
    if name == "flap":
        return during_traffic(host, lambda: flap(host)), lambda: None
    if name == "aer":
        return during_traffic(host, lambda: aer_burst(host)), lambda: None
    if name == "miswire":
        swap_cables(host, "leaf1")
        return None, lambda: swap_cables(host, "leaf2")
    if name == "mtu":
        vm(host, "ip link set %s mtu 1500" % NETDEV)
        return None, lambda: vm(host, "ip link set %s mtu 4200" % NETDEV)
    raise SystemExit("unknown fault %s" % name)


def loss_shares(report):
    """Each tested port's transport loss of a run, as the share of its packets (the locate rules' counters): the
    packets that arrived out of sequence of those received, and the NAKs, repeated requests and refused sends of
    those sent."""
    shares = []
    for host in (report.get("hosts") or {}).values():
        for check in host.get("checks") or []:
            rdma = check.get("rdma") or {}
            if not rdma:
                continue
            lost_in = sum(rdma.get(k, 0) for k in ("out_of_sequence", "out_of_seq_request"))
            lost_out = sum(rdma.get(k, 0) for k in ("packet_seq_err", "rcvd_seq_err", "duplicate_request", "send_err"))
            if rdma.get("rcvd_pkts"):
                shares.append(float(lost_in) / rdma["rcvd_pkts"])
            if rdma.get("sent_pkts"):
                shares.append(float(lost_out) / rdma["sent_pkts"])
    return shares


def describe(finding):
    return "%s %s (%s)" % (finding["id"], finding["part"], finding["confidence"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--healthy", type=int, default=20, help="healthy runs (no fault), after the faults")
    parser.add_argument("--faults", default=",".join(DEFAULT_FAULTS))
    parser.add_argument("--loss", type=float, default=LOSS, help="percent of packets lost in the loss fault")
    parser.add_argument("--out")
    parser.add_argument("--keep", action="store_true", help="leave the VMs running")
    args = parser.parse_args()
    lines = []

    def say(text):
        print(text, flush=True)
        lines.append(text)

    started = time.time()
    LAB.up(*(HOSTS + LEAVES), keep_state=True)
    for host in HOSTS:
        vm(host, RXE)
        vm(host, "tc qdisc del dev %s root 2>/dev/null; ip link set %s mtu 4200" % (NETDEV, NETDEV), check=False)
        vm(host, link_rate(RAIL_MBPS))
    # The RoCE QoS contract on the Soft-RoCE NIC, as host.yml applies it (the traffic checks compare with it).
    subprocess.run(["ansible", "lab_vms", "-i", INVENTORY, "-m", "ansible.builtin.include_role", "-a",
                    "name=roce.fabric.nic_qos", "-e", "nic_qos_persist=false"], capture_output=True, cwd=REPO,
                   check=True)
    work = tempfile.mkdtemp(prefix="lab-faults-")
    # One healthy run first: its bandwidth sets the rate cut.
    report, _seconds = validate(os.path.join(work, "reference"))
    healthy_gbps = float(report["location"].get("reference_gbps") or 0.04)
    say("lab faults: node1 <-> node2 (Soft-RoCE rxe0 on %s, QEMU TCG), healthy bandwidth %.4f Gb/s"
        % (NETDEV, healthy_gbps))
    # A launched plan's tests say their slot (validate_execution: launch, the default); a round-by-round one's not.
    launched = any(t.get("slot") is not None for t in report.get("tests") or [])
    say("execution: %s" % ("one launch per host (validate_execution: launch)" if launched else "round by round"))
    switches = report["location"].get("switches") or {}
    say("switches read: counters %s; own LLDP table %s%s" % (
        ", ".join(switches.get("read") or []) or "none", ", ".join(switches.get("lldp") or []) or "none",
        "; not read: %s" % switches["lldp_unread"] if switches.get("lldp_unread") else ""))
    say("%-8s %-6s %-28s %-5s %-34s %s" % ("fault", "on", "expected", "right", "first finding", "seconds"))
    named = []
    for name in [n for n in args.faults.split(",") if n]:
        host, expected = EXPECTED[name]
        thread, undo = inject(name, host, healthy_gbps, args.loss)
        try:
            report, seconds = validate(os.path.join(work, name))
        finally:
            if thread:
                thread.join(timeout=60)
            undo()
        findings = report.get("findings") or []
        first = findings[0] if findings else None
        right = bool(first) and (first["id"], first["part"]) in expected
        named.append(right)
        wanted = "the link's cable" if expected == LINK else "%s %s" % expected[0]
        row = (name, host, wanted, "yes" if right else "NO", describe(first) if first else "none", seconds)
        say("%-8s %-6s %-28s %-5s %-34s %.0f" % row)
        for finding in findings:
            say("    finding %s: %s" % (describe(finding), finding.get("action")))
            for item in finding.get("evidence") or []:
                say("        %s: %s" % (item["kind"], item["text"]))
        failed = [t["id"] for t in report.get("tests") or [] if t.get("status") != "passed"]
        say("    tests not passed: %s" % (", ".join(failed) or "none"))
        say("    transport loss per port and direction: %s" % ", ".join("%.2f %%" % (100 * x) for x in loss_shares(report)))
    clean, all_passed, times, healthy_loss = 0, 0, [], []
    for index in range(args.healthy):
        report, seconds = validate(os.path.join(work, "healthy%d" % index))
        times.append(seconds)
        healthy_loss.extend(loss_shares(report))
        findings = report.get("findings") or []
        clean += not findings
        # A test may fail without a finding (a cause of the run's own, left out of the matrix): counted apart.
        not_passed = ["%s (%s)" % (t["id"], t.get("cause")) for t in report.get("tests") or [] if t.get("status") != "passed"]
        all_passed += not not_passed
        if not_passed:
            say("healthy run %d: tests not passed: %s" % (index + 1, ", ".join(not_passed)))
        if findings:
            say("healthy run %d raised: %s" % (index + 1, "; ".join(
                "%s [%s]" % (describe(f), " | ".join(e["text"] for e in f.get("evidence") or [])) for f in findings)))
    say("faults named right: %d of %d" % (sum(named), len(named)))
    if args.healthy:
        row = (clean, args.healthy, statistics.median(times))
        say("healthy runs without a finding: %d of %d (a run: median %.0f s)" % row)
        say("healthy runs with every test passed: %d of %d" % (all_passed, args.healthy))
        if healthy_loss:
            say("healthy transport loss (Soft-RoCE's own), per port and direction: median %.2f %%, max %.2f %% over %d "
                "readings" % (100 * statistics.median(healthy_loss), 100 * max(healthy_loss), len(healthy_loss)))
    say("wall: %.0f s" % (time.time() - started))
    if not args.keep:
        LAB.down(*(HOSTS + LEAVES))
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0 if all(named) and clean == args.healthy else 1


if __name__ == "__main__":
    sys.exit(main())
