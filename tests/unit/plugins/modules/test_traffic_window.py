# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.traffic_window through main(): the window's checks equal the single-port judge on the same captured
snapshots (no drift between what the report shows and the Python judge), a port that could not be read is a failed
check, a real capture (the validate role's script) started, stopped and read on loopback, and bad input refused."""

from __future__ import annotations

import json
import os
import time
from unittest import mock

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.module_utils.qos.contract import derive
from ansible_collections.roce.fabric.plugins.module_utils.qos.counters import traffic_check
from ansible_collections.roce.fabric.plugins.module_utils.validate import window
from ansible_collections.roce.fabric.plugins.modules import traffic_window
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

CAPTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "module_utils", "qos", "dscp_capture.py")
PORTS = [dict(netdev="enp1s0", device="rxe0", port=1), dict(netdev="enp2s0", device="rxe1", port=1)]


def lab_vm_root(tmp_path, when):
    """The sysfs of the lab VM's enp1s0/rxe0 with the hw_counters captured there (fixtures/counters)."""
    root = tmp_path / "root"
    net = root / "sys" / "class" / "net" / "enp1s0" / "device"
    net.mkdir(parents=True, exist_ok=True)
    (root / "virtio_net").mkdir(exist_ok=True)
    if not (net / "driver").exists():
        (net / "driver").symlink_to(root / "virtio_net")
    # The MTU and carrier changes the lab VM's enp1s0 showed before and after QEMU's set_link off and on.
    (net.parent / "mtu").write_text("4200\n")
    (net.parent / "carrier_changes").write_text("2\n" if when == "before" else "4\n")
    # Its rate as virtio_net reports it once ethtool set one, and its MAC address (fixtures/counters).
    (net.parent / "speed").write_text(corpus.read("counters", "sysfs_speed_virtio_set_10000.txt") + "\n")
    (net.parent / "address").write_text(corpus.read("counters", "sysfs_address_virtio_lab.txt") + "\n")
    hw = root / "sys" / "class" / "infiniband" / "rxe0" / "ports" / "1" / "hw_counters"
    hw.mkdir(parents=True, exist_ok=True)
    for line in corpus.read("counters", "hw_counters_rxe_%s.txt" % when).splitlines():
        name, value = line.split(":", 1)
        (hw / name).write_text(value + "\n")
    return str(root)


def with_ethtool(when):
    """ethtool -S as the lab VM printed it (fixtures/counters)."""
    output = corpus.read("counters", "ethtool_S_virtio_%s.txt" % when)
    return mock.patch.multiple(basic.AnsibleModule, get_bin_path=mock.Mock(return_value="/usr/sbin/ethtool"),
                               run_command=mock.Mock(return_value=(0, output, "")))


def test_the_window_s_checks_equal_the_single_port_judge_and_an_unread_port_fails(tmp_path):
    with with_ethtool("before"):
        opened = run_module(traffic_window.main, dict(state="open", ports=PORTS, root=lab_vm_root(tmp_path, "before")))
    assert opened["changed"] is False and opened["captures"] == [], opened
    assert opened["counters"][0]["hw_counters"]["sent_pkts"] == 0 and opened["counters"][0]["driver"] == "virtio_net"
    assert opened["counters"][1] == dict(item=PORTS[1], msg="No network interface enp2s0 on this host")
    with with_ethtool("after"):
        closed = run_module(traffic_window.main, dict(state="close", ports=PORTS, root=lab_vm_root(tmp_path, "after"),
                                                      before=opened["counters"], contract={}))
    before = dict((k, opened["counters"][0][k]) for k in ("driver", "ethtool", "hw_counters"))
    after = dict((k, closed["counters"][0][k]) for k in ("driver", "ethtool", "hw_counters"))
    qos = derive({})  # the contract's defaults, as the module derives them
    alone = traffic_check("enp1s0", before, after, qos["roce_priority"], qos["roce_dscp"])
    assert [c["name"] for c in closed["checks"]] == ["traffic enp1s0", "traffic enp2s0"]
    assert (closed["checks"][0]["status"], closed["checks"][0]["msg"]) == (alone["status"], alone["msg"])
    assert closed["checks"][1]["status"] == "failed" and "the counters could not be read" in closed["checks"][1]["msg"]
    # For the fault location: the MTU, the carrier's changes with the NIC's counters, the RDMA counters that moved.
    check = closed["checks"][0]
    assert (check["mtu"], check["nic"]["carrier_changes"], check["speed_mbps"]) == (4200, 2, 10000)
    # Its MAC (a switch's LLDP names the port by it) and the window's length, from the two reads' times.
    assert check["mac"] == "52:54:00:72:57:12" and check["window_s"] == round(
        closed["counters"][0]["read_at"] - opened["counters"][0]["read_at"], 1), check
    moved = dict((k, v - opened["counters"][0]["hw_counters"][k]) for k, v in closed["counters"][0]["hw_counters"].items()
                 if v != opened["counters"][0]["hw_counters"][k])
    assert check["rdma"] == moved and check["rdma"]["sent_pkts"] == 2866


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.isdir("/sys/class/net/lo"), reason="a packet socket needs root")
def test_a_real_capture_on_loopback_is_started_stopped_and_read(tmp_path):
    work = tmp_path / "work"  # made by the module (0700), with the capture script in it
    ports = [dict(netdev="lo")]
    opened = run_module(traffic_window.main, dict(state="open", ports=ports, capture=["lo"], capture_seconds=60,
                                                  work_dir=str(work)))
    assert opened.get("failed") is not True and opened["captures"] == [dict(netdev="lo")], opened
    assert oct(work.stat().st_mode & 0o777) == "0o700"
    with open(CAPTURE) as handle:
        assert (work / "roce_dscp_capture.py").read_text() == handle.read()
    time.sleep(1)  # the capture binds its socket
    started = time.monotonic()
    closed = run_module(traffic_window.main, dict(state="close", ports=ports, capture=["lo"], work_dir=str(work),
                                                  before=opened["counters"], contract={}, capture_wait=20,
                                                  window_id=opened["window_id"]))
    assert time.monotonic() - started < 15, "the stop file did not stop the capture"
    assert closed.get("failed") is not True, closed.get("msg")
    counts = closed["captures"][0]["counts"]
    # RoCE v2 packets on loopback: none of the tests here, but another program may send some.
    assert closed["captures"][0]["netdev"] == "lo" and isinstance(counts["packets"], int) and "dropped" in counts, closed
    assert json.loads((work / ("capture-lo.%s.json" % opened["window_id"])).read_text()) == counts
    assert closed["checks"][0]["name"] == "traffic lo" and closed["checks"][0]["command"].endswith("wire capture of UDP 4791")


@pytest.mark.parametrize("bad, words", [
    (dict(ports=[dict(netdev="enp1s0;reboot")]), "Invalid input"),
    (dict(ports=[dict(netdev="enp1s0")], capture=["enp9s0"]), "capture names enp9s0, not among ports"),
    (dict(ports=[dict(netdev="enp1s0")], capture=["enp1s0"]), "a capture needs work_dir"),
    (dict(ports=[dict(netdev="enp1s0")], capture_seconds=0), "capture_seconds must be 1-86400"),
])
def test_bad_input_is_refused_before_anything_is_read(bad, words, tmp_path):
    with mock.patch.object(basic.AnsibleModule, "run_command") as run:
        result = run_module(traffic_window.main, dict(dict(state="open", root=str(tmp_path)), **bad))
    assert result["failed"] and words in result["msg"], result
    assert run.call_count == 0


def test_a_contract_that_is_not_one_is_refused_at_close(tmp_path):
    result = run_module(traffic_window.main, dict(state="close", ports=[], contract={"roce_dscp": 99}))
    assert result["failed"] and result["msg"].startswith("contract:"), result


def test_check_mode_reads_and_judges_the_counters_and_starts_no_capture(tmp_path):
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    (work / "capture-enp1s0.json").write_text("{}")  # an earlier run's result: left as it is
    args = dict(ports=PORTS[:1], capture=["enp1s0"], work_dir=str(work))
    with with_ethtool("before"), mock.patch.object(traffic_window, "detach") as detach:
        opened = run_module(traffic_window.main, dict(args, state="open", root=lab_vm_root(tmp_path, "before")),
                            check_mode=True)
    assert opened.get("failed") is not True and opened["changed"] is False and opened["captures"] == [], opened
    assert detach.call_count == 0 and opened["counters"][0]["hw_counters"]["sent_pkts"] == 0
    with with_ethtool("after"):
        closed = run_module(traffic_window.main, dict(args, state="close", root=lab_vm_root(tmp_path, "after"),
                                                      before=opened["counters"], contract={}), check_mode=True)
    assert closed["changed"] is False and closed["captures"] == [] and closed["checks"][0]["name"] == "traffic enp1s0"
    assert "wire capture" not in closed["checks"][0]["command"]
    assert sorted(os.listdir(str(work))) == ["capture-enp1s0.json"]


def test_a_port_named_pcie_keeps_its_capture_apart_from_the_pcie_sampler(tmp_path):
    """The sampler's files are named apart from every port's capture: a netdev may be called ``pcie``."""
    work = tmp_path / "work"
    ports = [dict(netdev="pcie")]
    args = dict(ports=ports, capture=["pcie"], work_dir=str(work), root=str(tmp_path / "root"))
    with mock.patch.object(traffic_window, "detach") as detach:
        opened = run_module(traffic_window.main, dict(args, state="open"))
    assert opened.get("failed") is not True, opened
    capture, sampler = [call.args[0] for call in detach.call_args_list]
    window = opened["window_id"]
    assert capture[-2:] == [str(work / ("capture-pcie.%s.json" % window)), str(work / ("capture-pcie.%s.stop" % window))]
    assert sampler[-3:] == [str(work / ("pcie-sample.%s.json" % window)), str(work / ("pcie-sample.%s.stop" % window)),
                            "pcie"], sampler
    counts = dict(packets=12, dropped=0, dscp={"26": 12})
    (work / ("capture-pcie.%s.json" % window)).write_text(json.dumps(counts))
    (work / ("pcie-sample.%s.json" % window)).write_text(json.dumps(dict(pcie=None)))
    closed = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={},
                                                  capture_wait=1, window_id=window))
    assert closed["captures"] == [dict(netdev="pcie", counts=counts)], closed["captures"]
    assert sorted(os.listdir(str(work))) == sorted(["capture-pcie.%s.json" % window, "capture-pcie.%s.stop" % window,
                                                    "pcie-sample.%s.json" % window, "pcie-sample.%s.stop" % window,
                                                    "roce_dscp_capture.py", "roce_pcie_sampler.py"])


def lldp_window(tmp_path, netdev, sample):
    """A window on ``netdev`` whose host's lldpcli answers the corpus's ``sample`` (and ethtool the lab VM's
    counters): its arguments, the patch of the module's tools, and the run_command stand-in (it records the calls)."""
    root = tmp_path / "root"
    (root / "sys" / "class" / "net" / netdev).mkdir(parents=True)
    ethtool = corpus.read("counters", "ethtool_S_virtio_before.txt")
    neighbours = corpus.read("lldp", sample)

    def run(argv, **_kwargs):
        return (0, neighbours, "") if "/usr/sbin/lldpcli" in argv else (0, ethtool, "")
    runner = mock.Mock(side_effect=run)
    patch = mock.patch.multiple(basic.AnsibleModule, run_command=runner,
                                get_bin_path=mock.Mock(side_effect=lambda name, *a, **k: "/usr/sbin/" + name))
    return dict(ports=[dict(netdev=netdev)], root=str(root)), patch, runner


def test_each_check_carries_the_switch_port_lldp_hears_on_its_port(tmp_path):
    """lldpd's neighbours (lldpcli -f json0, captured in the lab: the host's ens1np0 hears leaf-r0-0 swp1) reach the
    port's check; without lldpcli, or with lldp off, nothing is read."""
    args, patch, runner = lldp_window(tmp_path, "ens1np0", "lldpcli_json0_host_1.0.16.txt")
    with patch:
        opened = run_module(traffic_window.main, dict(args, state="open"))
        closed = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}))
        off = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}, lldp=False))
    assert closed["checks"][0]["lldp"] == dict(switch="leaf-r0-0", port="swp1", chassis_id="56:da:ac:79:56:12"), \
        closed["checks"][0]
    lldpcli = [c.args[0] for c in runner.call_args_list if "/usr/sbin/lldpcli" in c.args[0]]
    # Once, bounded by the command timeout (coreutils timeout where the host has it).
    assert len(lldpcli) == 1 and lldpcli[0][-6:] == ["/usr/sbin/lldpcli", "-f", "json0", "show", "neighbors", "details"], lldpcli
    assert "lldp" not in off["checks"][0]
    with with_ethtool("after"), mock.patch.object(basic.AnsibleModule, "get_bin_path",
                                                  side_effect=lambda name, *a, **k: None if name == "lldpcli" else "/usr/sbin/" + name):
        closed = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}))
    assert "lldp" not in closed["checks"][0] and closed["checks"][0]["name"] == "traffic ens1np0"


def test_a_neighbour_that_sends_no_system_name_is_kept_with_its_port_id(tmp_path):
    """A neighbour whose LLDP carries only a chassis ID and a port ID (both its MAC address: a NIC's firmware agent;
    lldpd's real answer, captured) was dropped, so its port never reached the cabling check. Now it is kept."""
    args, patch, _runner = lldp_window(tmp_path, "swp7", "lldpcli_json0_mac_only_neighbour_1.0.16.txt")
    with patch:
        opened = run_module(traffic_window.main, dict(args, state="open"))
        closed = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}))
    assert closed["checks"][0]["lldp"] == dict(switch=None, port="0c:42:a1:11:22:33", chassis_id="0c:42:a1:11:22:33")


@pytest.mark.parametrize("state", ["open", "close"])
def test_a_work_dir_that_is_a_link_is_refused_and_nothing_is_written(tmp_path, state):
    """A work_dir someone replaced by a link (to a directory root owns): no script, no stop file, no capture."""
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    (tmp_path / "work").symlink_to(target)
    args = dict(state=state, ports=PORTS[:1], capture=["enp1s0"], work_dir=str(tmp_path / "work"), contract={})
    if state == "close":
        args["window_id"] = "0123456789abcdef"
    with with_ethtool("before"), mock.patch.object(traffic_window, "detach") as detach:
        result = run_module(traffic_window.main, dict(args, root=lab_vm_root(tmp_path, "before")))
    assert result["failed"] and "is a symbolic link" in result["msg"] and "nothing was changed" in result["msg"], result
    assert detach.call_count == 0 and os.listdir(str(target)) == []


def test_each_check_carries_what_the_kernel_said_of_its_pcie_link(tmp_path):
    """The kernel's line at the driver's probe (a public dmesg: 0000:01:00.0 limited by a x1 link at 0000:00:00.0,
    capable of x16) reaches the check of the port whose PCI function it names, from journalctl -k -b --grep; with
    journalctl finding no line (exit 1) nothing is added, and without journalctl dmesg is read."""
    root = tmp_path / "root"
    function = root / "sys" / "devices" / "pci0000:00" / "0000:00:00.0" / "0000:01:00.0"
    function.mkdir(parents=True)
    net = root / "sys" / "class" / "net" / "ens1np0"
    net.mkdir(parents=True)
    (net / "device").symlink_to(function)
    kernel = corpus.read("pcie", "kernel_bw_limited_x1_of_x16_rpi_issue712.txt")
    ethtool = corpus.read("counters", "ethtool_S_virtio_before.txt")
    answers = {"journalctl": (0, kernel, ""), "dmesg": (0, kernel, "")}

    def run(argv, **_kwargs):
        tool = os.path.basename(argv[0]) if "timeout" not in argv[0] else os.path.basename(argv[2])
        return answers.get(tool, (0, ethtool, ""))

    tools = {"journalctl": "/usr/bin/journalctl", "dmesg": "/usr/bin/dmesg", "ethtool": "/usr/sbin/ethtool"}
    args = dict(ports=[dict(netdev="ens1np0")], root=str(root), lldp=False)
    runner = mock.Mock(side_effect=run)
    with mock.patch.multiple(basic.AnsibleModule, run_command=runner,
                             get_bin_path=mock.Mock(side_effect=lambda name, *a, **k: tools.get(name))):
        opened = run_module(traffic_window.main, dict(args, state="open"))
        closed = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}))
        assert closed["checks"][0]["pcie"]["kernel"] == dict(
            pci="0000:01:00.0", available_gbps=7.876, capable_gbps=126.016, speed=8.0, width=1, max_speed=8.0,
            max_width=16, limited_at="0000:00:00.0"), closed["checks"][0]
        journal = [c.args[0] for c in runner.call_args_list if "/usr/bin/journalctl" in c.args[0]]
        assert journal and journal[-1][-7:] == ["-k", "-b", "--no-pager", "-o", "cat", "--grep",
                                                "available PCIe bandwidth"], journal
        answers["journalctl"] = (1, "-- No entries --\n", "")
        quiet = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}))
        assert "pcie" not in quiet["checks"][0], quiet["checks"][0]
        del tools["journalctl"]
        from_dmesg = run_module(traffic_window.main, dict(args, state="close", before=opened["counters"], contract={}))
        assert from_dmesg["checks"][0]["pcie"]["kernel"]["limited_at"] == "0000:00:00.0"


def test_a_sampler_an_earlier_run_left_is_stopped_and_no_run_reads_another_s_file(tmp_path):
    """A validation that failed between its window's open and close left its PCIe sampler running (up to
    capture_seconds) on the work dir's one result file, which the next run's 6 s window then read, with the earlier
    run's samples. The next open stops it (by the pid file it wrote and its command line) and removes its files;
    each window's files carry its own id, and its close reads only those."""
    work = tmp_path / "work"
    root = tmp_path / "root"
    (root / "sys" / "class" / "net" / "lo" / "statistics").mkdir(parents=True)
    for name in ("tx_bytes", "rx_bytes"):
        (root / "sys" / "class" / "net" / "lo" / "statistics" / name).write_text("0\n")
    args = dict(ports=[dict(netdev="lo")], work_dir=str(work), root=str(root), capture_seconds=600)
    first = run_module(traffic_window.main, dict(args, state="open"))
    assert first.get("failed") is not True, first
    pid_file = work / ("pcie-sample.%s.json.pid" % first["window_id"])
    deadline = time.monotonic() + 20
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    earlier = int(pid_file.read_text())
    assert os.path.exists("/proc/%d" % earlier), "the first window's sampler runs"
    # The first run fails here: no close. The next one opens its own window.
    second = run_module(traffic_window.main, dict(args, state="open"))
    try:
        assert second["stopped_earlier"] == [earlier] and second["window_id"] != first["window_id"]
        assert not window._alive(earlier), "stopped (ended, or a zombie this test process has not reaped)"
        assert not [name for name in os.listdir(str(work)) if first["window_id"] in name]
        closed = run_module(traffic_window.main, dict(args, state="close", before=second["counters"], contract={},
                                                      capture_wait=20, window_id=second["window_id"]))
        assert closed.get("failed") is not True, closed
        assert (work / ("pcie-sample.%s.json" % second["window_id"])).exists()
    finally:
        for name in os.listdir(str(work)):
            if name.endswith(".pid"):
                try:
                    os.kill(int((work / name).read_text()), 15)
                except (OSError, ValueError):
                    pass
    # A close without its window's id reads nothing of another's: refused.
    refused = run_module(traffic_window.main, dict(args, state="close", before=[], contract={}))
    assert refused["failed"] and "window_id must be the window_id its open returned" in refused["msg"]
