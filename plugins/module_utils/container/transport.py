# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Container images on a build host: the transport, the builder's command line.

PRIVATE to the roce.fabric collection: may change without notice.

``Builder`` finds podman, buildah or docker and runs them as argv lists through ``CommandRunner`` (``LC_ALL=C``, a
timeout on every command); builds, pushes and untagging go through ``ModuleRun.mutate`` so that check mode records
them instead.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, run_change
from ansible_collections.roce.fabric.plugins.module_utils.container import parsers, state


class Builder(object):

    def __init__(self, module, run, which):
        self.module = module
        self.run = run
        self.cmd = CommandRunner(module)
        names = state.BUILDERS if which == "auto" else (which,)
        self.name = self.path = None
        for name in names:
            path = module.get_bin_path(name)
            if path:
                self.name, self.path = name, path
                break
        if not self.path:
            raise FabricError("no container builder on this host (looked for %s); install podman, buildah or docker, "
                              "nothing was changed" % ", ".join(names), kind="missing_tool")

    def inspect(self, ref):
        """The image ``ref`` as ``parsers.parse_inspect`` reads it, or ``None`` where the builder has no such image."""
        argv = state.inspect_argv(self.path, self.name, ref)
        rc, out, err = self.cmd.run(argv)
        if rc != 0:
            if parsers.not_found(err) or parsers.not_found(out):
                return None
            raise FabricError("%s failed (rc=%d): %s" % (CommandRunner.render(argv), rc, (err or out).strip()),
                              kind="command", rc=rc)
        return parsers.parse_inspect(out)

    def change(self, argv, what, env=None):
        return run_change(self.run, self.cmd, argv, what, env=env)
