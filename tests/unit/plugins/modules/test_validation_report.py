# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.validation_report: plan, write, idempotence, check mode and diff."""

from __future__ import annotations

import json
import os
import time

import pytest

from ansible_collections.roce.fabric.plugins.modules import validation_report
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

HOSTS = dict(a=dict(ports=[dict(device="rxe0", port=1, rate_gbps=10.0, ipv4="10.99.0.1", gid_index=1)]),
             b=dict(ports=[dict(device="rxe0", port=1, rate_gbps=10.0, ipv4="10.99.0.2", gid_index=1)]))


def test_plan_then_write_idempotent(tmp_path):
    planned = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping", "ib_write_bw"],
                                                      min_bw_gbps=0.01))
    assert planned["changed"] is False
    plan = planned["plan"]
    assert [t["id"] for t in plan["tests"]] == ["rping:a->b", "ib_write_bw:a->b"]
    # Folders that do not exist yet, the report's and one above it (the lab's tests give such a path): made, not
    # refused for a missing parent (the private-folder check first refused them).
    dest = str(tmp_path / "run" / "report")
    args = dict(mode="write", plan=plan, dest=dest, results=[
        dict(test_id="rping:a->b", role="client", passed=True, command="rping -c -v -p 18515 -C 10 -a 10.99.0.1")])
    check = run_module(validation_report.main, args, check_mode=True, diff=True)
    assert check["changed"] is True and not os.path.exists(dest)
    assert json.loads(check["diff"][0]["after"]) == dict(passed=1, failed=0, skipped=0, not_run=1)
    first = run_module(validation_report.main, args)
    assert first["changed"] is True and first["passed"] is True
    with open(os.path.join(dest, "report.json")) as handle:
        assert json.load(handle)["tests"][0]["status"] == "passed"
    assert "<html>" in open(os.path.join(dest, "report.html")).read()
    assert first["files"] == [os.path.join(dest, name) for name in ("report.json", "report.html", "report.xml")]
    second = run_module(validation_report.main, args)
    assert second["changed"] is False
    # A report.xml removed (or edited) is written again, and only what differs changes.
    os.unlink(os.path.join(dest, "report.xml"))
    third = run_module(validation_report.main, args)
    assert third["changed"] is True and os.path.exists(os.path.join(dest, "report.xml"))


def test_bad_input_changes_nothing(tmp_path):
    result = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, perftest=dict(tos="106; x")))
    assert result["failed"] is True and "perftest.tos must be a ToS of 0-255" in result["msg"]
    planned = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["ib_write_bw"], perftest=dict(tos="")))
    assert "tos" not in planned["plan"]["parts"]["b"][0]["args"]
    result = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, pairs=[dict(server="a", client="zz")]))
    assert result["failed"] is True and "not in the play" in result["msg"]
    result = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, bw_fraction=1.5))
    assert result["failed"] is True and "bw_fraction" in result["msg"]
    result = run_module(validation_report.main, dict(mode="write", dest=str(tmp_path / "r")))
    assert result["failed"] is True
    assert not os.path.exists(str(tmp_path / "r"))


def test_links_planted_at_the_temporary_and_report_names_are_replaced_not_written_through(tmp_path):
    """report.json.tmp (the old fixed temporary name) and report.json made links to a file root must not touch."""
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = tmp_path / "report"
    dest.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    for name in ("report.json.tmp", "report.html.tmp", "report.json"):
        os.symlink(str(victim), str(dest / name))
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=str(dest), results=[]), diff=True)
    assert result["changed"] is True and result["diff"][0]["before"] == ""
    assert victim.read_text() == "keep\n"
    assert not os.path.islink(str(dest / "report.json")) and json.loads((dest / "report.json").read_text())["tests"]
    assert sorted(name for name in os.listdir(str(dest)) if not name.endswith(".tmp")) == ["report.html", "report.json",
                                                                                           "report.xml"]
    assert oct(os.stat(str(dest / "report.json")).st_mode & 0o777) == "0o644"


def test_generated_records_when_and_how_and_alone_never_rewrites_the_report(tmp_path):
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = str(tmp_path / "report")
    first_time = dict(time="2026-11-24T18:00:00Z", collection_version="1.0.0", inventory="lab", play="Validate",
                      command="ansible-playbook -i lab --limit node1", ansible_version="2.19.0")
    args = dict(mode="write", plan=plan, dest=dest, results=[], generated=first_time)
    first = run_module(validation_report.main, args)
    assert first["changed"] is True and first["report"]["generated"] == first_time
    with open(os.path.join(dest, "report.json")) as handle:
        assert json.load(handle)["generated"] == first_time
    page = open(os.path.join(dest, "report.html")).read()
    assert "generated 2026-11-24T18:00:00Z, by roce.fabric 1.0.0, inventory lab, ansible-playbook -i lab --limit node1" in page
    # The same outcome an hour later: nothing changes, the file keeps when that outcome was first written.
    later = dict(first_time, time="2026-11-24T19:00:00Z")
    second = run_module(validation_report.main, dict(args, generated=later))
    assert second["changed"] is False and second["report"]["generated"]["time"] == "2026-11-24T18:00:00Z"
    # Another outcome: rewritten, with the new record.
    results = [dict(test_id="rping:a->b", role="client", passed=False, cause="unreachable", command="rping -c")]
    third = run_module(validation_report.main, dict(args, generated=later, results=results))
    assert third["changed"] is True and third["passed"] is False
    with open(os.path.join(dest, "report.json")) as handle:
        assert json.load(handle)["generated"]["time"] == "2026-11-24T19:00:00Z"


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a folder to another user")
@pytest.mark.parametrize("planted", ["theirs", "link", "writable"])
def test_a_report_folder_another_user_controls_is_refused(tmp_path, planted):
    """Hardening (issue 37, 17): the report folder in the shared /var/tmp was used whoever made it: another user
    could read, replace or redirect the report. Now it is checked as roce.fabric.private_dir checks a folder."""
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = tmp_path / "report"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if planted == "theirs":
        dest.mkdir()
        os.chown(str(dest), 65534, 65534)
    elif planted == "link":
        dest.symlink_to(elsewhere)
    else:
        dest.mkdir()
        os.chmod(str(dest), 0o777)
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=str(dest), results=[]))
    assert result["failed"] is True and "the report's folder cannot be used, nothing was written" in result["msg"]
    assert os.listdir(str(elsewhere)) == [] and (planted == "link" or os.listdir(str(dest)) == [])


def test_the_junit_report_has_a_case_per_pair_test_and_host_check_for_ci_systems(tmp_path):
    import xml.etree.ElementTree as ET
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = str(tmp_path / "report")
    checks = {"a": [dict(name="discovery", status="passed", msg="rxe0/1 <ok> & fine", command="rdma_facts"),
                    dict(name="gpu_health", status="failed", msg="GPU 0: 2 retired pages pending", command="nvidia-smi -q")],
              "b": [dict(name="discovery", status="skipped", msg="check mode: no active RDMA port yet", command="")]}
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=dest, host_checks=checks, results=[
        dict(test_id=plan["tests"][0]["id"], role="server", passed=True, command="rping -s"),
        dict(test_id=plan["tests"][0]["id"], role="client", passed=False, cause="timeout", msg="no answer in 10s",
             command="rping -c")]))
    assert result["passed"] is False
    root = ET.parse(os.path.join(dest, "report.xml")).getroot()
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "2", "1")
    suites = dict((suite.get("name"), suite) for suite in root)
    assert sorted(suites) == ["a", "b", "pairs"]
    pair = suites["pairs"].find("testcase")
    assert pair.get("name") == plan["tests"][0]["id"] and pair.find("failure").get("type") == "timeout"
    assert pair.find("failure").text == "client side: no answer in 10s"
    gpu = [case for case in suites["a"] if case.get("name") == "gpu_health"][0]
    assert gpu.find("failure").get("message") == "GPU 0: 2 retired pages pending" and gpu.find("system-out").text == "nvidia-smi -q"
    discovery = [case for case in suites["a"] if case.get("name") == "discovery"][0]
    assert discovery.find("failure") is None and discovery.find("system-out").text == "rdma_facts"
    assert suites["b"].find("testcase").find("skipped").get("message") == "check mode: no active RDMA port yet"


def test_the_written_report_names_the_part_from_the_matrix_and_the_window_counters(tmp_path):
    """Four hosts, every pair of c failed, c's traffic check with receive physical errors: the report's findings
    name c's cable (matrix and counters: medium confidence), its JUnit a failed finding case."""
    hosts = dict((name, dict(ports=[dict(device="mlx5_0", port=1, rate_gbps=100.0, ipv4="10.99.0.%d" % n)]))
                 for n, name in enumerate("abcd", 1))
    plan = run_module(validation_report.main, dict(mode="plan", hosts=hosts, tests=["ib_write_bw"]))["plan"]
    results = []
    for test in plan["tests"]:
        failed = "c" in (test["server"], test["client"])
        results.append(dict(test_id=test["id"], role="server", passed=True, command="ib_write_bw"))
        results.append(dict(test_id=test["id"], role="client", passed=not failed, cause="timeout" if failed else None,
                            msg="stopped at 60 s" if failed else "", command="ib_write_bw",
                            summary=None if failed else dict(bytes=65536, value=91.2, unit="Gb/s")))
    checks = dict((name, [dict(name="traffic ens1f0np0", status="passed", msg="", command="", netdev="ens1f0np0",
                               device="mlx5_0", **({"nic": {"rx_crc_errors_phy": 912}} if name == "c" else {}))])
                  for name in hosts)
    dest = str(tmp_path / "report")
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=dest, results=results,
                                                     host_checks=checks))
    report = result["report"]
    assert [(f["part"], f["id"], f["confidence"]) for f in report["findings"]] == [("cable", "c/mlx5_0", "medium")]
    assert report["location"]["suspects"] == ["c/mlx5_0"] and report["location"]["pairs"] == 6
    assert 'name="cable c/mlx5_0"' in open(os.path.join(dest, "report.xml")).read()
    assert run_module(validation_report.main, dict(mode="write", plan=plan, dest=dest, results=results,
                                                   host_checks=checks))["changed"] is False


def test_the_anchor_retests_are_planned_after_the_plan_and_their_outcome_reaches_the_report(tmp_path):
    """mode=retests: c, in every failed pair, against an anchor on a port after the plan's, its test named apart
    (retest:); mode=write with that plan and its outcome in the results: a failed retest confirms c's cable."""
    hosts = dict((name, dict(ports=[dict(device="mlx5_0", port=1, rate_gbps=100.0, ipv4="10.99.0.%d" % n)]))
                 for n, name in enumerate("abcd", 1))
    plan = run_module(validation_report.main, dict(mode="plan", hosts=hosts, tests=["rping", "ib_write_bw"]))["plan"]
    results = []
    for test in plan["tests"]:
        failed = "c" in (test["server"], test["client"])
        results.append(dict(test_id=test["id"], role="server", passed=True, command=test["tool"]))
        results.append(dict(test_id=test["id"], role="client", passed=not failed, cause="timeout" if failed else None,
                            msg="stopped at 60 s" if failed else "", command=test["tool"],
                            summary=None if failed or test["tool"] == "rping" else dict(bytes=65536, value=91.2, unit="Gb/s")))
    args = dict(mode="retests", plan=plan, results=results, hosts=hosts, tests=["rping", "ib_write_bw"])
    retest = run_module(validation_report.main, args)
    assert retest["changed"] is False and len(retest["retests"]) == 1, retest
    (planned,) = retest["plan"]["tests"]
    assert planned["id"].startswith("retest:ib_write_bw:") and planned["client"] == "c" and planned["server"] != "c"
    assert planned["port"] == plan["port_last"] + 1 and retest["plan"]["parts"]["c"][0]["role"] == "client"
    assert retest["retests"][0] == dict(suspect="c/mlx5_0", anchor="%s/mlx5_0" % planned["server"], test_id=planned["id"])
    again = results + [dict(test_id=planned["id"], role="server", passed=True, command="ib_write_bw"),
                       dict(test_id=planned["id"], role="client", passed=False, cause="timeout", msg="stopped at 60 s",
                            command="ib_write_bw")]
    checks = dict((name, [dict(name="traffic ens1f0np0", status="passed", msg="", command="", netdev="ens1f0np0",
                               device="mlx5_0", **({"nic": {"rx_crc_errors_phy": 912}} if name == "c" else {}))])
                  for name in hosts)
    report = run_module(validation_report.main, dict(mode="write", plan=plan, retest_plan=retest["plan"], results=again,
                                                     host_checks=checks, dest=str(tmp_path / "r")))["report"]
    assert report["location"]["retests"] == [dict(suspect="c/mlx5_0", anchor=retest["retests"][0]["anchor"],
                                                  status="failed", msg="client side: stopped at 60 s")]
    assert report["findings"][0]["id"] == "c/mlx5_0" and "failed too" in report["findings"][0]["evidence"][0]["text"]
    # The role hands over the retest task's registered result: its plan is the same input; a planning that failed
    # leaves c a suspect and says why in the note; a skipped one is no plan.
    registered = dict(retest, changed=False)
    same = run_module(validation_report.main, dict(mode="write", plan=plan, retest_plan=registered, results=again,
                                                   host_checks=checks, dest=str(tmp_path / "r2")))["report"]
    assert same["findings"] == report["findings"] and same["location"] == report["location"]
    refused = dict(failed=True, msg="the plan's hosts are not the results' hosts")
    unplanned = run_module(validation_report.main, dict(mode="write", plan=plan, retest_plan=refused, results=results,
                                                        host_checks=checks, dest=str(tmp_path / "r3")))["report"]
    assert unplanned["location"]["retests"] == [] and unplanned["location"]["suspects"] == ["c/mlx5_0"]
    assert unplanned["location"]["note"].endswith("(the retests could not be planned: the plan's hosts are not the "
                                                  "results' hosts)"), unplanned["location"]
    skipped = run_module(validation_report.main, dict(mode="write", plan=plan, retest_plan=dict(skipped=True),
                                                      results=results, host_checks=checks, dest=str(tmp_path / "r4")))
    assert "could not be planned" not in skipped["report"]["location"]["note"]
    # No suspect, nothing to retest; a plan without rounds.
    clean = [dict(r, passed=True, cause=None) for r in results]
    assert run_module(validation_report.main, dict(args, results=clean))["plan"]["rounds"] == []


def test_fail_on_error_fails_once_the_report_is_written_naming_what_failed(tmp_path):
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = str(tmp_path / "report")
    files = ", ".join(os.path.join(dest, name) for name in ("report.json", "report.html", "report.xml"))
    checks = {"a": [dict(name="gpu_health", status="failed", msg="GPU 0: 2 retired pages pending", command="nvidia-smi")]}
    results = [dict(test_id=plan["tests"][0]["id"], role="client", passed=False, cause="timeout", msg="no answer",
                    command="rping -c")]
    args = dict(mode="write", plan=plan, dest=dest, host_checks=checks, results=results, fail_on_error=True)
    failed = run_module(validation_report.main, args)
    assert failed["failed"] is True and failed["passed"] is False
    assert failed["msg"] == "Validation failed: 2 failed tests or checks (report %s): %s, a gpu_health" % (
        files, plan["tests"][0]["id"])
    with open(os.path.join(dest, "report.json")) as handle:
        assert json.load(handle)["passed"] is False
    # Without it the same outcome is reported, not failed; a passing run says where its report is.
    told = run_module(validation_report.main, dict(args, fail_on_error=False))
    assert not told.get("failed") and told["changed"] is False and told["msg"] == failed["msg"]
    passing = dict(args, host_checks={}, results=[dict(results[0], passed=True)])
    assert run_module(validation_report.main, passing)["msg"] == "Validation passed (report %s)" % files


def test_device_strings_with_control_bytes_or_a_lone_surrogate_make_three_valid_files(tmp_path, monkeypatch):
    """A host's check carrying what a device printed: an LLDP system name with C0 control bytes (set by whatever is
    plugged in) and a lone surrogate (a name a reader decoded with surrogateescape; Ansible refuses one in module
    arguments, so it is put into the check where the module reads them). report.xml was not well-formed, and
    report.html failed to encode after report.json had been replaced. Now all three are written and valid, the
    control bytes shown as their control pictures."""
    import xml.etree.ElementTree as ET  # pylint: disable=import-outside-toplevel
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = tmp_path / "report"
    name = "leaf\x01\x1b[31m7"
    checks = {"a": [dict(name="lldp %s" % name, status="failed", msg="neighbour %s on swp1" % name, command="lldpcli")]}
    real = validation_report._checks.host_entries

    def with_surrogate(host_checks):
        entries = real(host_checks)
        entries["a"]["checks"][0]["msg"] += " \udcff"
        return entries
    monkeypatch.setattr(validation_report._checks, "host_entries", with_surrogate)
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=str(dest), results=[],
                                                     host_checks=checks))
    assert result.get("failed") is not True or "Validation failed" in result["msg"], result["msg"]
    tree = ET.parse(str(dest / "report.xml"))  # well-formed
    messages = [f.get("message") for f in tree.iter("failure")]
    assert "neighbour leaf\u2401\u241b[31m7 on swp1 \ufffd" in messages, messages
    report = json.loads((dest / "report.json").read_text(encoding="utf-8"))
    check = report["hosts"]["a"]["checks"][0]
    assert check["msg"] == "neighbour leaf\u2401\u241b[31m7 on swp1 \ufffd" and check["name"] == "lldp leaf\u2401\u241b[31m7"
    assert "leaf\u2401\u241b[31m7" in (dest / "report.html").read_text(encoding="utf-8")


def test_the_three_report_files_are_replaced_together_or_not_at_all(tmp_path, monkeypatch):
    """A write that fails before the last file is written (here: the disk refuses report.xml's bytes) leaves all three
    of the earlier run as they were, never a new report.json beside an old report.html."""
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = tmp_path / "report"
    args = dict(mode="write", plan=plan, dest=str(dest), results=[])
    assert run_module(validation_report.main, args)["changed"] is True
    before = dict((name, (dest / name).read_bytes()) for name in ("report.json", "report.html", "report.xml"))
    real = os.fsync
    seen = []

    def failing_fsync(fd):
        seen.append(fd)
        if len(seen) == 3:
            raise OSError(28, "No space left on device")
        return real(fd)
    monkeypatch.setattr(os, "fsync", failing_fsync)
    failed = run_module(validation_report.main, dict(args, results=[
        dict(test_id="rping:a->b", role="client", passed=False, cause="unreachable", command="rping -c")]))
    monkeypatch.setattr(os, "fsync", real)
    assert failed["failed"] is True and "No space left on device" in failed["msg"], failed
    assert dict((name, (dest / name).read_bytes()) for name in before) == before
    assert sorted(os.listdir(str(dest))) == ["report.html", "report.json", "report.xml"], "no temporary file left"


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a folder to another user")
def test_a_report_folder_another_user_makes_after_the_check_is_refused(tmp_path, monkeypatch):
    """The folder was checked when the task started and made only when the files were written: one another user
    made in between (here: while the report renders) was written into. Now it is made, then checked as it is, then
    written through an open handle of it."""
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping"]))["plan"]
    dest = tmp_path / "report"
    real = validation_report._junit.render_junit

    def meanwhile(report):
        dest.mkdir()
        os.chown(str(dest), 4242, 4242)
        return real(report)
    monkeypatch.setattr(validation_report._junit, "render_junit", meanwhile)
    result = run_module(validation_report.main, dict(mode="write", plan=plan, dest=str(dest), results=[]))
    assert result["failed"] is True and "the report's folder cannot be used, nothing was written" in result["msg"]
    assert "owned by uid 4242" in result["msg"] and os.listdir(str(dest)) == []


def test_a_launched_plan_gives_each_host_its_part_and_the_wait_for_its_end():
    started = time.time()
    planned = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["ib_write_bw"], launch_margin=0,
                                                      clocks=dict(a=dict(host_time=started + 0.2, controller_time=started),
                                                                  b=dict(host_time=started, controller_time=started))))
    plan = planned["plan"]
    assert plan["execution"] == "launch" and plan["assignments"] == [] and sorted(plan["parts"]) == ["a", "b"]
    assert [s["role"] for s in plan["parts"]["a"]] == ["server"] and plan["parts"]["b"][0]["args"]["server"] == "10.99.0.1"
    assert started - 0.01 <= plan["launch"]["t0"] <= time.time() + 0.01 and plan["launch"]["spread"] == 0.2
    # The wait ends at the controller's time given; a time more than a day ahead is refused; check mode waits not.
    waited = run_module(validation_report.main, dict(mode="wait", until=time.time() + 0.3))
    assert 0.2 <= waited["waited"] <= 0.4 and waited["changed"] is False
    assert run_module(validation_report.main, dict(mode="wait", until=time.time() + 90000))["failed"] is True
    assert run_module(validation_report.main, dict(mode="wait", until=time.time() + 60), check_mode=True)["waited"] == 0
    # A host whose clock is off by more than the bound: refused by name, before anything runs.
    refused = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, clock_max_offset=5,
                                                      clocks=dict(a=dict(host_time=started + 30, controller_time=started))))
    assert refused["failed"] and "the clocks of a are off" in refused["msg"]
    rounds = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, execution="rounds"))["plan"]
    assert rounds["execution"] == "rounds" and len(rounds["assignments"]) == 2 and "parts" not in rounds


def test_a_play_that_holds_part_of_the_cabled_fleet_is_refused_or_planned_within_it_when_told(tmp_path):
    """A job slice (AWX cuts the inventory to the slice) or a --limit: the cabling plan names four hosts and the play
    holds two. Refused before any test is planned, with the counts and the hosts it lacks; planned within the two
    with partial=plan, the plan and the report saying which hosts were left out. A host of the plan that is in the
    play but unreachable (ansible_play_hosts_all, not the hosts that answered) is no slice; a plan of another fleet
    (none of its hosts in the play) is planned as it is."""
    cabling = dict((host, {"enp1s0": dict(switch="leaf1", port="swp%d" % n)}) for n, host in enumerate("abcd", 1))
    refused = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, cabling=cabling, play_hosts=["a", "b"]))
    assert refused["failed"] is True and "plan" not in refused
    assert refused["msg"].startswith("this play holds 2 of the 4 hosts the cabling plan (validate_cabling) names; "
                                     "c, d are not in it (a job slice or --limit?)")
    assert "nothing was run" in refused["msg"] and "validate_partial: plan" in refused["msg"]
    # play_hosts omitted: the hosts given are the play's.
    assert run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, cabling=cabling))["failed"] is True
    plan = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, cabling=cabling, play_hosts=["a", "b"],
                                                   partial="plan", tests=["ib_write_bw"], min_bw_gbps=0.01))["plan"]
    assert plan["partial"] == dict(planned=4, held=2, missing=["c", "d"])
    assert [t["id"] for t in plan["tests"]] == ["ib_write_bw:a->b"]
    # c and d unreachable: still in the play (ansible_play_hosts_all), the whole fleet.
    whole = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, cabling=cabling, play_hosts=list("abcd")))
    assert "partial" not in whole["plan"] and not whole.get("failed")
    other = dict((host, {"enp1s0": dict(switch="leaf9", port="swp1")}) for host in ("x1", "x2"))
    assert "partial" not in run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, cabling=other))["plan"]
    # The report of the part says so, in report.json and on the page.
    dest = str(tmp_path / "report")
    written = run_module(validation_report.main, dict(mode="write", plan=plan, dest=dest, cabling=cabling, results=[]))
    assert written["report"]["partial"] == dict(planned=4, held=2, missing=["c", "d"])
    page = open(os.path.join(dest, "report.html")).read()
    assert "A part of the fleet: 2 of the 4 hosts the cabling plan names; not in this run: c, d" in page
    jsonschema = pytest.importorskip("jsonschema")
    schema_path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "schemas",
                               "validation-report.schema.json")
    with open(schema_path) as handle:
        schema = json.load(handle)
    with open(os.path.join(dest, "report.json")) as handle:
        written_json = json.load(handle)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(written_json)) == []
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(dict(written_json, partial=dict(planned=4)))) != []
