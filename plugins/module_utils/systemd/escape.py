# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""systemd's escaping of a string or a path into a unit name, as ``systemd-escape`` (and ``--path``) does it.

PRIVATE to the roce.fabric collection: may change without notice.

The rule of systemd.unit(5), "String Escaping for Inclusion in Unit Names": "/" becomes "-"; ASCII letters, digits,
":", "_" and "." stay, except a "." that starts the string; every other byte of the UTF-8 string becomes
"\\xNN" (two lowercase hex digits). With ``path``, duplicate and leading/trailing slashes go first and the root is
"-". A device unit for a network interface is the path /sys/subsystem/net/devices/<name>: an interface called
roce-p0 is ``sys-subsystem-net-devices-roce\\x2dp0.device``, and a unit that names it unescaped waits for a device
that never appears.
"""

from __future__ import annotations

import string

SAFE = frozenset(string.ascii_letters + string.digits + ":_.")


def escape(text, path=False):
    """The unit-name form of ``text``; ValueError for a path with a ``.`` or ``..`` part."""
    text = str(text)
    if path:
        parts = [part for part in text.split("/") if part]
        if any(part in (".", "..") for part in parts):
            raise ValueError("a path with a '.' or '..' part has no unit name: %r" % text)
        if not parts:
            return "-"
        text = "/".join(parts)
    out = []
    for index, byte in enumerate(text.encode("utf-8")):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif byte < 128 and char in SAFE and not (index == 0 and char == "."):
            out.append(char)
        else:
            out.append("\\x%02x" % byte)
    return "".join(out)


def netdev_device_unit(name):
    """The device unit of a network interface (``sys-subsystem-net-devices-<escaped>.device``)."""
    return escape("/sys/subsystem/net/devices/%s" % name, path=True) + ".device"


def exec_argument(text):
    """``text`` as one argument of a unit's ``ExecStart=`` line (systemd.service(5), "Command lines").

    The argument is double-quoted, so spaces stay inside it; a backslash and a double quote take a backslash (the
    C-style escapes systemd reads there), ``%`` becomes ``%%`` (no specifier) and ``$`` becomes ``$$`` (no
    environment variable). ValueError for a control character, which has no place on a unit line.
    """
    text = str(text)
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise ValueError("a control character has no place in a unit's command line: %r" % text)
    quoted = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"%s"' % quoted
