# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""systemd on a Linux host: the transport.

PRIVATE to the roce.fabric collection: may change without notice.

``Host`` reads files with ``lstat`` (never through a link), writes them atomically (a temporary file in the same
directory, its mode and owner set before it is renamed over the old one) and runs ``systemctl`` as argv lists
through ``CommandRunner`` (``LC_ALL=C``, a timeout on every command). Every change goes through ``ModuleRun.mutate``,
so that check mode records it instead and every change is in ``commands``.
"""

from __future__ import annotations

import os
import stat

from ansible_collections.roce.fabric.plugins.module_utils.common.files import write_atomic
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, run_change
from ansible_collections.roce.fabric.plugins.module_utils.systemd import parsers

KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "symbolic link"))


class Host(object):
    """The host's files and its systemd."""

    def __init__(self, module, run):
        self.module = module
        self.run = run
        self.cmd = CommandRunner(module)
        self._systemctl = None

    @staticmethod
    def lstat(path, content=False):
        """``None`` where nothing is at ``path``, else ``dict(kind, mode, uid, gid)`` and, for a regular file with
        ``content``, its bytes."""
        try:
            info = os.lstat(path)
        except OSError:
            return None
        kind = "special file"
        for test, name in KINDS:
            if test(info.st_mode):
                kind = name
                break
        have = dict(kind=kind, mode=stat.S_IMODE(info.st_mode), uid=info.st_uid, gid=info.st_gid)
        if content and kind == "file":
            with open(path, "rb") as handle:
                have["content"] = handle.read()
        return have

    def systemctl(self):
        if self._systemctl is None:
            path = self.module.get_bin_path("systemctl", opt_dirs=["/bin", "/usr/bin"])
            if not path:
                raise FabricError("systemctl is not on the host: boot units need systemd; nothing was changed",
                                  kind="missing_tool")
            self._systemctl = path
        return self._systemctl

    def show(self, names):
        """``{name: properties}`` of the units named (one ``systemctl show``)."""
        if not names:
            return {}
        argv = [self.systemctl(), "show", "--property=%s" % ",".join(parsers.SHOW_PROPERTIES), "--"] + list(names)
        rc, out, err = self.cmd.run(argv)
        if rc != 0:
            raise FabricError("%s failed (rc=%d): %s; is systemd the host's init? Nothing was changed"
                              % (CommandRunner.render(argv), rc, (err or out).strip()), kind="command", rc=rc)
        return parsers.parse_show(out)

    def change(self, args):
        run_change(self.run, self.cmd, [self.systemctl()] + list(args))

    def mkdir(self, path, mode):
        def action():
            os.mkdir(path, mode)
            os.chmod(path, mode)
            os.chown(path, 0, 0)
        self.run.mutate("mkdir -m %04o %s" % (mode, path), action)

    def write(self, path, content, mode):
        def action():
            write_atomic(path, content, mode, owner=(0, 0), sync=True)
        self.run.mutate("write %s (%d bytes, mode %04o, root:root)" % (path, len(content), mode), action)

    def chmod(self, path, mode):
        self.run.mutate("chmod %04o %s" % (mode, path), lambda: os.chmod(path, mode))

    def chown(self, path):
        self.run.mutate("chown root:root %s" % path, lambda: os.lchown(path, 0, 0))

    def remove(self, path):
        self.run.mutate("rm %s" % path, lambda: os.unlink(path))
