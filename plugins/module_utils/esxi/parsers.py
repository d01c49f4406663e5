# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers for ESXi ``esxcli`` output, and kernel setting values.

PRIVATE to the roce.fabric collection: may change without notice.

Pure functions: text in, data out, so they are unit-tested against captured output.
"""

from __future__ import annotations

import re

TRUE_WORDS = ("true", "1", "yes", "on", "enabled")
FALSE_WORDS = ("false", "0", "no", "off", "disabled")


def parse_table(text):
    """Parse esxcli's default table (header line, dashes line, rows) into a list of dicts.

    Column boundaries come from the dashes line, so values with spaces (the last column,
    Description) are kept whole.
    """
    lines = [line for line in (text or "").splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if index > 0 and re.match(r"^-+(\s+-+)*\s*$", line):
            header_line = lines[index - 1]
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", line)]
            break
    else:
        raise ValueError("no esxcli table found (expected a header line followed by a line of dashes)")
    starts = [start for start, _end in spans]

    def cells(row):
        out = []
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else None
            out.append(row[start:end].strip() if end is not None else row[start:].strip())
        return out

    headers = cells(header_line)
    return [dict(zip(headers, cells(row))) for row in lines[index + 1:]]


def parse_kernel_settings(text):
    """``esxcli system settings kernel list [-o NAME]`` -> {name: {type, configured, runtime, default, description}}."""
    settings = {}
    for row in parse_table(text):
        name = row.get("Name")
        if not name:
            continue
        settings[name] = dict(
            type=row.get("Type", ""),
            configured=row.get("Configured", ""),
            runtime=row.get("Runtime", ""),
            default=row.get("Default", ""),
            description=row.get("Description", ""),
        )
    return settings


def _field_key(label):
    return re.sub(r"[^a-z0-9]+", "_", label.strip().lower()).strip("_")


def parse_pci_list(text):
    """``esxcli hardware pci list`` -> list of dicts, one per device, keys from the labels
    (``Vendor ID`` -> ``vendor_id``, ``NUMA Node`` -> ``numa_node``); ``address`` is lower case."""
    devices = []
    current = None
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            current = {"address": line.strip().lower()}
            devices.append(current)
            continue
        if current is None or ":" not in line:
            continue
        label, value = line.split(":", 1)
        current[_field_key(label)] = value.strip()
    for device in devices:
        if "address" in device:
            device["address"] = device["address"].lower()
        numa = device.get("numa_node")
        device["numa_node"] = int(numa) if numa not in (None, "") and re.match(r"^-?\d+$", numa) else None
    return devices


def normalize_kernel_value(kind, value):
    """The value as esxcli prints it for a setting of type ``kind``; raise ValueError if it does not fit.

    ``Bool`` -> ``TRUE``/``FALSE`` (from booleans, true/false, yes/no, 1/0, on/off);
    ``uint*``/``int*`` -> a decimal integer (decimal or 0x hex input, unsigned types refuse negatives);
    anything else is kept as text.
    """
    kind_l = (kind or "").lower()
    if kind_l == "bool":
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        text = str(value).strip().lower()
        if text in TRUE_WORDS:
            return "TRUE"
        if text in FALSE_WORDS:
            return "FALSE"
        raise ValueError("%r is not a boolean (type Bool expects true or false)" % (value,))
    if kind_l.startswith("uint") or kind_l.startswith("int"):
        if isinstance(value, bool):
            raise ValueError("%r is not an integer (type %s)" % (value, kind))
        try:
            number = value if isinstance(value, int) else int(str(value).strip(), 0)
        except ValueError:
            raise ValueError("%r is not an integer (type %s)" % (value, kind))
        if kind_l.startswith("uint") and number < 0:
            raise ValueError("%r is negative; type %s is unsigned" % (value, kind))
        bits = re.search(r"(\d+)$", kind_l)
        if bits:
            width = int(bits.group(1))
            low, high = (0, 2 ** width - 1) if kind_l.startswith("uint") else (-(2 ** (width - 1)), 2 ** (width - 1) - 1)
            if not low <= number <= high:
                raise ValueError("%r is out of range for type %s" % (value, kind))
        return str(number)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return str(value)
