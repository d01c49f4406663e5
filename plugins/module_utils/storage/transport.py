# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Local storage of a Linux node: the transport, the node's block tools, files and /sys.

PRIVATE to the roce.fabric collection: may change without notice.

``Node`` runs ``lsblk``, ``mdadm``, ``blkid``, ``wipefs``, ``mkfs.*`` and ``mount`` as argv lists through
``CommandRunner`` (``LC_ALL=C``, a timeout on every command), reads ``/proc`` and the configuration files, and makes
every change through ``ModuleRun.mutate``, so that check mode records it instead and every change is in ``commands``.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

from ansible_collections.roce.fabric.plugins.module_utils.common.files import listdir as _listdir
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, run_change
from ansible_collections.roce.fabric.plugins.module_utils.storage import parsers


class Node(object):
    """The node's block tools, through argv lists (``CommandRunner``)."""

    def __init__(self, module, run):
        self.module = module
        self.run = run
        self.cmd = CommandRunner(module)
        self.tools = {}

    def tool(self, name):
        if name not in self.tools:
            path = self.module.get_bin_path(name, opt_dirs=["/sbin", "/usr/sbin"])
            if not path:
                raise FabricError("%s is not installed on the node (packages: mdadm, util-linux, xfsprogs or e2fsprogs); "
                                  "nothing was changed" % name, kind="missing_tool")
            self.tools[name] = path
        return self.tools[name]

    def out(self, argv, ok=(0,)):
        rc, out, err = self.cmd.run(argv)
        if rc not in ok:
            raise FabricError("%s failed (rc=%d): %s" % (CommandRunner.render(argv), rc, (err or out).strip()),
                              kind="command", rc=rc, stdout=out, stderr=err)
        return out

    def change(self, argv):
        run_change(self.run, self.cmd, argv)

    @staticmethod
    def read(path):
        try:
            with open(path) as handle:
                return handle.read()
        except (IOError, OSError):
            return ""

    def write(self, path, text, what):
        def action():
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o755)
            mode = stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else 0o644
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".roce-fabric-")
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            os.chmod(tmp, mode)
            self.module.atomic_move(tmp, path)
        self.run.mutate("write %s: %s" % (path, what), action)

    def devices(self):
        return parsers.parse_lsblk(self.out([self.tool("lsblk"), "--json", "--bytes", "--output", parsers.LSBLK_COLUMNS]))

    def arrays(self):
        """``({/dev/mdN: mdadm --detail --export}`` of the active arrays, the same of the inactive ones)."""
        active, inactive = {}, {}
        for md, info in parsers.parse_mdstat(self.read("/proc/mdstat")).items():
            detail = parsers.parse_export(self.out([self.tool("mdadm"), "--detail", "--export", "/dev/" + md], ok=(0, 1, 2)))
            (active if info["state"] == "active" else inactive)["/dev/" + md] = dict(detail, members=info["members"])
        return active, inactive

    def examine(self, path):
        return parsers.parse_export(self.out([self.tool("mdadm"), "--examine", "--export", path], ok=(0, 1)))

    def blkid(self, path):
        # Low-level probe, no cache; rc 2: nothing found.
        return parsers.parse_export(self.out([self.tool("blkid"), "--probe", "--output", "export", path], ok=(0, 2)))

    @staticmethod
    def by_id(path):
        base = "/dev/disk/by-id"
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return None
        real = os.path.realpath(path)
        found = [n for n in names if os.path.realpath(os.path.join(base, n)) == real]
        # The model and serial name (nvme-MODEL_SERIAL) first, then any other (eui, nguid).
        found.sort(key=lambda n: (n.startswith("nvme-eui.") or n.startswith("nvme-nvme."), n))
        return os.path.join(base, found[0]) if found else None

    def settle(self):
        """Wait for udev to finish what it has queued (a new drive, a signature written), so that lsblk's cached
        columns are current; a node without udevadm (a container) goes on."""
        path = self.module.get_bin_path("udevadm", opt_dirs=["/sbin", "/usr/sbin", "/bin"])
        if path:
            self.out([path, "settle", "--timeout=%d" % min(60, self.cmd.timeout)], ok=(0, 1))

    def nvme_controllers(self):
        return parsers.parse_nvme_sysfs(nvme_sysfs_listing())

    def signatures(self, path):
        """Every signature on the drive, read from the drive itself (no cache): ``wipefs --no-act --json``."""
        return parsers.parse_wipefs(self.out([self.tool("wipefs"), "--no-act", "--json", path]))

    @staticmethod
    def holders(name):
        """The kernel's holders (md, dm) of a drive and of its partitions: ``/sys/class/block/<name>/holders``."""
        found = []
        base = "/sys/class/block/%s" % name
        for directory in [base] + [os.path.join(base, part) for part in _listdir(base) if part.startswith(name)]:
            for holder in _listdir(os.path.join(directory, "holders")):
                if holder not in found:
                    found.append(holder)
        return found

    @staticmethod
    def exclusive_read(path, offsets, length):
        """Open the drive exclusively (``O_EXCL``: the kernel refuses while anything mounts or holds it, in any mount
        namespace) and read ``length`` bytes at each offset: ``(busy, [offsets holding a non-zero byte])``."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_EXCL | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                return True, []
            raise
        try:
            return False, [offset for offset in offsets if any(bytearray(os.pread(fd, length, offset)))]
        finally:
            os.close(fd)


def path_chain(path):
    """lstat of every existing component of an absolute, normalised ``path`` from ``/`` down, for
    ``state.mount_point_problems``: dicts of path, link, dir, mode, uid, and target (the path itself)."""
    chain, current = [], "/"
    parts = [part for part in path.split("/") if part]
    for index in range(len(parts) + 1):
        current = "/" + "/".join(parts[:index])
        try:
            info = os.lstat(current)
        except OSError:
            break
        chain.append(dict(path=current, link=stat.S_ISLNK(info.st_mode), dir=stat.S_ISDIR(info.st_mode),
                          mode=stat.S_IMODE(info.st_mode), uid=info.st_uid, target=index == len(parts)))
    return chain


def nvme_sysfs_listing(root="/sys"):
    """The NVMe part of /sys as the lines ``parsers.parse_nvme_sysfs`` reads (the corpus' capture command prints the
    same lines with a shell)."""
    lines = []
    block = os.path.join(root, "block")
    for name in _listdir(block):
        if not parsers.NVME_NAMESPACE_RE.fullmatch(name):
            continue
        lines.append("block/%s/device -> %s" % (name, os.path.basename(os.path.realpath(os.path.join(block, name, "device")))))
        for path in _listdir(os.path.join(block, name, "multipath")):
            lines.append("block/%s/multipath/%s" % (name, path))
    subsystems = os.path.join(root, "class", "nvme-subsystem")
    for subsystem in _listdir(subsystems):
        for name in _listdir(os.path.join(subsystems, subsystem)):
            if parsers.CONTROLLER_RE.fullmatch(name):
                lines.append("subsystem/%s/%s" % (subsystem, name))
    controllers = os.path.join(root, "class", "nvme")
    for name in _listdir(controllers):
        for attr in ("transport", "address", "subsysnqn"):
            lines.append("nvme/%s/%s: %s" % (name, attr, Node.read(os.path.join(controllers, name, attr)).strip()))
    return "\n".join(lines) + "\n"
