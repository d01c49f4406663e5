# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.nccl_test through main() with a stand-in all_reduce_perf that prints a captured run.

The stand-in prints nccl-tests 2.19.6's output with NCCL_DEBUG=INFO as captured on the 2x H200 machine
(fixtures/nccl/info_nccl_tests_2.19.6_p2p_h200x2.log); the module parses it, checks the log and returns the
report's records. A binary that prints nothing is a failed run that says why.
"""

from __future__ import annotations

import os
import socket
import stat
import threading

from ansible_collections.roce.fabric.plugins.modules import nccl_test
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

CAPTURE = "info_nccl_tests_2.19.6_p2p_h200x2.log"


def stand_in(folder, body):
    folder.mkdir(exist_ok=True)
    path = folder / "all_reduce_perf"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_a_captured_run_is_parsed_judged_and_recorded(tmp_path):
    (tmp_path / "out.txt").write_text(corpus.read("nccl", CAPTURE))
    folder = stand_in(tmp_path / "bin", "cat %s\n" % (tmp_path / "out.txt"))
    result = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2,
                                             collectives=["all_reduce"], min_bytes="1M", max_bytes="16M"))
    assert result["failed"] is False and result["passed"] is True and result["changed"] is False, result.get("msg")
    assert result["commands"] == [] and result["launcher"] == {"kind": "local", "hosts": [], "ranks": 2}
    run = result["runs"][0]
    assert run["command"].endswith("all_reduce_perf -b 1M -e 16M -f 4 -n 20 -g 2 -c 1")
    assert "NCCL_DEBUG=INFO" in run["command"]
    check = result["checks"][0]
    assert check["name"] == "nccl all_reduce" and check["status"] == "passed"
    assert check["msg"] == "avg busbw %.2f GB/s; transports %s" % (
        run["avg_busbw"], ",".join(run["log_check"]["transports"]))
    assert check["tables"] == [run["table"]]


def test_a_run_without_results_fails_and_says_why(tmp_path):
    folder = stand_in(tmp_path / "bin", "echo 'no GPU found' >&2\nexit 3\n")
    args = dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2, collectives=["all_reduce"])
    soft = run_module(nccl_test.main, dict(args, fail_on_error=False))
    assert soft["failed"] is False and soft["passed"] is False
    assert soft["checks"][0]["status"] == "failed" and "no results (rc 3)" in soft["checks"][0]["msg"]
    hard = run_module(nccl_test.main, args)
    assert hard["failed"] is True and "FAILED: no results (rc 3)" in hard["msg"]


def test_check_mode_runs_nothing_and_one_gpu_is_not_a_test(tmp_path):
    marker = tmp_path / "ran"
    folder = stand_in(tmp_path / "bin", "touch %s\n" % marker)
    checked = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2), check_mode=True)
    assert checked["skipped"] is True and not marker.exists()
    one = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=1, fail_on_error=False))
    assert one["passed"] is False and "need at least 2 GPUs" in one["msg"] and not marker.exists()
    assert not os.path.exists(str(marker))


def ras_server(answer):
    """A RAS endpoint on loopback speaking NCCL's client protocol as the GPU machine's NCCL 2.28.9 answered
    (tests/bench/gpu_ras_run.py): ``SERVER PROTOCOL 2``, ``OK`` to ``SET FORMAT json``, then ``answer`` (a status
    from the corpus) and the close. Returns its port and the commands it was sent."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    heard = []

    def serve():
        conn, _addr = listener.accept()
        with conn, conn.makefile("rwb") as stream:
            for line in stream:
                heard.append(line.decode().strip())
                if heard[-1].startswith("CLIENT PROTOCOL"):
                    stream.write(b"SERVER PROTOCOL 2\n")
                elif heard[-1].startswith("SET FORMAT"):
                    stream.write(b"OK\n")
                else:
                    stream.write(answer.encode())
                    break
                stream.flush()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], heard


# The job's NCCL serving RAS, as the stand-in benchmark's own process: it listens on the RAS port, answers one client
# as the GPU machine's NCCL 2.28.9 did (SERVER PROTOCOL 2, OK to SET FORMAT json, then the status), and hangs on.
RAS_JOB = """import socket, sys, time
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(1)
status = open(sys.argv[2], "rb").read()
heard = open(sys.argv[3], "w")
conn, _addr = listener.accept()
stream = conn.makefile("rwb")
for line in stream:
    heard.write(line.decode().strip() + "\\n")
    heard.flush()
    if line.startswith(b"CLIENT PROTOCOL"):
        stream.write(b"SERVER PROTOCOL 2\\n")
    elif line.startswith(b"SET FORMAT"):
        stream.write(b"OK\\n")
    else:
        stream.write(status)
        stream.flush()
        break
    stream.flush()
conn.close()
time.sleep(60)
"""


def free_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def ras_job(tmp_path, status):
    """A stand-in benchmark that is the job's NCCL serving RAS with ``status``: (folder, port, what it heard)."""
    port = free_port()
    (tmp_path / "ras_job.py").write_text(RAS_JOB)
    (tmp_path / "status.json").write_text(status)
    heard = tmp_path / "heard.txt"
    command = "exec python3 %s %d %s %s\n" % (tmp_path / "ras_job.py", port, tmp_path / "status.json", heard)
    folder = stand_in(tmp_path / "bin", command)
    return folder, port, heard


def test_a_hung_collective_names_the_rank_ras_finds_missing(tmp_path):
    folder, port, heard = ras_job(tmp_path, corpus.read("nccl", "ras_status_2.29.1_missing_rank_doc.json"))
    args = dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2, collectives=["all_reduce"], timeout=2,
                fail_on_error=False, env={"NCCL_RAS_ADDR": "127.0.0.1:%d" % port})
    result = run_module(nccl_test.main, args)
    run = result["runs"][0]
    assert result["passed"] is False and heard.read_text().split("\n")[:3] == [
        "CLIENT PROTOCOL 2", "SET FORMAT json", "VERBOSE STATUS"], run.get("ras")
    assert run["ras"]["version"] == "2.29.1" and [m["rank"] for m in run["ras"]["missing"]] == [1]
    assert run["reasons"][0].startswith("timed out after 2s")
    assert ("ras_rank_missing: RAS: rank 1 (process 1524345 on 172.16.64.245, GPU 1) is missing from communicator "
            "0xae94423cfbb2ef4a of 2 ranks: unresponsive; the collective waits for it") in run["reasons"]
    # Without a RAS to ask (NCCL before 2.24, or none listening): the timeout alone, and why RAS said nothing.
    quiet_folder = stand_in(tmp_path / "quiet", "exec sleep 60\n")
    args.update(nccl_tests_dir=quiet_folder, env={"NCCL_RAS_ADDR": "127.0.0.1:%d" % free_port()})
    quiet = run_module(nccl_test.main, args)["runs"][0]
    assert "nothing listens on port" in quiet["ras"]["error"] and not any("ras_" in r for r in quiet["reasons"])


def impostor(answer, chunks=1):
    """A RAS port bound by a process that is not this run's (here: the test's own, which the module runs in): it
    answers ``answer`` ``chunks`` times. Returns its port and how many clients it heard from."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    heard = []

    def serve():
        listener.settimeout(30)
        try:
            conn, _addr = listener.accept()
        except OSError:
            return
        heard.append(1)
        with conn:
            try:
                for _chunk in range(chunks):
                    conn.sendall(answer)
            except OSError:
                pass
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], heard


def test_a_ras_port_another_process_bound_first_is_not_believed(tmp_path):
    """A local user who binds the RAS port before NCCL does would be asked, and believed: its status could name any
    rank as missing. The socket on the port must be held by a process this run started; this one is not."""
    status = corpus.read("nccl", "ras_status_2.29.1_missing_rank_doc.json").encode()
    port, heard = impostor(b"SERVER PROTOCOL 2\nOK\n" + status)
    folder = stand_in(tmp_path / "bin", "exec sleep 60\n")
    run = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2, timeout=2,
                                          collectives=["all_reduce"], fail_on_error=False,
                                          env={"NCCL_RAS_ADDR": "127.0.0.1:%d" % port}))["runs"][0]
    assert run["ras"]["error"] == ("RAS port %d is held by process %d, not by this run's NCCL processes: not asked"
                                   % (port, os.getpid())), run["ras"]
    assert heard == [] and "missing" not in run["ras"] and not any("ras_" in r for r in run["reasons"])


def test_every_ras_read_is_bounded():
    """A server that sends without a newline (300 MiB held 611 MiB resident before) or without end: the client
    stops at MAX_LINE or MAX_STATUS bytes with an error, within its deadline."""
    import time  # pylint: disable=import-outside-toplevel
    from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl_ras  # pylint: disable=import-outside-toplevel
    port, _heard = impostor(b"x" * (1 << 20), chunks=300)
    started = time.monotonic()
    try:
        nccl_ras.query(("127.0.0.1", port), timeout=10)
        raise AssertionError("a greeting without a newline was read")
    except nccl_ras.RasError as exc:
        assert "a line longer than %d bytes" % nccl_ras.MAX_LINE in str(exc)
    port, _heard = impostor(b"SERVER PROTOCOL 2\nOK\n" + b"{" * (1 << 20), chunks=300)
    try:
        nccl_ras.query(("127.0.0.1", port), timeout=10)
        raise AssertionError("a status without end was read")
    except nccl_ras.RasError as exc:
        assert "sent more than %d bytes" % nccl_ras.MAX_STATUS in str(exc)
    # A server that sends a byte now and then is cut at the deadline of the whole exchange, not of each read.
    slow = socket.socket()
    slow.bind(("127.0.0.1", 0))
    slow.listen(1)

    def drip():
        conn, _addr = slow.accept()
        with conn:
            for _byte in range(20):
                try:
                    conn.sendall(b"S")
                except OSError:
                    return
                time.sleep(0.5)
    threading.Thread(target=drip, daemon=True).start()
    try:
        nccl_ras.query(("127.0.0.1", slow.getsockname()[1]), timeout=2)
        raise AssertionError("a slow server held the client")
    except nccl_ras.RasError as exc:
        assert "no RAS answer" in str(exc)
    assert time.monotonic() - started < 8
    slow.close()
