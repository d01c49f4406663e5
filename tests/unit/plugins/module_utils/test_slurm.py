# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Slurm family's reading and decisions (module_utils/slurm/node.py) on real scontrol and squeue output: Slurm
22.05.8 captured in the lab (one- and multi-line forms, ours and someone else's drain, a node not responding) and a
site's published 20.02 node."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.slurm import node as slurm
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils.test_corpus import expectations

NODES = sorted(n for n in os.listdir(os.path.join(corpus.FIXTURES, "slurm")) if n.startswith("show_node_"))


@pytest.mark.parametrize("name", NODES)
def test_every_node_sample_is_read_and_judged(name):
    expect = expectations("slurm", name)
    node = slurm.parse_node(corpus.read("slurm", name), expect["NodeName"])
    assert node["State"] == expect["State"]
    assert slurm.drained_by(node) == expect["drained_by"]
    assert str(slurm.busy(node)) == expect["busy"]


def test_the_reason_is_read_whole_in_both_forms():
    one = slurm.parse_node(corpus.read("slurm", "show_node_allocated_drain_22.05.txt"))
    many = slurm.parse_node(corpus.read("slurm", "show_node_allocated_drain_multiline_22.05.txt"))
    assert one["Reason"] == many["Reason"] == "roce.fabric: reboot: mlxconfig SRIOV_EN [root@2026-11-28T09:56:53]"
    assert one["NodeAddr"] == many["NodeAddr"] == "127.0.0.1"
    assert slurm.state_of(one) == ("ALLOCATED", ["DRAIN"])
    other = slurm.parse_node(corpus.read("slurm", "show_node_idle_drain_other_not_responding_22.05.txt"))
    assert slurm.state_of(other) == ("IDLE", ["DRAIN", "NOT_RESPONDING"])
    assert slurm.state_of({"NodeName": "n", "State": "IDLE*"}) == ("IDLE", ["NOT_RESPONDING"])


def test_what_is_sent_follows_whose_drain_it_is():
    idle = slurm.parse_node(corpus.read("slurm", "show_node_idle_22.05.txt"))
    ours = slurm.parse_node(corpus.read("slurm", "show_node_idle_drain_22.05.txt"))
    other = slurm.parse_node(corpus.read("slurm", "show_node_allocated_drain_other_22.05.txt"))
    assert slurm.plan(idle, "drained") == ("drain", None)
    assert slurm.plan(ours, "drained") == (None, None)
    action, note = slurm.plan(other, "drained")
    assert action is None and note == ("drained or down already by someone else (admin: bad DIMM B2, set by root at "
                                       "2026-11-28T09:57:10): left so")
    assert slurm.plan(ours, "resumed") == ("resume", None)
    assert slurm.plan(idle, "resumed") == (None, None)
    action, note = slurm.plan(other, "resumed")
    assert action is None and note.endswith("left drained")


def test_jobs_are_read_and_the_ones_holding_the_node_named():
    jobs = slurm.parse_jobs(corpus.read("slurm", "squeue_running_22.05.txt"))
    assert jobs == [dict(id="1", user="root", state="RUNNING", name="train-llm")]
    assert slurm.holding(jobs) == jobs and slurm.job_words(jobs) == "1 (root, RUNNING, train-llm)"
    assert slurm.parse_jobs("") == []  # no job: squeue prints nothing
    # A job's name may hold the separator: it is the last field.
    assert slurm.parse_jobs("7|bob|PENDING|a|b\n") == [dict(id="7", user="bob", state="PENDING", name="a|b")]
    assert slurm.holding(slurm.parse_jobs("7|bob|PENDING|x\n8|bob|COMPLETING|y\n")) == [
        dict(id="8", user="bob", state="COMPLETING", name="y")]
    with pytest.raises(slurm.SlurmError, match="not id|user|state|name"):
        slurm.parse_jobs("JOBID PARTITION NAME\n")


def test_output_that_is_not_one_node_is_refused():
    with pytest.raises(slurm.SlurmError, match="printed 0 nodes named gpu9"):
        slurm.parse_node(corpus.read("slurm", "show_node_idle_22.05.txt"), "gpu9")
    with pytest.raises(slurm.SlurmError, match="printed 0 nodes"):
        slurm.parse_node(corpus.read("slurm", "show_nosuch_22.05.txt"))


def test_the_reason_carries_the_mark_once_and_on_one_line():
    assert slurm.reason_text("reboot: x") == "roce.fabric: reboot: x"
    assert slurm.reason_text("roce.fabric: reboot:\n  x") == "roce.fabric: reboot: x"
    assert slurm.reason_text("") == "roce.fabric:"


@pytest.mark.parametrize("name, text, user, when", [
    ("show_node_allocated_drain_other_22.05.txt", "admin: bad DIMM B2", "root", "2026-11-28T09:57:10"),
    ("show_node_idle_drain_22.05.txt", "roce.fabric: reboot: mlxconfig SRIOV_EN", "root", "2026-11-28T09:56:53"),
    ("show_node_idle_drain_other_multiline_22.05.txt", "admin: bad DIMM B2", "root", "2026-11-28T09:56:59"),
    ("show_node_mixed_drain_20.02.txt", "deep power-off required for PSU", "root", "2020-07-17T13:21:02"),
    ("show_node_idle_22.05.txt", None, None, None),
])
def test_the_reason_is_split_into_its_text_who_set_it_and_when(name, text, user, when):
    """scontrol prints who set a reason and when after it, in brackets: the user is the evidence of whose drain it
    is; the mark is read from the reason's text alone."""
    node = slurm.parse_node(corpus.read("slurm", name))
    assert slurm.split_reason(node.get("Reason")) == dict(text=text, user=user, time=when)
    # A reason without the bracket (as the sites' own tools may set it through the API) is all text.
    assert slurm.split_reason("maintenance window") == dict(text="maintenance window", user=None, time=None)
