# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ConnectX firmware: the host's records of what a warm reboot or a live reset did not load.

PRIVATE to the roce.fabric collection: may change without notice.

``mlxconfig``/``mstconfig`` say "Please power cycle machine to load new configurations" only in the output of
the ``set`` that made the change; a later ``query`` shows the values pending like any other. The module keeps,
per device, the values pending when the tool said so, and reports those values as needing a power cycle on
later runs too, so that no playbook warm-reboots a host for a change a warm reboot cannot load.

A live reset (``mlxfwreset``) that did not load a burnt image is kept the same way, per adapter with the version and
the boot it happened in: a later run in the same boot does not reset that adapter again for that image, and leaves it
to the host's one reboot.
"""

from __future__ import annotations

import json
import os

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, read_private, write_private_record
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError


def needs_power_cycle(recorded, pending):
    """True when a value still pending was pending, with the same value, when the tool asked for a power cycle."""
    return any(name in (recorded or {}) and str(recorded[name]) == str(value) for name, value in (pending or {}).items())


def live_reset_tried(entry, burnt, boot_id):
    """True when a live reset of this adapter already failed to load the same burnt version in this boot (``entry``:
    the adapter's record, ``{version, boot_id}``): no second reset for it, the reboot is next."""
    return bool(entry) and entry.get("version") == burnt and bool(boot_id) and entry.get("boot_id") == boot_id


class PowerCycleRecord(object):
    """``{device: {...}}`` in one JSON file (mode 0600 in a private folder); ``""`` keeps none. The power cycle record
    (``{device: {parameter: pending value}}``) and, with ``what``, the firmware image's live reset record
    (``{adapter: {version, boot_id}}``: a live reset that did not load that version in that boot)."""

    def __init__(self, path, what="power cycle record"):
        self.path = path or None
        self.what = what
        self.devices = {}
        self.dirty = False

    def load(self):
        if not self.path or not os.path.isdir(os.path.dirname(self.path)):
            return self
        try:
            text = read_private(self.path)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot read the %s %s: %s" % (self.what, self.path, exc), category="record")
        try:
            devices = json.loads(text) if text.strip() else {}
        except ValueError:
            devices = {}
        self.devices = devices if isinstance(devices, dict) else {}
        return self

    def get(self, device):
        return self.devices.get(device) or {}

    def set(self, device, pending):
        """Record ``pending`` for ``device``; an empty dict forgets the device."""
        pending = dict(pending or {})
        if self.devices.get(device, {}) != pending:
            self.dirty = True
            if pending:
                self.devices[device] = pending
            else:
                self.devices.pop(device, None)

    def save(self):
        if not self.path or not self.dirty:
            return
        try:
            write_private_record(self.path, self.devices)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot write the %s %s: %s" % (self.what, self.path, exc), category="record")
