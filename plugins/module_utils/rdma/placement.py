# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux RDMA host: placing RDMA devices in a network namespace (by name, process, container or pod) and back.

PRIVATE to the roce.fabric collection: may change without notice.

``check`` is the one place that decides whether placement can happen (the devices exist, the
namespace exists, the subsystem is in exclusive mode); it runs before anything is changed and
again on the state that the mode change left.
"""

from __future__ import annotations

import os

from ansible_collections.roce.fabric.plugins.module_utils.rdma import host as rdma_host
from ansible_collections.roce.fabric.plugins.module_utils.rdma.host import HOST, HOST_ALIAS, NetnsError


class DevicePlacement(object):
    """``params``: the module's ``devices``, ``state``, ``netns``, ``pid``, ``container``, ``pod`` and their options."""

    def __init__(self, host, params):
        self.host = host
        self.params = params

    def check(self, names, where, mode):
        """Refuse what cannot be placed: an unknown device, a named namespace that does not exist, shared mode."""
        p = self.params
        if p["state"] == "present" and p["netns"] and p["netns"] not in names:
            raise NetnsError("network namespace %s does not exist (ip netns list: %s)" % (p["netns"], ", ".join(names) or "none"),
                             kind="no_netns")
        if where is not None:
            unknown = [d for d in p["devices"] if d not in where]
            if unknown:
                raise NetnsError("unknown RDMA device(s): %s (found: %s)" % (", ".join(unknown), ", ".join(sorted(where)) or "none"),
                                 kind="no_device")
        if mode != "exclusive":
            raise NetnsError("the RDMA subsystem is in %s mode: every device is visible in every namespace and none can be "
                             "moved; set mode: exclusive first" % (mode or "no (ib_core not loaded)"), kind="shared")

    def target(self, known):
        """(namespace name, pid, name to give it or None when it has one already). Changes nothing."""
        p = self.params
        if p["state"] == "absent":
            return HOST, None, None
        if p["netns"]:
            if p["netns"] not in known:
                raise NetnsError("network namespace %s does not exist (ip netns list: %s)" % (p["netns"], ", ".join(known) or "none"),
                                 kind="no_netns")
            return p["netns"], None, None
        if p["pid"] is not None:
            pid, default = p["pid"], "pid-%d" % p["pid"]
        elif p["container"]:
            pid, default = self.host.pid_of_container(p["container"], p["container_runtime"]), "ctr-%s" % p["container"][:12]
        else:
            pid, default = self.host.pid_of_pod(p["pod"], p["pod_namespace"]), "pod-%s-%s" % (p["pod_namespace"], p["pod"])
        name = self.host.netns_of_pid(pid)
        if name:
            return name, pid, None
        name = p["netns_name"] or default
        if name in known:
            raise NetnsError("namespace name %s is taken by another namespace; set netns_name" % name, kind="conflict")
        return name, pid, name

    def move(self, device, source, dest):
        dev_set = [self.host.rdma, "dev", "set", device, "netns"]
        try:
            if dest == HOST:
                self.host.mutate([self.host.ip, "netns", "attach", HOST_ALIAS, "1"], "naming the host namespace")
                try:
                    self.host.mutate([self.host.ip, "netns", "exec", source] + dev_set + [HOST_ALIAS], "moving %s to the host" % device)
                finally:
                    self.host.mutate([self.host.ip, "netns", "delete", HOST_ALIAS], "removing the host namespace name")
            elif source == HOST:
                self.host.mutate(dev_set + [dest], "moving %s into %s" % (device, dest))
            else:
                self.host.mutate([self.host.ip, "netns", "exec", source] + dev_set + [dest], "moving %s into %s" % (device, dest))
        except NetnsError as exc:
            kind = exc.details.get("kind")
            if kind == "not_supported":
                raise NetnsError("RDMA device %s cannot change network namespace: the kernel answers 'Operation not supported' "
                                 "for drivers that cannot detach their users (software devices rdma_rxe and siw never can; "
                                 "mlx5_ib, irdma and other hardware drivers can). Nothing was moved." % device,
                                 kind=kind, device=device, stderr=exc.details.get("stderr"))
            raise

    def place(self, mode_after, result):
        p = self.params
        names = self.host.netns_names()
        self.check(names, None, mode_after)
        where = self.host.locate(names)
        dest, pid, new_name = self.target(names)
        if new_name:
            # A device may already be in the target namespace, which has no name yet: look into it.
            for dev in self.host.devices_in(os.path.join(rdma_host.PROC, str(pid), "ns", "net")):
                where.setdefault(dev, dest)
        self.check(names, where, mode_after)
        result["target"] = {"netns": dest, "pid": pid}
        before = dict((d, where[d]) for d in p["devices"])
        moving = [d for d in p["devices"] if where[d] != dest]
        if moving and new_name:
            self.host.mutate([self.host.ip, "netns", "attach", new_name, str(pid)], "naming the namespace of process %d" % pid)
        for device in moving:
            self.move(device, where[device], dest)
        if self.host.check:
            after = dict((d, dest) for d in p["devices"])
        else:
            now = self.host.locate(self.host.netns_names())
            after = dict((d, now.get(d, dest if new_name and not moving else "unknown")) for d in p["devices"])
            wrong = [d for d in p["devices"] if after[d] != dest]
            if wrong:
                raise NetnsError("after the move, %s not in %s: %s" % (", ".join(wrong), dest, after))
        return before, after
