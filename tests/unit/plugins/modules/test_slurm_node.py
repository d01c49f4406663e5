# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.slurm_node through main(): a stand-in Slurm answers with the corpus's real scontrol and squeue output
(fixtures/slurm/, Slurm 22.05.8): a node with a job drained and waited for, a job that does not end in time, someone
else's drain left alone, check mode, bad input. The module against a running slurmctld and slurmd is
tests/peer/test_slurm_peer.py."""

from __future__ import annotations

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.modules import slurm_node
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

SCONTROL, SQUEUE = "/usr/bin/scontrol", "/usr/bin/squeue"


# squeue with no job on the node prints nothing at all (Slurm 22.05.8, as captured for fixtures/slurm/).
NO_JOBS = ""


def sample(name):
    return NO_JOBS if name is None else corpus.read("slurm", name)


class FakeSlurm(object):
    """scontrol and squeue on the captured node ``vm``: ``node`` is what show prints, ``jobs`` what squeue prints;
    a drain moves the node to its drained sample, and the job ends after ``job_reads`` reads of the queue."""

    def __init__(self, node, jobs=None, job_reads=0):
        self.node, self.jobs, self.job_reads = sample(node), sample(jobs), job_reads
        self.calls = []

    def __call__(self, argv, **kwargs):
        assert isinstance(argv, list) and kwargs["environ_update"]["LC_ALL"] == "C"
        assert kwargs["expand_user_and_vars"] is False
        self.calls.append(argv)
        if argv[0] == SQUEUE:
            assert argv[1:] == ["--noheader", "--nodelist", "vm", "--format", "%i|%u|%T|%j"]
            if self.job_reads <= 0:
                self.jobs = NO_JOBS
                self.node = self.node.replace("State=ALLOCATED+DRAIN", "State=IDLE+DRAIN")
            self.job_reads -= 1
            return 0, self.jobs, ""
        if argv[1:3] == ["--oneliner", "show"]:
            if argv[-1] != "vm":
                return 1, sample("show_nosuch_22.05.txt"), ""
            return 0, self.node, ""
        if argv[1] == "update":
            if argv[2] != "NodeName=vm":
                return 1, "", sample("update_nosuch_22.05.txt")
            if argv[3] == "State=DRAIN":
                running = self.jobs != NO_JOBS
                self.node = sample("show_node_allocated_drain_22.05.txt" if running else "show_node_idle_drain_22.05.txt")
            else:
                self.node = sample("show_node_idle_22.05.txt")
            return 0, "", ""
        raise AssertionError(argv)

    def updates(self):
        return [call for call in self.calls if call[1] == "update"]


@pytest.fixture
def install(monkeypatch):
    def put(fake):
        monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: dict(
            scontrol=SCONTROL, squeue=SQUEUE).get(name))
        monkeypatch.setattr(slurm_node.time, "sleep", lambda seconds: None)
        return fake
    return put


def drain(**extra):
    return dict(dict(name="vm", state="drained", reason="reboot: mlxconfig SRIOV_EN", poll_interval=1), **extra)


def test_a_node_with_a_job_is_drained_and_waited_for_then_a_second_run_changes_nothing(install):
    fake = install(FakeSlurm("show_node_allocated_22.05.txt", "squeue_running_22.05.txt", job_reads=2))
    result = run_module(slurm_node.main, drain(), diff=True)
    assert result["changed"] is True and result["drained_by"] == "none" and result["jobs"] == []
    assert fake.updates() == [[SCONTROL, "update", "NodeName=vm", "State=DRAIN",
                               "Reason=roce.fabric: reboot: mlxconfig SRIOV_EN"]]
    assert result["commands"] == ["/usr/bin/scontrol update NodeName=vm State=DRAIN "
                                  "'Reason=roce.fabric: reboot: mlxconfig SRIOV_EN'"]
    assert result["state"] == "IDLE+DRAIN" and result["diff"] == {"before": {"state": "ALLOCATED"},
                                                                  "after": {"state": "IDLE+DRAIN"}}
    # The queue and the node were read until the job had ended and the node no longer showed it (ALLOCATED).
    assert len([call for call in fake.calls if call[0] == SQUEUE]) == 4
    again = run_module(slurm_node.main, drain())
    assert again["changed"] is False and again["drained_by"] == "roce.fabric" and len(fake.updates()) == 1


def test_a_job_that_does_not_end_in_time_is_named_and_the_node_stays_drained(install):
    fake = install(FakeSlurm("show_node_allocated_22.05.txt", "squeue_running_22.05.txt", job_reads=10 ** 6))
    result = run_module(slurm_node.main, drain(wait_timeout=0))
    assert result["failed"] is True and result["failure"] == "jobs_running"
    assert result["msg"] == ("Slurm node vm is drained but jobs still run on it after 0 s: 1 (root, RUNNING, train-llm); "
                             "nothing disruptive may be done to it (it stays drained)")
    assert result["jobs"] == [dict(id="1", user="root", state="RUNNING", name="train-llm")]
    assert [call[3] for call in fake.updates()] == ["State=DRAIN"]


def test_a_node_still_busy_at_the_timeout_is_a_failure_that_names_why(install):
    """Slurm still counts the node busy (ALLOCATED+DRAIN: a job ending, resizing, or in a state squeue's holding
    states leave out) while squeue names no job holding it: when the wait runs out the node is not drained, and the
    task fails naming its state (it reported success before)."""
    fake = install(FakeSlurm("show_node_allocated_drain_22.05.txt", None))
    fake.job_reads = 10 ** 6  # the node keeps its ALLOCATED state; squeue prints nothing
    result = run_module(slurm_node.main, drain(wait_timeout=0))
    assert result["failed"] is True and result["failure"] == "node_busy", result
    assert result["msg"] == ("Slurm node vm is still busy after 0 s (state ALLOCATED+DRAIN; jobs squeue lists on it: "
                             "none); nothing disruptive may be done to it (it stays drained)")
    assert (result["reason"], result["reason_user"], result["reason_time"]) == (
        "roce.fabric: reboot: mlxconfig SRIOV_EN", "root", "2026-11-28T09:56:53")
    # A job in a state that holds the node, RESIZING among them, is named as a job still running.
    assert "RESIZING" in slurm_node.slurm.HOLDING_JOBS


def test_someone_elses_drain_is_left_and_never_resumed(install):
    fake = install(FakeSlurm("show_node_allocated_drain_other_22.05.txt", "squeue_running_22.05.txt", job_reads=0))
    drained = run_module(slurm_node.main, drain())
    assert drained["changed"] is False and drained["drained_by"] == "other" and fake.updates() == []
    assert drained["note"] == ("vm drained or down already by someone else (admin: bad DIMM B2, set by root at "
                               "2026-11-28T09:57:10): left so")
    assert (drained["reason"], drained["reason_user"], drained["reason_time"]) == (
        "admin: bad DIMM B2", "root", "2026-11-28T09:57:10")
    resumed = run_module(slurm_node.main, dict(name="vm", state="resumed"))
    assert resumed["changed"] is False and fake.updates() == [] and resumed["note"].endswith("left drained")


def test_resume_returns_only_a_node_this_collection_drained(install):
    fake = install(FakeSlurm("show_node_idle_drain_22.05.txt"))
    checked = run_module(slurm_node.main, dict(name="vm", state="resumed"), check_mode=True)
    assert checked["changed"] is True and fake.updates() == []
    result = run_module(slurm_node.main, dict(name="vm", state="resumed"))
    assert result["changed"] is True and fake.updates() == [[SCONTROL, "update", "NodeName=vm", "State=RESUME"]]
    assert result["state"] == "IDLE"
    again = run_module(slurm_node.main, dict(name="vm", state="resumed"))
    assert again["changed"] is False and len(fake.updates()) == 1


def test_check_mode_sends_nothing_and_names_the_jobs_without_waiting(install):
    fake = install(FakeSlurm("show_node_allocated_22.05.txt", "squeue_running_22.05.txt", job_reads=10 ** 6))
    result = run_module(slurm_node.main, drain(), check_mode=True)
    assert not result.get("failed") and result["changed"] is True and fake.updates() == []
    assert result["jobs"] == [dict(id="1", user="root", state="RUNNING", name="train-llm")]
    assert len([call for call in fake.calls if call[0] == SQUEUE]) == 1


def test_a_node_the_cluster_does_not_know_is_a_clear_error(install):
    install(FakeSlurm("show_node_idle_22.05.txt"))
    result = run_module(slurm_node.main, drain(name="gpu9"))
    assert result["failed"] is True and "scontrol --oneliner show node gpu9 failed (rc 1): Node nosuch not found" in result["msg"]


@pytest.mark.parametrize("args, message", [
    (dict(name="gpu[1-4]"), "name must be one Slurm node name"),
    (dict(name="vm;reboot"), "name must be one Slurm node name"),
    (dict(reason="reboot\nState=DOWN"), "reason must be one line of text"),
    (dict(wait_timeout=-1), "wait_timeout must be 0 to 604800 seconds"),
    (dict(reason=""), "state is drained but all of the following are missing: reason"),
])
def test_bad_input_is_refused_before_slurm_is_asked(install, args, message):
    fake = install(FakeSlurm("show_node_idle_22.05.txt"))
    args = dict(drain(), **args)
    if args["reason"] == "":
        del args["reason"]
    result = run_module(slurm_node.main, args)
    assert result["failed"] is True and message in result["msg"] and fake.calls == []


def test_without_the_tools_nothing_is_sent(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: None)
    result = run_module(slurm_node.main, drain())
    assert result["failed"] is True and "scontrol and squeue were not found on the PATH" in result["msg"]
