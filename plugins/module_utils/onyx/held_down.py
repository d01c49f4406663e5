# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Onyx switches: the controller-side record of ports shut down only to change their MTU.

PRIVATE to the roce.fabric collection: may change without notice.

Releases before 3.6 change a port's MTU only while the port is shut down. The module writes the ports it is
about to shut here before it sends anything, and clears them once they are up again. When the session drops
in between, the next run reads the record and brings those ports back up (``state.plan``'s ``held_down``),
instead of finding the MTU right and leaving the ports down.
"""

from __future__ import annotations

import json
import os
import re
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, read_private, write_private_record
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError


def record_path(record_dir, host, port):
    """``<record_dir>/<host>_<port>.json``; the host name keeps only letters, digits and ``_ . : -``."""
    name = re.sub(r"[^A-Za-z0-9_.:-]", "_", "%s_%s" % (host, port))
    return os.path.join(os.path.expanduser(record_dir), name + ".json")


class HeldDown(object):
    """The ports of one switch that this collection shut for an MTU change and has not brought back up."""

    def __init__(self, record_dir, host, port):
        self.path = record_path(record_dir, host, port) if record_dir else None

    def load(self):
        if not self.path or not os.path.isdir(os.path.dirname(self.path)):
            return []
        try:
            text = read_private(self.path)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot read the record of ports held down (record_dir) %s: %s" % (self.path, exc))
        if not text.strip():
            return []
        try:
            ports = json.loads(text).get("held_down") or []
        except (ValueError, AttributeError):
            return []
        return [str(p) for p in ports]

    def save(self, ports):
        """Record ``ports`` (an empty list removes the record)."""
        try:
            self._save(ports)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot write the record of ports held down (record_dir) %s: %s" % (self.path, exc))

    def _save(self, ports):
        if not self.path:
            return
        record = dict(held_down=list(ports), reason="shut down to change the MTU (Onyx before 3.6)",
                      since=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())) if ports else None
        write_private_record(self.path, record)
