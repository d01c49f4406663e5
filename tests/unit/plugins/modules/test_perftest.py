# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.perftest driven through main() with real processes: a stand-in tool that prints captured
perftest output, hangs, or fails the way the real tool does, started through the module's own setsid/timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate import perftest as pt
from ansible_collections.roce.fabric.plugins.module_utils.validate import process
from ansible_collections.roce.fabric.plugins.modules import perftest
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "perftest")

STAND_IN = r'''#!{python}
import os, sys, time
mode = os.environ.get("FAKE_MODE", "ok")
client = sys.argv[-1] == "127.0.0.1"
fixture = "".join(line for line in open({fixture!r}) if not line.startswith("%%"))
# As a real server, it reports only after its client ran (the client leaves a mark beside the stand-in), so a loaded
# machine cannot see it end before the module saw it listen.
mark = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "client-ran")
if client:
    open(mark, "w").close()
if not client:
    if mode == "port":
        print(" Couldn't listen to port 18515"); sys.exit(1)
    if mode == "buffered":
        time.sleep(5); print("* Waiting for client to connect... *"); sys.exit(0)
    if mode == "met_at_once":
        # Its client was already trying: the exchange and the test are over before the module looks.
        print("* Waiting for client to connect... *"); print(fixture, end=""); sys.exit(0)
    print("* Waiting for client to connect... *", flush=True)
    if mode == "hang":
        time.sleep(1000)
    waited = 0
    while not os.path.exists(mark) and waited < 200:
        time.sleep(0.1); waited += 1
    print(fixture, end=""); sys.exit(0)
if mode == "hang":
    time.sleep(1000)
if mode == "unreachable":
    print(" Couldn't connect to 127.0.0.1:18515"); sys.exit(1)
if mode in ("cm_once", "cm_always"):
    # perftest's RDMA-CM error handler, as the corpus has it (write_bw_rdma_cm_rejected_client.txt): the first try
    # fails, or every try.
    tries = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "tries")
    count = int(open(tries).read()) if os.path.exists(tries) else 0
    open(tries, "w").write(str(count + 1))
    if mode == "cm_always" or count == 0:
        sys.stderr.write("".join(line for line in open({rejected!r}) if not line.startswith("%%"))); sys.exit(1)
if mode == "truncated":
    print(fixture.split("#bytes")[0] + " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"); sys.exit(1)
print(fixture, end="")
'''


@pytest.fixture
def tool(tmp_path):
    path = tmp_path / "ib_write_bw"
    path.write_text(STAND_IN.format(python=sys.executable, fixture=os.path.join(FIXTURES, "write_bw_mlx5_gbits_100g.txt"),
                                    rejected=os.path.join(FIXTURES, "write_bw_rdma_cm_rejected_client.txt")))
    path.chmod(0o755)
    return str(path)


def args(tool, tmp_path, **extra):
    base = dict(tool="ib_write_bw", port=28515, executable=tool, run_dir=str(tmp_path / "run"), device="mlx5_0",
                size=65536, duration=5, fail_on_error=False, timeout=10, start_timeout=5)
    base.update(extra)
    return base


def test_server_client_collect(tool, tmp_path):
    started = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28601))
    assert started["passed"] is True and started["changed"] is False
    assert "listening on port 28601" in started["msg"]
    assert started["command"] == "%s -d mlx5_0 -i 1 -p 28601 -R --report_gbits -D 5 -s 65536" % tool
    client = run_module(perftest.main, args(tool, tmp_path, mode="client", port=28601, server="127.0.0.1", min_bw_gbps=90))
    assert client["passed"] is True, client
    assert client["summary"] == dict(bytes=65536, value=92.40, unit="Gb/s")
    assert client["command"].endswith("-s 65536 127.0.0.1")
    assert client["rc"] == 0
    collected = run_module(perftest.main, args(tool, tmp_path, mode="collect", port=28601))
    assert collected["passed"] is True, collected
    assert collected["summary"]["value"] == 92.40
    assert collected["stopped"] == []
    assert os.listdir(str(tmp_path / "run")) == []


def test_threshold(tool, tmp_path):
    client = run_module(perftest.main, args(tool, tmp_path, mode="client", server="127.0.0.1", min_bw_gbps=95))
    assert client["passed"] is False
    assert client["cause"] == "below_threshold"
    assert "92.400 Gb/s at 65536 bytes is below the threshold 95.000" in client["msg"]


def test_fail_on_error_fails_the_task(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "unreachable")
    result = run_module(perftest.main, args(tool, tmp_path, mode="client", server="127.0.0.1", fail_on_error=True))
    assert result["failed"] is True
    assert result["cause"] == "unreachable"


def test_server_port_in_use_reported_by_tool(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "port")
    result = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28641))
    assert result["passed"] is False
    assert result["cause"] == "port_in_use"
    assert "server exited at once" in result["msg"]


def test_a_server_whose_client_met_it_as_it_started_is_collected_not_failed(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "met_at_once")
    started = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28645))
    assert started["passed"] is True and "ran its test as it started" in started["msg"], started
    collected = run_module(perftest.main, args(tool, tmp_path, mode="collect", port=28645))
    assert collected["passed"] is True and collected["summary"]["value"] == 92.40, collected
    assert os.listdir(str(tmp_path / "run")) == []


def test_stray_server_blocks_port_then_cleanup_stops_it(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    stray = subprocess.Popen([tool, "-p", "28631"], stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(0.3)
        blocked = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28631))
        assert blocked["passed"] is False and blocked["cause"] == "port_in_use"
        assert "pid %d" % stray.pid in blocked["msg"]
        check = run_module(perftest.main, dict(mode="cleanup", port=28630, port_last=28632), check_mode=True, diff=True)
        assert check["changed"] is True and stray.poll() is None
        assert "-p 28631" in check["diff"][0]["before"] and check["commands"][0].startswith("stop process group")
        cleaned = run_module(perftest.main, dict(mode="cleanup", port=28630, port_last=28632))
        assert [s["pid"] for s in cleaned["stopped"]] == [stray.pid]
        assert stray.wait(timeout=5) is not None
        again = run_module(perftest.main, dict(mode="cleanup", port=28630, port_last=28632))
        assert again["changed"] is False
    finally:
        if stray.poll() is None:
            stray.kill()


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root (unshare -n)")
def test_a_tool_in_another_network_namespace_is_not_a_stray_of_this_host(tool, tmp_path, monkeypatch):
    # A pod's or another lab host's ib_write_bw on the same port number holds no port of this host's stack: neither
    # refused as in use nor stopped by the cleanup.
    monkeypatch.setenv("FAKE_MODE", "hang")
    other = subprocess.Popen(["unshare", "-n", tool, "-p", "28641"], stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(0.5)
        assert other.poll() is None
        assert process.stray_processes(28641, 28641) == []
        cleaned = run_module(perftest.main, dict(mode="cleanup", port=28641))
        assert cleaned["changed"] is False and other.poll() is None
        mine = subprocess.Popen([tool, "-p", "28641"], stdout=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(0.3)
            assert [s["pid"] for s in process.stray_processes(28641, 28641)] == [mine.pid]
        finally:
            mine.kill()
            mine.wait()
    finally:
        other.kill()
        other.wait()


def test_hung_client_times_out(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    began = time.time()
    result = run_module(perftest.main, args(tool, tmp_path, mode="client", port=28611, server="127.0.0.1", timeout=2))
    assert time.time() - began < 15
    assert result["passed"] is False and result["cause"] == "timeout"
    assert result["rc"] == 124


def test_hung_server_is_stopped_at_collect(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    started = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28621, timeout=2))
    assert started["passed"] is True
    pid = started["pid"]
    collected = run_module(perftest.main, args(tool, tmp_path, mode="collect", port=28621, timeout=2))
    assert collected["passed"] is False and collected["cause"] == "timeout"
    assert collected["stopped"][0]["pid"] == pid
    assert process.alive(pid) is False
    assert process.session_members(pid) == []


def test_truncated_output_is_a_parse_error(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "truncated")
    result = run_module(perftest.main, args(tool, tmp_path, mode="client", server="127.0.0.1"))
    assert result["passed"] is False
    assert result["cause"] == "parse_error"
    assert "truncated" in result["msg"]


def test_check_mode_runs_nothing(tool, tmp_path):
    result = run_module(perftest.main, args(tool, tmp_path, mode="server"), check_mode=True)
    assert result["skipped"] is True and result["changed"] is False
    assert not os.path.exists(str(tmp_path / "run"))


def test_missing_tool(tmp_path):
    result = run_module(perftest.main, dict(tool="ib_read_bw", mode="client", port=1, server="127.0.0.1",
                                            executable=None, fail_on_error=False, run_dir=str(tmp_path)))
    if result["cause"] != "tool_missing":
        pytest.skip("ib_read_bw is installed on this machine")
    assert "perftest" in result["msg"]


def test_collect_without_server(tool, tmp_path):
    result = run_module(perftest.main, args(tool, tmp_path, mode="collect"))
    assert result["passed"] is False and "no server was started" in result["msg"]


@pytest.mark.parametrize("bad, message", [
    (dict(port=0), "port must be 1-65535"),
    (dict(timeout=0), "timeout must be at least 1"),
    (dict(size=-1), "size must be a positive number"),
    (dict(tos=256), "tos must be 0-255"),
    (dict(run_dir="relative/run"), "run_dir must be an absolute path"),
    (dict(run_dir="/"), "run_dir must be an absolute path"),
    (dict(run_dir="/var/tmp/../etc"), "run_dir must be an absolute path"),
])
def test_bad_input(tool, tmp_path, bad, message):
    result = run_module(perftest.main, args(tool, tmp_path, mode="server", **bad))
    assert result["failed"] is True and message in result["msg"]
    assert not os.path.exists(str(tmp_path / "run"))


def test_run_dir_planted_as_a_symlink_is_refused_and_nothing_is_written(tool, tmp_path):
    """Another user made /var/tmp/roce-fabric-perftest a link to a folder root must not write into."""
    target = tmp_path / "victim"
    target.mkdir()
    os.symlink(str(target), str(tmp_path / "run"))
    for mode in ("server", "collect"):
        result = run_module(perftest.main, args(tool, tmp_path, mode=mode, port=28655))
        assert result["passed"] is False and result["cause"] == "unsafe_run_dir", result
        assert "is a symbolic link (to %s)" % target in result["msg"]
    assert os.listdir(str(target)) == []


def test_run_dir_others_may_write_or_own_is_refused(tool, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    run.chmod(0o1777)
    result = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28656))
    assert result["cause"] == "unsafe_run_dir" and "group or others may write to it (mode 1777)" in result["msg"]
    assert os.listdir(str(run)) == []
    if os.geteuid() == 0:
        run.chmod(0o700)
        os.chown(str(run), 65534, 65534)
        result = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28656))
        assert result["cause"] == "unsafe_run_dir" and "owned by" in result["msg"] and "uid 65534" in result["msg"]
        assert os.listdir(str(run)) == []


def test_collect_leaves_alone_a_pid_that_is_not_the_server(tool, tmp_path):
    """A record naming a pid that is not (or no longer) the tool's server: nothing is signalled."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        (run / "28657.json").write_text(json.dumps(dict(pid=bystander.pid, command="ib_write_bw", tool="ib_write_bw")))
        result = run_module(perftest.main, args(tool, tmp_path, mode="collect", port=28657, timeout=1))
        assert result["passed"] is False and "no longer runs ib_write_bw; it was left alone" in result["msg"]
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_collect_reads_a_finished_server_whose_pid_still_exists(tool, tmp_path):
    """The wrapper wrote the tool's exit status, and its pid still exists while its shell ends (or was reused): the
    result is read from the files, and the pid is neither judged nor signalled."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    fixture = "".join(line for line in open(os.path.join(FIXTURES, "write_bw_mlx5_gbits_100g.txt")) if not line.startswith("%%"))
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        (run / "28658.json").write_text(json.dumps(dict(pid=bystander.pid, command="ib_write_bw", tool="ib_write_bw")))
        (run / "28658.out").write_text(fixture)
        (run / "28658.out.rc").write_text("0\n")
        for path in run.iterdir():
            path.chmod(0o600)
        result = run_module(perftest.main, args(tool, tmp_path, mode="collect", port=28658, timeout=1))
        assert result["passed"] is True, result
        assert result["summary"]["value"] == 92.40 and result["stopped"] == []
        assert bystander.poll() is None
        assert os.listdir(str(run)) == []
    finally:
        bystander.kill()
        bystander.wait()


def test_client_needs_server(tool, tmp_path):
    result = run_module(perftest.main, args(tool, tmp_path, mode="client"))
    assert result["failed"] is True and "server" in result["msg"]


def test_rping_argv_and_latency_argv():
    params = dict(tool="rping", port=7174, iterations=10, size=None, server="10.0.0.1", extra_args=[])
    assert pt.tool_argv(params, "rping", "client") == ["rping", "-c", "-v", "-p", "7174", "-C", "10", "-a", "10.0.0.1"]
    params = dict(tool="ib_send_lat", port=18600, device="rxe0", ib_port=1, rdma_cm=False, gid_index=1, qps=None,
                  duration=None, all_sizes=False, size=2, iterations=1000, extra_args=["-F"], server="10.0.0.1")
    assert pt.tool_argv(params, "ib_send_lat", "client") == [
        "ib_send_lat", "-d", "rxe0", "-i", "1", "-p", "18600", "-x", "1", "-s", "2", "-n", "1000", "-F", "10.0.0.1"]


def test_tos_rides_rdma_cm_or_the_grh_traffic_class():
    base = dict(tool="ib_write_bw", port=18516, device="rxe0", ib_port=1, gid_index=1, qps=None, duration=3,
                all_sizes=False, size=65536, iterations=None, extra_args=[], server="10.0.0.1")
    assert pt.tool_argv(dict(base, rdma_cm=True, tos=106), "ib_write_bw", "client") == [
        "ib_write_bw", "-d", "rxe0", "-i", "1", "-p", "18516", "-R", "-T", "106", "--report_gbits", "-D", "3", "-s", "65536",
        "10.0.0.1"]
    assert pt.tool_argv(dict(base, rdma_cm=False, tos=106), "ib_write_bw", "server")[7:10] == ["-x", "1", "--tclass=106"]
    assert "-T" not in pt.tool_argv(dict(base, rdma_cm=True, tos=None), "ib_write_bw", "client")


def test_run_dir_under_a_folder_another_user_controls_is_refused(tool, tmp_path):
    """The run_dir itself is private, but the folder above it is another user's (or open without the sticky
    bit): that user could rename it away and put a link in its place, so it is refused too."""
    parent = tmp_path / "shared"
    (parent / "run").mkdir(parents=True, mode=0o700)
    parent.chmod(0o777)
    result = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28658, run_dir=str(parent / "run")))
    assert result["cause"] == "unsafe_run_dir" and "may be written by group or others (mode 0777) and has no sticky bit" in result["msg"]
    parent.chmod(0o1777)  # /var/tmp's mode: others may write, the sticky bit keeps them from renaming ours
    result = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28658, run_dir=str(parent / "run")))
    assert result["passed"] is True, result
    run_module(perftest.main, args(tool, tmp_path, mode="cleanup", port=28658))
    if os.geteuid() == 0:
        parent.chmod(0o755)
        os.chown(str(parent), 65534, 65534)
        result = run_module(perftest.main, args(tool, tmp_path, mode="server", port=28658, run_dir=str(parent / "run")))
        assert result["cause"] == "unsafe_run_dir" and "is owned by nobody (uid 65534), who could replace" in result["msg"]


# `rdma -j resource show cm_id` as iproute2 prints it (fixtures/rdma_cm/res_cm_id_listen_rxe.json, captured on the
# lab VM), with the pid and port of the stand-in server found in /proc; FAKE_CM_PID=other lists another pid.
FAKE_RDMA = r'''#!{python}
import json, os, sys
assert sys.argv[1:] == ["-j", "resource", "show", "cm_id"], sys.argv
if os.environ.get("FAKE_CM") == "error":
    sys.stderr.write("Failed to open NETLINK_RDMA socket\n"); sys.exit(1)
sample = json.loads("".join(line for line in open({sample!r}) if not line.startswith("%%")))
rows = []
for name in os.listdir("/proc"):
    try:
        argv = open("/proc/%s/cmdline" % name, "rb").read().split(b"\0")
    except (IOError, OSError):
        continue
    # The stand-in is a script: its interpreter is argv[0].
    if name.isdigit() and any(os.path.basename(a.decode()) == "ib_write_bw" for a in argv[:2]) and b"-p" in argv:
        pid = int(name) + (1 if os.environ.get("FAKE_CM") == "other" else 0)
        port = argv[argv.index(b"-p") + 1].decode()
        rows.append(dict(sample[1], pid=pid, **{{"src-addr": "0.0.0.0:" + port}}))
print(json.dumps(rows))
'''


@pytest.fixture
def buffered(tool, tmp_path, monkeypatch):
    """The stand-in server with its banner held back, as real perftest's is while its output goes to a file, and a
    fake rdma tool first on PATH."""
    monkeypatch.setenv("FAKE_MODE", "buffered")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "rdma"
    sample = os.path.join(FIXTURES, "..", "rdma_cm", "res_cm_id_listen_rxe.json")
    fake.write_text(FAKE_RDMA.format(python=sys.executable, sample=sample))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    return tool


def start_buffered(tool, tmp_path, port):
    began = time.time()
    started = run_module(perftest.main, args(tool, tmp_path, mode="server", port=port, start_timeout=4, timeout=10))
    took = time.time() - began
    run_module(perftest.main, args(tool, tmp_path, mode="collect", port=port, timeout=1))
    return started, took


def test_server_listening_is_read_from_its_rdma_cm_id(buffered, tmp_path):
    """Real perftest's banner stays in stdio's buffer while its output goes to a file: the module used to wait its
    whole start_timeout for every server. Its RDMA-CM id in the LISTEN state answers at once."""
    started, took = start_buffered(buffered, tmp_path, 28651)
    assert started["passed"] is True and "listening on port 28651" in started["msg"], started
    assert took < 3, took


@pytest.mark.parametrize("fake_cm", ["other", "error"])
def test_server_listening_needs_its_own_cm_id_or_falls_back_to_the_timeout(buffered, tmp_path, monkeypatch, fake_cm):
    """A listening id of another process does not count; where the rdma tool cannot list cm_ids, the server is
    returned as running once start_timeout has passed, as before."""
    monkeypatch.setenv("FAKE_CM", fake_cm)
    started, took = start_buffered(buffered, tmp_path, 28652 if fake_cm == "other" else 28653)
    assert started["passed"] is True and "no listen banner within 4s" in started["msg"], started
    assert took >= 4, took


@pytest.mark.parametrize("name", ["res_cm_id_listen_rxe.json", "res_cm_id_connect_rxe.json", "res_cm_id_none_rxe.json"])
def test_cm_listeners_parser(name):
    from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
    expect = corpus.meta("rdma_cm", name)["expect"].split("=", 1)[1]
    wanted = set(tuple(int(x) for x in item.split(":")) for item in expect.split(",") if item)
    assert process.parse_cm_listeners(corpus.read("rdma_cm", name)) == wanted
    assert process.parse_cm_listeners("Failed to open NETLINK_RDMA socket") is None
    assert process.parse_cm_listeners('{"error": 1}') is None


@pytest.mark.parametrize("mode, passed", [("cm_once", True), ("cm_always", False)])
def test_a_connection_setup_that_failed_is_tried_once_more(tool, tmp_path, monkeypatch, mode, passed):
    """perftest's "RDMA CM event error" (a CM exchange that timed out on a loaded host, or a fabric that refuses it):
    one more try, the first one kept in the record; a second failure is the verdict."""
    monkeypatch.setenv("FAKE_MODE", mode)
    monkeypatch.setattr("ansible_collections.roce.fabric.plugins.module_utils.validate.perftest_session.CM_RETRY_AFTER", 0)
    result = run_module(perftest.main, args(tool, tmp_path, mode="client", server="127.0.0.1"))
    assert result["passed"] is passed, result
    assert result["retried"]["rc"] == 1 and "Event: RDMA_CM_EVENT_REJECTED; error: -111." in result["retried"]["output"]
    with open(os.path.join(os.path.dirname(tool), "tries")) as handle:
        assert handle.read() == "2"
    if not passed:
        assert result["cause"] == "unreachable" and "RDMA_CM_EVENT_REJECTED" in result["msg"], result
