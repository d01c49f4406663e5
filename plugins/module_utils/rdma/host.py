# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux RDMA host: the ``rdma`` and ``ip`` tools, namespaces and processes as the kernel shows them.

PRIVATE to the roce.fabric collection: may change without notice.

``RdmaHost`` is the family's transport: every read goes through ``read`` and every change through
``mutate``, which records the command and, in check mode, only records it.
"""

from __future__ import annotations

import os

from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError
from ansible_collections.roce.fabric.plugins.module_utils.rdma import tools as rdma_tools

HOST = "host"
HOST_ALIAS = "roce-fabric-host"
NETNS_RUN_DIRS = ("/run/netns", "/var/run/netns")
PROC = "/proc"
IB_CORE_SYSFS = "/sys/module/ib_core"
BOOT = "/boot"


class NetnsError(FabricError):
    """An RDMA namespace failure; ``kind`` and the tool's words go into the result."""

    def __init__(self, msg, **details):
        super(NetnsError, self).__init__(msg, **details)
        self.msg = msg


class RdmaHost(object):
    """The host's RDMA namespaces and devices, read and changed through iproute2."""

    def __init__(self, run):
        """``run``: the module's ModuleRun, which records every change (common/run.py)."""
        self.run = run
        self.module = run.module
        self.runner = CommandRunner(self.module)
        self.check = run.check_mode
        self.rdma = self.module.get_bin_path("rdma", required=True)
        self.ip = self.module.get_bin_path("ip", required=True)
        self.warnings = []

    def read(self, argv):
        return self.runner.run(argv)

    def mutate(self, argv, what):
        """Run a mutating command through the run's record (only recorded in check mode); raise NetnsError with the
        tool's words, the failed command then not recorded as done."""
        command = CommandRunner.render(argv)

        def action():
            rc, out, err = self.runner.run(argv, mutating=True)
            if rc != 0:
                text = (err or out or "").strip()
                raise NetnsError("%s failed: %s" % (what, text or "rc=%d" % rc), kind=rdma_tools.classify_error(text),
                                 command=command, rc=rc, stderr=err)
            return out

        out = self.run.mutate(command, action)
        return "" if out is None else out

    def iproute2_version(self):
        rc, out, err = self.read([self.rdma, "-V"])
        version = rdma_tools.parse_iproute2_version(out + err)
        if rdma_tools.iproute2_supports_netns(version) is False:
            raise NetnsError("iproute2 %s is too old: RDMA network namespaces need iproute2 %s or later "
                             "(rdma system, rdma dev set ... netns)" % (version, rdma_tools.MIN_IPROUTE2), kind="too_old")
        return version

    def running_mode(self):
        """``rdma system show`` parsed, or None when ib_core is not loaded."""
        rc, out, err = self.read([self.rdma, "system", "show"])
        try:
            return rdma_tools.parse_system(out if rc == 0 else out + err)
        except rdma_tools.RdmaToolError as exc:
            if exc.kind == "too_old":
                raise NetnsError("this iproute2 has no 'rdma system' (%s): RDMA network namespaces need iproute2 %s or later"
                                 % (exc.text, rdma_tools.MIN_IPROUTE2), kind="too_old")
            if not os.path.isdir(IB_CORE_SYSFS):
                return None
            raise NetnsError("cannot read the RDMA namespace mode: %s" % exc.text, kind=exc.kind)

    def netns_names(self):
        rc, out, err = self.read([self.ip, "netns", "list"])
        if rc != 0:
            raise NetnsError("ip netns list failed: %s" % (err or out).strip())
        return [n for n in rdma_tools.parse_netns_list(out) if n != HOST_ALIAS]

    def devices_in(self, netns):
        if netns == HOST:
            argv = [self.rdma, "-j", "dev", "show"]
        elif netns.startswith("/"):
            nsenter = self.module.get_bin_path("nsenter", required=True)
            argv = [nsenter, "--net=%s" % netns, self.rdma, "-j", "dev", "show"]
        else:
            argv = [self.ip, "netns", "exec", netns, self.rdma, "-j", "dev", "show"]
        rc, out, err = self.read(argv)
        if rc != 0:
            return []
        return [d["name"] for d in rdma_tools.parse_devices(out)]

    def locate(self, names):
        """Device name -> namespace name (``host`` for the host's) for every device seen."""
        where = dict((dev, HOST) for dev in self.devices_in(HOST))
        for netns in names:
            for dev in self.devices_in(netns):
                where.setdefault(dev, netns)
        return where

    def netns_of_pid(self, pid):
        """Name of the namespace of ``pid`` (``host`` for the host's), or None when it has no name."""
        path = os.path.join(PROC, str(pid), "ns", "net")
        try:
            inode = os.stat(path).st_ino
        except OSError:
            raise NetnsError("process %d does not exist (no %s)" % (pid, path), kind="no_netns")
        if inode == os.stat(os.path.join(PROC, "1", "ns", "net")).st_ino:
            return HOST
        for directory in NETNS_RUN_DIRS:
            for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
                try:
                    if os.stat(os.path.join(directory, name)).st_ino == inode and name != HOST_ALIAS:
                        return name
                except OSError:
                    continue
        return None

    def runtime_tool(self, wanted):
        names = ["crictl", "nerdctl", "docker"] if wanted == "auto" else [wanted]
        for name in names:
            path = self.module.get_bin_path(name)
            if path:
                return name, path
        raise NetnsError("no container runtime client found (looked for %s)" % ", ".join(names), kind="no_runtime")

    def pid_of_container(self, container, runtime="auto"):
        kind, tool = self.runtime_tool(runtime)
        argv = [tool, "inspect", "-o", "json", container] if kind == "crictl" else [tool, "inspect", container]
        rc, out, err = self.read(argv)
        if rc != 0:
            raise NetnsError("container %s not found by %s: %s" % (container, kind, (err or out).strip()), kind="no_container")
        try:
            pid = rdma_tools.parse_inspect_pid(out)
        except (ValueError, AttributeError):
            raise NetnsError("cannot read %s inspect output for %s" % (kind, container))
        if not pid:
            raise NetnsError("container %s is not running (%s reports no process)" % (container, kind), kind="no_container")
        return pid

    def pid_of_pod(self, pod, namespace):
        tool = self.module.get_bin_path("crictl")
        if not tool:
            raise NetnsError("finding pod %s/%s needs crictl, which is not installed" % (namespace, pod), kind="no_runtime")
        rc, out, err = self.read([tool, "pods", "--name", pod, "--namespace", namespace, "-o", "json"])
        if rc != 0:
            raise NetnsError("crictl pods failed: %s" % (err or out).strip())
        ids = rdma_tools.parse_crictl_pods(out, pod, namespace)
        if not ids:
            raise NetnsError("no ready pod %s in namespace %s on this host" % (pod, namespace), kind="no_pod")
        if len(ids) > 1:
            raise NetnsError("%d ready sandboxes for pod %s/%s: %s" % (len(ids), namespace, pod, ", ".join(ids)))
        rc, out, err = self.read([tool, "inspectp", "-o", "json", ids[0]])
        pid = rdma_tools.parse_inspect_pid(out) if rc == 0 else None
        if not pid:
            raise NetnsError("pod %s/%s has no sandbox process" % (namespace, pod), kind="no_pod")
        return pid


# Where sysfs is mounted; only unit tests point it elsewhere.
SYSFS = "/sys"


class SriovPort(object):
    """One physical function's SR-IOV side: the VF counts in sysfs and the VFs as ``ip link`` shows them."""

    def __init__(self, module, netdev):
        self.module = module
        self.netdev = netdev
        self.runner = CommandRunner(module)
        self.ip = module.get_bin_path("ip", required=True)

    def count_path(self, name):
        return os.path.join(SYSFS, "class", "net", self.netdev, "device", name)

    def read_count(self, name):
        path = self.count_path(name)
        try:
            with open(path) as handle:
                return int(handle.read().strip())
        except (OSError, ValueError) as exc:
            if not os.path.exists(os.path.join(SYSFS, "class", "net", self.netdev)):
                raise FabricError("%s is not a network interface of this host" % self.netdev, kind="no_device")
            raise FabricError("%s has no SR-IOV capability (cannot read %s: %s)" % (self.netdev, path, exc), kind="no_sriov")

    def write_count(self, count):
        path = self.count_path("sriov_numvfs")
        try:
            with open(path, "w") as handle:
                handle.write("%d\n" % count)
        except OSError as exc:
            raise FabricError("writing %d to %s failed: %s" % (count, path, exc), kind="refused")

    def link_json(self):
        argv = [self.ip, "-j", "-d", "link", "show", "dev", self.netdev]
        rc, out, err = self.runner.run(argv)
        if rc != 0:
            raise FabricError("%s failed: %s" % (CommandRunner.render(argv), (err or out).strip()), kind="ip")
        return out

    def set_vf(self, argv):
        rc, out, err = self.runner.run(argv, mutating=True)
        if rc != 0:
            raise FabricError("%s failed: %s" % (CommandRunner.render(argv), (err or out).strip()), kind="refused",
                              command=CommandRunner.render(argv))
