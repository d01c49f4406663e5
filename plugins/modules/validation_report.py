#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validation_report
short_description: Plan RDMA pair tests in parallel rounds and write the validation report (JSON and HTML)
version_added: 1.0.0
description:
  - With O(mode=plan), turns the discovered hosts into pair tests (the given O(pairs) or every pair of
    hosts with an active RDMA port), gives each test its own port from O(port_base), computes its
    threshold (per-host inventory value, else O(min_bw_gbps), else O(bw_fraction) of the slower link)
    and groups the tests in rounds where no host takes part twice, so each round runs in parallel.
    Nothing is changed.
  - With O(mode=write), merges the server and client outcomes into the planned tests and writes
    C(report.json) (its format published as a JSON Schema, C(docs/schemas/validation-report.schema.json) in the
    collection), a self-contained C(report.html) (pass/fail per host and pair, the pair matrix with the findings on
    it, a bandwidth-versus-size plot per test, the exact command behind every number) and C(report.xml) (JUnit XML
    for CI systems, a test case per pair test, per host check and per finding) into O(dest). The three are replaced
    together or not at all (each written under a fresh name and flushed before the first is renamed), and every
    string of the report - what devices and hosts printed, an LLDP system name among them - is made fit for all
    three first (a C0 control character shown as its Unicode control picture, a lone surrogate as U+FFFD).
  - The report's C(findings) name the part to replace where the run shows one - the pair matrix (an endpoint in far
    more bad pairs than chance explains) joined with the counters the traffic window read on the same ports (the
    C(nic) deltas of the C(traffic <netdev>) checks) - each with its evidence, a confidence (low on one kind of
    evidence, which asks for an inspection only) and the action. C(location) says what the matrix showed and
    why it may not name a part (two hosts cannot tell which end of a failing pair is at fault).
  - With O(mode=retests), plans the anchor retests of a run's pair matrix (O(plan) and O(results)) - each suspect
    endpoint, one in far more bad pairs than chance explains, against an anchor, a host that passed with others, with
    the first bandwidth test of O(tests), in rounds where no host takes part twice, on ports after the plan's - as a
    plan like O(mode=plan) returns, its test ids starting with C(retest). Nothing without three hosts or a suspect. Its outcomes,
    passed to O(mode=write) as O(retest_plan) and in O(results), clear a suspect whose retest passed (transient) and
    confirm one whose retest failed.
  - Usually runs once on the controller, delegated to C(localhost) with C(run_once).
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs where the report is wanted, usually the controller.
    support: full
    platforms: posix
options:
  mode:
    description:
      - V(plan) computes the test plan; V(retests) the anchor retests of a run's suspects; V(write) writes the report.
      - V(wait) waits on the controller until O(until), a launched plan's C(launch.expected) of RV(plan) (when its parts
        are expected to have ended), so that the hosts' launched parts are collected once they are done, a poll each.
    type: str
    choices: [plan, retests, write, wait]
    required: true
  until:
    description: V(wait) - the controller's time (seconds since the epoch) to wait for; at most a day ahead.
    type: float
  hosts:
    description:
      - V(plan) - inventory name to C({ports, min_bw_gbps, max_lat_usec, device}); C(ports) as returned by
        M(roce.fabric.rdma_facts) (the first port is used).
      - V(write) - inventory name to host checks C({status, msg, checks}) shown in the host table.
    type: dict
    default: {}
  host_checks:
    description:
      - V(write) - inventory name to the list of its check records (C({name, status, msg, command, ...})); each host's
        status is judged from them (failed when one failed, passed when one passed, else skipped) and the host is
        added to O(hosts).
    type: dict
    default: {}
  switches:
    description:
      - V(write) - switch inventory name to its C(qos switch) check record (what roce.fabric.roce_switch's
        C(tasks_from=verify) sets as C(roce_switch_check)), or null for a switch that was not read (left out).
    type: dict
    default: {}
  tests:
    description: Pair tests to plan, in order (V(rping), V(ib_write_bw), V(ib_read_bw), V(ib_send_bw), V(ib_write_lat),
      V(ib_read_lat), V(ib_send_lat)).
    type: list
    elements: str
    default: [rping, ib_write_bw]
  pairs:
    description:
      - Explicit pairs (C(server), C(client) inventory names, optional C(server_address) to connect to instead of the
        server's discovered RoCE address). Empty means the pairs O(schedule) picks.
    type: list
    elements: dict
    default: []
  schedule:
    description:
      - V(plan), without O(pairs) - which pairs meet. V(full) is every pair (the full matrix, N-1 rounds for N hosts).
        V(sparse) is a first pass of a few rounds in which every host meets at least three partners, every pair of
        leaves (the switches O(cabling) names for each host) is crossed by a test, and no pair meets twice - at most
        2 x ceil(log2 N) + 2 rounds (13 for 2,048 hosts by default); the anchor retests follow as with the full
        matrix. V(auto) is the full matrix up to O(schedule_full_max) hosts and the sparse pass above.
      - C(schedule) of RV(plan) says which was used, its rounds, the fewest partners a host met and any pair of leaves the
        bound left uncrossed.
    type: str
    choices: [auto, full, sparse]
    default: auto
  schedule_full_max:
    description: V(plan) - the most hosts O(schedule=auto) gives the full matrix.
    type: int
    default: 32
  execution:
    description:
      - V(plan), V(retests) - how the tests run. V(launch) gives each host its whole part once (C(parts) of RV(plan), run by
        M(roce.fabric.pair_schedule) as one asynchronous task per host, each slot begun as soon as both its sides are
        ready, within deadlines counted from C(launch.t0) of RV(plan)).
        V(rounds) gives the round-by-round C(assignments) of RV(plan) a play runs one round after the other.
    type: str
    choices: [launch, rounds]
    default: launch
  clocks:
    description:
      - V(plan), V(retests) with O(execution=launch) - each host's clock beside the controller's, C({host_time,
        controller_time}) by inventory name (M(roce.fabric.run_lock)'s RV(roce.fabric.run_lock#module:host_time) and
        RV(roce.fabric.run_lock#module:controller_time)). A host further off than O(clock_max_offset) is refused by name;
        the slots' deadlines are widened by the spread of the others; the spread of the readings on the controller
        (what a module run on every host takes at the play's forks) sets the lead the launch is given before the
        first slot's deadline (C(launch.lead) of RV(plan)).
    type: dict
    default: {}
  clock_max_offset:
    description: V(plan), V(retests) - the most seconds a host's clock may be off the controller's.
    type: float
    default: 10
  slot_margin:
    description: V(plan), V(retests) - seconds added to each slot's worst case (its deadline), before widening.
    type: float
    default: 3
  launch_margin:
    description:
      - V(plan), V(retests) - seconds added to the launch's own time in the lead before the first slot's deadline.
      - A part that begins after its first slot's latest start leaves that test C(late_start); a generous margin costs
        nothing while every host is present (no slot waits for its deadline), only a lost host's partners wait longer.
    type: float
    default: 60
  poll_delay:
    description: V(plan), V(retests) - seconds between the collection's polls of a launched part (C(launch.poll_delay) of RV(plan)).
    type: float
    default: 10
  schedule_rounds:
    description:
      - V(plan) - the sparse pass's rounds (default ceil(log2 N) + 2, at least 3); more are added up to the bound while
        a pair of leaves is uncrossed or a host has met fewer than three partners.
    type: int
  port_base:
    description: First port handed out; test N gets O(port_base) + N - 1.
    type: int
    default: 18515
  bw_fraction:
    description: Bandwidth threshold as a fraction of the slower link's rate.
    type: float
    default: 0.9
  min_bw_gbps:
    description: Absolute bandwidth threshold (Gb/s) for every pair, instead of O(bw_fraction).
    type: float
  max_lat_usec:
    description: Latency threshold (usec) for latency tests.
    type: float
  perftest:
    description:
      - V(plan) - what every pair test shares, from which the plan gives each side of each test its
        roce.fabric.perftest arguments (C(args) in the C(assignments) of RV(plan)).
    type: dict
    default: {}
    suboptions:
      rdma_cm:
        description: Connect through RDMA-CM (the GID is then the CM's; none is given).
        type: bool
        default: true
      tos:
        description:
          - The ToS of perftest's traffic, 0-255 (rping has no such option); none or empty leaves it to the tool.
        type: raw
      size:
        description: Message size (bytes) of the bandwidth tests when not every size is run.
        type: int
        default: 65536
      all_sizes:
        description: Run the bandwidth and latency tests over every message size.
        type: bool
        default: false
      duration:
        description: Seconds a bandwidth test runs when not every size is run.
        type: int
        default: 5
      rping_count:
        description: rping's iterations.
        type: int
        default: 10
      timeout:
        description: Seconds a test may take.
        type: int
        default: 60
      run_dir:
        description: The tests' run folder on the hosts.
        type: str
        default: /var/tmp/roce-fabric-validate/perftest
      tools_dir:
        description: A folder holding the tools, instead of the PATH; empty for the PATH.
        type: str
        default: ""
  plan:
    description: V(write), V(retests) - the plan returned by O(mode=plan).
    type: dict
  retest_plan:
    description:
      - V(write) - the plan returned by O(mode=retests), when its retests ran; their outcomes are in O(results).
      - Or that task's whole registered result - its plan is taken from it, and when the planning failed its message
        goes into the report's C(location.note) beside the suspects left unretested; a skipped one is no plan.
    type: dict
  cabling:
    description:
      - V(plan) - the leaves of each host, for O(schedule=sparse) to cross every pair of them.
      - V(write) - the site's cabling plan, by inventory host, by netdev, C(switch) and C(port) (as LLDP names them);
        the fault location compares each
        tested port's LLDP neighbour (the C(lldp) of its C(traffic <netdev>) check) with it, a port plugged in
        elsewhere being a miswire. Without a plan, the neighbours are checked for the rail's alignment.
      - V(plan) - the fleet the validation is of; a play that holds some of its hosts but not all is a part of it (see
        O(partial)).
    type: dict
    default: {}
  play_hosts:
    description:
      - V(plan) - every host the play targets (C(ansible_play_hosts_all), failed and unreachable ones too), held
        against O(cabling)'s hosts to tell a part of the fleet (a job slice, a C(--limit)) from the whole.
      - Omitted, the hosts of O(hosts).
    type: list
    elements: str
  partial:
    description:
      - V(plan) - what a play that holds some but not all of O(cabling)'s hosts gets. V(refuse) fails the plan with the
        counts and the hosts it lacks, before any test runs (an AWX or Automation Controller job slice, whose
        inventory is cut to the slice, is such a play). V(plan) plans the pair tests within the play's hosts and the
        plan's and report's C(partial) say so (C(planned), C(held), C(missing)).
      - A play that holds none of O(cabling)'s hosts is not a part of that fleet and is planned as it is.
    type: str
    choices: [refuse, plan]
    default: refuse
  switch_counters:
    description:
      - V(write) - the switches' port counters read before and after the traffic, C({before, after}), each by switch
        (named as O(cabling) and LLDP name it) C({ports}) (the RV(roce.fabric.onyx_roce#module:counters) or
        RV(roce.fabric.nvue_roce#module:counters) of state V(gathered)) or C({error}) when it could not be read.
      - A tested port's switch port (from O(cabling), else its LLDP neighbour) that counted receive errors, or transmit
        errors or discards, during the traffic is evidence for the cable or the switch port; the report's
        C(location.switches) says which switches were read and why the others were not.
    type: dict
    default: {}
  loss_rate:
    description:
      - V(write) - the share of a tested port's RDMA packets that its transport lost in the traffic window (packets
        that arrived out of sequence, sequence-error NAKs, repeated requests; the C(rdma) counters of its
        C(traffic <netdev>) check) from which the loss is evidence for the cable or optic of that direction; at least
        10 such events always.
      - A lossless fabric (PFC) drops nothing, hence the small default. Raise it where the fabric is not lossless, or
        for software RDMA devices (Soft-RoCE), which drop under load.
    type: float
    default: 0.0001
  addresses:
    description:
      - V(write) - each inventory host's addresses, a list by host (the
        P(roce.fabric.validate_host_addresses#filter) filter makes it from the hosts' facts). NCCL's RAS names a rank
        missing from a hung collective by the address of its host; the fault location names the inventory host that
        has it (a rank on an address no host has keeps the address). A rank missing while its host's other ranks
        answer names that GPU; every rank of a host missing names the host.
    type: dict
    default: {}
  results:
    description:
      - V(write), V(retests) - server and client outcomes, each C({test_id, role, passed, cause, msg, command, summary,
        result}).
    type: list
    elements: dict
    default: []
  dest:
    description:
      - V(write) - directory for C(report.json), C(report.html) and C(report.xml) (created when missing, mode 0755).
      - It must be a real directory of the user the task runs as that no one else may write to, under directories no
        other user can swap (as roce.fabric.private_dir checks them); one another user made first in a shared
        C(/var/tmp), or a link, is refused and nothing is written. It is checked when the task starts, and again as it
        is once made, through the open handle the files are written by.
    type: path
  title:
    description: Title of the report.
    type: str
    default: RoCE fabric validation
  fail_on_error:
    description: V(write) - fail the task, once the report is written, when a test or host check failed.
    type: bool
    default: false
  generated:
    description:
      - V(write) - the record of when and how the report was made, stored as the report's C(generated) field and
        shown under its title - C(time) (UTC), C(inventory), C(play), C(command) (the playbook, inventory, limit, tags
        and check mode; never extra variables, which may hold secrets) and C(ansible_version); the module adds
        C(collection_version), the version of the collection it belongs to.
      - When the task does not give it, the module's action plugin fills it in from the run.
      - The report file is rewritten only when its outcome (everything but C(generated)) changed, so running the
        same validation twice changes nothing and the file keeps the record of when that outcome was first
        written.
    type: dict
notes:
  - "Writing the same outcome twice changes nothing: O(generated) alone never rewrites the report."
seealso:
  - module: roce.fabric.perftest
  - module: roce.fabric.rdma_facts
"""

EXAMPLES = r"""
- name: Plan the full ib_write_bw matrix of the play's hosts
  roce.fabric.validation_report:
    mode: plan
    tests: [rping, ib_write_bw]
    hosts:
      node1: {ports: [{device: mlx5_0, port: 1, rate_gbps: 100, ipv4: 10.10.11.11, gid_index: 3}]}
      node2: {ports: [{device: mlx5_0, port: 1, rate_gbps: 100, ipv4: 10.10.11.12, gid_index: 3}]}
  delegate_to: localhost
  run_once: true
  register: plan

- name: Write the report
  roce.fabric.validation_report:
    mode: write
    plan: "{{ plan.plan }}"
    results: "{{ collected_results }}"
    dest: /var/tmp/roce-validation
  delegate_to: localhost
  run_once: true
  vars:
    collected_results: []

- name: Plan the anchor retests of the run's suspects (run as more rounds, then passed to mode=write)
  roce.fabric.validation_report:
    mode: retests
    plan: "{{ validate_plan.plan }}"
    results: "{{ ansible_play_hosts | map('extract', hostvars, 'validate_side_results') | flatten }}"
    hosts: "{{ discovered }}"
    tests: [ib_write_bw]
  delegate_to: localhost
  run_once: true
  register: validate_retest_plan
"""

RETURN = r"""
plan:
  description: V(plan) - C(tests), C(rounds) (test ids per round), C(assignments) (per round, host to
    C({role, test, args}), C(args) the perftest arguments of its side), C(port_first), C(port_last),
    C(hosts_without_rdma) and C(schedule) (C(kind) - V(full), V(sparse) or V(pairs) for O(pairs) - C(pair_rounds),
    C(pairs), C(fewest_partners), C(uncrossed) - pairs of leaves no test crossed), C(execution). With
    O(execution=launch), C(assignments) is empty and C(parts) gives each host its slots (M(roce.fabric.pair_schedule)'s
    O(roce.fabric.pair_schedule#module:slots)), C(launch) the times - C(t0), C(lead), C(slots) (C(start), C(length)),
    C(duration), C(expected) (when the parts are expected to have ended), C(ends) (their worst case), C(retry_delay),
    C(poll_delay), C(poll_retries), C(async_timeout), the clocks' C(offsets), C(spread) and C(margin). With
    O(partial=plan) and a part of the fleet, C(partial) (C(planned), C(held), C(missing)). V(retests) - the
    anchor retests in the same shape (none - empty C(tests) and C(rounds)).
  returned: mode is plan or mode is retests
  type: dict
waited:
  description: V(wait) - the seconds waited.
  returned: mode is wait
  type: float
retests:
  description: V(retests) - each retest, C({suspect, anchor, test_id}) (the endpoints as C(host/device)).
  returned: mode is retests
  type: list
  elements: dict
report:
  description: V(write) - the report as written to C(report.json) (C(title), C(generated), C(summary), C(passed),
    C(hosts), C(tests), C(findings) (each C(part), C(id), C(confidence), C(evidence), C(action), C(replace),
    C(alternatives)) and C(location) (C(suspects), C(transient) - cleared by a retest that passed - C(retests),
    C(switches) - C(read) and C(unread) with why - C(note), and C(left_out) with C(left_out_note) - the failed tests,
    by cause, that say nothing of the fabric (a slot reached too late, a lost part, a port another process held, a
    tool not installed) and are no evidence for the matrix), and with O(cabling) C(groups) (each host's leaves,
    by which C(report.html) aggregates the pair matrix, a fleet's too large to draw), and C(partial) when the plan was
    of a part of the fleet (O(partial=plan)). Above 512 tests C(report.html) lists and plots
    only the tests that did not pass and counts the rest by round; C(report.json) holds them all.
  returned: mode is write
  type: dict
passed:
  description: V(write) - True when no test or host check failed.
  returned: mode is write
  type: bool
files:
  description: V(write) - paths of the report files.
  returned: mode is write
  type: list
  elements: str
commands:
  description: V(write) - the report files written (in check mode, that a real run writes); V(plan) writes nothing.
  returned: always
  type: list
  elements: str
msg:
  description: V(write) - the verdict, the report's files and, when something failed, what failed.
  returned: mode is write
  type: str
  sample: "Validation failed: 1 failed tests or checks (report /var/tmp/v/report.json, /var/tmp/v/report.html, /var/tmp/v/report.xml): t3"
failures:
  description: V(write) - what failed, for a message - the failed test ids, then C(host check) for each failed check.
  returned: mode is write
  type: list
  elements: str
"""

import json
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.files import write_together
from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, check_usable_dir
from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.common.version import COLLECTION_VERSION
from ansible_collections.roce.fabric.plugins.module_utils.validate import checks as _checks
from ansible_collections.roce.fabric.plugins.module_utils.validate import findings as _findings
from ansible_collections.roce.fabric.plugins.module_utils.validate import junit as _junit
from ansible_collections.roce.fabric.plugins.module_utils.validate import plan as _validate


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def planned(run, tools, pairs, port_base, id_prefix="", what="the plan needs"):
    """The pair tests of ``tools`` over ``pairs`` (every pair when empty) from ``port_base``, the inputs checked first;
    the module fails with the reason when they cannot be planned."""
    p = run.module.params
    if p["schedule_full_max"] < 2:
        run.fail("schedule_full_max must be 2 or more, got %d" % p["schedule_full_max"])
    if p["schedule_rounds"] is not None and p["schedule_rounds"] < 3:
        run.fail("schedule_rounds must be 3 or more (a host needs three partners), got %d" % p["schedule_rounds"])
    launch = None
    if p["execution"] == "launch":
        if p["clock_max_offset"] <= 0 or p["slot_margin"] < 0 or p["launch_margin"] < 0 or p["poll_delay"] <= 0:
            run.fail("clock_max_offset and poll_delay must be above 0, slot_margin and launch_margin not negative")
        launch = dict(now=time.time(), clocks=p["clocks"], max_offset=p["clock_max_offset"], margin=p["slot_margin"],
                      launch_margin=p["launch_margin"], poll_delay=p["poll_delay"])
    if not 1 <= p["port_base"] <= 65000:
        run.fail("port_base must be between 1 and 65000, got %d" % p["port_base"])
    if not 0 < p["bw_fraction"] <= 1:
        run.fail("bw_fraction must be above 0 and at most 1, got %s" % p["bw_fraction"])
    tos = p["perftest"].get("tos")
    if tos is not None and str(tos).strip() != "":
        if not re.match(r"^[0-9]{1,3}$", str(tos).strip()) or int(str(tos).strip()) > 255:
            run.fail("perftest.tos must be a ToS of 0-255 (or empty for none), got %r" % (tos,))
    try:
        result = _validate.plan(p["hosts"], tools, pairs=pairs, port_base=port_base, bw_fraction=p["bw_fraction"],
                                min_bw_gbps=p["min_bw_gbps"], max_lat_usec=p["max_lat_usec"], perftest=p["perftest"],
                                id_prefix=id_prefix, schedule=p["schedule"], groups=_validate.cabling_groups(p["cabling"]),
                                full_max=p["schedule_full_max"], sparse=p["schedule_rounds"], launch=launch)
    except _validate.PlanError as exc:
        run.fail(str(exc) if not id_prefix else "the anchor retests could not be planned: %s" % exc)
    if result["port_last"] > 65535:
        run.fail("%s ports up to %d: lower port_base" % (what, result["port_last"]))
    return result


def plan_tests(run):
    p = run.module.params
    play_hosts = p["play_hosts"] if p["play_hosts"] is not None else list(p["hosts"])
    part = _validate.part_of_fleet(p["cabling"], play_hosts)
    if part and p["partial"] == "refuse":
        run.fail(_validate.partial_refusal(part))
    result = planned(run, p["tests"], p["pairs"], p["port_base"])
    if part:
        result["partial"] = part
    run.update(plan=result)


def plan_retests(run):
    p = run.module.params
    pairs = _findings.retest_pairs(_validate.merge_results(p["plan"], p["results"]))
    tools = [tool for tool in p["tests"] if tool in _findings.PAIR_BW_TOOLS]
    tools = [tool for tool in tools if tool != "rping"][:1] or tools[:1]
    after = int(p["plan"].get("port_last", p["port_base"])) + 1
    if not pairs or not tools:
        # No retest: its ports end where the plan's do (the role's cleanup takes the range up to port_last).
        run.update(plan=dict(tests=[], rounds=[], assignments=[], parts={}, execution=p["execution"],
                             port_first=after - 1, port_last=after - 1, hosts_without_rdma=[]), retests=[])
        return
    result = planned(run, tools, pairs, after, "retest:", "the anchor retests need")
    run.update(plan=result, retests=[dict(suspect=pair["suspect"], anchor=pair["anchor"], test_id=test["id"])
                                     for pair, test in zip(pairs, result["tests"])])


def wait_until(run):
    """mode=wait: sleep on this (the controller's) clock until ``until``; in check mode, nothing is waited for."""
    until = run.module.params["until"]
    now = time.time()
    if until is None or until - now > 86400:
        run.fail("mode=wait needs until, at most a day ahead (got %s)" % until)
    left = max(0.0, until - now) if not run.module.check_mode else 0.0
    time.sleep(left)
    run.update(waited=round(left, 3))


def write_reports(run, dest, encoded):
    try:
        write_together(dest, encoded)
    except PrivateDirError as exc:
        run.fail("the report's folder cannot be used, nothing was written: %s" % exc)


def write_report(run):
    p = run.module.params
    # The report's folder is often in a shared /var/tmp: one another user made first, or planted as a link, or whose
    # parents another user controls, is refused before anything is read or written (as roce.fabric.private_dir).
    try:
        check_usable_dir(p["dest"])
    except PrivateDirError as exc:
        run.fail("the report's folder cannot be used, nothing was written: %s" % exc)
    bad = ["host_checks.%s" % name for name, value in p["host_checks"].items() if not isinstance(value, list)]
    bad += ["switches.%s" % name for name, value in p["switches"].items() if not (value is None or isinstance(value, dict))]
    if bad:
        run.fail("host_checks take a list of check records per host and switches one record or null per switch; not so "
                 "for %s; nothing was written" % ", ".join(sorted(bad)))
    hosts = dict(p["hosts"])
    hosts.update(_checks.host_entries(p["host_checks"]))
    hosts.update(_checks.switch_entries(p["switches"]))
    generated = dict(p["generated"] or {}, collection_version=COLLECTION_VERSION) if p["generated"] is not None else None
    report = _validate.build_report(_validate.merge_results(p["plan"], p["results"]), hosts, title=p["title"],
                                    generated=generated)
    retest_plan, retest_error = _findings.retest_plan_of(p["retest_plan"])
    retested = _validate.merge_results(retest_plan, p["results"]) if retest_plan else []
    if (p["plan"] or {}).get("partial"):
        # A part of the fleet, planned so when told (validate_partial: plan): the report says which part it is not.
        report["partial"] = p["plan"]["partial"]
    if p["cabling"]:
        # Each host's leaves: the page aggregates a fleet's pair matrix by leaf.
        report["groups"] = _validate.cabling_groups(p["cabling"])
    report["findings"], report["location"] = _findings.findings_of(report["tests"], report["hosts"], retested,
                                                                   p["cabling"], p["switch_counters"], retest_error,
                                                                   p["loss_rate"], p["addresses"])
    # What devices and hosts printed (an LLDP system name is whatever is plugged in) made fit for JSON, HTML and XML
    # alike: control characters shown as their pictures, lone surrogates replaced.
    report = _validate.clean_text(report)
    json_path = os.path.join(p["dest"], "report.json")
    html_path = os.path.join(p["dest"], "report.html")
    xml_path = os.path.join(p["dest"], "report.xml")
    before = read(json_path)
    if _validate.same_outcome(before, report):
        # The same outcome as the file's: it keeps the record of when that outcome was first written.
        report["generated"] = json.loads(before).get("generated")
    content = json.dumps(report, indent=2, sort_keys=True) + "\n"
    page = _validate.render_html(report)
    xml = _junit.render_junit(report)
    # All three encoded before any is written: one that cannot be fails the task with the old three in place.
    encoded = [(name, text.encode("utf-8")) for name, text in (("report.json", content), ("report.html", page),
                                                               ("report.xml", xml))]
    run.update(report=report, passed=report["passed"], files=[json_path, html_path, xml_path],
               failures=_checks.failed_names(report))
    try:
        old = json.loads(before)["summary"] if before else None
    except (ValueError, KeyError, TypeError):  # not a report of ours: the whole file is replaced
        old = None
    if before != content or read(html_path) != page or read(xml_path) != xml:
        run.text_diff(json_path, json.dumps(old, sort_keys=True) + "\n" if old else "",
                      json.dumps(report["summary"], sort_keys=True) + "\n")
        # The three are replaced together or not at all, in the folder as it is once made and checked.
        run.mutate("write %s" % ", ".join((json_path, html_path, xml_path)), lambda: write_reports(run, p["dest"], encoded))
    files = ", ".join((json_path, html_path, xml_path))
    if report["passed"]:
        run.update(msg="Validation passed (report %s)" % files)
        return
    msg = "Validation failed: %d failed tests or checks (report %s): %s" % (
        report["summary"]["failed"], files, ", ".join(_checks.failed_names(report)))
    if p["fail_on_error"]:
        # The report is written first: it says what failed.
        run.fail(msg)
    run.update(msg=msg)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", required=True, choices=["plan", "retests", "write", "wait"]),
            until=dict(type="float"),
            hosts=dict(type="dict", default={}),
            host_checks=dict(type="dict", default={}),
            switches=dict(type="dict", default={}),
            tests=dict(type="list", elements="str", default=["rping", "ib_write_bw"]),
            pairs=dict(type="list", elements="dict", default=[]),
            schedule=dict(type="str", choices=["auto", "full", "sparse"], default="auto"),
            schedule_full_max=dict(type="int", default=32),
            schedule_rounds=dict(type="int"),
            execution=dict(type="str", choices=["launch", "rounds"], default="launch"),
            clocks=dict(type="dict", default={}),
            clock_max_offset=dict(type="float", default=10),
            slot_margin=dict(type="float", default=3),
            launch_margin=dict(type="float", default=60),
            poll_delay=dict(type="float", default=10),
            port_base=dict(type="int", default=18515),
            bw_fraction=dict(type="float", default=0.9),
            min_bw_gbps=dict(type="float"),
            max_lat_usec=dict(type="float"),
            perftest=dict(type="dict", default={}, options=dict(
                rdma_cm=dict(type="bool", default=True),
                tos=dict(type="raw"),
                size=dict(type="int", default=65536),
                all_sizes=dict(type="bool", default=False),
                duration=dict(type="int", default=5),
                rping_count=dict(type="int", default=10),
                timeout=dict(type="int", default=60),
                run_dir=dict(type="str", default="/var/tmp/roce-fabric-validate/perftest"),
                tools_dir=dict(type="str", default=""),
            )),
            plan=dict(type="dict"),
            retest_plan=dict(type="dict"),
            cabling=dict(type="dict", default={}),
            play_hosts=dict(type="list", elements="str"),
            partial=dict(type="str", choices=["refuse", "plan"], default="refuse"),
            switch_counters=dict(type="dict", default={}),
            loss_rate=dict(type="float", default=0.0001),
            addresses=dict(type="dict", default={}),
            results=dict(type="list", elements="dict", default=[]),
            dest=dict(type="path"),
            title=dict(type="str", default="RoCE fabric validation"),
            generated=dict(type="dict"),
            fail_on_error=dict(type="bool", default=False),
        ),
        required_if=[("mode", "write", ("plan", "dest")), ("mode", "retests", ("plan",)), ("mode", "wait", ("until",))],
        supports_check_mode=True,
    )
    run = ModuleRun(module)
    run.execute(dict(plan=plan_tests, retests=plan_retests, write=write_report, wait=wait_until)[module.params["mode"]])


if __name__ == "__main__":
    main()
