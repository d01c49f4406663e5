# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests table and NCCL log checks on captured output (fixtures/nccl, sources in fixtures/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl as nc
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "nccl")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


CURRENT = "all_reduce_2.19.6_h200x2.txt"
OLDER = "all_reduce_2.11.0_h200x2_error_column.txt"


def test_current_layout_with_root_and_wrong():
    parsed = nc.parse_results(fixture(CURRENT))
    assert parsed["version"] == "2.19.6"
    assert parsed["collective"] == "all_reduce_perf"
    assert parsed["layout"] == "wrong"
    assert len(parsed["rows"]) == 13
    row = parsed["rows"][-1]
    assert row["size"] == 134217728 and row["count"] == 33554432
    assert row["type"] == "float" and row["redop"] == "sum" and row["root"] == -1
    assert row["out_of_place"] == dict(time_us=470.41, algbw=285.32, busbw=285.32, wrong=0)
    assert row["in_place"] == dict(time_us=468.19, algbw=286.67, busbw=286.67, wrong=0)
    assert parsed["oob_values"] == 0 and parsed["oob_ok"] is True
    assert parsed["avg_busbw"] == 61.7731
    assert parsed["max_busbw"] == 286.67
    assert nc.results_verdict(parsed) == (True, [])
    ok, reasons = nc.results_verdict(parsed, min_busbw=300)
    assert not ok and "below the threshold 300.000" in reasons[0]


def test_older_layout_without_root_and_with_error_column():
    parsed = nc.parse_results(fixture(OLDER))
    assert parsed["layout"] == "error"
    assert parsed["version"] is None
    assert [r["size"] for r in parsed["rows"]][:3] == [8, 32, 128] and len(parsed["rows"]) == 13
    row = parsed["rows"][-1]
    assert row["root"] is None
    assert row["out_of_place"] == dict(time_us=468.7, algbw=286.34, busbw=286.34, error=0.0)
    assert parsed["avg_busbw"] == 61.4834
    assert parsed["wrong_total"] == 0


def test_alltoall_of_the_older_layout_has_a_blank_redop_cell():
    parsed = nc.parse_results(fixture("alltoall_2.11.0_h200x2_blank_redop.txt"))
    assert [r["size"] for r in parsed["rows"]] == [1048576, 4194304, 16777216, 67108864]
    assert parsed["rows"][0]["redop"] is None and parsed["rows"][0]["type"] == "float"
    assert parsed["rows"][0]["in_place"]["error"] == 1.0
    assert parsed["avg_busbw"] == 128.935


def test_wrong_values_and_out_of_bounds_fail():
    parsed = nc.parse_results(fixture("all_reduce_wrong_values.txt"))
    assert parsed["wrong_total"] == 12
    assert parsed["oob_ok"] is False
    ok, reasons = nc.results_verdict(parsed)
    assert not ok
    assert "12 wrong values" in reasons[0]
    assert "12 out-of-bounds" in reasons[1]


def test_truncated_output():
    with pytest.raises(nc.NcclParseError, match="truncated.*after 1 rows"):
        nc.parse_results(fixture("all_reduce_truncated.txt"))


def test_malformed_row():
    with pytest.raises(nc.NcclParseError, match="row has 7 fields, the header has 13"):
        nc.parse_results(fixture("all_reduce_malformed_row.txt"))


def test_no_table_and_header_only():
    with pytest.raises(nc.NcclParseError, match="no nccl-tests results header"):
        nc.parse_results(fixture("torch_allreduce_h200x2_p2p_info.log"))
    lines = fixture(CURRENT).splitlines()
    header_only = "\n".join(lines[:[i for i, line in enumerate(lines) if "(B)" in line][0] + 1])
    with pytest.raises(nc.NcclParseError, match="no result rows"):
        nc.parse_results(header_only)


def test_failed_average_marker():
    text = fixture(CURRENT).replace("61.7731 ", "61.7731 FAILED")
    parsed = nc.parse_results(text)
    assert parsed["avg_status"] == "FAILED"
    assert not nc.results_verdict(parsed)[0]


def test_na_check_column():
    # nccl-tests prints N/A where it cannot check in-place alltoall.
    parsed = nc.parse_results(fixture("alltoall_2.19.6_h200x2.txt"))
    assert parsed["rows"][1]["in_place"]["wrong"] is None
    assert parsed["rows"][1]["out_of_place"]["wrong"] == 0 and parsed["rows"][1]["redop"] == "none"


@pytest.mark.parametrize("collective, n, factor", [
    ("all_reduce_perf", 2, 1.0), ("all_reduce", 8, 1.75), ("alltoall", 4, 0.75), ("all_gather", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce_scatter_perf_mpi", 16, 15 / 16.0),
])
def test_bus_factor(collective, n, factor):
    assert nc.bus_factor(collective, n) == pytest.approx(factor)


def test_bus_factor_rejects_unknown():
    with pytest.raises(ValueError):
        nc.bus_factor("gossip", 2)


def test_log_single_node_p2p_passes_and_notes_missing_ib():
    result = nc.check_log(fixture("torch_allreduce_h200x2_p2p_info.log"))
    assert result["passed"] is True
    assert result["network"] == "Socket"
    assert result["version"] == "2.28.9+cuda13.0"
    assert result["transports"] == {"P2P/CUMEM": 48}
    assert result["socket_interfaces"] == ["[0]eth0:192.0.2.2<0>"]
    assert [f["code"] for f in result["findings"]] == ["no_ib_device"]
    assert result["findings"][0]["severity"] == "info"


def test_log_single_node_fails_when_rdma_required():
    result = nc.check_log(fixture("torch_allreduce_h200x2_p2p_info.log"), require_net="IB")
    assert result["passed"] is False
    assert {"no_ib_device", "network_not_ib"} <= set(f["code"] for f in result["findings"])


def test_log_ib_with_gdr_old_channel_layout():
    result = nc.check_log(fixture("info_ib_gdrdma_old_channel_layout_a100.log"), require_net="IB", require_gdr=True)
    assert result["passed"] is True, result["findings"]
    assert result["rdma"] is True
    assert result["gdr"] is True
    assert result["transports"]["NET/IB/2/GDRDMA"] == 5
    assert sum(result["transports"].values()) == 12


def test_log_roce_builtin_transport():
    result = nc.check_log(fixture("info_ib_roce_builtin_2.18_h800.log"), require_net="IB")
    assert result["passed"] is True, result["findings"]
    assert result["network"] == "IB"
    assert result["ib_devices"] == [dict(name="mlx5_4", port=1, link="RoCE")]


@pytest.mark.parametrize("name, network", [("info_ibext_ib_sharp_h100.log", "IBext"), ("info_ibext_v8_roce_3nodes.log", "IBext_v8")])
def test_log_rdma_through_a_net_plugin_is_rdma(name, network):
    # Before: "NCCL chose network none instead of IB/RoCE" on HPC-X's plugin (NGC containers).
    result = nc.check_log(fixture(name), require_net="IB")
    assert result["network"] == network
    assert result["rdma"] is True
    assert "network_not_ib" not in [f["code"] for f in result["findings"]]
    assert result["passed"] is True


def test_log_roce_through_plugin_without_gdr():
    result = nc.check_log(fixture("info_ibext_v8_roce_3nodes.log"), require_net="IB")
    assert result["gdr"] is False
    assert [f["code"] for f in result["findings"]] == ["gdr_missing"]
    assert result["ib_devices"] == [dict(name=n, port=1, link="RoCE") for n in ("mlx5_2", "mlx5_3", "mlx5_0", "mlx5_1")]
    strict = nc.check_log(fixture("info_ibext_v8_roce_3nodes.log"), require_net="IB", require_gdr=True)
    assert strict["passed"] is False


def test_log_socket_fallback_without_rdma_device():
    result = nc.check_log(fixture("info_socket_no_ib_device_aws.log"), require_net="IB")
    assert result["passed"] is False
    assert result["rdma"] is False
    assert result["socket_interfaces"][0].startswith("[0]ens3:")


def test_log_unknown_plugin_is_not_assumed_rdma():
    text = "host:1:1 [0] NCCL INFO Using network FastSock\n"
    result = nc.check_log(text, require_net="IB")
    assert result["network"] == "FastSock" and result["rdma"] is None
    assert "net_plugin_unknown" in [f["code"] for f in result["findings"]]


def test_log_ucx_srq_trap_has_fix():
    result = nc.check_log(fixture("ucx_srq_irdma_built.log"), require_net="IB")
    assert result["passed"] is False
    finding = [f for f in result["findings"] if f["code"] == "ucx_srq_unsupported"][0]
    assert "UCX_TLS" in finding["fix"]


def test_log_socket_channels_flagged():
    text = fixture("torch_allreduce_h200x2_p2p_info.log").replace("via P2P/CUMEM", "[send] via NET/Socket/0")
    result = nc.check_log(text)
    assert result["passed"] is False
    assert result["findings"][0]["code"] == "socket_fallback"
    assert "48 channels use NET/Socket" in result["findings"][0]["message"]


def test_empty_log():
    result = nc.check_log("")
    assert result["passed"] is False
    assert result["findings"][0]["code"] == "no_nccl_log"


def test_warn_lines_are_errors():
    result = nc.check_log("h:1:1 [0] NCCL INFO NCCL version 2.21.5\nh:1:1 [0] NCCL WARN NET/IB : Got completion with error 12\n")
    assert result["passed"] is False
    assert result["findings"][-1]["message"] == "NET/IB : Got completion with error 12"


def test_nccl_env():
    env = nc.nccl_env([dict(name="mlx5_0", port=1), dict(name="mlx5_1")], gid_index=3, socket_ifname="ens1f0np0",
                      gdr_level="PHB")
    assert env == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_SOCKET_IFNAME": "=ens1f0np0",
        "NCCL_NET_GDR_LEVEL": "PHB",
        "OMPI_MCA_coll_hcoll_enable": "0",
        "HCOLL_ENABLE_MCAST_ALL": "0",
    }
    assert nc.nccl_env([], disable_hcoll=False) == {"NCCL_IB_DISABLE": "1"}


def test_nccl_bench_h200_normal_path_tables_and_log():
    tables = nc.parse_all_results(fixture("nccl_bench_h200x2_p2p.txt"))
    assert [t["collective"] for t in tables] == ["all_reduce_perf_torch", "all_to_all_perf_torch"]
    all_reduce, all_to_all = tables
    assert [r["size"] for r in all_reduce["rows"]] == [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30]
    assert all_reduce["rows"][-1]["out_of_place"] == dict(time_us=None, algbw=None, busbw=None, wrong=None)
    assert all_reduce["rows"][-1]["in_place"]["busbw"] == 327.30
    assert all_reduce["avg_busbw"] == 212.182
    assert all_to_all["rows"][-1]["out_of_place"]["busbw"] == 332.11
    assert all_to_all["rows"][-1]["redop"] == "none"
    assert all(nc.results_verdict(t)[0] for t in tables)
    check = nc.check_log(fixture("nccl_bench_h200x2_p2p_info.log"))
    assert check["passed"] is True
    assert check["transports"] == {"P2P/CUMEM": 112}


def test_nccl_bench_h200_socket_fallback_flagged():
    tables = nc.parse_all_results(fixture("nccl_bench_h200x2_socket.txt"))
    assert tables[0]["avg_busbw"] == 3.04463
    assert tables[0]["max_busbw"] < 0.02 * nc.parse_all_results(fixture("nccl_bench_h200x2_p2p.txt"))[0]["max_busbw"]
    check = nc.check_log(fixture("nccl_bench_h200x2_socket_info.log"))
    assert check["passed"] is False
    assert check["transports"] == {"NET/Socket/0": 8, "NET/Socket/0/Shared": 8}
    assert check["findings"][0]["code"] == "socket_fallback"
    assert nc.check_log(fixture("nccl_bench_h200x2_socket_info.log"), require_net="IB")["passed"] is False


def test_a_run_through_mpirun_tag_output_is_read_as_the_ranks_printed_it():
    """Two ranks of nccl_bench through Open MPI 4.1.6's mpirun --tag-output on the GPU machine: every line of the
    tables and of NCCL's log carries "[1,<rank>]<stdout>:"; untagged, they read as a run without the launcher."""
    text = fixture("nccl_bench_h200x2_mpirun_tag_output.txt")
    assert all(line.startswith(("[1,0]<stdout>:", "[1,1]<stdout>:")) for line in text.splitlines()), text[:300]
    tables = nc.parse_all_results(text)
    assert [t["collective"] for t in tables] == ["all_reduce_perf_torch", "all_to_all_perf_torch"]
    assert [(r["rank"], r["host"], r["device"]) for r in tables[0]["ranks"]] == [(0, "vm", 0), (1, "vm", 1)]
    assert [r["size"] for r in tables[0]["rows"]] == [1 << 20, 1 << 22, 1 << 24]
    assert tables[0]["rows"][-1]["in_place"]["busbw"] == 191.61 and tables[0]["avg_busbw"] == 91.4723
    assert tables[1]["rows"][-1]["out_of_place"]["busbw"] == 111.23 and all(nc.results_verdict(t)[0] for t in tables)
    check = nc.check_log(text)
    assert check["passed"] is True and check["version"] == "2.28.9+cuda13.0", check["findings"]
    assert set(check["transports"]) == {"P2P/CUMEM"}, check["transports"]
    # Without untagging nothing of it reads: the prefix is what stood between the launcher's output and the parsers.
    assert nc.untag("[1,0]<stdout>:#  Rank  0 Group  0 Pid   1181 on         vm device  0 NVIDIA H200") == (
        "#  Rank  0 Group  0 Pid   1181 on         vm device  0 NVIDIA H200")
    assert nc.untag("[1,12]<stderr>:x\nplain line") == "x\nplain line"


def test_srun_s_task_labels_come_off_where_every_line_has_one():
    """Slurm 22.05.8's srun -l in the lab (12 tasks: ids right-aligned to two places; 2 tasks with standard error):
    the labels come off; a table whose tasks srun labelled reads as the table itself; unlabelled output keeps its
    numbers."""
    twelve = corpus.read("slurm", "srun_l_12_tasks_22.05.txt")
    assert sorted(nc.untag(twelve).splitlines(), key=lambda line: int(line.split()[1])) == [
        "task %d of 12 on %s" % (n, "gpu1" if n < 6 else "gpu2") for n in range(12)]
    assert nc.untag(corpus.read("slurm", "srun_l_2_tasks_stderr_22.05.txt")).splitlines() == [
        "task 0 of 2 on gpu1", "a line on stderr from task 0", "task 1 of 2 on gpu2", "a line on stderr from task 1"]
    # Task 0's table as srun -l labels a task's lines (the label of the 2-task sample).
    label = corpus.read("slurm", "srun_l_2_tasks_stderr_22.05.txt").splitlines()[0][:3]
    table = fixture("nccl_bench_h200x2_p2p.txt")
    labelled = "\n".join(label + line for line in table.splitlines()) + "\nsrun: job 7 queued and waiting for resources"
    assert nc.parse_all_results(labelled) == nc.parse_all_results(table)
    # A line without a label (output srun did not label): nothing is taken off.
    assert nc.untag(table + "\n0: one labelled line") == table + "\n0: one labelled line"


def test_parse_all_results_single_table_and_truncated_second():
    assert len(nc.parse_all_results(fixture(CURRENT))) == 1
    text = fixture("nccl_bench_h200x2_p2p.txt")
    cut = text[:text.index("# Out of bounds values", text.index("all_to_all_perf_torch"))]
    with pytest.raises(nc.NcclParseError, match="truncated"):
        nc.parse_all_results(cut)


def test_ranks_from_using_devices_lines_in_both_layouts():
    current = nc.parse_results(fixture(CURRENT))
    assert current["ranks"][0] == dict(rank=0, group=0, pid=1922, host="vm", device=0, detail="[0000:00:06] NVIDIA H200")
    older = nc.parse_results(fixture(OLDER))
    assert [(r["rank"], r["host"], r["device"]) for r in older["ranks"]] == [(0, "vm", 0), (1, "vm", 1)]
    assert older["ranks"][1]["detail"] == "[0x00] NVIDIA H200"


def test_mpirun_argv_binds_ranks_and_exports_environment():
    argv = nc.mpirun_argv("/usr/bin/mpirun", ["10.0.0.1", "10.0.0.2"], 8, ["/opt/nt/all_reduce_perf", "-g", "1"],
                          env={"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_DEBUG": "INFO"}, ifname="ens1f0np0",
                          ssh_key="/root/.ssh/id_ed25519_roce_mpi", as_root=True, extra_args=["--mca", "pml", "ob1"])
    assert argv == [
        "/usr/bin/mpirun", "--allow-run-as-root", "--mca", "coll_hcoll_enable", "0",
        "--mca", "oob_tcp_if_include", "ens1f0np0", "--mca", "btl_tcp_if_include", "ens1f0np0",
        "--mca", "plm_rsh_args", "-i /root/.ssh/id_ed25519_roce_mpi -o BatchMode=yes -o IdentitiesOnly=yes",
        "--mca", "pml", "ob1",
        "-x", "NCCL_DEBUG=INFO", "-x", "NCCL_IB_HCA==mlx5_0:1",
        "-np", "16", "-H", "10.0.0.1:8,10.0.0.2:8", "--map-by", "ppr:8:node", "--bind-to", "numa",
        "/opt/nt/all_reduce_perf", "-g", "1"]
    assert "StrictHostKeyChecking" not in " ".join(argv)


def test_mpirun_argv_pins_each_rank_to_its_gpus_numa_node():
    argv = nc.mpirun_argv("mpirun", ["a", "b"], 2, ["bench"], numa_nodes=[0, -1], numactl="/usr/bin/numactl",
                          env={"NCCL_IB_HCA": "=mlx5_0:1"})
    tail = argv[argv.index("--bind-to"):]
    # Open MPI applies -x to one application context: each context repeats it (the lab VMs showed the
    # second host's rank without the variable when it was given once).
    env = ["-x", "NCCL_IB_HCA==mlx5_0:1"]
    pin = ["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"]
    expected = (["--bind-to", "none"]
                + ["-np", "1", "-H", "a:2"] + env + pin + ["bench", ":"]
                + ["-np", "1", "-H", "a:2"] + env + ["bench", ":"]
                + ["-np", "1", "-H", "b:2"] + env + pin + ["bench", ":"]
                + ["-np", "1", "-H", "b:2"] + env + ["bench"])
    assert tail == expected
    assert "--allow-run-as-root" not in argv and "coll_hcoll_enable" in argv


@pytest.mark.parametrize("kwargs, message", [
    (dict(hosts=[]), "no hosts"),
    (dict(hosts=["a b"]), "malformed MPI host 'a b'"),
    (dict(hosts=["a;reboot"]), "malformed MPI host"),
    (dict(hosts=["a"], ranks_per_host=0), "at least 1"),
    (dict(hosts=["a"], env={"BAD NAME": "1"}), "malformed environment variable name"),
    (dict(hosts=["a"], ranks_per_host=2, numa_nodes=[0]), "1 NUMA nodes for 2 ranks"),
    (dict(hosts=["a"], ssh_key="/root/k -o ProxyCommand=touch%20/x"), "ssh_key must be an absolute path"),
    (dict(hosts=["a"], ssh_key="id_ed25519"), "ssh_key must be an absolute path"),
])
def test_mpirun_argv_rejects_bad_input(kwargs, message):
    args = dict(mpirun="mpirun", ranks_per_host=1, program=["x"])
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        nc.mpirun_argv(**args)


def test_mpi_failure_names_the_cause():
    text = ("Host key verification failed.\r\n--------------------------------------------------------------------------\n"
            "ORTE was unable to reliably start one or more daemons.\n")
    cause = nc.mpi_failure(text)
    assert cause.startswith("SSH refused a host whose key is not in known_hosts")
    assert "do not turn checking off" in cause and "could not start its daemon" in cause
    assert nc.mpi_failure("all fine") is None
    assert nc.mpi_failure("ssh: connect to host 10.9.9.9 port 22: No route to host") == (
        "a host cannot be reached over the network mpirun uses "
        "('ssh: connect to host 10.9.9.9 port 22: No route to host')")


def test_erdma_log_names_the_device_as_roce():
    """Alibaba's eRDMA in RoCE-compatible mode: NCCL's IB transport lists the device (named by its PCI address) as
    RoCE, and the check counts it as RDMA."""
    result = nc.check_log(corpus.read("nccl", "info_erdma_rocep_ack_doc.log"), require_net="IB")
    assert result["ib_devices"] == [dict(name="rocep26s0", port=1, link="RoCE")]
    assert result["rdma"] is True and result["passed"] is True


def _run(collective, table_text, log_text, min_busbw=None):
    """One run as nccl_test builds it, from captured output."""
    table = nc.parse_all_results(fixture(table_text))[0]
    passed, reasons = nc.results_verdict(table, min_busbw)
    check = nc.check_log(fixture(log_text), require_net="IB")
    reasons = list(reasons) + ["%s: %s" % (f["code"], f["message"]) for f in check["findings"] if f["severity"] == "error"]
    return dict(collective=collective, command="all_reduce_perf -b 1M", rc=0, table=table, avg_busbw=table["avg_busbw"],
                reasons=reasons, log_check=check, passed=not reasons)


def test_the_report_records_of_local_runs_say_bandwidth_transports_and_why_they_failed():
    """The records the report shows are built from the runs the module returns (the H200 captures)."""
    good = _run("all_reduce", "nccl_bench_h200x2_p2p.txt", "nccl_bench_h200x2_p2p_info.log")
    good["log_check"] = nc.check_log(fixture("nccl_bench_h200x2_p2p_info.log"))
    good["reasons"], good["passed"] = [], True
    socket = _run("all_reduce", "nccl_bench_h200x2_socket.txt", "nccl_bench_h200x2_socket_info.log")
    checks = nc.run_checks([good, socket], {"kind": "local", "hosts": [], "ranks": 2})
    assert checks[0] == {"name": "nccl all_reduce", "status": "passed", "command": "all_reduce_perf -b 1M",
                         "msg": "avg busbw 212.18 GB/s; transports P2P/CUMEM", "tables": [good["table"]]}
    assert checks[1]["status"] == "failed" and checks[1]["msg"].startswith(
        "avg busbw 3.04 GB/s; transports NET/Socket/0,NET/Socket/0/Shared; ")
    assert "socket_fallback" in checks[1]["msg"]


def test_the_report_records_of_an_mpi_run_name_the_hosts_its_ranks_ran_on():
    run = _run("all_reduce", CURRENT, "info_nccl_tests_2.19.6_p2p_h200x2.log")
    checks = nc.run_checks([run], {"kind": "mpi", "hosts": ["10.78.0.1", "10.78.0.2"], "ranks": 2})
    assert checks[0]["name"] == "nccl all_reduce (mpi, 2 hosts)"
    assert checks[0]["msg"].split("; ")[:2] == ["avg busbw %.3f GB/s" % run["avg_busbw"], "2 ranks on vm"]
    # No rank table (the run printed nothing): the hosts it was given.
    empty = dict(collective="all_to_all", command="mpirun ...", passed=False, reasons=["no results (rc 1): x"])
    check = nc.run_checks([empty], {"kind": "mpi", "hosts": ["10.78.0.1", "10.78.0.2"], "ranks": 2})[0]
    assert check == {"name": "nccl all_to_all (mpi, 2 hosts)", "status": "failed", "command": "mpirun ...", "tables": [],
                     "msg": "no result; 2 ranks on 10.78.0.1,10.78.0.2; no results (rc 1): x"}


@pytest.mark.parametrize("name", ["proc_net_tcp_ras_listening.txt", "proc_net_tcp6_ras_listening.txt"])
def test_the_socket_listening_on_the_ras_port_is_found_by_its_inode(name):
    """/proc/net/tcp and tcp6 as the lab machine printed them with a process listening on NCCL RAS's port: the
    inode that tells which process holds it (another service's listener, on another port, is not taken)."""
    from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl_ras, process  # pylint: disable=import-outside-toplevel
    want = dict(word.split("=", 1) for word in corpus.meta("nccl", name)["expect"].split())
    text = corpus.read("nccl", name)
    assert process.listening_inodes(text, int(want["port"])) == set(want["inodes"].split(","))
    assert process.listening_inodes(text, 28029) == set()
    # Not on this host's loopback: not asked, whoever holds the port.
    assert "not on this host's loopback" in nccl_ras.not_this_run(("192.0.2.7", 28028), set())
