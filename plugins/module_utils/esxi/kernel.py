# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ESXi hosts: kernel boot settings (``atsSupport`` and the like), wanted against configured, compared once.

PRIVATE to the roce.fabric collection: may change without notice.

Both transports (the vSphere API's ``VMkernel.Boot.*`` advanced options, and ``esxcli system settings
kernel`` over SSH) hand their reading of the host to ``plan_*``; the entry it returns (per setting:
before, after, runtime) is the one comparison from which the changes, ``reboot_required`` and the diff
are all read.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.esxi.parsers import normalize_kernel_value
from ansible_collections.roce.fabric.plugins.module_utils.esxi.vsphere import api_value, display, typed_option_value

PREFIX = "VMkernel.Boot."


def short_name(name):
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def wanted_settings(settings):
    """The task's ``settings`` by short name; refuses values that are not scalars and an empty dict."""
    wanted = {}
    for name, value in (settings or {}).items():
        if value is None or isinstance(value, (dict, list)):
            raise FabricError("kernel setting '%s' needs a scalar value (true/false, a number or text)" % name)
        wanted[short_name(str(name))] = value
    if not wanted:
        raise FabricError("settings is empty: name at least one kernel setting")
    return wanted


def plan_vsphere(host, options, wanted, reboot_pending=False):
    """``options``: the host's ``VMkernel.Boot.*`` advanced options (key -> typed value).

    Returns ``(entry, updates)``: the host's result entry and ``[(key, api value)]`` for the options to set.
    """
    entry = dict(changed=False, reboot_required=bool(reboot_pending), settings={})
    updates = []
    for setting, value in wanted.items():
        key = PREFIX + setting
        if key not in options:
            raise FabricError("ESXi host %s has no kernel setting '%s' (known: %s)" % (
                host, setting, ", ".join(sorted(short_name(k) for k in options)) or "none"), host=host)
        try:
            typed, text = typed_option_value(options[key], value)
        except ValueError as exc:
            raise FabricError("kernel setting '%s' on %s: %s" % (setting, host, exc), host=host)
        before = display(options[key])
        entry["settings"][setting] = dict(type=type(options[key]).__name__.replace("long", "int"), before=before,
                                          after=text, runtime=None)
        if before != text:
            updates.append((key, api_value(options[key], typed)))
    if updates:
        entry.update(changed=True, reboot_required=True)
    return entry, updates


def plan_esxcli(current, wanted):
    """``current``: ``parse_kernel_settings`` of ``esxcli system settings kernel list``.

    Returns ``(entry, sets)``: the host's result entry and ``[(setting, text)]`` to set.
    """
    entry = dict(changed=False, reboot_required=False, settings={})
    sets = []
    for setting, value in wanted.items():
        if setting not in current:
            raise FabricError("this ESXi host has no kernel setting '%s' (known: %s)" % (setting, ", ".join(sorted(current))))
        info = current[setting]
        try:
            text = normalize_kernel_value(info["type"], value)
        except ValueError as exc:
            raise FabricError("kernel setting '%s': %s" % (setting, exc))
        entry["settings"][setting] = dict(type=info["type"], before=info["configured"], after=text, runtime=info["runtime"])
        if info["configured"] != text:
            sets.append((setting, text))
        if info["runtime"] != text:
            entry["reboot_required"] = True
    entry["changed"] = bool(sets)
    return entry, sets


def diff_of(entry):
    """Before and after of one host's managed settings."""
    return (dict((k, v["before"]) for k, v in entry["settings"].items()),
            dict((k, v["after"]) for k, v in entry["settings"].items()))
