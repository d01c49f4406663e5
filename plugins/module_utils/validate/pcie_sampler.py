# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Sample the PCIe link of RoCE ports while their traffic flows (the traffic window's PCIe evidence).

    python3 roce_pcie_sampler.py SECONDS OUT.json STOP_FILE NETDEV [NETDEV ...]

Every half second, for each interface: its bytes sent and received (``/sys/class/net/<netdev>/statistics``) and the
link of its PCI function and of the port above it (``current_link_speed``, ``current_link_width`` and their
``max_`` files), until SECONDS have passed or STOP_FILE exists; then writes, per interface, the link as it was at
the busiest sample (the most bytes moved) and the narrowest and slowest link seen while bytes moved. An idle link
trains down to save power, which is not a fault: only samples with traffic count. Reads sysfs only; writes its pid
to OUT.json.pid, by which the next window stops it if no close did.

PRIVATE to the roce.fabric collection: may change without notice. roce.fabric.traffic_window writes this file's
own source into its private work directory and runs it there in a session of its own; the functions are
unit-tested by import.
"""

import json
import os
import re
import sys
import time

INTERVAL = 0.5
LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
SPEED_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s")
PCI_ADDRESS_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def speed_of(text):
    """GT/s as a float from ``current_link_speed`` (``32.0 GT/s PCIe``; ``8 GT/s`` on older kernels); None for
    ``Unknown`` or anything else."""
    match = SPEED_RE.match(text or "")
    return float(match.group(1)) if match else None


def width_of(text):
    """Lanes from ``current_link_width``; None for 0 (a link down) or anything else."""
    try:
        value = int(str(text).strip())
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def pci_dirs(root, netdev):
    """``(function, upstream)``: the sysfs folders of the interface's PCI function and of the port above it (None
    where there is none: a virtual interface, a function on a root bus)."""
    device = os.path.join(root, "sys", "class", "net", netdev, "device")
    if not os.path.exists(device):
        return None, None
    function = os.path.realpath(device)
    # A virtio NIC's device is the virtio device; its PCI function is the folder above it.
    if not PCI_ADDRESS_RE.match(os.path.basename(function)):
        function = os.path.dirname(function)
    if not PCI_ADDRESS_RE.match(os.path.basename(function)):
        return None, None
    upstream = os.path.dirname(function)
    if not PCI_ADDRESS_RE.match(os.path.basename(upstream)):
        upstream = None
    return function, upstream


def read_link(folder):
    """``{pci, speed, width, max_speed, max_width}`` (GT/s and lanes) of a PCI folder; None without its files."""
    if not folder:
        return None
    values = [_read(os.path.join(folder, name)) for name in LINK_FILES]
    if values[0] is None:
        return None
    return dict(pci=os.path.basename(folder), speed=speed_of(values[0]), width=width_of(values[1]),
                max_speed=speed_of(values[2]), max_width=width_of(values[3]))


def read_bytes(root, netdev):
    total = 0
    for name in ("tx_bytes", "rx_bytes"):
        value = _read(os.path.join(root, "sys", "class", "net", netdev, "statistics", name))
        if value is None or not value.isdigit():
            return None
        total += int(value)
    return total


AER_FILES = ("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal")


def read_aer(root, netdev):
    """``{"function": {file: text}, "upstream": {...}}``: the AER counters of the interface's PCI function and of the
    port above it (files that do not exist, where the kernel keeps no AER statistics, are left out)."""
    out = {}
    for side, folder in zip(("function", "upstream"), pci_dirs(root, netdev)):
        if folder:
            texts = dict((name, _read(os.path.join(folder, name))) for name in AER_FILES)
            out[side] = dict((name, text) for name, text in texts.items() if text is not None)
    return out


def capability(link, upstream=None):
    """``(speed, width)`` the link can train to: the lower of both ends' maximums (a port above a x1 function shows
    x32 and 16 GT/s in its max files, as QEMU's root ports do, and the link is still whole at x1)."""
    def least(key):
        values = [end.get(key) for end in (link or {}, upstream or {}) if end.get(key)]
        return min(values) if values else None
    return least("max_speed"), least("max_width")


def below(link, upstream=None):
    """True when the function's link runs narrower or slower than both ends can."""
    if not link:
        return False
    speed, width = capability(link, upstream)
    narrow = link.get("width") and width and link["width"] < width
    slow = link.get("speed") and speed and link["speed"] < speed
    return bool(narrow or slow)


def summary(samples):
    """What a series of samples of one interface says: ``samples`` (``[{moved, link, upstream}]``, ``moved`` the
    bytes since the previous sample) -> ``{samples, busy, max_bytes_per_s, link, upstream, below}``: the links at the
    busiest sample, and ``below`` the samples with traffic whose link ran below what both its ends can."""
    busy = [s for s in samples if s.get("moved")]
    out = dict(samples=len(samples), busy=len(busy), max_bytes_per_s=0, link=None, upstream=None, below=0)
    if not busy:
        return out
    busiest = max(busy, key=lambda s: s["moved"])
    out.update(max_bytes_per_s=int(busiest["moved"] / INTERVAL), link=busiest.get("link"),
               upstream=busiest.get("upstream"),
               below=len([s for s in busy if below(s.get("link"), s.get("upstream"))]))
    return out


def sample(root, netdevs, seconds, stop_file, clock=time.monotonic, sleep=time.sleep):
    """Sample until ``seconds`` passed or ``stop_file`` exists; ``{netdev: summary}``."""
    dirs = dict((netdev, pci_dirs(root, netdev)) for netdev in netdevs)
    last = dict((netdev, read_bytes(root, netdev)) for netdev in netdevs)
    series = dict((netdev, []) for netdev in netdevs)
    end = clock() + seconds
    while clock() < end and not os.path.exists(stop_file):
        sleep(INTERVAL)
        for netdev in netdevs:
            now = read_bytes(root, netdev)
            moved = now - last[netdev] if now is not None and last[netdev] is not None and now >= last[netdev] else 0
            last[netdev] = now
            function, upstream = dirs[netdev]
            series[netdev].append(dict(moved=moved, link=read_link(function), upstream=read_link(upstream)))
    return dict((netdev, summary(found)) for netdev, found in series.items())


def main(seconds, out, stop_file, *netdevs):
    # Its pid beside its result: the next window stops a sampler an earlier, interrupted run left (traffic_window).
    with open(out + ".pid", "w") as handle:
        handle.write("%d\n" % os.getpid())
    found = sample("/", list(netdevs), float(seconds), stop_file)
    tmp = out + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(found, handle, sort_keys=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
