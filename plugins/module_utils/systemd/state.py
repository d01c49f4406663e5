# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The boot units of a host (helpers, their data and the systemd units that run them at boot): one comparison of
what the host has with what is wanted, from which the module takes its changes and its diff.

PRIVATE to the roce.fabric collection: may change without notice.

Pure functions: ``check_input`` constrains every path and unit name before anything is read or run, ``file_plan``
says what one file needs, ``unit_plan`` what systemd needs once the files are written.
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.roce.fabric.plugins.module_utils.systemd import parsers

# Absolute, normalised paths of plain characters: no "..", no "//", no spaces, nothing a unit line could take.
PATH_RE = re.compile(r"^/[A-Za-z0-9_@%+=:,.-]+(/[A-Za-z0-9_@%+=:,.-]+)*$")
# systemd unit names (systemd.unit(5)): a template instance may carry "@", escaped names "\x2d" are not taken.
UNIT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,200}\.(service|timer|socket|path|mount|target)$")
MODE_RE = re.compile(r"^0?[0-7]{3,4}$")
# Where a file of this module may never go: the kernel's and devices' file systems.
FORBIDDEN = ("/proc", "/sys", "/dev", "/run/udev")


class BootUnitsInputError(ValueError):
    """Input the module refuses before it reads or changes anything."""


def check_path(path, what):
    path = "" if path is None else str(path)
    if not PATH_RE.match(path) or posixpath.normpath(path) != path or "/../" in path + "/" or "/./" in path + "/":
        raise BootUnitsInputError("%s %s must be an absolute, normalised path of letters, digits and _ @ %% + = : , . -"
                                  % (what, _quote(path)))
    for root in FORBIDDEN:
        if path == root or path.startswith(root + "/"):
            raise BootUnitsInputError("%s %s is under %s, which this module never writes" % (what, _quote(path), root))
    return path


def check_mode(mode, what):
    mode = "" if mode is None else str(mode)
    if not MODE_RE.match(mode):
        raise BootUnitsInputError("%s: mode %s must be octal digits like 0644" % (what, _quote(mode)))
    value = int(mode, 8)
    if value & 0o002:
        raise BootUnitsInputError("%s: mode %s lets every user write it" % (what, mode))
    return value


def check_unit(name):
    name = "" if name is None else str(name)
    if not UNIT_RE.match(name):
        raise BootUnitsInputError("unit name %s must be letters, digits, _ . : @ - ending in .service, .timer, .socket, "
                                  ".path, .mount or .target" % _quote(name))
    return name


def _quote(value):
    text = repr(str(value))
    return text if len(text) <= 80 else text[:77] + "..."


def check_input(params):
    """The wanted state from the module's parameters, every name and path checked, or ``BootUnitsInputError``."""
    unit_dir = check_path(params.get("unit_dir") or "/etc/systemd/system", "unit_dir")
    directories, files, units, seen = [], [], [], {}

    def claim(path, what):
        if path in seen:
            raise BootUnitsInputError("%s %s is also given as %s" % (what, _quote(path), seen[path]))
        seen[path] = what

    for item in params.get("directories") or []:
        path = check_path(item.get("path"), "directory")
        claim(path, "a directory")
        directories.append(dict(path=path, mode=check_mode(item.get("mode", "0755"), path)))
    for item in params.get("files") or []:
        path = check_path(item.get("path"), "file")
        claim(path, "a file")
        if item.get("content") is None:
            raise BootUnitsInputError("file %s has no content" % path)
        files.append(dict(path=path, content=_bytes(item["content"]), mode=check_mode(item.get("mode", "0644"), path)))
    for item in params.get("units") or []:
        name = check_unit(item.get("name"))
        path = posixpath.join(unit_dir, name)
        claim(path, "a unit")
        if item.get("content") is None:
            raise BootUnitsInputError("unit %s has no content" % name)
        units.append(dict(name=name, path=path, content=_bytes(item["content"]), mode=0o644,
                          enabled=bool(item.get("enabled", True)), started=bool(item.get("started", False)),
                          restart_on_change=bool(item.get("restart_on_change", False))))
    remove_units = []
    for name in params.get("remove_units") or []:
        name = check_unit(name)
        path = posixpath.join(unit_dir, name)
        claim(path, "a unit to remove")
        remove_units.append(dict(name=name, path=path))
    remove_files = []
    for path in params.get("remove_files") or []:
        path = check_path(path, "file to remove")
        claim(path, "a file to remove")
        remove_files.append(path)
    for item in files + units:
        for directory in directories:
            if item["path"] == directory["path"]:
                raise BootUnitsInputError("%s is both a directory and a file" % item["path"])
    return dict(unit_dir=unit_dir, directories=directories, files=files, units=units, remove_units=remove_units,
                remove_files=remove_files)


def _bytes(content):
    if isinstance(content, bytes):
        return content
    return str(content).encode("utf-8")


def directory_plan(want, have):
    """What one directory needs: ``have`` is ``None`` (absent) or ``dict(kind, mode, uid, gid)``. Actions:
    ``mkdir``, ``chmod``, ``chown``; a path that is something else than a directory is refused."""
    if have is None:
        return ["mkdir"]
    if have["kind"] != "directory":
        raise BootUnitsInputError("%s is a %s, not a directory; nothing was changed" % (want["path"], have["kind"]))
    return attribute_actions(want, have)


def file_plan(want, have):
    """What one file (or unit file) needs: ``have`` is ``None`` (absent) or ``dict(kind, mode, uid, gid, content)``.
    Actions: ``write`` (content; the new file gets mode and owner with it), ``chmod``, ``chown``. A directory,
    a symbolic link or a device at the path is refused: the module writes regular files only, never through a
    link."""
    if have is None:
        return ["write"]
    if have["kind"] != "file":
        raise BootUnitsInputError("%s is a %s, not a regular file; nothing was changed" % (want["path"], have["kind"]))
    if have["content"] != want["content"]:
        return ["write"]
    return attribute_actions(want, have)


def attribute_actions(want, have):
    """``chmod`` where the mode differs, ``chown`` where the owner or group is not root."""
    return (["chmod"] if have["mode"] != want["mode"] else []) + (["chown"] if (have["uid"], have["gid"]) != (0, 0) else [])


def unit_plan(units, remove_units, show, written):
    """What systemd needs once the files are as wanted.

    ``show``: ``{name: properties}`` read before any change (``parsers.parse_show``); ``written``: the names of the
    unit files this run writes or removes. Returns ``dict(daemon_reload, stop, disable, enable)`` (units to remove are stopped and disabled first), lists of
    unit names in the order given (``start_plan`` says which units start)."""
    plan = dict(daemon_reload=bool(written), stop=[], disable=[], enable=[])
    for item in remove_units:
        props = show.get(item["name"], {})
        if parsers.needs_reload(props):
            plan["daemon_reload"] = True
        if parsers.active(props):
            plan["stop"].append(item["name"])
        if parsers.enabled(props):
            plan["disable"].append(item["name"])
    for item in units:
        props = show.get(item["name"], {})
        if parsers.needs_reload(props):
            plan["daemon_reload"] = True
        if item["enabled"] and not parsers.enabled(props):
            plan["enable"].append(item["name"])
    return plan


def start_plan(units, show, any_change):
    """Which units start (wanted running, not active) and which restart (running, ``restart_on_change``, and this
    run changed a file or unit: ``any_change``): ``dict(start, restart)``."""
    start, restart = [], []
    for item in units:
        if not item["started"]:
            continue
        props = show.get(item["name"], {})
        if not parsers.active(props):
            start.append(item["name"])
        elif item["restart_on_change"] and any_change:
            restart.append(item["name"])
    return dict(start=start, restart=restart)


def text(content):
    """A file's content for the diff: text, or a note for bytes that are not UTF-8."""
    if content is None:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return "<%d bytes, not UTF-8>" % len(content)
