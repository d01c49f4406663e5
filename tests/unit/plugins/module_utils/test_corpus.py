# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every parser on every sample of the corpus (fixtures/<tool>/, each file headed by its source).

A sample's ``%% expect:`` header line lists what the parser must read from it, as ``key=value`` words
(``NAME=VALUE`` for a parameter, ``NAME=OLD->NEW`` for a set transcript)."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.firmware import parsers as mlx
from ansible_collections.roce.fabric.plugins.module_utils.validate import gpu, nccl
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

ALL = sorted((tool, name) for tool in os.listdir(corpus.FIXTURES) if os.path.isdir(os.path.join(corpus.FIXTURES, tool))
             for name in os.listdir(os.path.join(corpus.FIXTURES, tool)))


def expectations(tool, name):
    words = corpus.meta(tool, name).get("expect", "").split()
    return dict(word.split("=", 1) for word in words)


@pytest.mark.parametrize("tool, name", ALL)
def test_every_sample_says_where_it_comes_from(tool, name):
    meta = corpus.meta(tool, name)
    assert meta.get("source"), "%s/%s has no '%%%% source:' line" % (tool, name)
    assert meta.get("command"), "%s/%s has no '%%%% command:' line" % (tool, name)
    assert meta.get("kind") in corpus.KINDS + ("built",), "%s/%s: kind must be one of %s" % (tool, name, corpus.KINDS)
    if meta["kind"] in ("excerpt", "derived"):
        assert meta.get("notes") or "%s" % meta["source"], "say what was left out or changed"
    assert corpus.read(tool, name).strip(), "empty sample"


# Real samples each tool has at least (the aim is three; Onyx has two public outputs so far: docs/lab.md).
MINIMUM = {("mlxconfig", "query_"): 3, ("mlxconfig", "set_"): 2, ("nccl", "info_"): 3, ("perftest", ""): 3,
           ("rdma", ""): 3, ("gpu", "topo_"): 3, ("onyx", ""): 2}


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
