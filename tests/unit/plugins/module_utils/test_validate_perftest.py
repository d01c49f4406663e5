# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest and rping parser tests on captured output (fixtures/perftest, sources in fixtures/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate import perftest as pt
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "perftest")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


def test_write_bw_gbits_100g_with_cpu_frequency_warning():
    parsed = pt.parse_perftest(fixture("write_bw_mlx5_gbits_100g.txt"))
    assert parsed["kind"] == "bw"
    assert parsed["unit"] == "Gb/sec"
    assert parsed["settings"]["device"] == "mlx5_0"
    assert parsed["settings"]["gid_index"] == 3
    assert parsed["settings"]["mtu"] == 4096
    assert parsed["settings"]["link_type"] == "Ethernet"
    assert parsed["settings"]["connection"] == "RC"
    assert parsed["settings"]["test"] == "RDMA_Write BW"
    assert parsed["rows"] == [dict(bytes=65536, iterations=5000, bw_peak=92.42, bw_average=92.40, msg_rate=0.17623,
                                   bw_average_gbps=92.40, bw_peak_gbps=92.42)]
    assert parsed["warnings"][0].startswith("Conflicting CPU frequency values detected")
    assert pt.summarize(parsed) == dict(bytes=65536, value=92.40, unit="Gb/s")


def test_write_bw_softroce_tab_separated_settings():
    parsed = pt.parse_perftest(fixture("write_bw_rxe_softroce_client.txt"))
    assert parsed["settings"]["device"] == "rxe0"
    assert parsed["settings"]["gid_index"] == 1
    assert parsed["settings"]["rdma_cm"] == "ON"
    assert parsed["rows"][0]["bw_average_gbps"] == pytest.approx(0.078174)
    assert parsed["rows"][0]["iterations"] == 448


def test_read_bw_mbsec_converted_to_gbits():
    parsed = pt.parse_perftest(fixture("read_bw_rxe_mbsec_client.txt"))
    assert parsed["unit"] == "MB/sec"
    assert [r["bytes"] for r in parsed["rows"]] == [65536]
    last = parsed["rows"][-1]
    assert last["bw_average"] == 2.93
    assert last["bw_average_gbps"] == pytest.approx(2.93 * 1048576 * 8 / 1e9, abs=1e-6)
    assert parsed["settings"]["outstanding_reads"] == "128"
    assert parsed["settings"]["rdma_cm"] == "ON" and parsed["settings"]["device"] == "rxe0"
    assert pt.summarize(parsed)["bytes"] == 65536


def test_send_lat_table():
    parsed = pt.parse_perftest(fixture("send_lat_rxe_client.txt"))
    assert parsed["kind"] == "lat"
    row = parsed["rows"][0]
    assert row["bytes"] == 2 and row["iterations"] == 200
    assert row["t_min"] == 271.77 and row["t_max"] == 3033.92 and row["t_typical"] == 399.00
    assert row["t_avg"] == 592.35 and row["t_stdev"] == 491.61 and row["p99"] == 3012.18 and row["p99_9"] == 3033.92
    assert pt.summarize(parsed) == dict(bytes=2, value=592.35, unit="usec")


@pytest.mark.parametrize("name, cause", [
    ("write_bw_port_in_use_server.txt", "port_in_use"),
    ("write_bw_unreachable_client.txt", "unreachable"),
    # An RDMA-CM client whose server is not listening yet: a launched slot's client tries again on it.
    ("write_bw_rdma_cm_no_listener_rxe_client.txt", "unreachable"),
])
def test_error_outputs_name_their_cause(name, cause):
    with pytest.raises(pt.PerftestParseError, match="^%s: " % cause):
        pt.parse_perftest(fixture(name))
    assert pt.classify_error(fixture(name))[0] == cause


def test_truncated_table_is_a_parse_error():
    with pytest.raises(pt.PerftestParseError, match="truncated"):
        pt.parse_perftest(fixture("write_bw_truncated.txt"))


def test_row_that_does_not_fit_the_header():
    text = fixture("write_bw_mlx5_gbits_100g.txt").replace("0.176230", "")
    with pytest.raises(pt.PerftestParseError, match="4 fields for 5 columns"):
        pt.parse_perftest(text)


def test_garbage_and_empty_output():
    with pytest.raises(pt.PerftestParseError, match="no results table"):
        pt.parse_perftest("hello\nworld\n")
    with pytest.raises(pt.PerftestParseError, match="no results table"):
        pt.parse_perftest("")


def test_unknown_unit_refused():
    text = fixture("write_bw_mlx5_gbits_100g.txt").replace("[Gb/sec]", "[furlongs/sec]")
    with pytest.raises(pt.PerftestParseError, match="unknown bandwidth unit"):
        pt.parse_perftest(text)


def test_no_device_classified():
    assert pt.classify_error(" IB device mlx5_9 not found\n Unable to find the Infiniband/RoCE device\n")[0] == "no_device"
    assert pt.classify_error("Conflicting CPU frequency values detected: 1 != 2. CPU Frequency is not max.\n") == (None, None)


def rping(name):
    return corpus.read("rping", name)


def test_rping_server_lines_count():
    assert pt.parse_rping(rping("rping_server_3.txt"), rc=0, expected=3)["ok"] is True


def test_rping_success_and_count():
    assert pt.parse_rping(rping("rping_client_3.txt"), rc=0, expected=3) == dict(pings=3, errors=[], cause=None, ok=True)
    result = pt.parse_rping(rping("rping_client_3.txt"), rc=0, expected=10)
    assert result["ok"] is False and result["cause"] == "incomplete"


def test_rping_errors():
    result = pt.parse_rping(rping("rping_unreachable.txt"), rc=255)
    assert result["ok"] is False
    assert result["cause"] == "unreachable"
    result = pt.parse_rping("rdma_bind_addr: Address already in use\n", rc=255)
    assert result["cause"] == "port_in_use"
    assert pt.parse_rping("", rc=1)["cause"] == "tool_error"


def test_link_rate_and_threshold():
    assert pt.parse_link_rate("100 Gb/sec (4X EDR)") == 100.0
    assert pt.parse_link_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert pt.parse_link_rate("garbage") is None
    assert pt.threshold_gbps(100, 0.9) == 90.0
    assert pt.threshold_gbps(None, 0.9) is None


def test_a_tcp_listener_counts_only_when_the_servers_session_holds_it():
    """Hardening (issue 37, 15): perftest's TCP "listening" check accepted any socket on the port, so another
    program on it was taken for the server this run started. It is tied to the session's sockets now (as the
    RDMA-CM check is to its pids). A real socket on loopback, read back through this host's /proc."""
    import socket
    import subprocess
    import sys
    from ansible_collections.roce.fabric.plugins.module_utils.validate.process import tcp_listening
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert tcp_listening(port) is True
        assert tcp_listening(port, [os.getpid()]) is True
        assert tcp_listening(port, [other.pid]) is False, "a process without the socket is not the server"
    finally:
        other.kill()
        other.wait()
        server.close()
    assert tcp_listening(port) is False


def test_a_peak_perftest_did_not_measure_is_not_reported_never_zero():
    """With a duration (-D, the role's default) perftest turns its BW peak off and prints 0.00 (the lab VM's real run:
    ``BW peak 0.000000``); the report stored 0.0 and plotted a point at zero. Now the row's peak is None and the
    result says why. A run of iterations keeps its measured peak."""
    params = dict(tool="ib_write_bw", mode="client", duration=5, iterations=None, extra_args=[], min_bw_gbps=None,
                  max_lat_usec=None, timeout=60, server="10.78.0.1")
    passed, _cause, _msg, parsed, summary = pt.judge(params, corpus.read("perftest", "write_bw_rxe_softroce_client.txt"), 0)
    assert passed and summary["value"] == 0.078174
    assert parsed["rows"][0]["bw_peak"] is None and parsed["rows"][0]["bw_peak_gbps"] is None
    assert parsed["peak"] == "not reported: perftest measures no BW peak in a run of a duration (-D)"
    iterations = dict(params, duration=None, iterations=5000)
    _passed, _cause, _msg, parsed, _summary = pt.judge(iterations, corpus.read("perftest", "write_bw_mlx5_gbits_100g.txt"), 0)
    assert parsed["rows"][0]["bw_peak_gbps"] > 0 and "peak" not in parsed
    # perftest's other cases of no peak (perftest_parameters.c): -N, a send test's server, more than 20,000 iterations.
    for case, side in ((dict(iterations, extra_args=["-N"]), "client"), (dict(iterations, tool="ib_send_bw"), "server"),
                       (dict(iterations, iterations=50000), "client")):
        assert pt.peak_measured(case, side)[0] is False, case
    assert pt.peak_measured(dict(iterations, tool="ib_send_bw", extra_args=["-b"]), "server") == (True, None)
    assert pt.peak_measured(iterations, "client", " WARNING: BW peak won't be measured in this run.\n")[0] is False
