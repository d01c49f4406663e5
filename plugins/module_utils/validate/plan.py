# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Planning a validation run (pairs, rounds, ports, thresholds) and rendering its report.

PRIVATE to the roce.fabric collection: may change without notice.

Pure functions. A *test* is one tool between a server host and a client host. Tests are
grouped in *rounds*: within a round no host (no NIC port) takes part in two tests, so the
tests of a round run at the same time without competing for a link, and the rounds run one
after the other. Every test gets its own TCP/RDMA-CM port, so a server left over from one
test can never answer another.
"""

from __future__ import annotations

import html
import json
import math
import re

from ansible_collections.roce.fabric.plugins.module_utils.validate.findings import pair_matrix
from ansible_collections.roce.fabric.plugins.module_utils.validate.launch import LaunchError, host_parts
from ansible_collections.roce.fabric.plugins.module_utils.validate.schedule import (circle_rounds, schedule_kind,
                                                                                    sparse_rounds, FULL_MATRIX_MAX)

PAIR_TOOLS = ("rping", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
LAT_TOOLS = ("ib_write_lat", "ib_read_lat", "ib_send_lat")


class PlanError(ValueError):
    """Raised for a plan that cannot be made from the inputs (unknown host in a pair, ...)."""


def _port_of(host):
    ports = host.get("ports") or []
    return ports[0] if ports else None


BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
# The options every pair test of a run shares (the validate role's validate_perftest_*, validate_rping_count,
# validate_timeout, validate_work_dir and validate_tools_dir), with the perftest module's defaults.
PERFTEST_OPTIONS = dict(rdma_cm=True, tos=None, size=65536, all_sizes=False, duration=5, rping_count=10, timeout=60,
                        run_dir="/var/tmp/roce-fabric-validate/perftest", tools_dir="")


def side_args(test, role, options=None):
    """The roce.fabric.perftest arguments of one side of a planned test: only the options that side is given (an
    absent key is the module's default). ``options``: PERFTEST_OPTIONS' keys. Decided here, once: the ToS is set for
    perftest but not rping (which has no such option); with RDMA-CM the GID is the CM's, so none is given; a bandwidth
    test runs one size for a duration unless every size is asked for; rping counts iterations."""
    o = dict(PERFTEST_OPTIONS)
    o.update(dict((key, value) for key, value in (options or {}).items() if key in PERFTEST_OPTIONS))
    tool = test["tool"]
    args = dict(mode=role, tool=tool, port=test["port"], rdma_cm=bool(o["rdma_cm"]), timeout=int(o["timeout"]),
                run_dir=o["run_dir"], fail_on_error=False, all_sizes=bool(o["all_sizes"]) and tool != "rping")
    if o["tos"] is not None and str(o["tos"]).strip() != "" and tool != "rping":
        args["tos"] = int(str(o["tos"]).strip())
    if not args["rdma_cm"] and test.get("gid_index") is not None:
        args["gid_index"] = int(test["gid_index"])
    if tool in BW_TOOLS and not args["all_sizes"]:
        args.update(size=int(o["size"]), duration=int(o["duration"]))
    if tool == "rping":
        args["iterations"] = int(o["rping_count"])
    if o["tools_dir"]:
        args["executable"] = "%s/%s" % (str(o["tools_dir"]).rstrip("/"), tool)
    side = "server" if role == "server" else "client"
    args.update(device=test["%s_device" % side], ib_port=test["%s_ib_port" % side])
    numa = test.get("%s_numa" % side)
    if numa is not None and int(numa) >= 0:
        args["numa_node"] = int(numa)
    if role == "client":
        args["server"] = test["server_address"]
        for key in ("min_bw_gbps", "max_lat_usec"):
            if test.get(key) is not None:
                args[key] = test[key]
    return args


def side_outcome(part, server=None, client=None, collect=None):
    """This host's record of its side of a round's test (``[]`` when it had none): the client's result, or the
    server's collected one (its start's, when it did not start). ``server``, ``client``, ``collect``: the registered
    results of the round's three perftest tasks (skipped ones as Ansible registers them)."""
    role = (part or {}).get("role")
    if role not in ("server", "client"):
        return []
    server, client, collect = server or {}, client or {}, collect or {}
    if role == "client":
        if client.get("skipped") or not client:
            return []
        source = client
    else:
        source = collect if server.get("passed") and not collect.get("skipped") and collect else server
    return [dict(test_id=part["test"]["id"], role=role, passed=bool(source.get("passed")), cause=source.get("cause"),
                 msg=source.get("msg"), command=source.get("command") or server.get("command") or "",
                 summary=source.get("summary"), result=source.get("result"))]


def cabling_groups(cabling):
    """Each host's leaves as the cabling plan (``{host: {netdev: {switch, port}}}``) names them: ``{host: "leafA,
    leafB"}``, the group the sparse schedule crosses with every other (hosts the plan leaves out are one group)."""
    groups = {}
    for host, ports in (cabling or {}).items():
        switches = sorted(set(str(wiring.get("switch")) for wiring in (ports or {}).values()
                              if isinstance(wiring, dict) and wiring.get("switch")))
        if switches:
            groups[host] = ",".join(switches)
    return groups


def part_of_fleet(cabling, play_hosts):
    """What a play holds of the fleet its cabling plan names: ``{planned, held, missing: [host, ...]}`` when the play
    holds some of the plan's hosts but not all (a job slice, a ``--limit``), else None: it holds them all, or none
    (the plan is another fleet's, and says nothing of these hosts). ``play_hosts``: every host the play targets,
    failed or unreachable ones too, so that a host lost on the way is never taken for a slice."""
    planned = set(str(host) for host in (cabling or {}))
    held = planned & set(str(host) for host in (play_hosts or []))
    if not held or held == planned:
        return None
    return dict(planned=len(planned), held=len(held), missing=sorted(planned - held))


def partial_refusal(part, limit=5):
    """The message that refuses a partial run (``part_of_fleet``)."""
    missing = part["missing"]
    named = ", ".join(missing[:limit]) + (" and %d more" % (len(missing) - limit) if len(missing) > limit else "")
    return ("this play holds %d of the %d hosts the cabling plan (validate_cabling) names; %s are not in it (a job "
            "slice or --limit?): pair tests within a part of the fleet leave the rest of its links and leaves "
            "unchecked, so nothing was run. Validate the whole inventory in one job (no job slicing), or set "
            "validate_partial: plan to plan within this part" % (part["held"], part["planned"], named))


def plan(hosts, tests, pairs=None, port_base=18515, bw_fraction=0.9, min_bw_gbps=None, max_lat_usec=None,
         perftest=None, id_prefix="", schedule="auto", groups=None, full_max=FULL_MATRIX_MAX, sparse=None,
         launch=None):
    """Plan the pair tests.

    ``hosts``: inventory name -> ``{ports: [...]}`` as rdma_facts' ``ports`` (first port used),
    optionally ``min_bw_gbps``/``max_lat_usec`` (per-host thresholds from inventory) and
    ``device``/``gid_index`` overrides. ``pairs``: list of ``{server, client, server_address}``
    (``server_address`` optional: another address of the server to test); None or empty
    means every unordered pair of hosts that have an active port (full matrix).

    Returns ``tests`` (each ``id``, ``tool``, ``server``, ``client``, ``port``, ``round``,
    ``server_address``, ``server_device``, ``client_device``, ``gid_index``, ``link_gbps``,
    ``min_bw_gbps``, ``max_lat_usec``, ``status`` (``planned`` or ``failed`` with ``cause``
    and ``msg`` when it cannot run)), ``rounds`` (list of test ids per round), ``assignments``
    (per round: host -> ``{role, test, args}``: ``args`` the perftest arguments of its side, ``side_args`` with
    ``perftest``, the options all tests share), ``port_first``, ``port_last`` and ``hosts_without_rdma``.
    ``id_prefix`` sets another plan's tests apart (the anchor retests': ``retest:``), their results too.

    Without ``pairs``, ``schedule`` picks the pairs (``schedule.schedule_kind``): ``full``, every pair in the circle
    method's rounds; ``sparse``, the sparse first pass (``schedule.sparse_rounds`` over ``groups``, host -> leaf,
    ``sparse`` rounds); ``auto``, the full matrix up to ``full_max`` hosts. The result's ``schedule`` says which, its
    rounds, the fewest partners a host met and the groups it left uncrossed.

    ``launch``: ``{now, clocks, max_offset, margin, launch_margin, poll_delay}`` makes the plan one launch per host
    (``launch.host_parts``): ``execution`` ``launch``, each host's ``parts`` and the ``launch`` times instead of the
    round-by-round ``assignments``; raises PlanError when a host's clock is too far off.
    """
    unknown = [t for t in tests if t not in PAIR_TOOLS]
    if unknown:
        raise PlanError("unknown pair tests %s (known: %s)" % (unknown, ", ".join(PAIR_TOOLS)))
    names = sorted(hosts)
    without = [h for h in names if _port_of(hosts[h]) is None]
    if pairs:
        pair_list = []
        for pair in pairs:
            server, client = pair.get("server"), pair.get("client")
            for name in (server, client):
                if name not in hosts:
                    raise PlanError("pair %s-%s names host '%s' that is not in the play" % (server, client, name))
            if server == client:
                raise PlanError("pair %s-%s: a host cannot test against itself" % (server, client))
            pair_list.append((server, client, pair.get("server_address")))
    else:
        usable = [h for h in names if h not in without]
        try:
            kind = schedule_kind(schedule, len(usable), full_max)
        except ValueError as exc:
            raise PlanError(str(exc))
        if kind == "full":
            pair_rounds = circle_rounds(usable)
            sparse_plan = None
        else:
            sparse_plan = sparse_rounds(usable, dict((h, (groups or {}).get(h, "")) for h in usable), sparse)
            pair_rounds = sparse_plan["rounds"]
        if kind == "full":
            pair_list = [(a, b, None) for i, a in enumerate(usable) for b in usable[i + 1:]]
        else:
            pair_list = [(a, b, None) for rnd in pair_rounds for a, b in rnd]
        partners = {}
        for a, b, _address in pair_list:
            partners[a] = partners.get(a, 0) + 1
            partners[b] = partners.get(b, 0) + 1
        used_schedule = dict(kind=kind, pair_rounds=len(pair_rounds), pairs=len(pair_list),
                             fewest_partners=min(partners.values()) if partners else 0,
                             uncrossed=[list(pair) for pair in (sparse_plan or {}).get("uncrossed", [])])
    planned = []
    port = port_base
    for server, client, address in pair_list:
        for tool in tests:
            test = _test(len(planned) + 1, tool, server, client, hosts, port, bw_fraction, min_bw_gbps, max_lat_usec,
                         id_prefix)
            if address and test["status"] == "planned":
                test["server_address"] = address
            planned.append(test)
            port += 1
    rounds = []
    busy = []
    if not pairs:
        # The schedule's rounds (the full matrix: the circle method's N-1 for even N, N for odd), each tool of a pair in
        # a round of its own, so no NIC is in two tests at once.
        circle = dict((pair, number) for number, rnd in enumerate(pair_rounds) for pair in rnd)
        slots = {}
        for test in planned:
            if test["status"] != "planned":
                continue
            slots.setdefault(circle[(test["server"], test["client"])] * len(tests) + tests.index(test["tool"]), []).append(test)
        for slot in sorted(slots):
            rounds.append([test["id"] for test in slots[slot]])
            for test in slots[slot]:
                test["round"] = len(rounds) - 1
    for test in planned:
        if test["status"] != "planned" or test["round"] is not None:
            continue
        for index, used in enumerate(busy):
            if test["server"] not in used and test["client"] not in used:
                used.update((test["server"], test["client"]))
                rounds[index].append(test["id"])
                test["round"] = index
                break
        else:
            busy.append(set((test["server"], test["client"])))
            rounds.append([test["id"]])
            test["round"] = len(rounds) - 1
    by_id = dict((t["id"], t) for t in planned)
    assignments = []
    for ids in rounds:
        entry = {}
        for test_id in ids:
            test = by_id[test_id]
            entry[test["server"]] = dict(role="server", test=test, args=side_args(test, "server", perftest))
            entry[test["client"]] = dict(role="client", test=test, args=side_args(test, "client", perftest))
        assignments.append(entry)
    result = dict(tests=planned, rounds=rounds, assignments=assignments, port_first=port_base,
                  port_last=max(port - 1, port_base), hosts_without_rdma=without, execution="rounds",
                  schedule=dict(kind="pairs", pair_rounds=len(rounds), pairs=len(pair_list)) if pairs else used_schedule)
    if launch is not None:
        options = dict(launch)
        try:
            launched = host_parts(result, options.pop("now"), **options)
        except LaunchError as exc:
            raise PlanError(str(exc))
        result.update(execution="launch", assignments=[], parts=launched["parts"], launch=launched["launch"])
    return result


def _test(number, tool, server, client, hosts, port, bw_fraction, min_bw_gbps, max_lat_usec, id_prefix=""):
    s_port, c_port = _port_of(hosts[server]), _port_of(hosts[client])
    test = dict(id="%s%s:%s->%s" % (id_prefix, tool, server, client), number=number, tool=tool, server=server, client=client,
                port=port, round=None, status="planned", cause=None, msg="")
    if s_port is None or c_port is None:
        missing = [h for h, p in ((server, s_port), (client, c_port)) if p is None]
        test.update(status="failed", cause="no_device",
                    msg="no active RDMA port on %s" % " and ".join(missing))
        return test
    rates = [p.get("rate_gbps") for p in (s_port, c_port) if p.get("rate_gbps")]
    link = min(rates) if rates else None
    explicit = [hosts[h].get("min_bw_gbps") for h in (server, client) if hosts[h].get("min_bw_gbps") is not None]
    if explicit:
        threshold = min(float(v) for v in explicit)
    elif min_bw_gbps is not None:
        threshold = float(min_bw_gbps)
    elif link is not None and bw_fraction is not None:
        threshold = round(link * float(bw_fraction), 3)
    else:
        threshold = None
    lat = [hosts[h].get("max_lat_usec") for h in (server, client) if hosts[h].get("max_lat_usec") is not None]
    test.update(server_address=s_port.get("ipv4"), server_device=hosts[server].get("device") or s_port.get("device"),
                client_device=hosts[client].get("device") or c_port.get("device"),
                server_ib_port=s_port.get("port", 1), client_ib_port=c_port.get("port", 1),
                gid_index=c_port.get("gid_index"), link_gbps=link,
                min_bw_gbps=threshold if tool not in LAT_TOOLS and tool != "rping" else None,
                max_lat_usec=(max(float(v) for v in lat) if lat else max_lat_usec) if tool in LAT_TOOLS else None,
                server_numa=s_port.get("numa_node"), client_numa=c_port.get("numa_node"))
    if not test["server_address"]:
        test.update(status="failed", cause="unreachable",
                    msg="%s has no IPv4 RoCE address on %s to connect to" % (server, test["server_device"]))
    return test


def merge_results(plan_result, side_results):
    """Fold server and client outcomes into the planned tests.

    ``side_results``: list of ``{test_id, role, passed, cause, msg, command, summary, result}``
    as the role collects them from the perftest module. The client's numbers are the test's
    numbers; a failed server side fails the test too (with its own cause when the client passed).
    """
    tests = [dict(t) for t in plan_result["tests"]]
    by_id = dict((t["id"], t) for t in tests)
    for side in side_results or []:
        test = by_id.get(side.get("test_id"))
        if test is None:
            continue
        role = side.get("role")
        test["%s_command" % role] = side.get("command")
        test["%s_passed" % role] = bool(side.get("passed"))
        if not side.get("passed"):
            test["%s_cause" % role] = side.get("cause")
            test["%s_msg" % role] = side.get("msg")
        if role == "client":
            test["summary"] = side.get("summary")
            result = side.get("result") or {}
            test["rows"] = result.get("rows") or []
            test["unit"] = result.get("unit")
            if result.get("peak"):
                test["peak"] = result["peak"]
    launched = plan_result.get("execution") == "launch"
    for side in side_results or []:
        test = by_id.get(side.get("test_id"))
        if test is not None and side.get("role") == "server" and side.get("started") is False:
            test["server_started"] = False
        if test is not None and side.get("slot") is not None:
            test["slot"] = side["slot"]
            # The test's times (seconds after the launch's t0): begun when both sides had, ended when both had.
            for key in ("began", "ended"):
                if side.get(key) is not None:
                    test[key] = max(test.get(key, side[key]), side[key])
    for test in tests:
        if test["status"] != "planned":
            continue
        client_ok, server_ok = test.get("client_passed"), test.get("server_passed")
        late = [role for role in ("server", "client") if test.get("%s_cause" % role) == "late_start"]
        if client_ok is None and server_ok is None:
            test.update(status="not_run", cause="not_run", msg="the test did not run (check mode or an earlier failure)")
        elif client_ok and server_ok is not False:
            test.update(status="passed", cause=None, msg=_number_msg(test))
        elif late:
            # One side's host reached the slot too late to run it: the other side's failure follows from that.
            test.update(status="failed", cause="late_start", msg="%s side (%s): %s" % (
                late[0], test[late[0]], test.get("%s_msg" % late[0])))
        elif launched and (client_ok is None or server_ok is None):
            # A launched part returns every slot's record: a side without one is a host whose run was lost or stalled.
            missing = "client" if client_ok is None else "server"
            present = "server" if missing == "client" else "client"
            msg = "no record of the %s side came back from %s (its run was lost or stalled); %s side: %s" % (
                missing, test[missing], present, test.get("%s_msg" % present) or "passed")
            test.update(status="failed", cause="peer_lost", msg=msg)
        else:
            role = "client" if client_ok is False else "server"
            if client_ok is None or test.get("server_started") is False:
                # A client that found no server: the server's own cause (it did not start) is the test's.
                role = "server"
            test.update(status="failed", cause=test.get("%s_cause" % role) or "tool_error",
                        msg="%s side: %s" % (role, test.get("%s_msg" % role) or "did not run"))
    return tests


def _number_msg(test):
    summary = test.get("summary")
    if not summary:
        return "ok"
    text = "%s %s at %d bytes" % (summary["value"], summary["unit"], summary["bytes"])
    if test.get("min_bw_gbps") is not None:
        text += " (threshold %s Gb/s)" % test["min_bw_gbps"]
    if test.get("max_lat_usec") is not None:
        text += " (threshold %s usec)" % test["max_lat_usec"]
    return text


# C0 control characters other than tab, line feed and carriage return: XML 1.0 allows none of them, even escaped.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
# A UTF-16 surrogate not in a pair (a name decoded with surrogateescape, a JSON \\udXXX escape): no UTF-8 encodes it.
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def clean_text(value):
    """``value`` (the report, or any part of it) with every string, keys too, fit for all three outputs: each C0
    control character shown as its Unicode control picture (U+2400 + its code: an LLDP system name is whatever the
    device plugged in sends), each lone surrogate as U+FFFD."""
    if isinstance(value, dict):
        return dict((clean_text(key), clean_text(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [clean_text(item) for item in value]
    if isinstance(value, str):
        value = _CONTROL_RE.sub(lambda match: chr(0x2400 + ord(match.group(0))), value)
        return _SURROGATE_RE.sub("\ufffd", value)
    return value


def build_report(tests, hosts, title="RoCE fabric validation", generated=None):
    """The machine-readable report: ``title``, ``generated``, ``summary`` (counts), ``hosts``, ``tests``.

    ``hosts``: inventory name -> dict with ``status`` (``passed``/``failed``/``skipped``), ``msg``,
    ``checks`` (list of ``{name, status, msg, command, ...}``: discovery, gpu_health, nccl).
    """
    counts = dict(passed=0, failed=0, skipped=0, not_run=0)
    for test in tests:
        key = test["status"] if test["status"] in counts else "failed"
        counts[key] += 1
    for host in hosts.values():
        for check in host.get("checks", []):
            key = check.get("status") if check.get("status") in counts else "failed"
            counts[key] += 1
    return dict(title=title, generated=generated, summary=counts, passed=counts["failed"] == 0,
                hosts=hosts, tests=tests)


def generated_text(generated):
    """One line of the report's ``generated`` record: "2026-11-24T18:00:00Z by roce.fabric 1.2.0, inventory lab, ..."."""
    if not isinstance(generated, dict):
        return str(generated)
    parts = [str(generated.get("time") or "")]
    for key, label in (("collection_version", "by roce.fabric "), ("inventory", "inventory "), ("command", "")):
        if generated.get(key):
            parts.append("%s%s" % (label, generated[key]))
    return ", ".join(part for part in parts if part)


def same_outcome(before_text, report):
    """True when the report file text ``before_text`` holds the same outcome as ``report``: equal in everything but
    ``generated``, the record of when and how the outcome was first written."""
    try:
        old = json.loads(before_text) if before_text else None
    except ValueError:
        return False
    if not isinstance(old, dict):
        return False
    new = json.loads(json.dumps(report))
    old.pop("generated", None)
    new.pop("generated", None)
    return old == new


# --- HTML ---------------------------------------------------------------------------------------------

# Above this many tests the page lists and plots only the tests that did not pass (the passed ones are counted per
# round, their records in report.json beside the page) and leaves the raw report out: a fleet's run of tens of
# thousands of tests stays a page a browser opens at once.
DETAIL_LIMIT = 512
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")


def svg_plot(series, x_label="message size (bytes)", y_label="Gb/s", width=520, height=260):
    """An inline SVG line plot, x on a log2 axis. ``series``: list of ``(label, [(x, y), ...])``."""
    points = [(x, y) for _label, data in series for x, y in data if x and x > 0 and y is not None]
    if not points:
        return "<p><em>no data to plot</em></p>"
    left, right, top, bottom = 64, 16, 12, 40
    xs = [math.log(x, 2) for x, _y in points]
    x_min, x_max = min(xs), max(xs)
    if x_max == x_min:
        x_min, x_max = x_min - 1, x_max + 1
    y_max = max(y for _x, y in points) or 1.0
    y_max *= 1.1

    def px(x):
        return left + (math.log(x, 2) - x_min) / (x_max - x_min) * (width - left - right)

    def py(y):
        return top + (1 - y / y_max) * (height - top - bottom)

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img">' % (width, height),
             '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'
             % (left, top, width - left - right, height - top - bottom)]
    for i in range(5):
        value = y_max * i / 4
        parts.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%.3g</text>' % (left - 4, py(value) + 3, value))
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, width - right, py(value), py(value)))
    ticks = sorted(set(x for x, _y in points))
    step = max(1, len(ticks) // 8)
    for x in ticks[::step]:
        label = _size_label(x)
        parts.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%s</text>' % (px(x), height - bottom + 14, label))
    parts.append('<text x="%d" y="%d" font-size="11" text-anchor="middle">%s</text>'
                 % ((left + width - right) // 2, height - 6, html.escape(x_label)))
    parts.append('<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>'
                 % (height // 2, height // 2, html.escape(y_label)))
    for index, (label, data) in enumerate(series):
        color = COLORS[index % len(COLORS)]
        coords = [(px(x), py(y)) for x, y in sorted(data) if x and x > 0 and y is not None]
        if len(coords) > 1:
            parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                         % (color, " ".join("%.1f,%.1f" % c for c in coords)))
        for cx, cy in coords:
            parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (cx, cy, color))
        parts.append('<text x="%d" y="%d" font-size="11" fill="%s">%s</text>'
                     % (left + 8, top + 14 + 14 * index, color, html.escape(label)))
    parts.append("</svg>")
    return "".join(parts)


def _size_label(size):
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "%d%s" % (size // factor, unit)
    return str(int(size))


def _badge(status):
    color = {"passed": "#2ca02c", "failed": "#d62728", "skipped": "#888", "not_run": "#888"}.get(status, "#d62728")
    return '<span style="color:%s;font-weight:bold">%s</span>' % (color, html.escape(status or "?"))


def matrix_html(matrices):
    """The pair matrix of each rail (``findings.pair_matrix``): a row and a column per endpoint, each pair's cell
    green with its bandwidth or red, the part a finding names beside its endpoint; above the drawing limit, the
    endpoints with a finding and the peers they failed with."""
    esc = html.escape
    out = []
    for matrix in matrices:
        names = [e["name"] for e in matrix["endpoints"]]
        parts = dict((e["name"], e["part"]) for e in matrix["endpoints"])
        out.append("<h2>Pair matrix (%s, %d endpoints)</h2>" % (esc(str(matrix["rail"])), len(names)))

        def cell(a, b):
            return matrix["cells"].get("|".join(sorted((a, b))))

        def label(name):
            return esc(name) + (' <strong style="color:#d62728">[%s]</strong>' % esc(str(parts[name])) if parts[name] else "")
        if not matrix["drawn"]:
            out.append("<p>Too many endpoints to draw; the endpoints with a finding and the peers they failed with:</p><ul>")
            for name in names:
                if parts[name]:
                    failed = [b for b in names if b != name and (cell(name, b) or {}).get("status") == "failed"]
                    out.append("<li>%s: %s</li>" % (label(name), esc(", ".join(failed) or "no failed pair")))
            out.append("</ul>")
            continue
        out.append("<table><tr><th></th>%s</tr>" % "".join("<th>%d</th>" % (i + 1) for i in range(len(names))))
        for i, a in enumerate(names):
            row = []
            for b in names:
                found = cell(a, b) if a != b else None
                if not found:
                    row.append("<td></td>")
                    continue
                status = found["status"]
                text = ("%.3g" % found["gbps"]) if found["gbps"] is not None else ("ok" if status == "passed" else "")
                row.append('<td style="background:%s" title="%s">%s</td>' % (
                    {"passed": "#d9f2d9", "slow": "#fbe3b5"}.get(status, "#f8d0d0"), esc(", ".join(found["tests"])),
                    "&#10007; " + text if status == "failed" else text))
            out.append("<tr><th>%d. %s</th>%s</tr>" % (i + 1, label(a), "".join(row)))
        out.append("</table><p>Gb/s of each pair's bandwidth test; &#10007;: a test of the pair failed; amber: below 93 %"
                   " of the rail's median.</p>")
    return out


def leaf_matrix_html(tests, groups):
    """The pair tests aggregated by leaf (``groups``: host -> its leaves, ``cabling_groups``): a row and a column per
    leaf, each cell the failed and the run tests between hosts of the two (within one leaf on the diagonal), red where
    one failed. A fleet's whole matrix in a table of leaves x leaves."""
    esc = html.escape
    counts = {}
    for test in tests or []:
        if test.get("status") not in ("passed", "failed"):
            continue
        pair = tuple(sorted((groups.get(test["server"], "-"), groups.get(test["client"], "-"))))
        cell = counts.setdefault(pair, [0, 0])
        cell[1] += 1
        if test["status"] == "failed":
            cell[0] += 1
    leaves = sorted(set(leaf for pair in counts for leaf in pair))
    if not leaves:
        return []
    out = ["<h2>Pair tests by leaf (%d leaves)</h2>" % len(leaves),
           "<table><tr><th></th>%s</tr>" % "".join("<th>%d</th>" % (i + 1) for i in range(len(leaves)))]
    for i, a in enumerate(leaves):
        row = []
        for b in leaves:
            failed, run = counts.get(tuple(sorted((a, b))), (0, 0))
            row.append("<td></td>" if not run else '<td style="background:%s">%s</td>' % (
                "#f8d0d0" if failed else "#d9f2d9", ("%d/%d" % (failed, run)) if failed else str(run)))
        out.append("<tr><th>%d. %s</th>%s</tr>" % (i + 1, esc(a), "".join(row)))
    out.append("</table><p>Tests run between the hosts of two leaves (within one on the diagonal); red: failed/run.</p>")
    return out


def render_html(report):
    """A self-contained HTML page: summary, pass/fail per host and per pair, a plot per test, commands."""
    esc = html.escape
    out = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>%s</title>" % esc(report["title"]),
           "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
           "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
           "code{font-size:90%;background:#f4f4f4}</style></head><body>",
           "<h1>%s</h1>" % esc(report["title"])]
    summary = report["summary"]
    out.append("<p>Result: %s &mdash; %d passed, %d failed, %d skipped, %d not run%s</p>" % (
        _badge("passed" if report["passed"] else "failed"), summary["passed"], summary["failed"], summary["skipped"],
        summary["not_run"], (" &mdash; generated %s" % esc(generated_text(report["generated"]))) if report.get("generated") else ""))
    partial = report.get("partial")
    if isinstance(partial, dict) and partial.get("missing"):
        # Planned within a part of the fleet when told (validate_partial: plan): what the run did not cover.
        out.append("<p>A part of the fleet: %s of the %s hosts the cabling plan names; not in this run: %s</p>" % (
            esc(str(partial.get("held"))), esc(str(partial.get("planned"))),
            esc(", ".join(str(host) for host in partial["missing"][:DETAIL_LIMIT])
                + (" and %d more" % (len(partial["missing"]) - DETAIL_LIMIT) if len(partial["missing"]) > DETAIL_LIMIT else ""))))
    findings = report.get("findings") or []
    location = report.get("location") or {}
    if findings or location.get("note") or location.get("left_out_note"):
        out.append("<h2>Fault location</h2>")
        for key in ("note", "left_out_note"):
            if location.get(key):
                out.append("<p>%s</p>" % esc(location[key]))
        if findings:
            out.append("<table><tr><th>part</th><th>which</th><th>confidence</th><th>action</th><th>evidence</th></tr>")
            for finding in findings:
                out.append("<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                    esc(str(finding.get("part"))), esc(str(finding.get("id"))), esc(str(finding.get("confidence"))),
                    esc(str(finding.get("action"))), "<br>".join(
                        "%s: %s" % (esc(str(e.get("kind"))), esc(str(e.get("text")))) for e in finding.get("evidence") or [])))
            out.append("</table>")
    not_reported = location.get("not_reported") or {}
    if not_reported:
        # What a NIC did not print is not reported, never zero: the rules that could not judge say so.
        out.append("<h3>Not reported by the NICs</h3><ul>")
        for endpoint in sorted(not_reported):
            out.append("<li><code>%s</code>: %s</li>" % (esc(endpoint), "; ".join(
                esc(text) for _rule, text in sorted(not_reported[endpoint].items()))))
        out.append("</ul>")
    matrices = pair_matrix(report.get("tests"), findings, location.get("reference_gbps"))
    out.extend(matrix_html(matrices))
    if len(set((report.get("groups") or {}).values())) > 1:
        out.extend(leaf_matrix_html(report.get("tests"), report["groups"]))
    out.append("<h2>Hosts</h2><table><tr><th>host</th><th>status</th><th>check</th><th>result</th><th>command</th></tr>")
    for name in sorted(report["hosts"]):
        host = report["hosts"][name]
        checks = host.get("checks") or [dict(name="-", status=host.get("status"), msg=host.get("msg", ""))]
        for index, check in enumerate(checks):
            out.append("<tr>%s<td>%s</td><td>%s</td><td><code>%s</code></td></tr>" % (
                ("<td rowspan=\"%d\">%s</td><td rowspan=\"%d\">%s</td>" % (len(checks), esc(name), len(checks),
                                                                           _badge(host.get("status"))))
                if index == 0 else "", esc(check.get("name", "")), _badge(check.get("status")) + " " +
                esc(check.get("msg", "")), esc(check.get("command") or "")))
    out.append("</table>")
    detailed = len(report["tests"]) <= DETAIL_LIMIT
    listed = report["tests"] if detailed else [t for t in report["tests"] if t.get("status") != "passed"]
    if not detailed:
        per_round = {}
        for test in report["tests"]:
            if test.get("status") == "passed":
                key = "-" if test.get("round") is None else test["round"] + 1
                per_round[key] = per_round.get(key, 0) + 1
        out.append("<p>%d tests: the %d that did not pass are listed and plotted below; the %d that passed (by round: %s) "
                   "are in <code>report.json</code> beside this page.</p>" % (
                       len(report["tests"]), len(listed), len(report["tests"]) - len(listed),
                       esc(", ".join("%s: %d" % (key, per_round[key]) for key in sorted(per_round, key=str)))))
    out.append("<h2>Pairs</h2><table><tr><th>#</th><th>test</th><th>server &rarr; client</th><th>round</th><th>port</th>"
               "<th>status</th><th>result</th></tr>")
    for test in listed:
        out.append("<tr><td>%d</td><td>%s</td><td>%s &rarr; %s</td><td>%s</td><td>%d</td><td>%s</td><td>%s%s</td></tr>" % (
            test["number"], esc(test["tool"]), esc(test["server"]), esc(test["client"]),
            "" if test.get("round") is None else test["round"] + 1, test["port"], _badge(test["status"]),
            esc(test.get("msg") or ""), (" <em>(%s)</em>" % esc(test["cause"])) if test.get("cause") else ""))
    out.append("</table>")
    out.append("<h2>Measurements</h2>")
    for test in listed:
        out.append("<h3>%d. %s %s &rarr; %s</h3>" % (
            test["number"], esc(test["tool"]), esc(test["server"]), esc(test["client"])))
        rows = test.get("rows") or []
        if rows and "bw_average_gbps" in rows[0]:
            # A peak perftest did not measure (a run of a duration) is not reported: no line drawn at zero.
            peaks = [(r["bytes"], r.get("bw_peak_gbps")) for r in rows if r.get("bw_peak_gbps") is not None]
            out.append(svg_plot([("BW average", [(r["bytes"], r["bw_average_gbps"]) for r in rows])]
                                + ([("BW peak", peaks)] if peaks else [])))
            if not peaks:
                out.append("<p><em>BW peak: not reported (%s)</em></p>" % esc(test.get("peak") or "perftest measured none"))
        elif rows and "t_avg" in rows[0]:
            out.append(svg_plot([("t_avg", [(r["bytes"], r["t_avg"]) for r in rows])], y_label="usec"))
        for role in ("server", "client"):
            if test.get("%s_command" % role):
                out.append("<p>%s (%s): <code>%s</code></p>" % (role, esc(test[role]), esc(test["%s_command" % role])))
    for name in sorted(report["hosts"]):
        for check in report["hosts"][name].get("checks") or []:
            tables = check.get("tables") or []
            if not tables:
                continue
            out.append("<h3>%s: %s</h3>" % (esc(name), esc(check.get("name", ""))))
            series = []
            for table in tables:
                points = []
                for row in table.get("rows", []):
                    side = row.get("in_place") if (row.get("in_place") or {}).get("busbw") is not None else row.get("out_of_place")
                    points.append((row["size"], (side or {}).get("busbw")))
                series.append(("%s busbw" % (table.get("collective") or "nccl"), points))
            out.append(svg_plot(series, y_label="GB/s"))
            if check.get("command"):
                out.append("<p><code>%s</code></p>" % esc(check["command"]))
    if detailed:
        out.append("<h2>Raw report</h2><details><summary>JSON</summary><pre>%s</pre></details>"
                   % esc(json.dumps(report, indent=1, sort_keys=True)))
    else:
        out.append("<h2>Raw report</h2><p>In <code>report.json</code> beside this page (%d tests).</p>" % len(report["tests"]))
    out.append("</body></html>\n")
    return "\n".join(out)
