# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers for perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``, ``ib_*_lat``) and ``rping``.

PRIVATE to the roce.fabric collection: may change without notice.

Everything here is a pure function of its arguments (text in, data out). perftest prints a
settings block (``Device : mlx5_0``, ``GID index : 3``, ...), a dashed rule, the connection
addresses, another rule and then one results table. The table's header names its columns
and units (``BW average[Gb/sec]`` with ``--report_gbits``, ``[MB/sec]`` or ``[MiB/sec]``
without it; ``t_avg[usec]`` for latency), so columns are read from the header, never by
position alone.
"""

from __future__ import annotations

import json
import re


class PerftestParseError(ValueError):
    """Raised when tool output does not hold a complete results table."""


# perftest's MB is 2^20 bytes (it divides by 0x100000); MiB is the same unit under its proper name.
UNIT_TO_GBITS = {
    "Gb/sec": 1.0,
    "MB/sec": 1048576 * 8 / 1e9,
    "MiB/sec": 1048576 * 8 / 1e9,
}

SETTING_KEYS = {
    "Device": "device",
    "Number of qps": "qps",
    "Transport type": "transport",
    "Connection type": "connection",
    "Using SRQ": "srq",
    "TX depth": "tx_depth",
    "RX depth": "rx_depth",
    "CQ Moderation": "cq_moderation",
    "Mtu": "mtu",
    "Link type": "link_type",
    "GID index": "gid_index",
    "Max inline data": "max_inline",
    "rdma_cm QPs": "rdma_cm",
    "Data ex. method": "exchange",
    "Dual-port": "dual_port",
    "Outstand reads": "outstanding_reads",
}

# Lines the tools print when they fail; each maps to a short cause a report can show.
ERROR_PATTERNS = (
    (re.compile(r"Couldn't listen to port|Couldn't bind|Address already in use|rdma_bind_addr failed|Unable to bind"),
     "port_in_use"),
    (re.compile(r"Couldn't connect to|Unable to init the socket connection|Unable to open file descriptor|"
                r"Failed to connect|RDMA_CM_EVENT_(?:REJECTED|UNREACHABLE|ADDR_ERROR|ROUTE_ERROR|CONNECT_ERROR)|"
                r"rdma_resolve_(?:addr|route)|Couldn't resolve|No route to host|Connection refused|"
                # perftest's RDMA-CM client given another event than ESTABLISHED: by rdma_cma.h's numbering 6
                # CONNECT_ERROR, 7 UNREACHABLE, 8 REJECTED (no server listening on the port yet)
                r"Unexpected CM event bl blka [678]\b"),
     "unreachable"),
    (re.compile(r"No IB devices found|IB device \S+ not found|Failed to get IB devices list|Couldn't get device"),
     "no_device"),
    (re.compile(r"[Cc]ompletion with error|wc\.status|Failed status|IBV_WC_\w+_ERR"),
     "completion_error"),
    (re.compile(r"Couldn't|Unable to|Failed to|[Ee]rror|failed"), "tool_error"),
)
# perftest's RDMA-CM error handler prints "RDMA CM event error:" alone, then the line that names the event
# ("Event: RDMA_CM_EVENT_UNREACHABLE; error: -110."): that line says the cause.
CM_ERROR_HEADER = re.compile(r"^\s*RDMA CM event error:\s*$")
# Warnings perftest prints that do not invalidate a result.
BENIGN_PATTERNS = (
    re.compile(r"Conflicting CPU frequency values detected"),
    re.compile(r"CPU Frequency is not max"),
    re.compile(r"Requested mtu is higher than active mtu"),
    re.compile(r"^\s*WARNING:"),
)

_RULE_RE = re.compile(r"^\s*-{20,}\s*$")
_HEADER_TOKEN_RE = re.compile(r"(\S+(?: (?:average|peak|percentile))?)\[(\w+(?:/\w+)?)\]")
_LAT_RE = re.compile(r"^\s*#bytes\s+#iterations\s+t_min")
_BW_RE = re.compile(r"^\s*#bytes\s+#iterations\s+BW peak")


def _number(text):
    try:
        return float(text)
    except ValueError:
        raise PerftestParseError("not a number in results row: '%s'" % text)


def classify_error(text):
    """Return the cause (``port_in_use``, ``unreachable``, ``no_device``, ``completion_error``,
    ``tool_error``) of the first failing line in tool output, or None, plus that line."""
    for line in (text or "").splitlines():
        if not line.strip() or any(p.search(line) for p in BENIGN_PATTERNS) or CM_ERROR_HEADER.match(line):
            continue
        for pattern, cause in ERROR_PATTERNS:
            if pattern.search(line):
                return cause, line.strip()
    return None, None


def parse_settings(text):
    """Return the settings block as a dict (``device``, ``gid_index`` (int), ``mtu`` (int), ``link_type``, ...)."""
    settings = {}
    for title, key in SETTING_KEYS.items():
        # Two settings may share a line; separators are tabs or runs of spaces, values one token.
        match = re.search(r"(?:^|\s)%s\s*:\s*(\S+)" % re.escape(title), text or "", re.M)
        if match:
            settings[key] = match.group(1)
    for key in ("gid_index", "qps", "tx_depth", "rx_depth", "cq_moderation"):
        if key in settings and re.match(r"^\d+$", settings[key]):
            settings[key] = int(settings[key])
    if "mtu" in settings:
        match = re.match(r"^(\d+)", settings["mtu"])
        settings["mtu"] = int(match.group(1)) if match else None
    test = re.search(r"^\s*(\S+ (?:BW|Latency)) Test\s*$", text or "", re.M)
    if test:
        settings["test"] = test.group(1)
    return settings


def _columns(header):
    """Map a results header to ``[(key, unit), ...]`` in print order."""
    columns = [("bytes", None), ("iterations", None)]
    for name, unit in _HEADER_TOKEN_RE.findall(header):
        key = name.lower().replace("%", "").replace(" ", "_").replace(".", "_")
        key = {"bw_peak": "bw_peak", "bw_average": "bw_average", "msgrate": "msg_rate",
               "99_percentile": "p99", "99_9_percentile": "p99_9"}.get(key, key)
        columns.append((key, unit))
    return columns


def parse_perftest(text):
    """Parse the complete output of one side of a perftest run.

    Returns a dict: ``kind`` (``'bw'`` or ``'lat'``), ``settings`` (see parse_settings),
    ``unit`` (the bandwidth unit as printed, bw only), ``rows`` (one dict per message size:
    ``bytes``, ``iterations`` and one float per column; bw rows also carry ``bw_average_gbps``
    and ``bw_peak_gbps`` in Gb/s whatever the printed unit), ``warnings`` (benign lines).

    Raises PerftestParseError when the output has an error line and no results, when no
    results header is found, when the table is not closed by its rule (truncated output) or
    when a row does not match its header.
    """
    lines = (text or "").splitlines()
    header_at = None
    kind = None
    for index, line in enumerate(lines):
        if _BW_RE.match(line):
            header_at, kind = index, "bw"
            break
        if _LAT_RE.match(line):
            header_at, kind = index, "lat"
            break
    if header_at is None:
        cause, line = classify_error(text)
        if cause:
            raise PerftestParseError("%s: %s" % (cause, line))
        raise PerftestParseError("no results table in output (%d lines)" % len(lines))
    columns = _columns(lines[header_at])
    units = set(unit for _key, unit in columns if unit and unit.endswith("/sec"))
    unit = units.pop() if len(units) == 1 else None
    if kind == "bw" and unit not in UNIT_TO_GBITS:
        raise PerftestParseError("unknown bandwidth unit in header: %s" % lines[header_at].strip())
    rows = []
    warnings = []
    closed = False
    for line in lines[header_at + 1:]:
        if _RULE_RE.match(line):
            closed = True
            break
        if not line.strip():
            continue
        tokens = line.split()
        if not re.match(r"^\d+$", tokens[0]):
            if any(p.search(line) for p in BENIGN_PATTERNS):
                warnings.append(line.strip())
                continue
            cause, bad = classify_error(line)
            if cause:
                raise PerftestParseError("%s: %s" % (cause, bad))
            warnings.append(line.strip())
            continue
        if len(tokens) != len(columns):
            raise PerftestParseError("results row has %d fields for %d columns: %s" % (len(tokens), len(columns), line.strip()))
        row = dict(bytes=int(tokens[0]), iterations=int(_number(tokens[1])))
        for (key, _unit), value in zip(columns[2:], tokens[2:]):
            row[key] = _number(value)
        if kind == "bw":
            factor = UNIT_TO_GBITS[unit]
            row["bw_average_gbps"] = round(row["bw_average"] * factor, 6)
            row["bw_peak_gbps"] = round(row["bw_peak"] * factor, 6)
        rows.append(row)
    if not closed:
        raise PerftestParseError("results table not closed by its rule line: output truncated after %d rows" % len(rows))
    if not rows:
        cause, line = classify_error(text)
        raise PerftestParseError("%s: %s" % (cause, line) if cause else "results table is empty")
    return dict(kind=kind, settings=parse_settings("\n".join(lines[:header_at])), unit=unit if kind == "bw" else "usec",
                rows=rows, warnings=warnings)


# --out_json: before perftest 24.01 its keys and most string values were bare words and every member ended in a comma
# (not JSON); 24.01 quotes them, a few keys stay bare ("sl"). One repair reads both: a bare key or value is quoted, a
# comma before a closing brace dropped.
_JSON_BARE_KEY_RE = re.compile(r'^(\s*)([A-Za-z_][\w .]*?)\s*:', re.M)
_JSON_BARE_VALUE_RE = re.compile(r'(:\s*)([A-Za-z_][^,"\n{}]*?)(\s*[,\n}])')
_JSON_TRAILING_COMMA_RE = re.compile(r',(\s*})')
# The result keys of --out_json and the columns of the text table they are.
JSON_RESULT_KEYS = {"BW_peak": "bw_peak", "BW_average": "bw_average", "MsgRate": "msg_rate", "t_min": "t_min",
                    "t_max": "t_max", "t_typical": "t_typical", "t_avg": "t_avg", "t_stdev": "t_stdev",
                    "percentile_99": "p99", "percentile_99.9": "p99_9",
                    "tps_average": "tps_average", "CPU_util": "cpu_util"}


def _json_text(text):
    """perftest's --out_json file as JSON text, whichever release wrote it."""
    repaired = _JSON_BARE_KEY_RE.sub(lambda m: '%s"%s":' % (m.group(1), m.group(2).strip()), text)
    repaired = _JSON_BARE_VALUE_RE.sub(lambda m: '%s"%s"%s' % (m.group(1), m.group(2).strip(), m.group(3)), repaired)
    return _JSON_TRAILING_COMMA_RE.sub(r"\1", repaired)


def parse_out_json(text, unit="MB/sec"):
    """Parse the file perftest writes with ``--out_json`` (``--out_json_file``) into parse_perftest's shape (one row).

    The file does not say its bandwidth unit: ``unit`` is the one the run printed (``Gb/sec`` with
    ``--report_gbits``, else ``MB/sec``). Raises PerftestParseError for a file without ``results``.
    """
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = json.loads(_json_text(text or ""))
        except ValueError as exc:
            raise PerftestParseError("perftest's JSON report cannot be read: %s" % exc)
    info, results = data.get("test_info") or {}, data.get("results")
    if not isinstance(results, dict) or "MsgSize" not in results:
        raise PerftestParseError("perftest's JSON report has no results")
    kind = "bw" if "BW_average" in results else "lat"
    if kind == "bw" and unit not in UNIT_TO_GBITS:
        raise PerftestParseError("unknown bandwidth unit: %s" % unit)
    row = dict(bytes=int(results["MsgSize"]), iterations=int(_number(str(results.get("n_iterations", 0)))))
    for key, column in JSON_RESULT_KEYS.items():
        if key in results:
            row[column] = _number(str(results[key]))
    if kind == "bw":
        row["bw_average_gbps"] = round(row["bw_average"] * UNIT_TO_GBITS[unit], 6)
        row["bw_peak_gbps"] = round(row["bw_peak"] * UNIT_TO_GBITS[unit], 6)
    # Its test_info keys are the printed titles with "_" for blanks and dashes ("Number_of_qps", "Dual_port").
    settings = {}
    for title, key in SETTING_KEYS.items():
        name = title.replace(" ", "_").replace("-", "_").replace(".", "")
        if name in info:
            settings[key] = info[name]
    for key in ("gid_index", "qps", "tx_depth", "rx_depth", "cq_moderation", "mtu"):
        if isinstance(settings.get(key), str) and settings[key].isdigit():
            settings[key] = int(settings[key])
    if info.get("test"):
        settings["test"] = str(info["test"]).replace("_", " ").rsplit(" Test", 1)[0]
    return dict(kind=kind, settings=settings, unit=unit if kind == "bw" else "usec", rows=[row], warnings=[])


# What perftest prints when it turns the peak off by itself (perftest_parameters.c, since commit d34bf0f; earlier
# releases turn it off without a word).
NO_PEAK_WARNING = "BW peak won't be measured"


def peak_measured(params, side, output=""):
    """Whether perftest measured a BW peak in this run, or why not (``(True, None)`` / ``(False, why)``).

    perftest sets its noPeak (perftest_parameters.c) for a run of a duration (``-D``: "When working with Duration"),
    ``-N``/``--noPeak``, ``--run_infinitely``, the server of a receive-completion test (``ib_send_bw``) that is not
    bidirectional, and a run of more than 20,000 iterations; it then prints a peak of 0.00, which is no measurement."""
    extra = [str(arg) for arg in params.get("extra_args") or []]
    if NO_PEAK_WARNING in (output or ""):
        return False, "perftest says its BW peak was not measured in this run"
    if params.get("duration"):
        return False, "perftest measures no BW peak in a run of a duration (-D)"
    if "-N" in extra or "--noPeak" in extra:
        return False, "the run asked for no BW peak (-N)"
    if "--run_infinitely" in extra:
        return False, "perftest measures no BW peak when it runs without end (--run_infinitely)"
    if side == "server" and params.get("tool") == "ib_send_bw" and "-b" not in extra and "--bidirectional" not in extra:
        return False, "perftest measures no BW peak on the server of a send test"
    if params.get("iterations") and int(params["iterations"]) > 20000:
        return False, "perftest measures no BW peak past 20,000 iterations"
    return True, None


def without_peak(parsed, why):
    """``parsed`` with every row's BW peak not reported (None) and why, where perftest measured none."""
    for row in parsed.get("rows") or []:
        if "bw_peak" in row:
            row["bw_peak"] = row["bw_peak_gbps"] = None
    parsed["peak"] = "not reported: %s" % why
    return parsed


def summarize(parsed):
    """Return the headline number of a parsed run: the largest message size's row.

    For bw that is ``bw_average_gbps``; for latency ``t_avg`` (falling back to ``t_typical``) in usec.
    """
    row = max(parsed["rows"], key=lambda r: r["bytes"])
    if parsed["kind"] == "bw":
        return dict(bytes=row["bytes"], value=row["bw_average_gbps"], unit="Gb/s")
    value = row.get("t_avg", row.get("t_typical"))
    return dict(bytes=row["bytes"], value=value, unit="usec")


# rping -v prints one line per ping: "ping data: rdma-ping-0: ABCDEFG..." (client) or
# "server ping data: rdma-ping-0: ..." (server).
_RPING_LINE_RE = re.compile(r"^(?:server )?ping data: rdma-ping-(\d+): ")


def parse_rping(text, rc=0, expected=None):
    """Parse ``rping -c -v -C N`` (client) or ``rping -s -v -C N`` (server) output.

    Returns ``pings`` (count of verified data lines), ``errors`` (failure lines), ``cause``
    (see classify_error, None on success) and ``ok`` (no error line, rc 0 and, when
    ``expected`` is given, exactly that many pings).
    """
    pings = 0
    errors = []
    for line in (text or "").splitlines():
        if _RPING_LINE_RE.match(line.strip()):
            pings += 1
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if re.search(r"error|failed|reject|unreachable|cq completion|wc status|No such device|Connection refused|"
                     r"Address already in use|^rdma_\w+:",
                     stripped, re.I):
            errors.append(stripped)
    cause, _line = classify_error("\n".join(errors)) if errors else (None, None)
    if errors and cause is None:
        cause = "tool_error"
    ok = rc == 0 and not errors and (expected is None or pings == expected)
    if not ok and cause is None:
        cause = "tool_error" if rc != 0 else "incomplete"
    return dict(pings=pings, errors=errors, cause=cause, ok=ok)


def threshold_gbps(link_rate_gbps, fraction):
    """Minimum acceptable bandwidth in Gb/s: ``fraction`` of the link rate (None when unknown)."""
    if link_rate_gbps is None or fraction is None:
        return None
    return round(float(link_rate_gbps) * float(fraction), 6)


def parse_link_rate(text):
    """Parse a link rate as sysfs prints it (``100 Gb/sec (4X EDR)``, ``2.5 Gb/sec (1X SDR)``) into Gb/s."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec", text or "")
    return float(match.group(1)) if match else None


# --- the tools' command lines and the verdict of a finished side -------------------------------------------

TOOLS = ("rping", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")


def tool_argv(params, executable, side):
    tool = params["tool"]
    if tool == "rping":
        argv = [executable, "-s" if side == "server" else "-c", "-v", "-p", str(params["port"])]
        if params["iterations"]:
            argv += ["-C", str(params["iterations"])]
        if params["size"]:
            argv += ["-S", str(params["size"])]
        if params["server"]:
            argv += ["-a", params["server"]]
        return argv + list(params["extra_args"])
    argv = [executable]
    if params["device"]:
        argv += ["-d", params["device"]]
    argv += ["-i", str(params["ib_port"]), "-p", str(params["port"])]
    if params["rdma_cm"]:
        argv.append("-R")
    elif params["gid_index"] is not None:
        argv += ["-x", str(params["gid_index"])]
    if params.get("tos") is not None:
        argv += ["-T", str(params["tos"])] if params["rdma_cm"] else ["--tclass=%d" % params["tos"]]
    if tool in BW_TOOLS:
        argv.append("--report_gbits")
        if params["qps"]:
            argv += ["-q", str(params["qps"])]
        if params["duration"]:
            argv += ["-D", str(params["duration"])]
    if params["all_sizes"]:
        argv.append("-a")
    elif params["size"]:
        argv += ["-s", str(params["size"])]
    if params["iterations"] and not (tool in BW_TOOLS and params["duration"]):
        argv += ["-n", str(params["iterations"])]
    argv += list(params["extra_args"])
    if side == "client":
        argv.append(params["server"])
    return argv


def judge(params, output, rc):
    """Parse output and judge it: returns (passed, cause, msg, result, summary)."""
    if params["tool"] == "rping":
        parsed = parse_rping(output, rc=rc, expected=params["iterations"])
        if rc == 124 or rc == 137:
            return False, "timeout", "rping did not finish within %ds" % params["timeout"], parsed, None
        if not parsed["ok"]:
            detail = parsed["errors"][0] if parsed["errors"] else "rc %d, %d pings" % (rc, parsed["pings"])
            return False, parsed["cause"], "rping failed: %s" % detail, parsed, None
        return True, None, "rping: %d pings verified" % parsed["pings"], parsed, None
    try:
        parsed = parse_perftest(output)
        if parsed["kind"] == "bw":
            side = "client" if params.get("mode") == "client" else "server"
            measured, why = peak_measured(params, side, output)
            if not measured:
                parsed = without_peak(parsed, why)
    except PerftestParseError as exc:
        text = str(exc)
        if rc in (124, 137):
            return False, "timeout", "%s did not finish within %ds (%s)" % (params["tool"], params["timeout"], text), None, None
        cause = text.split(":", 1)[0] if ":" in text and text.split(":", 1)[0] in (
            "port_in_use", "unreachable", "no_device", "completion_error", "tool_error") else "parse_error"
        return False, cause, "%s: %s" % (params["tool"], text), None, None
    summary = summarize(parsed)
    if rc != 0:
        return False, "tool_error", "%s exited with rc %d after printing results" % (params["tool"], rc), parsed, summary
    if parsed["kind"] == "bw" and params["min_bw_gbps"] is not None and summary["value"] < params["min_bw_gbps"]:
        return (False, "below_threshold", "%.3f Gb/s at %d bytes is below the threshold %.3f Gb/s"
                % (summary["value"], summary["bytes"], params["min_bw_gbps"]), parsed, summary)
    if parsed["kind"] == "lat" and params["max_lat_usec"] is not None and summary["value"] > params["max_lat_usec"]:
        return (False, "above_threshold", "%.2f usec at %d bytes is above the threshold %.2f usec"
                % (summary["value"], summary["bytes"], params["max_lat_usec"]), parsed, summary)
    return True, None, "%s: %s %s at %d bytes" % (params["tool"], summary["value"], summary["unit"], summary["bytes"]), \
        parsed, summary
