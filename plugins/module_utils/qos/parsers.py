# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parsers of host NIC QoS output: NVIDIA's ``mlnx_qos``, iproute2's ``dcb``, sysfs and configfs values.

PRIVATE to the roce.fabric collection: may change without notice.

Formats, from real output and the tools' sources (see the corpus under tests/unit/.../fixtures/qos):

- ``mlnx_qos -i IF`` (MLNX_OFED / DOCA mlnx-tools): ``DCBX mode: OS controlled``, ``Priority trust state:
  dscp``, ``dscp2prio mapping:`` followed by ``prio:N dscp:..,..,`` lines (8 DSCPs a line, a priority may
  take several lines), optional ``default priority:``, ``Receive buffer size (bytes): ...``, ``Cable len:
  N``, ``PFC configuration:`` with a ``priority`` header row, an ``enabled`` row and an optional ``buffer``
  row, then ``tc: N ratelimit: ..., tsa: ...`` blocks with `` priority:  N`` lines.
- ``dcb pfc show dev IF prio-pfc``: ``prio-pfc 0:off 1:off 2:off 3:on ...`` (alone, or after a
  ``pfc-cap 8 macsec-bypass off delay 0`` line when every field is shown).
- ``dcb app show dev IF dscp-prio``: ``dscp-prio 0:0 CS3:3 AF31:3 ...`` (symbolic names unless -N).
- ``dcb apptrust show dev IF order`` (iproute2 6.2+): ``order: dscp pcp ``.
"""

from __future__ import annotations

import re


class QosParseError(ValueError):
    """Output that does not have the expected shape."""


# DSCP names as iproute2 prints them (lib/rt_names.c dsfield names, RFC 2474 / 2597 / 3246 codepoints).
DSCP_NAMES = {
    "CS0": 0, "CS1": 8, "AF11": 10, "AF12": 12, "AF13": 14, "CS2": 16, "AF21": 18, "AF22": 20, "AF23": 22,
    "CS3": 24, "AF31": 26, "AF32": 28, "AF33": 30, "CS4": 32, "AF41": 34, "AF42": 36, "AF43": 38,
    "CS5": 40, "VA": 44, "EF": 46, "CS6": 48, "CS7": 56,
}

ON_OFF = {"on": 1, "off": 0}


def _dscp(token):
    token = token.strip()
    if token.upper() in DSCP_NAMES:
        return DSCP_NAMES[token.upper()]
    try:
        value = int(token, 0)
    except ValueError:
        raise QosParseError("not a DSCP: %r" % token)
    if not 0 <= value <= 63:
        raise QosParseError("DSCP out of range: %r" % token)
    return value


def parse_mlnx_qos(text):
    """``mlnx_qos -i IF`` -> dict(dcbx, trust, dscp2prio, default_priority, cable_len, pfc, pfc_buffer, tcs)."""
    out = dict(dcbx=None, trust=None, dscp2prio={}, default_priority=None, cable_len=None, pfc=None,
               pfc_buffer=None, buffer_size=None, tcs={}, warnings=[])
    section = None
    tc = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("******"):
            out["warnings"].append(line.strip("* "))
            continue
        if line.startswith("DCBX mode:"):
            out["dcbx"] = "os" if "OS" in line else "firmware"
            section = None
        elif line.startswith("Priority trust state:"):
            out["trust"] = line.split(":", 1)[1].strip()
            section = None
        elif line.startswith("dscp2prio mapping:"):
            section = "dscp2prio"
        elif line.startswith("default priority:"):
            value = line.split(":", 1)[1].strip()
            out["default_priority"] = int(value) if value.isdigit() else None
            section = "default"
        elif line.startswith("Receive buffer size"):
            sizes = line.split(":", 1)[1].strip()
            out["buffer_size"] = [int(v) for v in re.findall(r"(?:^|,)(\d+)(?=,)", "," + sizes)][:8]
            section = None
        elif line.startswith("Cable len:"):
            out["cable_len"] = int(line.split(":", 1)[1].strip())
            section = None
        elif line.startswith("PFC configuration:"):
            section = "pfc"
        elif line.startswith("tc:"):
            match = re.match(r"tc:\s*(\d+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?", line)
            if not match:
                raise QosParseError("unexpected tc line: %r" % line)
            tc = int(match.group(1))
            out["tcs"][tc] = dict(ratelimit=match.group(2).strip(), tsa=match.group(3),
                                  bw=int(match.group(4)) if match.group(4) else None, priorities=[])
            section = "tc"
        elif section == "dscp2prio" and line.startswith("prio:"):
            match = re.match(r"prio:(\d+)\s+dscp:([\d,\s]*)$", line)
            if not match:
                raise QosParseError("unexpected dscp2prio line: %r" % line)
            for dscp in match.group(2).split(","):
                if dscp.strip():
                    out["dscp2prio"][int(dscp)] = int(match.group(1))
        elif section == "default" and line.isdigit():
            out["default_priority"] = int(line)
        elif section == "pfc" and line.startswith("enabled"):
            values = line.split()[1:]
            out["pfc"] = [int(v) for v in values[:8]]
        elif section == "pfc" and line.startswith("buffer"):
            out["pfc_buffer"] = [int(v) for v in line.split()[1:9]]
        elif section == "pfc" and line.startswith("priority"):
            continue
        elif section == "tc" and line.startswith("priority:"):
            out["tcs"][tc]["priorities"].append(int(line.split(":", 1)[1]))
        elif line.endswith("not supported on your system"):
            out["warnings"].append(line)
    if out["trust"] is None or out["pfc"] is None or len(out["pfc"]) != 8:
        raise QosParseError("no trust state or PFC configuration in the mlnx_qos output")
    return out


def parse_dcb_pfc(text):
    """``dcb pfc show dev IF prio-pfc`` -> [0/1 for priority 0..7]."""
    for line in (text or "").splitlines():
        tokens = line.split()
        # pg-pfc: the name in the first published dcb patch; released iproute2 prints prio-pfc.
        if tokens and tokens[0] in ("prio-pfc", "pg-pfc"):
            pfc = [None] * 8
            for token in tokens[1:]:
                prio, _sep, state = token.partition(":")
                if not prio.isdigit() or int(prio) > 7 or state not in ON_OFF:
                    raise QosParseError("unexpected prio-pfc entry %r" % token)
                pfc[int(prio)] = ON_OFF[state]
            if None in pfc:
                raise QosParseError("prio-pfc does not list all 8 priorities: %r" % line)
            return pfc
    raise QosParseError("no prio-pfc line in the dcb output")


def parse_dcb_app_dscp(text):
    """``dcb app show dev IF dscp-prio`` -> {dscp: [priorities]} (the APP table may hold several per DSCP)."""
    table = {}
    for line in (text or "").splitlines():
        tokens = line.split()
        if tokens and tokens[0] == "dscp-prio":
            for token in tokens[1:]:
                dscp, _sep, prio = token.rpartition(":")
                if not prio.isdigit():
                    raise QosParseError("unexpected dscp-prio entry %r" % token)
                table.setdefault(_dscp(dscp), []).append(int(prio))
    return table


def parse_dcb_apptrust(text):
    """``dcb apptrust show dev IF order`` -> the trusted selectors in order, e.g. ['dscp', 'pcp']."""
    for line in (text or "").splitlines():
        if line.strip().startswith("order:"):
            return line.split(":", 1)[1].split()
    raise QosParseError("no order line in the dcb apptrust output")


def dcb_error_kind(text):
    """Why a dcb command failed, from its message: no_dcb, old_iproute2, no_device or None."""
    text = text or ""
    if "Operation not supported" in text:
        return "no_dcb"
    if re.search(r'Object "\w+" is unknown', text):
        return "old_iproute2"
    if "No such device" in text or "Cannot find device" in text:
        return "no_device"
    return None


def dcb_trust(order):
    """The trust mode an apptrust order means: 'dscp' when DSCP comes before PCP (or alone), else 'pcp'."""
    for selector in order or []:
        if selector in ("dscp", "pcp"):
            return selector
    return "pcp"


def parse_int(text):
    """A sysfs/configfs integer value, or None."""
    text = (text or "").strip()
    try:
        return int(text, 0)
    except ValueError:
        return None


def parse_traffic_class(text):
    """``/sys/class/infiniband/DEV/tc/PORT/traffic_class``: MLNX_OFED prints ``Global tclass=106`` or a bare number."""
    match = re.search(r"(\d+)\s*$", (text or "").strip())
    return int(match.group(1)) if match else None
