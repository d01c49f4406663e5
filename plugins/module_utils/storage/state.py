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

# Every pattern is matched against the whole string (fullmatch): "$" alone lets a trailing newline through, which
# wrote a broken fstab or mdadm.conf line.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
NVME_RE = re.compile(r"nvme\d+n\d+")
PATH_RE = re.compile(r"(/[A-Za-z0-9_.@+-]*)+")
OPTIONS_RE = re.compile(r"[A-Za-z0-9_=,.:/@+-]+")
USER_RE = re.compile(r"[a-z_][a-z0-9_.-]{0,31}\$?|\d+")
MODE_RE = re.compile(r"0?[0-7]{3,4}")
FSTYPES = ("xfs", "ext4")
# Mount points that are never scratch, and the trees no scratch mount point is in (however the path is spelt).
SYSTEM_PATHS = ("/", "/boot", "/boot/efi", "/usr", "/var", "/etc", "/home", "/root", "/tmp", "/opt", "/srv", "/mnt")
SYSTEM_TREES = ("/boot", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys",
                "/dev", "/run", "/root", "/var/lib", "/var/log", "/var/run", "/var/tmp", "/tmp")
SELECTOR_KEYS = ("name", "model", "serial", "min_size", "max_size")
# NVMe transports (/sys/class/nvme/<controller>/transport): a namespace is local when every controller it is reached
# through is PCIe; rdma, tcp and fc are NVMe over Fabrics (a neighbour's storage, on a RoCE fabric likely), loop the
# kernel's own target.
TRANSPORTS = ("pcie", "rdma", "tcp", "fc", "loop")
# What the drive-content probe reads: this many samples of this many bytes, spread from the first to the last.
SAMPLES = 16
SAMPLE_BYTES = 65536
# wipefs' names of partition tables (util-linux libblkid): the protective MBR and GPT headers, a DOS table.
PARTITION_TABLES = ("gpt", "PMBR", "dos")


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
    if not NAME_RE.fullmatch(name or ""):
        raise ScratchInputError("name %r: 1 to 32 letters, digits, '_' and '-', starting with a letter or digit" % (name,))
    want = dict(name=name, state=params.get("state", "present"), force=bool(params.get("force")),
                device="/dev/md/%s" % name)
    if want["state"] == "absent":
        path = params.get("path")
        want["path"] = None if path is None else mount_path(path, system=False)
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
    path = mount_path(params.get("path"))
    transports = params.get("transports") or ["pcie"]
    unknown = [t for t in transports if t not in TRANSPORTS]
    if unknown:
        raise ScratchInputError("transports %s: each one of %s" % (", ".join(map(str, unknown)), ", ".join(TRANSPORTS)))
    if params.get("fstype", "xfs") not in FSTYPES:
        raise ScratchInputError("fstype must be one of %s" % ", ".join(FSTYPES))
    options = params.get("mount_options") or "defaults"
    if not OPTIONS_RE.fullmatch(options):
        raise ScratchInputError("mount_options %r: letters, digits and '_ = , . : / @ + -' only" % (options,))
    for key in ("owner", "group"):
        if params.get(key) is not None and not USER_RE.fullmatch(str(params[key])):
            raise ScratchInputError("%s %r is not a user or group name or id" % (key, params[key]))
    mode = params.get("mode")
    if mode is not None and not MODE_RE.fullmatch(str(mode)):
        raise ScratchInputError("mode %r must be octal, as '1777' or '0755'" % (mode,))
    want.update(selectors=selectors, count=count, chunk=chunk, path=path, transports=list(transports),
                fstype=params.get("fstype", "xfs"),
                options=options, owner=params.get("owner"), group=params.get("group"),
                mode=int(str(mode), 8) if mode is not None else None)
    return want


def mount_path(path, system=True):
    """The mount point, normalised (``/./var//`` is ``/var``): an absolute path of plain characters without ``..``;
    with ``system``, not a system directory nor in a system tree however it is spelt."""
    if not isinstance(path, str) or not PATH_RE.fullmatch(path):
        raise ScratchInputError("path %r must be an absolute path of letters, digits and '_ . @ + -'" % (path,))
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ScratchInputError("path %r must not have a '..' part" % (path,))
    normal = "/" + "/".join(parts)
    if system and (normal in SYSTEM_PATHS or any(normal.startswith(tree + "/") for tree in SYSTEM_TREES)):
        raise ScratchInputError("path %s is a system directory, not a scratch mount point" % normal)
    return normal


def mount_point_problems(chain):
    """Why the mount point cannot be used, from ``chain``: one dict per existing component from ``/`` down (``path``,
    ``link``, ``dir``, ``mode``, ``uid``, and ``target`` for the mount point itself), as ``transport.path_chain``
    reads them with lstat. A link anywhere (the mount point itself included) is refused: a local user who can write
    an ancestor could point it at /etc, and the array would be mounted over it and its root given mode 1777. So is
    an ancestor anyone can write (sticky or not: the user can make the next component) or that is not root's."""
    problems = []
    for entry in chain:
        if entry["link"]:
            problems.append("%s is a symbolic link" % entry["path"])
            break
        if not entry["dir"]:
            problems.append("%s is not a directory" % entry["path"])
            break
        if entry.get("target"):
            continue
        if entry["mode"] & 0o002:
            problems.append("%s can be written by any user" % entry["path"])
        if entry["uid"] != 0:
            problems.append("%s is owned by uid %d, not root" % (entry["path"], entry["uid"]))
    return problems


def sample_offsets(size, count=SAMPLES, length=SAMPLE_BYTES):
    """Where the content probe reads: ``count`` offsets from the first byte to the last block, 4 KiB aligned."""
    if size <= length:
        return [0]
    last = (size - length) // 4096 * 4096
    return sorted(set((last * index // (count - 1)) // 4096 * 4096 for index in range(count)))


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def nvme_namespaces(devices):
    """The NVMe namespaces (``nvme0n1``) among ``parse_lsblk``'s devices, in natural order (local or not: see
    ``not_local``)."""
    return sorted((d for d in devices.values() if d["type"] == "disk" and NVME_RE.fullmatch(d["name"])),
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


def not_local(drive, controllers, transports):
    """Why a namespace is not taken for its transports (``parse_nvme_sysfs``' controllers), or None: every
    controller it is reached through must have one of ``transports``."""
    paths = controllers.get(drive["name"]) or []
    if not paths:
        return "%s: no NVMe controller found for it in /sys, so its transport is unknown" % drive["name"]
    other = [c for c in paths if c["transport"] not in transports]
    if not other:
        return None
    return "%s: %s" % (drive["name"], ", ".join(
        "%s over %s%s" % (c["controller"], c["transport"] or "an unknown transport",
                          " (%s)" % ", ".join(x for x in (c["nqn"], c["address"]) if x) if c["nqn"] or c["address"] else "")
        for c in other))


def select_drives(devices, want, controllers):
    """``(chosen, left_out)``: the NVMe namespaces one of the selectors matches (each selector: all its keys) among
    the local ones (``not_local``), checked against ``count``; and why each namespace the selectors match but that
    is not local was left out (NVMe over Fabrics: another host's storage)."""
    chosen, left_out = [], []
    for drive in nvme_namespaces(devices):
        if not any(matches(drive, s) for s in want["selectors"]):
            continue
        why = not_local(drive, controllers, want["transports"])
        (left_out if why else chosen).append(why or drive)
    fabric = ("; left out as not local (transports %s): %s" % (", ".join(want["transports"]), " | ".join(left_out))
              if left_out else "")
    if not chosen:
        raise ScratchInputError("no local NVMe namespace matches the drives selectors (found: %s)%s" % (
            ", ".join("%s %s %s %d bytes" % (d["name"], d["model"], d["serial"], d["size"]) for d in nvme_namespaces(devices))
            or "none", fabric))
    if want["count"] is not None and len(chosen) != want["count"]:
        raise ScratchInputError("the drives selectors match %d NVMe namespaces (%s), count asks for %d%s" % (
            len(chosen), ", ".join(d["name"] for d in chosen), want["count"], fabric))
    return chosen, left_out


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


def probe_reasons(drive, probe, inactive):
    """``(hard, soft)`` reasons from what the drive itself shows (``probe``: ``holders`` from /sys, ``signatures``
    from wipefs, ``busy`` and ``nonzero`` from an exclusive read of samples), beyond lsblk's cached view: a holder
    other than an inactive array (``inactive``: kernel names) or an exclusive open refused (a mount in another mount
    namespace, a program) is hard; a signature udev had not recorded, or data without any signature, is soft
    (``force`` takes the drive)."""
    hard, soft = [], []
    known = set(drive["children"])
    for holder in probe.get("holders") or []:
        if holder in inactive:
            if holder not in known:
                soft.append("is held by the inactive array %s" % holder)
        else:
            hard.append("is held by %s (stop or remove it first)" % holder)
    if probe.get("busy"):
        hard.append("is open exclusively elsewhere (a mount in another mount namespace, or a program)")
    recorded = drive["fstype"]
    partitioned = any(name for name in drive["children"])
    for signature in probe.get("signatures") or []:
        # A partition table of a drive whose partitions lsblk shows is named already ("has partition ...").
        if partitioned and signature["type"] in PARTITION_TABLES:
            continue
        if signature["type"] != recorded:
            soft.append("holds %s at offset %d (found on the drive; udev had not recorded it)"
                        % (signature["type"], signature["offset"]))
    if not recorded and not probe.get("signatures") and not known and probe.get("nonzero"):
        soft.append("holds data without a signature (non-zero bytes at offset %d)" % probe["nonzero"][0])
    return hard, soft


def array_action(want, devices, chosen, active, examined, probes=None, inactive=()):
    """What the array needs: ``("ok"|"assemble"|"create", wipe)`` where ``wipe`` lists the drives whose signatures
    ``force`` clears first. ``active`` is ``find_array``'s (device, detail); ``examined`` maps a drive's path to
    ``mdadm --examine --export`` of drives that hold an md superblock; ``probes`` maps a drive's path to what the
    drive itself shows (``probe_reasons``), read before a create. Raises ``ScratchInputError`` with nothing changed
    where the drives cannot be used."""
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
        if probes is not None:
            more_hard, more_soft = probe_reasons(drive, probes.get(drive["path"]) or {}, inactive)
            hard, soft = hard + more_hard, soft + more_soft
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


def fstab_edit(text, path, line, specs=None):
    """``/etc/fstab`` with one entry for ``path``: ``line`` (None removes it). With ``specs``, only the entries of
    ``path`` whose source is one of them are taken out (``state=absent``: this array's, never another device's)."""
    drop = set(e["index"] for e in parsers.parse_fstab(text)
               if e["file"].rstrip("/") == path and (specs is None or e["spec"] in specs))
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
