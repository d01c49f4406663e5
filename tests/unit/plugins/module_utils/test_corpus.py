# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every parser on every sample of the corpus (fixtures/<tool>/, each file headed by its source).

A sample's ``%% expect:`` header line lists what the parser must read from it, as ``key=value`` words
(``NAME=VALUE`` for a parameter, ``NAME=OLD->NEW`` for a set transcript)."""

from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.esxi import parsers as esxcli
from ansible_collections.roce.fabric.plugins.module_utils.firmware import parsers as mlx
from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers as nvue_parsers
from ansible_collections.roce.fabric.plugins.module_utils.onyx import parsers as onyx_parsers
from ansible_collections.roce.fabric.plugins.module_utils.qos import counters
from ansible_collections.roce.fabric.plugins.module_utils.qos import parsers as qos_parsers
from ansible_collections.roce.fabric.plugins.module_utils.qos import port_counters
from ansible_collections.roce.fabric.plugins.module_utils.rdma import sriov
from ansible_collections.roce.fabric.plugins.module_utils.rdma import tools as rdma_tools
from ansible_collections.roce.fabric.plugins.module_utils.validate import gpu, lldp, nccl, nccl_ras, pcie, perftest
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

ALL = sorted((tool, name) for tool in os.listdir(corpus.FIXTURES) if os.path.isdir(os.path.join(corpus.FIXTURES, tool))
             for name in os.listdir(os.path.join(corpus.FIXTURES, tool)))


def expectations(tool, name):
    """The ``%% expect:`` words as a dict; a value may hold spaces up to the next ``key=`` word."""
    text = corpus.meta(tool, name).get("expect", "")
    pairs = re.findall(r"(\S+?)=(.*?)(?=\s+\S+=|$)", text)
    return dict((key, value.strip()) for key, value in pairs)


@pytest.mark.parametrize("tool, name", ALL)
def test_every_sample_says_where_it_comes_from(tool, name):
    meta = corpus.meta(tool, name)
    assert meta.get("source"), "%s/%s has no '%%%% source:' line" % (tool, name)
    assert meta.get("command"), "%s/%s has no '%%%% command:' line" % (tool, name)
    assert meta.get("kind") in corpus.KINDS + ("built",), "%s/%s: kind must be one of %s" % (tool, name, corpus.KINDS)
    if meta["kind"] in ("excerpt", "derived"):
        assert meta.get("notes") or "%s" % meta["source"], "say what was left out or changed"
    assert corpus.read(tool, name).strip(), "empty sample"


def test_the_readme_counts_the_samples_by_kind():
    """fixtures/README.md's table: the samples of each folder by kind, as their headers say."""
    kinds = ("captured", "public", "excerpt", "derived", "built")
    counts = dict((tool, [0] * len(kinds)) for tool, _name in ALL)
    for tool, name in ALL:
        counts[tool][kinds.index(corpus.meta(tool, name)["kind"])] += 1
    rows = ["| `%s/` | %s |" % (tool, " | ".join(str(n) for n in counts[tool])) for tool in sorted(counts)]
    rows.append("| all | %s |" % " | ".join(str(sum(c[i] for c in counts.values())) for i in range(len(kinds))))
    with open(os.path.join(corpus.FIXTURES, "README.md")) as handle:
        table = [line for line in handle.read().splitlines() if line.startswith(("| `", "| all "))]
    assert table == rows


# Real samples each tool has at least (the aim is three).
MINIMUM = {("mlxconfig", "query_"): 3, ("mlxconfig", "set_"): 2, ("nccl", "info_"): 3, ("perftest", ""): 3,
           ("rdma", ""): 3, ("gpu", "topo_"): 3, ("onyx", ""): 3}


@pytest.mark.parametrize("tool, prefix", sorted(MINIMUM))
def test_corpus_counts(tool, prefix):
    assert len(corpus.samples(tool, prefix)) >= MINIMUM[(tool, prefix)], "%s: too few real samples" % tool


# --- mlxconfig / mstconfig --------------------------------------------------------------------------

ROW_RE = re.compile(r"^(\*|\s)\s*(RO\s+)?\*?[A-Z][A-Za-z0-9_]*(\[\d+\])?\s{2,}\S")


@pytest.mark.parametrize("name", [n for n in sorted(os.listdir(os.path.join(corpus.FIXTURES, "mlxconfig")))
                                  if n.startswith(("query_", "set_"))])
def test_mlxconfig_parser_reads_every_row(name):
    text = corpus.read("mlxconfig", name)
    devices = mlx.parse_tool_output(text)
    rows = [line for line in text.splitlines() if ROW_RE.match(line) and not line.startswith(("Device", "Configurations"))
            and ":" not in line.split()[0]]
    assert sum(len(d["params"]) for d in devices) == len(rows)
    expect = expectations("mlxconfig", name)
    device = devices[0]
    for key, value in expect.items():
        if key == "device_type":
            assert device["device_type"] == value
        elif key == "applied":
            assert device["applied"] is (value == "True")
        elif key == "reboot":
            assert device["reboot"] == value
        elif "->" in value:
            before, after = value.split("->")
            assert (device["params"][key]["next_boot"], device["params"][key]["new"]) == (before, after)
        else:
            assert device["params"][key]["next_boot"] == value, key


# --- NCCL INFO logs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in sorted(os.listdir(os.path.join(corpus.FIXTURES, "nccl"))) if n.endswith(".log")])
def test_nccl_log_check_on_every_log(name):
    expect = expectations("nccl", name)
    result = nccl.check_log(corpus.read("nccl", name), require_net=expect.get("require_net") or None)
    if "passed" in expect:
        assert result["passed"] is (expect["passed"] == "True"), result["findings"]
    if "network" in expect:
        assert result["network"] == expect["network"]
    if "rdma" in expect:
        assert result["rdma"] is (expect["rdma"] == "True")
    if "gdr" in expect:
        assert str(result["gdr"]) == expect["gdr"]
    if "version" in expect:
        assert result["version"] == expect["version"]
    if "codes" in expect:
        assert sorted(set(f["code"] for f in result["findings"])) == sorted(expect["codes"].split(","))


# --- nvidia-smi topo -m -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("gpu", "topo_", kinds=corpus.KINDS + ("built",)))
def test_topo_parser_on_every_matrix(name):
    text = corpus.read("gpu", name)
    topo = gpu.parse_topo(text)
    rows = [line for line in text.splitlines() if re.match(r"^(GPU|NIC)\d+\s", line)]
    assert len(topo["gpus"]) + len(topo["nics"]) == len(rows)
    for key, value in expectations("gpu", name).items():
        if key == "gpus":
            assert len(topo["gpus"]) == int(value)
        elif key == "nics":
            assert len(topo["nics"]) == int(value)
        elif key.endswith(".numa"):
            assert topo["gpus"][key.split(".")[0]]["numa_affinity"] == int(value)
        else:
            one, other = key.split(".")
            assert topo["gpus"][one]["links"][other] == value


# --- Onyx show roce -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("onyx", "show_roce_"))
def test_show_roce_parser_on_every_sample(name):
    parsed = onyx_parsers.parse_show_roce(corpus.read("onyx", name))
    for key, value in expectations("onyx", name).items():
        if key == "pfc":
            assert parsed["pfc"] is (value == "True")
        elif key.startswith("ecn_"):
            assert parsed["ecn"][key[4:]] == int(value)
        else:
            assert parsed[key] == value, key


@pytest.mark.parametrize("name", corpus.samples("gpu", "query_"))
def test_gpu_query_parser_on_every_csv(name):
    rows = gpu.parse_query_csv(corpus.read("gpu", name))
    assert len(rows) == int(expectations("gpu", name)["rows"])
    for row in rows:
        assert row["name"].startswith("NVIDIA ") and int(row["clocks.max.graphics"]) > 0


# --- esxcli hardware pci list -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("esxcli", "pci_list_", kinds=corpus.KINDS + ("built",)))
def test_esxcli_pci_list_parser_on_every_sample(name):
    text = corpus.read("esxcli", name)
    devices = esxcli.parse_pci_list(text)
    assert [d["address"] for d in devices] == [line.strip().lower() for line in text.splitlines() if line and not line[0].isspace()]
    for key, value in expectations("esxcli", name).items():
        if key == "devices":
            assert len(devices) == int(value)
            continue
        address, field = key.rsplit(".", 1)
        assert dict((d["address"], d) for d in devices)[address][field] == value, key


# --- nccl-tests result tables -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("nccl", "ras_status_"))
def test_nccl_ras_status_on_every_sample(name):
    """RAS's JSON status (NCCL 2.28.7 and later): the communicators, the missing ranks, and the findings they make."""
    expect = expectations("nccl", name)
    status = nccl_ras.parse_status(corpus.read("nccl", name))
    assert status["version"] == expect["version"] and len(status["communicators"]) == int(expect["communicators"])
    missing = [rank for comm in status["communicators"] for rank in comm["missing"]]
    assert len(missing) == int(expect["missing"])
    found = nccl_ras.findings(status)
    assert len(found) == int(expect["findings"])
    if missing:
        assert (missing[0]["rank"], missing[0]["gpu"]) == (int(expect["missing_rank"]), int(expect["missing_gpu"]))
        assert found[0]["code"] == "ras_rank_missing" and "unresponsive" in found[0]["message"]
        # What the fault location takes: the rank, and whether any rank on its host still answers.
        located = nccl_ras.missing_ranks(status)
        assert [(r["rank"], r["gpu"], r["whole_host"]) for r in located] == [
            (int(expect["missing_rank"]), int(expect["missing_gpu"]), expect["whole_host"] == "true")]
    else:
        assert nccl_ras.missing_ranks(status) == []


@pytest.mark.parametrize("name", [n for n in corpus.samples("nccl") if n.endswith(".txt") and not n.startswith(("nccl_bench", "proc_net_"))])
def test_nccl_tests_parser_on_every_table(name):
    text = corpus.read("nccl", name)
    parsed = nccl.parse_results(text)
    data_rows = [line for line in text.splitlines() if re.match(r"^\s+\d+\s+\d+\s", line)]
    assert len(parsed["rows"]) == len(data_rows)
    assert parsed["avg_busbw"] is not None and parsed["oob_ok"] is True
    assert parsed["max_busbw"] == max(max(r["out_of_place"]["busbw"], r["in_place"]["busbw"]) for r in parsed["rows"])


# --- perftest -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("perftest"))
def test_perftest_parser_on_every_sample(name):
    text = corpus.read("perftest", name)
    expect = expectations("perftest", name)
    if name.startswith("out_json_"):
        # The file --out_json writes, in the releases' two formats: the same shape as the printed table.
        parsed = perftest.parse_out_json(text, unit=expect.get("units", "MB/sec"))
        row = parsed["rows"][0]
        assert (row["bytes"], row["iterations"], parsed["settings"]["device"]) == (
            int(expect["bytes"]), int(expect["iterations"]), expect["device"])
        for key in ("t_avg", "p99_9", "bw_average", "bw_average_gbps", "msg_rate"):
            if key in expect:
                assert row[key] == float(expect[key]), key
        return
    if "error" in expect:
        with pytest.raises(perftest.PerftestParseError):
            perftest.parse_perftest(text)
        if "cause" in expect:
            assert perftest.classify_error(text) == (expect["cause"], expect["line"])
        return
    parsed = perftest.parse_perftest(text)
    row = parsed["rows"][0]
    assert row["bytes"] == int(expect["bytes"]) and row["iterations"] == int(expect["iterations"])
    if parsed["kind"] == "bw":
        assert parsed["unit"] == expect["units"] and row["bw_average"] == float(expect["bw_avg"])
    else:
        assert row["t_avg"] == float(expect["t_avg"])


# --- rping --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("rping"))
def test_rping_parser_on_every_sample(name):
    expect = expectations("rping", name)
    result = perftest.parse_rping(corpus.read("rping", name), rc=int(expect["rc"]), expected=int(expect["pings"]) or None)
    assert result["pings"] == int(expect["pings"]) and result["ok"] is (expect["ok"] == "True")
    if "cause" in expect:
        assert result["cause"] == expect["cause"]


@pytest.mark.parametrize("name", [n for n in sorted(os.listdir(os.path.join(corpus.FIXTURES, "mlxconfig"))) if n.startswith("error_")])
def test_mlxconfig_error_lines(name):
    errors = mlx.error_lines(corpus.read("mlxconfig", name))
    assert errors == [expectations("mlxconfig", name)["error"]]


# --- iproute2 rdma, ip netns, initramfs, ip link VFs ------------------------------------------------------------

def _crictl_pods(text):
    return rdma_tools.parse_crictl_pods(text, "rdma-test", "default")


RDMA_PARSERS = (
    ("system_", rdma_tools.parse_system),
    ("dev_show_", rdma_tools.parse_devices),
    ("link_show_", rdma_tools.parse_link_show),
    ("version_", rdma_tools.parse_iproute2_version),
    ("netns_list", rdma_tools.parse_netns_list),
    ("lsinitramfs_", rdma_tools.initramfs_has_module),
    ("err_", rdma_tools.classify_error),
    ("docker_inspect", rdma_tools.parse_inspect_pid),
    ("crictl_inspectp", rdma_tools.parse_inspect_pid),
    ("crictl_pods", _crictl_pods),
)


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(corpus.FIXTURES, "rdma"))))
def test_rdma_tool_parsers_on_every_sample(name):
    """Every rdma-family sample has a parser, and the parser reads it without an exception."""
    text = corpus.read("rdma", name)
    parsers = [parse for prefix, parse in RDMA_PARSERS if name.startswith(prefix)]
    assert parsers, "no parser reads %s" % name
    if name.startswith("system_unknown"):
        with pytest.raises(Exception):
            parsers[0](text)
        return
    parsers[0](text)


@pytest.mark.parametrize("name", corpus.samples("sriov"))
def test_vf_parser_on_every_ip_link_sample(name):
    vfs = sriov.parse_vfs(corpus.read("sriov", name))
    assert isinstance(vfs, dict) and all(isinstance(index, int) for index in vfs)


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(os.path.join(corpus.FIXTURES, "onyx")) if n.startswith("running_config")))
def test_onyx_running_config_parser_on_every_sample(name):
    have = onyx_parsers.parse_running_config(corpus.read("onyx", name))
    assert have


# --- host NIC QoS (mlnx_qos, dcb, configfs) ----------------------------------------------------------

def _prio_list(text):
    return [int(p) for p in text.split(",") if p != ""] if text != "none" else []


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(corpus.FIXTURES, "qos"))))
def test_qos_parsers_on_every_sample(name):
    """Every QoS sample goes through its parser and gives what its header expects."""
    text = corpus.read("qos", name)
    expect = expectations("qos", name)
    if name.startswith("mlnx_qos_"):
        parsed = qos_parsers.parse_mlnx_qos(text)
        assert parsed["dcbx"] == (None if expect["dcbx"] == "none" else expect["dcbx"]) and parsed["trust"] == expect["trust"]
        assert [p for p, on in enumerate(parsed["pfc"]) if on] == _prio_list(expect["pfc"])
        for key, value in expect.items():
            if key.startswith("dscp"):
                assert parsed["dscp2prio"][int(key[4:])] == int(value), key
        assert len(parsed["tcs"]) == int(expect["tcs"])
    elif name.startswith("dcb_pfc_show"):
        assert [p for p, on in enumerate(qos_parsers.parse_dcb_pfc(text)) if on] == _prio_list(expect["pfc"])
    elif name.startswith("dcb_app_show"):
        table = qos_parsers.parse_dcb_app_dscp(text)
        for key, value in expect.items():
            assert table[int(key[4:])] == [int(value)], key
    elif name.startswith("dcb_apptrust_show"):
        assert qos_parsers.parse_dcb_apptrust(text) == expect["order"].split(",")
    elif name.startswith("dcb_err_") or name.startswith("configfs_err_"):
        assert qos_parsers.dcb_error_kind(text) == (expect["kind"] if expect["kind"] != "none" else None)
    elif name.startswith("configfs_"):
        assert qos_parsers.parse_int(text) == int(expect["value"])
    elif name.startswith("sysfs_"):
        # "<what>: <path> = <value>" lines: every value read the way the module reads the file.
        values = dict(line.split(": ", 1)[1].split(" = ", 1) for line in text.splitlines() if " = " in line)
        enables = [qos_parsers.parse_int(v) for p, v in values.items() if "/ecn/roce_" in p and "/enable/" in p]
        assert len(enables) == 16 and set(enables) == {int(expect["ecn"])}
        assert qos_parsers.parse_int(values["/sys/class/net/eth0/ecn/roce_np/cnp_dscp"]) == int(expect["cnp_dscp"])
        assert qos_parsers.parse_traffic_class(values["/sys/class/infiniband/mlx5_0/tc/1/traffic_class"]) == int(expect["traffic_class"])
    else:
        raise AssertionError("no parser reads qos/%s" % name)


# --- traffic counters (ethtool -S, RDMA hw_counters) ---------------------------------------------------

@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(corpus.FIXTURES, "counters"))))
def test_counter_parsers_on_every_sample(name, tmp_path):
    """Every counter sample parses, and gives the values and per-priority counters its header expects."""
    text = corpus.read("counters", name)
    expect = expectations("counters", name)
    if name.startswith("ethtool_S_"):
        stats = counters.parse_ethtool_stats(text)
        assert "NIC statistics" not in stats and len(stats) == len(text.splitlines()) - 1
        prios = counters.priority_stats(stats)
        assert sorted(prios) == ([] if expect.pop("priorities") == "none" else [0])
        if expect.pop("rdma", None) == "none":
            assert not any(name in stats for name in counters.RDMA_BYTES.values())
        for key, value in expect.items():
            if key.startswith("prio"):
                prio, counter = key[4:].split("_", 1)
                assert prios[int(prio)][counter] == int(value), key
            else:
                assert stats[key] == int(value), key
    elif name.startswith("hw_counters_"):
        values = counters.parse_counter_lines(text)
        assert len(values) == len(text.splitlines())
        for key, value in expect.items():
            assert values[key] == int(value), key
    elif name.startswith("sysfs_speed_"):
        # A link's rate as read_port reads it from the netdev's sysfs.
        net = tmp_path / "sys" / "class" / "net" / "eth0"
        net.mkdir(parents=True)
        (net / "speed").write_text(text + "\n")
        assert str(port_counters.read_port(None, str(tmp_path), "eth0", ethtool=False)["speed"]) == expect["speed"]
    elif name.startswith("sysfs_address_"):
        # A port's MAC address as read_port reads it, the port ID a host's lldpd sends and a switch's LLDP shows.
        net = tmp_path / "sys" / "class" / "net" / "eth0"
        net.mkdir(parents=True)
        (net / "address").write_text(text + "\n")
        assert port_counters.read_port(None, str(tmp_path), "eth0", ethtool=False)["mac"] == expect["mac"]
    else:
        raise AssertionError("no parser reads counters/%s" % name)


# --- NVUE (Cumulus Linux) ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", corpus.samples("nvue", "revision_"))
def test_nvue_revision_parsers_on_every_sample(name):
    body = json.loads(corpus.read("nvue", name))
    expect = expectations("nvue", name)
    if "revision" in expect:
        assert nvue_parsers.revision_id(body) == expect["revision"]
    state, issues, _progress = nvue_parsers.revision_state(body)
    assert state == expect["state"]
    assert len(issues) == int(expect.get("issues", 0))
    assert all(issues)


@pytest.mark.parametrize("name", corpus.samples("nvue", "config_"))
def test_nvue_config_parser_on_every_sample(name):
    config = json.loads(corpus.read("nvue", name))
    expect = expectations("nvue", name)
    have = nvue_parsers.parse_config(config)
    assert nvue_parsers.release_of(config) == expect["release"]
    assert have["roce_mode"] == expect["roce_mode"]
    assert have["trust"] == expect["trust"]
    assert have["vlans"] == [int(v) for v in expect["vlans"].split(",")]
    low, high = expect["ecn_tc0"].split("-")
    assert have["ecn"][0] == dict(ecn="enable", min=int(low), max=int(high))


@pytest.mark.parametrize("name", corpus.samples("nvue", "nv_config_apply_"))
def test_nv_config_apply_parser_on_every_sample(name):
    expect = expectations("nvue", name)
    state, issues, revision = nvue_parsers.apply_result(corpus.read("nvue", name), 1)
    assert state == expect["state"] and revision == expect["revision"]
    assert len(issues) == int(expect["issues"]) and expect["location"] in issues[0]
    assert not any(issue.lower().startswith("invalid config") for issue in issues)


@pytest.mark.parametrize("name", corpus.samples("nvue", "nv_show_counters_qos_pfc_stats_"))
def test_nv_pfc_stats_parser_on_every_sample(name):
    """A switch port's PFC counters per switch priority, summed as the validation reads them; a table of another
    command is refused."""
    expect = expectations("nvue", name)
    stats = nvue_parsers.pfc_stats(corpus.read("nvue", name))
    assert sorted(stats) == list(range(int(expect.pop("priorities"))))
    assert nvue_parsers.pause_totals(stats) == dict((key, int(value)) for key, value in expect.items())
    with pytest.raises(nvue_parsers.NvueTableError):
        nvue_parsers.pfc_stats(corpus.read("lldp", "nv_show_interface_lldp_cl5.txt"))


# --- PCIe: link state and AER counters (sysfs) ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(corpus.FIXTURES, "pcie"))))
def test_pcie_samples(name):
    text, expect = corpus.read("pcie", name), expectations("pcie", name)
    if name.startswith("aer_"):
        counts = pcie.parse_aer(text)
        for key, value in expect.items():
            assert counts["total" if key == "total" else key.replace("_", " ")] == int(value), (key, counts)
    elif name.startswith("kernel_bw_"):
        # The kernel's line at the driver's probe (dmesg, syslog): the link, what the device can do, where it is limited.
        limits = pcie.kernel_limits(text)
        assert len(limits) == int(expect.pop("devices"))
        found = limits[expect.pop("bdf")]
        assert dict((key, str(value) if value is not None else "none") for key, value in found.items()) == expect
    else:
        state = pcie.link_files(text)
        assert dict((key, str(value)) for key, value in state.items()) == expect


# --- LLDP: lldpcli -f json0 -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(corpus.FIXTURES, "lldp"))))
def test_lldp_samples(name):
    expect = expectations("lldp", name)
    if name.startswith("nv_show_"):
        table = nvue_parsers.lldp_neighbours(corpus.read("lldp", name))
        assert len(table) == int(expect.pop("count"))
        for interface, value in expect.items():
            assert "%s/%s" % (table[interface]["host"], table[interface]["port"]) == value, table[interface]
        return
    neighbors = lldp.parse_neighbors(corpus.read("lldp", name))
    assert sorted(neighbors) == sorted(expect.get("interfaces", expect["interface"]).split(","))
    found = neighbors[expect["interface"]]
    assert (found["switch"] or "none", found["port"]) == (expect["switch"], expect["port"])


# --- switch port counters (Onyx show interfaces json-print, the NVUE API's interface link.stats) ----------------------

@pytest.mark.parametrize("tool, name", [("onyx", n) for n in corpus.samples("onyx", "show_interfaces_json_counters")]
                         + [("nvue", n) for n in corpus.samples("nvue", "api_interface_stats")])
def test_switch_port_counter_parsers_on_every_sample(tool, name):
    expect = expectations(tool, name)
    data = json.loads(corpus.read(tool, name))
    if tool == "onyx":
        # The list layout of releases before 3.6.6000 (one object per interface, with a header).
        parsed = onyx_parsers.port_counters(onyx_parsers.interfaces_from_json(data, "3.6.5000"))
    else:
        parsed = nvue_parsers.port_counters(data)
    assert len(parsed) == int(expect.pop("ports")), parsed
    port = parsed[expect.pop("port")]
    assert dict((key, str(value)) for key, value in port.items() if key in expect) == expect
    assert set(expect) <= set(port)
