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


REPEAT = "roce.fabric.host_reboot does not repeat it"


def not_running_message(kind, result, reboot_reason="", reboot_type="none", not_cleared=()):
    """The nic_firmware role's verify failure: what does not run (``kind``: ``settings``, the devices whose values wait,
    from roce.fabric.mlxconfig's result; ``images``, roce.fabric.nic_firmware_image's reason) and the one thing to do
    next. A reason the host's one reboot already failed to clear (``not_cleared``: roce.fabric.host_reboot's record)
    asks for a power cycle, never for another reboot."""
    result = result or {}
    if kind == "images":
        reason = result.get("reboot_reason") or ""
        head = "Pinned ConnectX firmware does not run: %s." % (reason or "an adapter holds another version")
        if reason and reason in (not_cleared or ()):
            return "%s A reboot already failed to load it (%s): power-cycle the host (BMC/IPMI) and run again." % (head, REPEAT)
        return "%s Run again to burn it, or reboot the host to load it." % head
    waiting = sorted(device for device, entry in (result.get("devices") or {}).items() if (entry or {}).get("reboot_required"))
    head = "Firmware values are not running on %s." % (", ".join(waiting) or "this host")
    if reboot_type == "power_cycle":
        return ("%s The firmware asked for a power cycle: a warm reboot does not load it; power-cycle the host (BMC/IPMI)"
                " and run again." % head)
    if reboot_reason and reboot_reason in (not_cleared or ()):
        return ("%s A reboot already failed to load them (%s): power-cycle the host (BMC/IPMI), which some settings"
                " need, and run again." % (head, REPEAT))
    return "%s Reboot the host to load them." % head


class DeviceRecord(object):
    """``{device: {...}}`` in one JSON file (mode 0600 in a private folder); ``""`` keeps none. ``what`` names the
    record in errors. Two records use it: the power cycle record (``{device: {parameter: pending value}}``) and the
    firmware image's live reset record (``{adapter: {version, boot_id}}``: a live reset that did not load that version
    in that boot)."""

    def __init__(self, path, what="record"):
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
