# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers and value logic for NVIDIA ``mlxconfig`` (MFT) and ``mstconfig`` (mstflint).

PRIVATE to the roce.fabric collection: may change without notice.

Everything here is a pure function of its arguments (text in, data out) so it can be
tested against captured tool output. Column widths differ between tool versions, so rows
are tokenised on whitespace (values never contain spaces) and never sliced by column.
"""

from __future__ import annotations

import re

# A parameter name as the tools print it; array elements carry an index: NAME[3].
# Parameter names are upper case with a few lower-case letters in some (EXP_ROM_UEFI_x86_ENABLE, printed
# by every ConnectX-4 and later); the tools match names without regard to case.
PARAM_NAME_RE = re.compile(r"^(?P<base>[A-Za-z][A-Za-z0-9_]*)(?:\[(?P<index>\d+)\])?$")
# An enum or boolean value: NAME(n); names may start with '_' (_256KB) or be lower case (per_mkey).
ENUM_VALUE_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.+-]+)\((?P<number>-?\d+)\)$")
ARRAY_VALUE_RE = re.compile(r"^Array\[(?P<low>\d+)\.\.(?P<high>\d+)\]$")
INT_RE = re.compile(r"^-?\d+$")
HEX_RE = re.compile(r"^0[xX][0-9a-fA-F]+$")

REBOOT_LINE = "Please reboot machine to load new configurations"
POWER_CYCLE_LINE = "Please power cycle machine to load new configurations"
NO_DEFAULTS_LINE = "Device Firmware does not support reading default configurations"
NO_CURRENT_LINE = "Device Firmware does not support reading current configurations"
NO_BOTH_LINE = "Device Firmware does not support reading default and current configurations"

# Column titles of the query and set tables, mapped to result keys.
COLUMN_KEYS = {
    "Default": "default",
    "Current": "current",
    "Next Boot": "next_boot",
    "New": "new",
}

TRUE_WORDS = ("true", "yes", "on", "enable", "enabled")
FALSE_WORDS = ("false", "no", "off", "disable", "disabled")


class MlxconfigParseError(ValueError):
    """Raised when tool output does not have the shape the parser knows."""


def split_param_name(name):
    """Return ``(base, index)`` for ``NAME`` or ``NAME[i]``; index is None for scalars.

    Raises ValueError for anything that is not a valid parameter name.
    """
    match = PARAM_NAME_RE.match(name or "")
    if not match:
        raise ValueError("'%s' is not a valid firmware parameter name (expected NAME or NAME[index]: letters, digits and '_')" % name)
    index = match.group("index")
    return match.group("base"), (int(index) if index is not None else None)


def find_param(params, base):
    """The key of ``params`` that names ``base`` regardless of case (the device's spelling), or None."""
    if base in params:
        return base
    folded = base.upper()
    for key in params:
        if key.upper() == folded:
            return key
    return None


def parse_value(text):
    """Parse one printed value.

    Returns a dict with ``raw`` (the text), ``name`` (enum/bool name or None), ``number``
    (int or None), ``array`` (``(low, high)`` for ``Array[low..high]``, else None) and
    ``known`` (False for ``N/A`` or a missing column).
    """
    if text is None or text == "N/A":
        return dict(raw=text, name=None, number=None, array=None, known=False)
    match = ENUM_VALUE_RE.match(text)
    if match:
        return dict(raw=text, name=match.group("name"), number=int(match.group("number")), array=None, known=True)
    match = ARRAY_VALUE_RE.match(text)
    if match:
        return dict(raw=text, name=None, number=None, array=(int(match.group("low")), int(match.group("high"))), known=True)
    if INT_RE.match(text):
        return dict(raw=text, name=None, number=int(text), array=None, known=True)
    if HEX_RE.match(text):
        return dict(raw=text, name=None, number=int(text, 16), array=None, known=True)
    # A bare name (some fixtures print ETH without its number).
    return dict(raw=text, name=text, number=None, array=None, known=True)


def error_lines(text):
    """Return the messages of every ``-E-`` line in tool output, without the prefix."""
    errors = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("-E-"):
            errors.append(stripped[3:].strip())
    return errors


def _header_columns(line):
    rest = line.split(":", 1)[1]
    titles = [t for t in re.split(r"\s{2,}", rest.strip()) if t]
    columns = []
    for title in titles:
        if title not in COLUMN_KEYS:
            raise MlxconfigParseError("unknown column '%s' in table header: %s" % (title, line.strip()))
        columns.append(COLUMN_KEYS[title])
    return columns


def _parse_row(line, columns):
    tokens = line.split()
    modified = False
    read_only = False
    # Prefix markers: '*' (next differs), 'RO' (read only); newer tools print them glued ("*RO").
    while tokens and tokens[0] in ("*", "RO", "*RO"):
        marker = tokens.pop(0)
        modified = modified or marker.startswith("*")
        read_only = read_only or marker.endswith("RO")
    if tokens and tokens[0].startswith("*") and PARAM_NAME_RE.match(tokens[0][1:]):
        modified = True
        tokens[0] = tokens[0][1:]
    if not tokens or not PARAM_NAME_RE.match(tokens[0]):
        raise MlxconfigParseError("cannot read parameter row: %s" % line.rstrip())
    name, values = tokens[0], tokens[1:]
    if len(values) != len(columns):
        raise MlxconfigParseError(
            "parameter row has %d values for %d columns (%s): %s" % (len(values), len(columns), ", ".join(columns), line.rstrip())
        )
    row = dict(modified=modified, read_only=read_only)
    for key, value in zip(columns, values):
        row[key] = value
    return name, row


def parse_tool_output(text):
    """Parse query or set output of mlxconfig/mstconfig.

    Returns a list of devices in print order, each a dict with ``device_type``, ``name``,
    ``description``, ``device`` (header fields, None when absent), ``columns`` (result keys
    of the table columns), ``params`` (name -> row dict with ``modified``, ``read_only`` and
    one key per column holding the raw printed value), ``warnings`` (firmware notes such as
    unreadable defaults), ``errors`` (``-E-`` messages), ``reboot`` (``'reboot'``,
    ``'power_cycle'`` or None, from a set/reset) and ``applied`` (``Applying... Done!`` seen).
    """
    devices = []
    device = None
    columns = None
    header_fields = {
        "Device type:": "device_type",
        "Name:": "name",
        "Description:": "description",
        "Device:": "device",
    }

    def new_device():
        return dict(device_type=None, name=None, description=None, device=None, columns=[], params={},
                    warnings=[], errors=[], reboot=None, applied=False, aborted=False)

    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r"^Device #\d+:$", stripped):
            device = new_device()
            devices.append(device)
            columns = None
            continue
        if set(stripped) == {"-"}:
            continue
        if device is None:
            # Output without a device banner (e.g. a bare error): keep errors on a pseudo device.
            device = new_device()
            devices.append(device)
        if stripped.startswith("-E-"):
            device["errors"].append(stripped[3:].strip())
            continue
        if stripped.startswith("-W-") or stripped.startswith("-I-"):
            if POWER_CYCLE_LINE in stripped:
                device["reboot"] = "power_cycle"
            elif REBOOT_LINE in stripped:
                device["reboot"] = "reboot"
            else:
                device["warnings"].append(stripped[3:].strip())
            continue
        if stripped.startswith("Configurations:"):
            columns = _header_columns(stripped)
            device["columns"] = columns
            continue
        if stripped in (NO_DEFAULTS_LINE, NO_CURRENT_LINE, NO_BOTH_LINE):
            device["warnings"].append(stripped)
            continue
        if stripped.startswith("The '*' shows") or stripped.startswith("The 'RO' shows"):
            columns = None
            continue
        if "Apply new Configuration?" in stripped or "Reset configuration for device" in stripped:
            columns = None
            continue
        if stripped.startswith("Applying..."):
            device["applied"] = "Done" in stripped
            continue
        if stripped == "Aborted by user.":
            device["aborted"] = True
            continue
        if columns is None:
            for label, key in header_fields.items():
                if stripped.startswith(label):
                    device[key] = stripped[len(label):].strip() or None
                    break
            # Anything else outside a table (banners, notes) is ignored on purpose.
            continue
        name, row = _parse_row(line, columns)
        device["params"][name] = row
    return devices


def parse_query(text):
    """Parse ``-e query`` output; returns the devices list of :func:`parse_tool_output`.

    Each parameter row gets ``default``, ``current`` and ``next_boot`` keys (None where the
    column is absent or prints ``N/A``).
    """
    devices = parse_tool_output(text)
    for device in devices:
        for row in device["params"].values():
            for key in ("default", "current", "next_boot"):
                value = row.get(key)
                row[key] = None if value in (None, "N/A") else value
    return devices


def enum_map(row):
    """Name -> number map learnt from every ``NAME(n)`` printed in a parameter row.

    Boolean rows know both names even when only one was printed.
    """
    mapping = {}
    for key in ("default", "current", "next_boot", "new"):
        parsed = parse_value(row.get(key))
        if parsed["name"] is not None and parsed["number"] is not None:
            mapping[parsed["name"]] = parsed["number"]
    if mapping and set(mapping) <= {"True", "False"}:
        mapping.update({"True": 1, "False": 0})
    return mapping


def is_boolean_row(row):
    """True when the row prints True(1)/False(0) values."""
    names = set(enum_map(row))
    return bool(names) and names <= {"True", "False"}


def wanted_value(value, row):
    """Interpret a user value for a parameter against its printed row.

    ``value`` may be a bool, an int or a string (``True``, ``1``, ``0x10``, ``ROCE_ENABLE``,
    ``roce_enable``). Returns a dict ``token`` (what to pass to ``set``), ``number`` (int
    when known), ``name`` (enum name when known) and ``display`` (how the tool would print it).
    Raises ValueError for values that cannot be right for the row (e.g. ``maybe`` for a boolean).
    """
    mapping = enum_map(row)
    boolean = is_boolean_row(row)
    number = None
    name = None
    if isinstance(value, bool):
        number = 1 if value else 0
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("an empty value is not valid")
        if INT_RE.match(text):
            number = int(text)
        elif HEX_RE.match(text):
            number = int(text, 16)
        elif boolean and text.lower() in TRUE_WORDS:
            number = 1
        elif boolean and text.lower() in FALSE_WORDS:
            number = 0
        else:
            if re.search(r"[\s=]", text):
                raise ValueError("'%s' is not a valid firmware value" % text)
            name = text
    else:
        raise ValueError("values must be booleans, integers or strings, not %s" % type(value).__name__)

    if name is not None:
        for known, known_number in mapping.items():
            if known.lower() == name.lower():
                name, number = known, known_number
                break
        else:
            if boolean:
                raise ValueError("'%s' is not a boolean (use true/false or 1/0)" % value)
    elif mapping:
        for known, known_number in mapping.items():
            if known_number == number:
                name = known
                break
        if boolean and number not in (0, 1):
            raise ValueError("'%s' is not a boolean (use true/false or 1/0)" % value)

    if name is not None and number is not None:
        display = "%s(%d)" % (name, number)
        token = name
    elif name is not None:
        display = token = name
    else:
        display = token = str(number)
    return dict(token=token, number=number, name=name, display=display)


def same_value(wanted, printed, row):
    """True when a wanted value (from :func:`wanted_value`) equals a printed value.

    Returns None when it cannot be decided (the printed value is ``N/A``).
    """
    parsed = parse_value(printed)
    if not parsed["known"]:
        return None
    mapping = enum_map(row)
    printed_number = parsed["number"]
    if printed_number is None and parsed["name"] is not None:
        printed_number = mapping.get(parsed["name"])
    wanted_number = wanted["number"]
    if wanted_number is None and wanted["name"] is not None:
        wanted_number = mapping.get(wanted["name"])
    if wanted_number is not None and printed_number is not None:
        return wanted_number == printed_number
    if wanted["name"] is not None and parsed["name"] is not None:
        return wanted["name"].lower() == parsed["name"].lower()
    return False


def default_token(row):
    """The ``set`` token that restores a row's Default value, or None if it is unknown."""
    parsed = parse_value(row.get("default"))
    if not parsed["known"] or parsed["array"] is not None:
        return None
    if parsed["name"] is not None:
        return parsed["name"]
    return str(parsed["number"])


def reboot_kind(outputs):
    """Strongest reboot kind announced in several set/reset outputs: power_cycle > reboot > None."""
    kinds = set()
    for text in outputs:
        for device in parse_tool_output(text):
            if device["reboot"]:
                kinds.add(device["reboot"])
    if "power_cycle" in kinds:
        return "power_cycle"
    if "reboot" in kinds:
        return "reboot"
    return None


def classify_error(message):
    """Map a tool error message to a short category used in module results."""
    lowered = message.lower()
    if "unknown parameter" in lowered:
        return "unknown_parameter"
    if "doesn't support" in lowered and "parameter" in lowered:
        return "unsupported_parameter"
    if "read only" in lowered:
        return "read_only"
    if "out of range" in lowered or "unknown value" in lowered or "cannot parse the value" in lowered or "bad parameter value" in lowered:
        return "invalid_value"
    if "failed to open" in lowered or "no such device" in lowered:
        return "device_not_found"
    if "livefish" in lowered:
        return "livefish"
    return "tool_error"
