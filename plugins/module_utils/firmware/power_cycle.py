# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ConnectX firmware: the host's record of pending values that the firmware said need a power cycle.

PRIVATE to the roce.fabric collection: may change without notice.

``mlxconfig``/``mstconfig`` say "Please power cycle machine to load new configurations" only in the output of
the ``set`` that made the change; a later ``query`` shows the values pending like any other. The module keeps,
per device, the values pending when the tool said so, and reports those values as needing a power cycle on
later runs too, so that no playbook warm-reboots a host for a change a warm reboot cannot load.
"""

from __future__ import annotations

import json
import os

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, read_private, write_private_record
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError


def needs_power_cycle(recorded, pending):
    """True when a value still pending was pending, with the same value, when the tool asked for a power cycle."""
    return any(name in (recorded or {}) and str(recorded[name]) == str(value) for name, value in (pending or {}).items())


class PowerCycleRecord(object):
    """``{device: {parameter: pending value}}`` in one JSON file (mode 0600 in a private folder); ``""`` keeps none."""

    def __init__(self, path):
        self.path = path or None
        self.devices = {}
        self.dirty = False

    def load(self):
        if not self.path or not os.path.isdir(os.path.dirname(self.path)):
            return self
        try:
            text = read_private(self.path)
        except (PrivateDirError, IOError, OSError) as exc:
            raise FabricError("Cannot read the power cycle record %s: %s" % (self.path, exc), category="record")
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
            raise FabricError("Cannot write the power cycle record %s: %s" % (self.path, exc), category="record")
