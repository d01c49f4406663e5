# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: a PCIe link's state and its AER counters as Linux's sysfs prints them. Pure parsers.

PRIVATE to the roce.fabric collection: may change without notice.

``current_link_speed`` / ``max_link_speed`` print ``32.0 GT/s PCIe`` (``8 GT/s`` or ``8.0 GT/s`` on older kernels,
``Unknown`` when the link is down); ``current_link_width`` / ``max_link_width`` a number. The AER files
(``aer_dev_correctable``, ``aer_dev_nonfatal``, ``aer_dev_fatal``; Documentation/ABI/testing/
sysfs-bus-pci-devices-aer_stats) print one ``<error name> <count>`` line per error and a ``TOTAL_ERR_*`` line. A
device's errors may be counted at its link partner (the upstream port) instead: both ends are read. A link is
judged under load only: idle GPUs and NICs train down to save power, which is not a fault.

The kernel says what a device's link can carry when its driver probes it (``pcie_print_link_status``, in the kernel
log: ``<n> Gb/s available PCIe bandwidth (<speed> PCIe x<w> link)``, or ``..., limited by <speed> PCIe x<w> link at
<BDF> (capable of <n> Gb/s with <speed> PCIe x<w> link)`` when a link on its path is slower or narrower, naming
that link's upstream device; older kernels print ``8 GT/s x8``, without ``PCIe``); ``kernel_limits`` reads those
lines in both wordings.
"""

from __future__ import annotations

import re

# The sampler runs as a script of its own on the host (stdlib only): its readers of the link files are the ones here.
from ansible_collections.roce.fabric.plugins.module_utils.validate.pcie_sampler import speed_of as parse_link_speed
from ansible_collections.roce.fabric.plugins.module_utils.validate.pcie_sampler import width_of as parse_link_width

__all__ = ["parse_link_speed", "parse_link_width", "link_state", "link_files", "parse_aer", "aer_delta", "window_reading",
           "kernel_limits"]

BDF = r"[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
SPEED = r"[0-9.]+ GT/s|Unknown(?: speed)?|unknown"
# Older kernels print the speed as ``8 GT/s`` and without the word ``PCIe`` (``limited by 5 GT/s x4 link at ...
# (capable of 63.008 Gb/s with 8 GT/s x8 link)``); newer ones ``8.0 GT/s PCIe x8``: both are read.
KERNEL_LINK_RE = re.compile(
    r"(?P<bdf>%(bdf)s): (?P<avail>[0-9.]+) Gb/s available PCIe bandwidth(?:"
    r", limited by (?P<speed>%(speed)s)(?: PCIe)? x(?P<width>\d+) link at (?P<at>%(bdf)s|<unknown>)"
    r" \(capable of (?P<cap>[0-9.]+) Gb/s with (?P<cap_speed>%(speed)s)(?: PCIe)? x(?P<cap_width>\d+) link\)"
    r"| \((?P<ok_speed>%(speed)s)(?: PCIe)? x(?P<ok_width>\d+) link\))" % dict(bdf=BDF, speed=SPEED))


def _speed(text):
    match = re.match(r"^([0-9.]+) GT/s$", text or "")
    return float(match.group(1)) if match else None


def kernel_limits(text):
    """``{bdf: {available_gbps, capable_gbps, speed, width, max_speed, max_width, limited_at}}`` from kernel log
    lines (dmesg, ``journalctl -k``, syslog: the line is found wherever it stands), the last line of a device
    winning (it was probed again). ``limited_at`` is the upstream device of the link that limits it (None when
    nothing does); ``speed``/``width`` that link's, ``max_*`` what the device can do."""
    out = {}
    for match in KERNEL_LINK_RE.finditer(text or ""):
        found = match.groupdict()
        if found["at"] is not None:
            out[found["bdf"].lower()] = dict(
                available_gbps=float(found["avail"]), capable_gbps=float(found["cap"]), speed=_speed(found["speed"]),
                width=int(found["width"]), max_speed=_speed(found["cap_speed"]), max_width=int(found["cap_width"]),
                limited_at=None if found["at"] == "<unknown>" else found["at"].lower())
        else:
            out[found["bdf"].lower()] = dict(
                available_gbps=float(found["avail"]), capable_gbps=float(found["avail"]),
                speed=_speed(found["ok_speed"]), width=int(found["ok_width"]), max_speed=_speed(found["ok_speed"]),
                max_width=int(found["ok_width"]), limited_at=None)
    return out


def link_state(speed, width, max_speed, max_width):
    """``{speed, width, max_speed, max_width}`` (GT/s and lanes) from the four sysfs files' text."""
    return dict(speed=parse_link_speed(speed), width=parse_link_width(width), max_speed=parse_link_speed(max_speed),
                max_width=parse_link_width(max_width))


def link_files(text):
    """The four values of ``cat current_link_speed current_link_width max_link_speed max_link_width``."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if len(lines) != 4:
        raise ValueError("expected the four link files' values, got %d lines" % len(lines))
    return link_state(*lines)


def parse_aer(text):
    """One AER file as ``{error name: count}``, its ``TOTAL_ERR_*`` line under ``total``."""
    counts = {}
    for line in (text or "").splitlines():
        name, _sep, value = line.strip().rpartition(" ")
        if not name or not value.isdigit():
            continue
        if name.startswith("TOTAL_ERR_"):
            counts["total"] = int(value)
        else:
            counts[name] = int(value)
    if "total" not in counts and counts:
        counts["total"] = sum(counts.values())
    return counts


def aer_delta(before, after):
    """New errors between two readings of one AER file (0 after a reset, which starts the counts again)."""
    old, new = parse_aer(before).get("total", 0), parse_aer(after).get("total", 0)
    return new - old if new >= old else new


AER_KEYS = (("aer_dev_correctable", "correctable"), ("aer_dev_nonfatal", "nonfatal"), ("aer_dev_fatal", "fatal"))


def window_reading(sampled, aer_before, aer_after):
    """One port's PCIe evidence of a traffic window, as the fault location engine reads it (``locate.evidence``'s
    ``pcie``): the link of its PCI function at the busiest moment of the traffic (``sampled``: the sampler's summary
    of the port; None when it did not run) - ``pci``, ``speed``, ``max_speed``, ``width``, ``max_width``, the port above
    it as ``upstream_*``, ``busy_samples`` and ``below_samples`` (samples with traffic whose link ran below its
    capability) - and the AER errors counted during the window at both ends (``aer_correctable`` ...,
    ``upstream_aer_correctable`` ...; ``aer_before``/``aer_after``: ``pcie_sampler.read_aer`` at the window's
    opening and close). None when there is nothing to say."""
    out = {}
    sampled = sampled or {}
    link, upstream = sampled.get("link") or {}, sampled.get("upstream") or {}
    for key in ("pci", "speed", "max_speed", "width", "max_width"):
        if link.get(key) is not None:
            out[key] = link[key]
        if upstream.get(key) is not None:
            out["upstream_" + key] = upstream[key]
    if link or upstream:
        out.update(busy_samples=sampled.get("busy", 0), below_samples=sampled.get("below", 0))
    for side, prefix in (("function", ""), ("upstream", "upstream_")):
        before, after = (aer_before or {}).get(side) or {}, (aer_after or {}).get(side) or {}
        for name, key in AER_KEYS:
            if name in before and name in after:
                out[prefix + "aer_" + key] = aer_delta(before[name], after[name])
    return out or None
