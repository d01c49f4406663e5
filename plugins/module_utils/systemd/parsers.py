# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""systemd on a Linux host: pure parsers of what ``systemctl`` prints.

PRIVATE to the roce.fabric collection: may change without notice.

- ``parse_show``: ``systemctl show --property=Id,LoadState,ActiveState,UnitFileState,NeedDaemonReload -- UNIT...``,
  one block of ``KEY=VALUE`` lines a unit, blocks apart by an empty line. systemd prints the properties in its own
  order, not the order asked for, and a unit it does not know as ``LoadState=not-found`` with an empty
  ``UnitFileState``.
"""

from __future__ import annotations

SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "UnitFileState", "NeedDaemonReload")


def parse_show(text):
    """``{unit name: {property: value}}`` of ``systemctl show`` output for several units."""
    units = {}
    block = {}
    for line in (text or "").splitlines() + [""]:
        line = line.rstrip("\r")
        if not line.strip():
            if block.get("Id"):
                units[block["Id"]] = block
            block = {}
            continue
        if "=" in line:
            key, value = line.split("=", 1)
            block[key.strip()] = value.strip()
    return units


def enabled(properties):
    """Whether a unit's file is enabled (``enabled``, ``enabled-runtime``, ``static`` units cannot be)."""
    return (properties or {}).get("UnitFileState", "") in ("enabled", "enabled-runtime", "alias")


def active(properties):
    """Whether a unit runs or has run and stays (``active``, ``reloading``, ``activating``)."""
    return (properties or {}).get("ActiveState", "") in ("active", "reloading", "activating")


def needs_reload(properties):
    return (properties or {}).get("NeedDaemonReload", "no") == "yes"
