# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Onyx switches: what the controller keeps per switch, the lock that lets one task at a time configure
it, and the record of ports shut down only to change their MTU.

PRIVATE to the roce.fabric collection: may change without notice.

Two plays (or two ``ansible-playbook`` runs) of one controller against the same switch each read it, compare
and send: their sessions would interleave and each would act on a state the other is changing. ``SwitchLock``
holds an ``flock`` on ``<record_dir>/<host>_<port>.lock`` for the whole session; the other task waits for it.

Releases before 3.6 change a port's MTU only while the port is shut down. The module writes the ports it is
about to shut here before it sends anything, and clears them once they are up again. When the session drops
in between, the next run reads the record and brings those ports back up (``state.plan``'s ``held_down``),
instead of finding the MTU right and leaving the ports down.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, private_dir, read_private, write_private_record
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


class SwitchLock(object):
    """One task at a time per switch from this controller: an exclusive ``flock`` on ``<host>_<port>.lock`` in
    ``record_dir``, waited for up to ``wait`` seconds. An empty ``record_dir`` takes no lock."""

    def __init__(self, record_dir, host, port, wait):
        self.path = record_path(record_dir, host, port)[:-len(".json")] + ".lock" if record_dir else None
        self.where = "%s:%s" % (host, port)
        self.wait = wait
        self.fd = None
        self.waited = 0.0

    def __enter__(self):
        if not self.path:
            return self
        try:
            private_dir(os.path.dirname(self.path))
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot take the lock of %s in record_dir (%s): %s" % (self.where, self.path, exc))
        start = time.time()
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.waited = round(time.time() - start, 1)
                return self
            except (IOError, OSError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            if time.time() - start >= self.wait:
                os.close(self.fd)
                self.fd = None
                raise FabricError("Another task of this controller is configuring %s (it has held %s for more than %d s); "
                                  "nothing was sent. Run again once it has finished, or raise lock_timeout."
                                  % (self.where, self.path, self.wait), failure="locked")
            time.sleep(0.2)

    def __exit__(self, *exc_info):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False
