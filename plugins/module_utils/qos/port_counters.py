# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One RoCE port's counters, read on the host: ``ethtool -S`` of the netdev and the RDMA port's ``hw_counters``.

PRIVATE to the roce.fabric collection: may change without notice.

Used by roce.fabric.rdma_counters (one snapshot) and roce.fabric.traffic_window (the snapshots around the traffic).
"""

from __future__ import annotations

import os
import re
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import read_sysfs
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError
from ansible_collections.roce.fabric.plugins.module_utils.qos import counters, state


def read_hw_counters(root, device, port):
    directory = os.path.join(root, "sys", "class", "infiniband", device, "ports", str(port), "hw_counters")
    values = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return values
    for name in names:
        values.update(counters.parse_counter_lines("%s:%s" % (name, read_sysfs(os.path.join(directory, name)) or "")))
    return values


def _sysfs_int(path):
    value = read_sysfs(path)
    return int(value) if value is not None and value.strip().isdigit() else None


def _mac(text):
    value = (text or "").strip().lower()
    return value if re.match(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", value) else None


def read_port(module, root, netdev, device=None, port=1, ethtool=True):
    """``{netdev, driver, ethtool, ethtool_error, hw_counters, priorities, mtu, carrier_changes, speed, mac, read_at}``
    of one port (the last four from the netdev's sysfs: its MTU, how often its carrier went down or up since it was made,
    which every driver keeps, the link's rate in Mb/s, None where the driver does not know it, and its Ethernet
    address, None where it has none); FabricError (``kind``
    bad_input or no_device) for a name that is not one or a netdev the host does not have."""
    try:
        state.check_names(netdev, device)
    except state.QosInputError as exc:
        raise FabricError(str(exc), kind="bad_input")
    net_dir = os.path.join(root, "sys", "class", "net", netdev)
    if not os.path.isdir(net_dir):
        raise FabricError("No network interface %s on this host" % netdev, kind="no_device")
    driver_link = os.path.join(net_dir, "device", "driver")
    driver = os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else None
    stats, error = None, None
    if ethtool:
        tool = module.get_bin_path("ethtool")
        if not tool:
            error = "ethtool is not installed"
        else:
            rc, out, err = CommandRunner(module).run([tool, "-S", netdev])
            if rc == 0:
                stats = counters.parse_ethtool_stats(out)
            else:
                error = (err or out).strip() or "ethtool -S exited with %d" % rc
    hw = read_hw_counters(root, device, port) if device else {}
    prios = dict((str(p), v) for p, v in counters.priority_stats(stats or {}).items())
    return dict(netdev=netdev, driver=driver, ethtool=stats, ethtool_error=error, hw_counters=hw, priorities=prios,
                mtu=_sysfs_int(os.path.join(net_dir, "mtu")),
                carrier_changes=_sysfs_int(os.path.join(net_dir, "carrier_changes")),
                # -1 (SPEED_UNKNOWN) or unreadable (a link that is down) is None.
                speed=_sysfs_int(os.path.join(net_dir, "speed")),
                # The port's MAC address: a switch's LLDP table names a host's port by it (lldpd's default port ID).
                mac=_mac(read_sysfs(os.path.join(net_dir, "address"))),
                # When it was read (seconds since the epoch): two reads give the window's length.
                read_at=round(time.time(), 3))
