# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Local storage of a Linux node: the transport, the node's block tools and files.

PRIVATE to the roce.fabric collection: may change without notice.

``Node`` runs ``lsblk``, ``mdadm``, ``blkid``, ``wipefs``, ``mkfs.*`` and ``mount`` as argv lists through
``CommandRunner`` (``LC_ALL=C``, a timeout on every command), reads ``/proc`` and the configuration files, and makes
every change through ``ModuleRun.mutate``, so that check mode records it instead and every change is in ``commands``.
"""

from __future__ import annotations

import os
import stat
import tempfile

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
