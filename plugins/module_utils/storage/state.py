# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Local storage of a Linux node: the NVMe scratch array, from the drives a task selects to its mount.

PRIVATE to the roce.fabric collection: may change without notice.

Pure decisions on what the parsers read: ``check_input`` constrains the task's values before any of them reaches a
command line; ``select_drives`` picks the local NVMe namespaces the selectors name; ``array_action``,
``filesystem_action``, ``mount_action`` and the line edits of ``mdadm.conf`` and ``fstab`` are the one comparison
each step of the module reads its commands and its diff from.
"""

from __future__ import annotations

import re

from ansible_collections.roce.fabric.plugins.module_utils.storage import parsers

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
NVME_RE = re.compile(r"^nvme\d+n\d+$")
PATH_RE = re.compile(r"^(/[A-Za-z0-9_.@+-]+)+$")
OPTIONS_RE = re.compile(r"^[A-Za-z0-9_=,.:/@+-]+$")
USER_RE = re.compile(r"^([a-z_][a-z0-9_.-]{0,31}\$?|\d+)$")
MODE_RE = re.compile(r"^0?[0-7]{3,4}$")
FSTYPES = ("xfs", "ext4")
# Mount points that are never scratch.
SYSTEM_PATHS = ("/", "/boot", "/boot/efi", "/usr", "/var", "/etc", "/home", "/root", "/tmp", "/opt", "/srv", "/mnt")
SELECTOR_KEYS = ("name", "model", "serial", "min_size", "max_size")


class ScratchInputError(ValueError):
    """Input that cannot be right, found before anything is read or changed."""


def _regex(key, value):
    try:
        return re.compile(value)
    except re.error as exc:
        raise ScratchInputError("drives: %s %r is not a regular expression (%s)" % (key, value, exc))


def check_input(params):
    """The task's parameters, checked and normalised: every value that reaches a command line or a file is
    constrained here."""
    name = params["name"]
    if not NAME_RE.match(name or ""):
        raise ScratchInputError("name %r: 1 to 32 letters, digits, '_' and '-', starting with a letter or digit" % (name,))
    want = dict(name=name, state=params.get("state", "present"), force=bool(params.get("force")),
                device="/dev/md/%s" % name)
    if want["state"] == "absent":
        path = params.get("path")
        if path is not None and not PATH_RE.match(path):
            raise ScratchInputError("path %r must be an absolute path of letters, digits and '_ . @ + -'" % (path,))
        want["path"] = path
        return want
    selectors = []
    for index, selector in enumerate(params.get("drives") or []):
        entry = {}
        for key in ("name", "model", "serial"):
            if selector.get(key) is not None:
                entry[key] = _regex(key, selector[key])
        for key in ("min_size", "max_size"):
            if selector.get(key) is not None:
                try:
                    entry[key] = parsers.parse_size(selector[key])
                except ValueError as exc:
                    raise ScratchInputError("drives[%d].%s: %s" % (index, key, exc))
        selectors.append(entry)
    if not selectors:
        raise ScratchInputError("drives: give at least one selector ({} selects every local NVMe namespace)")
    count = params.get("count")
    if count is not None and count < 1:
        raise ScratchInputError("count must be 1 or more, not %d" % count)
    chunk = params.get("chunk")
    if chunk is not None:
        try:
            chunk = parsers.parse_size(chunk)
        except ValueError as exc:
            raise ScratchInputError("chunk: %s" % exc)
        if chunk < 4096 or chunk & (chunk - 1):
            raise ScratchInputError("chunk must be a power of two of 4K or more, not %s" % params.get("chunk"))
        chunk //= 1024
    path = params.get("path")
    if not path or not PATH_RE.match(path) or ".." in path.split("/"):
        raise ScratchInputError("path %r must be an absolute path of letters, digits and '_ . @ + -'" % (path,))
    path = path.rstrip("/") or "/"
    if path in SYSTEM_PATHS:
        raise ScratchInputError("path %s is a system directory, not a scratch mount point" % path)
    if params.get("fstype", "xfs") not in FSTYPES:
        raise ScratchInputError("fstype must be one of %s" % ", ".join(FSTYPES))
    options = params.get("mount_options") or "defaults"
    if not OPTIONS_RE.match(options):
        raise ScratchInputError("mount_options %r: letters, digits and '_ = , . : / @ + -' only" % (options,))
    for key in ("owner", "group"):
        if params.get(key) is not None and not USER_RE.match(str(params[key])):
            raise ScratchInputError("%s %r is not a user or group name or id" % (key, params[key]))
    mode = params.get("mode")
    if mode is not None and not MODE_RE.match(str(mode)):
        raise ScratchInputError("mode %r must be octal, as '1777' or '0755'" % (mode,))
    want.update(selectors=selectors, count=count, chunk=chunk, path=path, fstype=params.get("fstype", "xfs"),
                options=options, owner=params.get("owner"), group=params.get("group"),
                mode=int(str(mode), 8) if mode is not None else None)
    return want


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def nvme_namespaces(devices):
    """The local NVMe namespaces (``nvme0n1``) among ``parse_lsblk``'s devices, in natural order."""
    return sorted((d for d in devices.values() if d["type"] == "disk" and NVME_RE.match(d["name"])),
                  key=lambda d: _natural(d["name"]))


def matches(drive, selector):
    for key in ("name", "model", "serial"):
        if key in selector and not selector[key].fullmatch(drive.get(key) or ""):
            return False
    if "min_size" in selector and drive["size"] < selector["min_size"]:
        return False
    if "max_size" in selector and drive["size"] > selector["max_size"]:
        return False
    return True


def select_drives(devices, want):
    """The NVMe namespaces one of the selectors matches (each selector: all its keys), checked against ``count``."""
    chosen = [d for d in nvme_namespaces(devices) if any(matches(d, s) for s in want["selectors"])]
    if not chosen:
        raise ScratchInputError("no local NVMe namespace matches the drives selectors (found: %s)" % (
            ", ".join("%s %s %s %d bytes" % (d["name"], d["model"], d["serial"], d["size"]) for d in nvme_namespaces(devices))
            or "none"))
    if want["count"] is not None and len(chosen) != want["count"]:
        raise ScratchInputError("the drives selectors match %d NVMe namespaces (%s), count asks for %d" % (
            len(chosen), ", ".join(d["name"] for d in chosen), want["count"]))
    return chosen


def _subtree(devices, name):
    found, todo = [], [name]
    while todo:
        current = todo.pop()
        for child in devices[current]["children"]:
            if child not in found:
                found.append(child)
                todo.append(child)
    return [devices[n] for n in found]


def in_use(devices, drive, array_kname=None):
    """Why ``drive`` is in use: ``(hard, soft)`` lists of reasons. Hard ones (something mounted on it, or used as swap)
    refuse it even with ``force``; soft ones (partitions, a file system, a member of another array or volume group)
    refuse it unless ``force``. Membership of ``array_kname`` (the task's own array) is not a use."""
    hard, soft = [], []
    below = _subtree(devices, drive["name"])
    for device in [drive] + below:
        if device["mountpoint"]:
            where = "swap" if device["mountpoint"] == "[SWAP]" else "mounted at %s" % device["mountpoint"]
            if not (array_kname and device["name"] == array_kname):
                hard.append("%s%s" % ("" if device is drive else device["name"] + " ", where))
    for child in drive["children"]:
        kind = devices[child]["type"]
        if child == array_kname:
            continue
        if kind == "part":
            soft.append("has partition %s" % child)
        else:
            soft.append("is used by %s (%s)" % (child, kind))
    if drive["fstype"] and not (array_kname and drive["fstype"] == "linux_raid_member" and array_kname in drive["children"]):
        soft.append("holds %s" % drive["fstype"])
    return hard, soft


def find_array(details, name):
    """The active array of this name among ``{md device: parse_export(mdadm --detail --export)}``: (device, detail)."""
    for device, detail in sorted(details.items()):
        if detail.get("MD_DEVNAME") == name or parsers.md_name(detail.get("MD_NAME")) == name:
            return device, detail
    return None, None


def array_action(want, devices, chosen, active, examined):
    """What the array needs: ``("ok"|"assemble"|"create", wipe)`` where ``wipe`` lists the drives whose signatures
    ``force`` clears first. ``active`` is ``find_array``'s (device, detail); ``examined`` maps a drive's path to
    ``mdadm --examine --export`` of drives that hold an md superblock. Raises ``ScratchInputError`` with nothing
    changed where the drives cannot be used."""
    paths = [d["path"] for d in chosen]
    device, detail = active
    if detail:
        members = parsers.md_members(detail)
        if sorted(members) != sorted(paths) or detail.get("MD_LEVEL") != "raid0":
            raise ScratchInputError(
                "array %s (%s) is %s of %s; the drives selectors give %s. Nothing was changed: stop it first "
                "(state=absent), it is not rebuilt over its data" % (
                    want["name"], device, detail.get("MD_LEVEL"), ", ".join(members) or "no members", ", ".join(paths)))
        return "ok", []
    uuids = set(examined.get(p, {}).get("MD_UUID") for p in paths)
    names = set(parsers.md_name(examined.get(p, {}).get("MD_NAME")) for p in paths)
    if len(uuids) == 1 and None not in uuids and names == {want["name"]} and \
            all(examined[p].get("MD_LEVEL") == "raid0" and examined[p].get("MD_DEVICES") == str(len(paths)) for p in paths):
        return "assemble", []
    problems, wipe = [], []
    for drive in chosen:
        hard, soft = in_use(devices, drive)
        if hard:
            problems.append("%s: %s (never used)" % (drive["path"], "; ".join(hard)))
        elif soft and not want["force"]:
            problems.append("%s: %s" % (drive["path"], "; ".join(soft)))
        elif soft:
            wipe.append(drive["path"])
    if problems:
        raise ScratchInputError("drives in use, nothing was changed (force=true wipes drives that are not mounted): %s"
                                % " | ".join(problems))
    return "create", wipe


def create_argv(mdadm, want, paths):
    argv = [mdadm, "--create", want["device"], "--run", "--metadata=1.2", "--level=0",
            "--raid-devices=%d" % len(paths), "--name=%s" % want["name"], "--homehost=<none>"]
    if want["chunk"]:
        argv.append("--chunk=%d" % want["chunk"])
    return argv + list(paths)


def filesystem_action(want, blkid):
    """``"ok"`` or ``"mkfs"`` for the array's ``blkid --output export``; another file system on it is refused unless
    ``force``."""
    fstype = blkid.get("TYPE")
    if fstype == want["fstype"]:
        return "ok"
    if fstype and not want["force"]:
        raise ScratchInputError("array %s holds %s, not %s; nothing was changed (force=true makes a new file system)"
                                % (want["name"], fstype, want["fstype"]))
    return "mkfs"


def mkfs_argv(want, device, force=False):
    if want["fstype"] == "xfs":
        return ["mkfs.xfs", "-q"] + (["-f"] if force else []) + ["-L", want["name"][:12], device]
    return ["mkfs.ext4", "-q"] + (["-F"] if force else []) + ["-L", want["name"][:16], "-m", "0", device]


def fstab_line(want, fs_uuid):
    return "UUID=%s %s %s %s 0 0" % (fs_uuid, want["path"], want["fstype"], want["options"])


def edit_lines(text, keep, line):
    """``text`` with the entry lines ``keep(index)`` rejects taken out and ``line`` (if any) put where the first of
    them was, or at the end."""
    lines = (text or "").splitlines()
    out, placed = [], False
    for index, current in enumerate(lines):
        if keep(index):
            out.append(current)
        elif line is not None and not placed:
            out.append(line)
            placed = True
    if line is not None and not placed:
        out.append(line)
    return "\n".join(out) + "\n" if out else ""


def fstab_edit(text, path, line):
    """``/etc/fstab`` with one entry for ``path``: ``line`` (None removes it)."""
    drop = set(e["index"] for e in parsers.parse_fstab(text) if e["file"].rstrip("/") == path)
    return edit_lines(text, lambda index: index not in drop, line)


def mdadm_conf_line(want, md_uuid):
    return "ARRAY %s metadata=1.2 UUID=%s name=%s" % (want["device"], md_uuid, want["name"])


def mdadm_conf_edit(text, want, line, md_uuid=None):
    """``mdadm.conf`` with one ``ARRAY`` line for the array (by device or UUID): ``line`` (None removes it)."""
    drop = set(a["index"] for a in parsers.parse_mdadm_conf(text)
               if a["device"] == want["device"] or (md_uuid and a["uuid"] == md_uuid))
    return edit_lines(text, lambda index: index not in drop, line)


def mount_action(want, mounts, source_ok):
    """``"ok"``, ``"mount"`` or ``"remount"`` for the mount point among ``parse_mounts``' entries; something else
    mounted there is refused. ``source_ok(source)`` tells the array's device from another."""
    here = [m for m in mounts if m["file"] == want["path"]]
    if not here:
        return "mount"
    if not source_ok(here[-1]["spec"]):
        raise ScratchInputError("%s has %s mounted on it, not the array %s; nothing was changed"
                                % (want["path"], here[-1]["spec"], want["name"]))
    return "ok"


def md_uuid_colons(value):
    """mdadm's UUID form (``a:b:c:d``) of any spelling of an array UUID."""
    hexa = re.sub(r"[^0-9a-fA-F]", "", value or "").lower()
    if len(hexa) != 32:
        return value
    return ":".join(hexa[i:i + 8] for i in range(0, 32, 8))
