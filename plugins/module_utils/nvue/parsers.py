# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Cumulus Linux (NVUE): pure parsers of the NVUE REST API's JSON and of inventory port names.

PRIVATE to the roce.fabric collection: may change without notice.

The object paths are NVUE's (the same tree ``nv set``, ``nv config show -o json`` and ``/nvue_v1/`` use):

- ``qos.roce`` (``enable``, ``mode``): Cumulus Linux 5.0 and later;
- ``qos.mapping.default-global.trust``, ``qos.pfc.default-global``, ``qos.congestion-control.default-global``:
  NVUE objects from Cumulus Linux 5.3 (before, QoS beyond ``qos roce`` lives in ``qos_features.conf``);
- ``bridge.domain.br_default.vlan``, ``interface.<swp>.bridge.domain.br_default.access|vlan``,
  ``interface.<swp>.link.mtu|state``.
"""

from __future__ import annotations

import json
import re

try:
    from ansible.module_utils.compat.version import LooseVersion
except ImportError:  # pragma: no cover - ansible-core before 2.12
    from distutils.version import LooseVersion  # pylint: disable=deprecated-module

ROCE_MODES = ("lossless", "lossy", "lossless-single-ipool", "disabled")
TRUST_MODES = ("l2", "l3", "both", "port")
# Releases from which NVUE has an object (the Cumulus Linux user guides and command references).
QOS_OBJECTS_VERSION = "5.3.0"       # qos mapping / pfc / congestion-control ("Introduced in Cumulus Linux 5.3.0")
SINGLE_IPOOL_VERSION = "5.12.0"     # mode lossless-single-ipool: in the 5.12 guide; the 5.11 guide keeps it commented "FOR 5.12"
REST_DEFAULT_VERSION = "5.6.0"      # the REST API listens by default from 5.6; before, an operator enables it
# "In Cumulus Linux 5.9 and later, auto save is on by default; the nv config apply command automatically saves the
# configuration" (NVUE command reference, nv config apply); before, nv set system config auto-save enable on.
AUTO_SAVE_DEFAULT_VERSION = "5.9.0"
MTU_MIN = 552
MTU_MAX = 9216
VLAN_MIN = 1
VLAN_MAX = 4094
# VLANs Cumulus keeps for itself (system.global.reserved.vlan.internal.range of a 5.5 switch: 3725-3999).
RESERVED_VLANS = (3725, 3999)
BRIDGE = "br_default"
PROFILE = "default-global"
# States of a revision (NVUE API guide): pending until applied; apply/applying while it runs; then applied, or
# invalid / ays_fail / apply_fail with the reasons in transition.issue.
DONE_STATES = ("applied",)
FAILED_STATES = ("invalid", "ays_fail", "apply_fail", "failed", "ignore_fail")
RUNNING_STATES = ("pending", "apply", "applying", "confirm", "ays", "confirm_fail")

PORT_RE = re.compile(r"^swp([1-9][0-9]{0,2})(?:s([0-7]))?$")
RANGE_RE = re.compile(r"^swp([1-9][0-9]{0,2})(?:s([0-7]))?-(?:swp)?([1-9][0-9]{0,2})(?:s([0-7]))?$")
VERSION_RE = re.compile(r"(\d+\.\d+(?:\.\d+)*)")


class NvueInputError(ValueError):
    """Input the module refuses before it reaches a switch."""


def version_at_least(release, minimum):
    """Compare Cumulus Linux releases numerically (5.10.0 is newer than 5.9.2)."""
    return LooseVersion(str(release)) >= LooseVersion(str(minimum))


def release_of(config):
    """The release from the root document's ``header.version`` (``"Cumulus Linux 5.5.0"`` -> ``"5.5.0"``)."""
    header = (config or {}).get("header") or {}
    match = VERSION_RE.search(str(header.get("version", "")))
    if not match:
        raise ValueError("the switch's configuration has no header.version naming a Cumulus Linux release")
    return match.group(1)


# --- port names ----------------------------------------------------------------------------------------------

def port_key(name):
    match = PORT_RE.match(name)
    return (int(match.group(1)), int(match.group(2)) if match.group(2) is not None else -1)


def sort_ports(ports):
    return sorted(set(ports), key=port_key)


def expand_ports(spec):
    """``swp1-4`` -> swp1..swp4, ``swp1s0-swp1s3`` -> the four breakouts, ``swp7`` -> swp7; raises NvueInputError."""
    spec = str(spec).strip()
    if PORT_RE.match(spec):
        return [spec]
    match = RANGE_RE.match(spec)
    if not match:
        raise NvueInputError("'%s' is not a Cumulus port or range (swp1, swp1-4, swp1s0-swp1s3)" % spec)
    first, first_sub, last, last_sub = match.groups()
    first, last = int(first), int(last)
    if (first_sub is None) != (last_sub is None):
        raise NvueInputError("'%s' mixes a port and a breakout" % spec)
    if first_sub is None:
        if last < first:
            raise NvueInputError("'%s' runs backwards" % spec)
        return ["swp%d" % number for number in range(first, last + 1)]
    if first != last or int(last_sub) < int(first_sub):
        raise NvueInputError("'%s' is not a range of breakouts of one port" % spec)
    return ["swp%ds%d" % (first, sub) for sub in range(int(first_sub), int(last_sub) + 1)]


def expand_port_list(specs, what="ports"):
    ports = []
    for spec in specs or []:
        for port in expand_ports(spec):
            if port in ports:
                raise NvueInputError("%s lists %s twice" % (what, port))
            ports.append(port)
    return ports


def compress_ports(ports):
    """swp1, swp2, swp3, swp7 -> ``swp1-3,swp7`` (the form ``nv set interface`` takes)."""
    out = []
    run = []
    for port in sort_ports(ports):
        number, sub = port_key(port)
        if run and sub < 0 and run[-1][1] < 0 and number == run[-1][0] + 1:
            run.append((number, sub))
            continue
        if run:
            out.append(_run_text(run))
        run = [(number, sub)] if sub < 0 else []
        if sub >= 0:
            out.append(port)
    if run:
        out.append(_run_text(run))
    return ",".join(out)


def _run_text(run):
    if len(run) == 1:
        return "swp%d" % run[0][0]
    return "swp%d-%d" % (run[0][0], run[-1][0])


# --- revisions -----------------------------------------------------------------------------------------------

def revision_id(body):
    """The id of a revision from the answer to ``POST /nvue_v1/revision`` (``{"<id>": {"state": "pending", ...}}``)."""
    if isinstance(body, dict) and len(body) == 1:
        key = next(iter(body))
        value = body[key]
        if isinstance(value, dict) and "state" in value:
            return key
    raise ValueError("the answer to creating a revision names no revision: %r" % (body,))


def revision_state(body, rev=None):
    """``(state, issues, progress)`` of ``GET /nvue_v1/revision/<id>``; the answer is either the revision itself
    or, as some releases print it, an object keyed by the revision's id. ``issues`` are the issue messages."""
    if isinstance(body, dict) and "state" not in body and len(body) == 1:
        key = next(iter(body))
        if rev is None or key == rev:
            body = body[key]
    if not isinstance(body, dict) or "state" not in body:
        raise ValueError("the revision's answer has no state: %r" % (body,))
    transition = body.get("transition") or {}
    issues = []
    raw = transition.get("issue") or {}
    for key in sorted(raw, key=lambda k: (len(str(k)), str(k))):
        issue = raw[key] or {}
        message = issue.get("message") or issue.get("code") or ""
        issues.append(str(message).strip())
    return str(body["state"]), issues, str(transition.get("progress") or "")


# --- the applied configuration -------------------------------------------------------------------------------

def _get(tree, *path):
    for key in path:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(key)
    return tree


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _link_state(link):
    state = (link or {}).get("state")
    if isinstance(state, dict) and state:
        return "down" if "down" in state else "up"
    if isinstance(state, str):
        return state
    return None


def parse_config(config):
    """The managed part of NVUE's root document (``GET /nvue_v1/?rev=applied``) as one comparable dict.

    ``roce_mode`` is ``disabled`` when ``qos.roce.enable`` is off (or RoCE is unset), else the mode (NVUE's default
    is ``lossless``). Ports are the ``swp`` interfaces the configuration names.
    """
    config = config or {}
    roce = _get(config, "qos", "roce") or {}
    enabled = str(roce.get("enable", "off")).lower() in ("on", "true", "enabled") if roce else False
    if roce and "enable" not in roce:
        enabled = True
    roce_mode = (roce.get("mode") or "lossless") if enabled else "disabled"
    vlans = sorted(_int_or_none(v) for v in (_get(config, "bridge", "domain", BRIDGE, "vlan") or {}) if _int_or_none(v))
    pfc = _get(config, "qos", "pfc", PROFILE) or {}
    ecn = {}
    for tc, entry in (_get(config, "qos", "congestion-control", PROFILE, "traffic-class") or {}).items():
        entry = entry or {}
        ecn[int(tc)] = dict(ecn=entry.get("ecn"), min=_int_or_none(entry.get("min-threshold")),
                            max=_int_or_none(entry.get("max-threshold")))
    ports = {}
    for name, entry in (config.get("interface") or {}).items():
        if not PORT_RE.match(name):
            continue
        entry = entry or {}
        link = entry.get("link") or {}
        domain = _get(entry, "bridge", "domain", BRIDGE)
        ports[name] = dict(
            mtu=_int_or_none(link.get("mtu")),
            state=_link_state(link),
            access=_int_or_none((domain or {}).get("access")),
            vlans=sorted(_int_or_none(v) for v in ((domain or {}).get("vlan") or {}) if _int_or_none(v)),
            bridged=domain is not None,
        )
    return dict(
        roce_mode=roce_mode,
        vlans=vlans,
        trust=_get(config, "qos", "mapping", PROFILE, "trust"),
        pfc=dict(priorities=sorted(int(p) for p in (pfc.get("switch-priority") or {})), tx=pfc.get("tx"), rx=pfc.get("rx")),
        ecn=ecn,
        ports=ports,
    )


def auto_save(config, release):
    """Whether ``nv config apply`` saves the configuration by itself: ``system.config.auto-save.enable`` where the
    applied configuration sets it, else the release's default (on from 5.9)."""
    value = _get(config or {}, "system", "config", "auto-save", "enable")
    if value is not None:
        return str(value).lower() in ("on", "true", "enabled", "yes")
    return version_at_least(release, AUTO_SAVE_DEFAULT_VERSION)


# --- the nv command line (SSH transport) ------------------------------------------------------------------------

APPLY_REV_RE = re.compile(r"\[rev_id:\s*([^\]]+)\]")


def config_from_show(data):
    """The root document from ``nv config show -o json``: a list of one-key objects (``{"header": ...}`` and
    ``{"set": {...}}``, the layout of ``startup.yaml``), or already a root document."""
    if isinstance(data, dict):
        return data
    if not isinstance(data, list):
        raise ValueError("nv config show printed neither a list nor an object")
    config = {}
    for item in data:
        if isinstance(item, dict) and "header" in item:
            config["header"] = item["header"]
        elif isinstance(item, dict) and "set" in item:
            for key, value in (item["set"] or {}).items():
                config[key] = value
    if "header" not in config:
        raise ValueError("nv config show printed no header")
    return config


def apply_result(output, rc):
    """``(state, issues, revision)`` of ``nv config apply -y``: ``applied`` when it exited 0, else ``invalid`` for
    ``Invalid config [rev_id: N]`` followed by the reasons, one per indented line, or ``apply_fail``."""
    lines = [line.rstrip() for line in (output or "").splitlines() if line.strip()]
    match = APPLY_REV_RE.search(output or "")
    revision = match.group(1).strip() if match else None
    if rc == 0:
        return "applied", [], revision
    state = "invalid" if any(line.lower().startswith("invalid config") for line in lines) else "apply_fail"
    issues = [line.strip().strip('"') for line in lines if not line.lower().startswith(("invalid config", '"invalid config'))]
    return state, issues or ["nv config apply exited %d" % rc], revision


def pending_changes(output):
    """What ``nv config diff -o json`` prints of the login's pending configuration, or None when nothing is pending.

    Nothing pending prints an empty object (``{}``: NVIDIA's own NVUE tests read it so after an apply); pending
    changes print the list of ``set``/``unset`` entries the Cumulus Linux guide shows for ``nv config diff``
    (``- unset: system: ...`` in YAML). Anything else that is not empty is taken as pending too: the module would
    rather refuse than apply someone's unfinished change."""
    text = (output or "").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return text if data else None


# link.stats of the operational interface tree -> the names the validation reads (shared with Onyx's and the host's).
PORT_COUNTERS = (("in-errors", "in_errors"), ("in-drops", "in_discards"), ("in-pkts", "in_packets"),
                 ("out-errors", "out_errors"), ("out-drops", "out_discards"), ("out-pkts", "out_packets"),
                 ("carrier-transitions", "carrier_transitions"))


def port_counters(interfaces):
    """``{'swp1': {in_errors, in_discards, in_packets, out_errors, out_discards, out_packets, carrier_transitions}}``
    from the operational interface tree (``GET /nvue_v1/interface``, ``nv show interface -o json``): each
    interface's ``link.stats``; one without stats is left out, a counter that is not a number too."""
    out = {}
    for name, interface in (interfaces or {}).items() if isinstance(interfaces, dict) else ():
        stats = _get(interface, "link", "stats")
        values = {}
        for key, mine in PORT_COUNTERS if isinstance(stats, dict) else ():
            value = _int_or_none(stats.get(key))
            if value is not None:
                values[mine] = value
        if values:
            out[name] = values
    return out


class NvueTableError(ValueError):
    """Output that is not the ``nv show`` table it should be."""


def read_table(text, first_column, columns, what):
    """The rows of an ``nv show`` table (a header, a rule of dashes under each column, the rows), each a dict of
    ``columns`` (names given to the table's columns in order). The columns are found from the dashes under the
    header whose first column is ``first_column``, so a long value that fills its column does not shift the others;
    NvueTableError names ``what`` when there is no such header or too few columns."""
    lines = [line.rstrip("\n") for line in (text or "").splitlines()]
    for number, line in enumerate(lines):
        if line.strip().startswith(first_column) and number + 1 < len(lines) and \
                lines[number + 1].strip().startswith("-"):
            header, rule = line, lines[number + 1]
            break
    else:
        raise NvueTableError("no '%s' table header: not %s output" % (first_column, what))
    spans, start = [], None
    for index, char in enumerate(rule + " "):
        if char == "-" and start is None:
            start = index
        elif char != "-" and start is not None:
            spans.append((start, index))
            start = None
    if len(spans) < len(columns):
        raise NvueTableError("the table of %s has %d columns, not %d (%s)"
                             % (what, len(spans), len(columns), header.strip()))
    rows = []
    for line in lines[number + 2:]:
        if not line.strip():
            break
        cells = []
        for column in range(len(columns)):
            begin = spans[column][0]
            stop = spans[column + 1][0] if column + 1 < len(spans) else len(line)
            cells.append(line[begin:stop].strip())
        rows.append(dict(zip(columns, cells)))
    return rows


def lldp_neighbours(text):
    """Cumulus Linux's ``nv show interface lldp`` table (NVUE 5.x): ``{interface: {host, port, speed, type}}`` for
    each interface with a neighbour; a neighbour that sends no system name has ``host`` None and is kept (its port
    ID, a NIC's MAC address, is what the cabling check compares)."""
    out = {}
    for row in read_table(text, "Interface", ("interface", "speed", "type", "host", "port"),
                          "nv show interface lldp"):
        if row["interface"] and (row["host"] or row["port"]):
            out[row["interface"]] = dict(host=row["host"] or None, port=row["port"] or None, speed=row["speed"],
                                         type=row["type"])
    return out


PFC_COLUMNS = ("priority", "rx_pause_frames", "rx_pause_duration", "tx_pause_frames", "tx_pause_duration")


def pfc_stats(text):
    """An interface's PFC counters, ``nv show interface <port> counters qos pfc-stats`` (Cumulus Linux 5.5 and later;
    ``qos counters pfc-stats`` before): ``{switch priority: {rx_pause_frames, rx_pause_duration, tx_pause_frames,
    tx_pause_duration}}``, each an int (a cell that is not a number is left out)."""
    out = {}
    for row in read_table(text, "switch-priority", PFC_COLUMNS, "nv show interface ... pfc-stats"):
        if not row["priority"].isdigit():
            continue
        out[int(row["priority"])] = dict((name, int(row[name])) for name in PFC_COLUMNS[1:] if row[name].isdigit())
    return out


def pause_totals(stats):
    """The PFC pause frames and durations of every priority summed, under the names of the switch's counters:
    ``{rx_pause, rx_pause_duration, tx_pause, tx_pause_duration}``."""
    total = dict(rx_pause=0, rx_pause_duration=0, tx_pause=0, tx_pause_duration=0)
    for values in (stats or {}).values():
        total["rx_pause"] += values.get("rx_pause_frames", 0)
        total["tx_pause"] += values.get("tx_pause_frames", 0)
        total["rx_pause_duration"] += values.get("rx_pause_duration", 0)
        total["tx_pause_duration"] += values.get("tx_pause_duration", 0)
    return total
