# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux RDMA host: the RDMA network-namespace mode, at runtime and for the next boot.

PRIVATE to the roce.fabric collection: may change without notice.

The running mode is ``rdma system set netns``; the persistent one is ib_core's ``netns_mode``
option in ``/etc/modprobe.d`` (read in name order, the last file wins), carried into the
initramfs where ib_core is loaded from it.
"""

from __future__ import annotations

import glob
import os
import platform

from ansible_collections.roce.fabric.plugins.module_utils.rdma import host as rdma_host
from ansible_collections.roce.fabric.plugins.module_utils.rdma import tools as rdma_tools
from ansible_collections.roce.fabric.plugins.module_utils.rdma.host import NetnsError


class NamespaceMode(object):
    """``params``: the module's ``mode``, ``persistent``, ``modprobe_file`` and ``initramfs``."""

    def __init__(self, host, params):
        self.host = host
        self.module = host.module
        self.params = params

    def modprobe_files(self):
        files = []
        directory = os.path.dirname(self.params["modprobe_file"])
        for path in sorted(glob.glob(os.path.join(directory, "*.conf"))):
            with open(path) as handle:
                files.append((path, handle.read()))
        return files

    def persistent(self, mode):
        path = self.params["modprobe_file"]
        wanted = self.params["persistent"]
        files = self.modprobe_files()
        before_mode, before_source = rdma_tools.effective_persistent_mode(files)
        others = [(n, t) for n, t in files if n != path]
        current = None
        if os.path.exists(path):
            with open(path) as handle:
                current = handle.read()
        if wanted == "present":
            content = rdma_tools.render_modprobe_file(mode)
            after_files = others + [(path, content)]
        elif wanted == "absent":
            content = None
            after_files = others
        else:
            return before_mode, before_source, False
        after_mode, after_source = rdma_tools.effective_persistent_mode(after_files)
        if wanted == "present" and after_mode != mode:
            raise NetnsError("%s sets netns_mode for %s mode and overrides %s (modprobe reads /etc/modprobe.d in name order, "
                             "the last one wins); remove it or set modprobe_file to sort after it"
                             % (after_source, after_mode, path), kind="conflict")
        if current == content:
            return after_mode, after_source, False
        if content is None:
            self.host.run.mutate("rm %s" % path, lambda: os.unlink(path))
        else:
            self.host.run.mutate("write %s: options ib_core netns_mode=%s" % (path, rdma_tools.NETNS_MODE_PARAM[mode]),
                                 lambda: self.install(content, path))
        return after_mode, after_source, True

    def install(self, content, path):
        self.module.atomic_move(self.write_temp(content), path)
        os.chmod(path, 0o644)

    def write_temp(self, content):
        tmp = os.path.join(self.module.tmpdir, "ib_core.conf")
        with open(tmp, "w") as handle:
            handle.write(content)
        return tmp

    def update_initramfs(self):
        policy = self.params["initramfs"]
        if policy == "never":
            return
        release = platform.release()
        update = self.module.get_bin_path("update-initramfs")
        dracut = self.module.get_bin_path("dracut")
        if policy == "auto":
            image = None
            lister = None
            if update:
                image, lister = os.path.join(rdma_host.BOOT, "initrd.img-%s" % release), self.module.get_bin_path("lsinitramfs")
            elif dracut:
                image, lister = os.path.join(rdma_host.BOOT, "initramfs-%s.img" % release), self.module.get_bin_path("lsinitrd")
            if not image or not lister or not os.path.exists(image):
                return
            rc, out, err = self.host.read([lister, image])
            if rc != 0 or not rdma_tools.initramfs_has_module(out):
                return
        if update:
            self.host.mutate([update, "-u", "-k", release], "updating the initramfs")
        elif dracut:
            self.host.mutate([dracut, "-f", "--kver", release], "updating the initramfs")
        elif policy == "always":
            raise NetnsError("initramfs=always, but neither update-initramfs nor dracut is installed")

    def set_running_mode(self, mode, system, persistent_present):
        try:
            self.host.mutate([self.host.rdma, "system", "set", "netns", mode], "switching the RDMA namespace mode to %s" % mode)
        except NetnsError as exc:
            if exc.details.get("kind") != "busy":
                raise
            # The refused command is not in the run's record: it changed nothing.
            names = self.host.netns_names()
            why = ("the kernel refuses to change the RDMA namespace mode while network namespaces other than the host's exist "
                   "(named: %s; containers and pods have unnamed ones)" % (", ".join(names) or "none"))
            if persistent_present:
                self.host.warnings.append("%s; %s mode is recorded for the next boot" % (why, mode))
                return system.get("netns")
            raise NetnsError("%s. Stop them, or use persistent=present and reboot" % why, kind="busy", namespaces=names)
        return mode
