# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The local NVMe scratch array of a GPU node: the run of roce.fabric.nvme_scratch (``converge``).

PRIVATE to the roce.fabric collection: may change without notice.

The module checks nothing itself: ``converge`` checks the input (``state.check_input``), reads the node through
``transport.Node``, decides with ``state`` (the drives, then the array, the file system, the mount, one line each
in mdadm.conf and fstab) and makes each change through the run's record. The array's root is opened without
following a link and checked to be the array's own before its owner and mode are set.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.storage import parsers, state
from ansible_collections.roce.fabric.plugins.module_utils.storage.transport import Node, path_chain

NEW = "(new)"


def mdadm_conf_path():
    return "/etc/mdadm/mdadm.conf" if os.path.isdir("/etc/mdadm") else "/etc/mdadm.conf"


def array_info(want, device, detail):
    if not detail:
        return None
    return dict(name=want["name"], device=want["device"], kernel=device, level=detail.get("MD_LEVEL"),
                members=parsers.md_members(detail), uuid=detail.get("MD_UUID"))


def open_root(path, device):
    """A descriptor of the mounted array's root, opened without following a link, checked to be the root of the
    array's file system (``device``'s): the owner and mode are set through it, never through a path a local user
    could swap."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    info = os.fstat(fd)
    if device is not None and info.st_dev != os.stat(device).st_rdev:
        os.close(fd)
        raise FabricError("%s is not the root of the array's file system (it changed under the run); nothing more "
                          "was changed" % path, kind="refused")
    return fd


def root_owner(path, device=None):
    fd = open_root(path, device)
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return dict(owner=info.st_uid, group=info.st_gid, mode="%04o" % stat.S_IMODE(info.st_mode))


def set_root(path, device, owner=None, group=None, mode=None):
    fd = open_root(path, device)
    try:
        if owner is not None:
            os.fchown(fd, owner, group)
        if mode is not None:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def make_mount_point(path):
    """mkdir of each missing component (0755), each checked with lstat to be the directory just made."""
    parts = [part for part in path.split("/") if part]
    for index in range(1, len(parts) + 1):
        current = "/" + "/".join(parts[:index])
        try:
            os.mkdir(current, 0o755)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
        info = os.lstat(current)
        if not stat.S_ISDIR(info.st_mode):
            raise FabricError("%s is not a directory (it changed under the run); the array is not mounted" % current,
                              kind="refused")


def probe_drives(node, devices, chosen, inactive):
    """What each drive itself shows, read before a create (``state.probe_reasons``): its holders, every signature,
    and an exclusive read of samples (skipped for a drive an array holds, which the kernel keeps exclusive, and for
    one lsblk shows mounted, refused for that already)."""
    probes = {}
    for drive in chosen:
        holders = node.holders(drive["name"])
        busy, nonzero = None, []
        mounted = state.in_use(devices, drive)[0]
        if not holders and not mounted:
            busy, nonzero = node.exclusive_read(drive["path"], state.sample_offsets(drive["size"]), state.SAMPLE_BYTES)
        probes[drive["path"]] = dict(holders=holders, signatures=node.signatures(drive["path"]), busy=busy,
                                     nonzero=nonzero)
    return probes


def resolve_id(name, lookup, what):
    if name is None:
        return None
    if str(name).isdigit():
        return int(name)
    try:
        return lookup(name)
    except KeyError:
        raise FabricError("%s %s does not exist on the node; nothing more was changed" % (what, name), kind="invalid")


def present(run, node, want):
    node.settle()
    devices = node.devices()
    chosen, left_out = state.select_drives(devices, want, node.nvme_controllers())
    run.update(left_out=left_out)
    paths = [d["path"] for d in chosen]
    problems = state.mount_point_problems(path_chain(want["path"]))
    if problems:
        raise state.ScratchInputError("mount point %s: %s; nothing was changed" % (want["path"], "; ".join(problems)))
    active, inactive = node.arrays()
    md_device, detail = state.find_array(active, want["name"])
    examined = dict((d["path"], node.examine(d["path"])) for d in chosen if d["fstype"] == "linux_raid_member")
    try:
        action, wipe = state.array_action(want, devices, chosen, (md_device, detail), examined)
    except state.ScratchInputError:
        # Refused already (drives in use): the drives are read too, so that the refusal names all that is wrong.
        action = "create"
    if action == "create":
        # Before anything is wiped or made: what the drives themselves hold, not udev's cached view of them.
        held = set(os.path.basename(device) for device in inactive)
        probes = probe_drives(node, devices, chosen, held)
        action, wipe = state.array_action(want, devices, chosen, (md_device, detail), examined, probes, held)
    owner = resolve_id(want["owner"], lambda n: pwd.getpwnam(n).pw_uid, "user")
    group = resolve_id(want["group"], lambda n: grp.getgrnam(n).gr_gid, "group")
    conf_path = mdadm_conf_path()
    conf_text = node.read(conf_path)
    fstab_text = node.read("/etc/fstab")
    mounts = parsers.parse_mounts(node.read("/proc/self/mounts"))
    before = dict(array=array_info(want, md_device, detail))
    after = dict(array=dict(name=want["name"], device=want["device"], level="raid0", members=paths,
                            uuid=detail.get("MD_UUID") if detail else None))
    drives = [dict(name=d["name"], path=d["path"], model=d["model"], serial=d["serial"], size=d["size"],
                   by_id=node.by_id(d["path"])) for d in chosen]
    run.update(drives=drives)

    # The array.
    mdadm = node.tool("mdadm")
    # Arrays that hold the drives without running (an incremental assembly that stopped short) let them go first.
    names = set(d["name"] for d in chosen)
    for device, held in sorted(inactive.items()):
        if set(held["members"]) & names and (action == "assemble" or wipe):
            node.change([mdadm, "--stop", device])
    if action == "assemble":
        node.change([mdadm, "--assemble", want["device"]] + paths)
    elif action == "create":
        wiped = []
        try:
            for path in wipe:
                node.change([node.tool("wipefs"), "--all", path])
                wiped.append(path)
            # --run (no question asked) only here: every drive passed the probes above.
            node.change(state.create_argv(mdadm, want, paths))
        except FabricError as exc:
            if not wiped:
                raise
            raise FabricError("%s. The signatures of %s were wiped before it and no array was made: those drives are "
                              "blank now; run again once the cause is fixed" % (exc, ", ".join(wiped)), **exc.details)
    made = action != "ok" and run.check_mode
    if action != "ok" and not run.check_mode:
        md_device, detail = state.find_array(node.arrays()[0], want["name"])
        if not detail:
            raise FabricError("mdadm reported success but array %s is not active" % want["name"], kind="command")
    md_uuid = state.md_uuid_colons(detail.get("MD_UUID")) if detail else None
    after["array"]["uuid"] = md_uuid
    run.update(array=dict(after["array"], kernel=md_device, uuid=md_uuid))

    # The file system: unknown in check mode while the array is not active (a new one has none).
    if made:
        blkid = {"TYPE": want["fstype"]} if action == "assemble" else {}
    else:
        blkid = node.blkid(want["device"])
    before["filesystem"] = dict(type=blkid.get("TYPE"), uuid=blkid.get("UUID")) if blkid.get("TYPE") and action == "ok" else None
    # A new array gets a new file system whatever the probe finds: a signature on it is a stale one from the drives'
    # earlier life (the same geometry brings an old superblock back), never data of this array.
    if action == "create" or state.filesystem_action(want, blkid) == "mkfs":
        argv = state.mkfs_argv(want, want["device"], force=bool(blkid.get("TYPE")) or action == "create")
        node.change([node.tool(argv[0])] + argv[1:])
        blkid = {} if run.check_mode else node.blkid(want["device"])
    fs_uuid = blkid.get("UUID")
    after["filesystem"] = dict(type=want["fstype"], uuid=fs_uuid)
    run.update(filesystem=after["filesystem"])

    # mdadm.conf and fstab: one line each.
    conf_line = state.mdadm_conf_line(want, md_uuid or NEW)
    new_conf = state.mdadm_conf_edit(conf_text, want, conf_line, md_uuid)
    before["mdadm_conf"] = [a for a in conf_text.splitlines() if a.split()[:2] == ["ARRAY", want["device"]]] or None
    after["mdadm_conf"] = [conf_line]
    if new_conf != conf_text:
        node.write(conf_path, new_conf, conf_line)
    line = state.fstab_line(want, fs_uuid or NEW)
    new_fstab = state.fstab_edit(fstab_text, want["path"], line)
    before["fstab"] = [x for x in fstab_text.splitlines() if x.split()[1:2] == [want["path"]] and not x.startswith("#")] or None
    after["fstab"] = [line]
    fstab_changed = new_fstab != fstab_text
    if fstab_changed:
        node.write("/etc/fstab", new_fstab, line)

    # The mount.
    real = os.path.realpath(want["device"]) if not made else None

    def ours(source):
        return real is not None and (os.path.realpath(source) == real or source == want["device"])
    mounted_before = bool([m for m in mounts if m["file"] == want["path"] and ours(m["spec"])])
    before["mount"] = dict(path=want["path"], mounted=mounted_before)
    after["mount"] = dict(path=want["path"], mounted=True)
    mount_action = state.mount_action(want, mounts, ours)
    if mount_action == "mount":
        if not os.path.isdir(want["path"]):
            run.mutate("mkdir %s" % want["path"], lambda: make_mount_point(want["path"]))
        node.change([node.tool("mount"), want["path"]])
    elif fstab_changed:
        node.change([node.tool("mount"), "-o", "remount", want["path"]])
    run.update(mount=dict(path=want["path"], fstab=line, mounted=not run.check_mode or mounted_before))

    # Owner and mode of the mounted root (a new file system's root is root:root 0755).
    root_device = None if run.check_mode and not mounted_before else want["device"]
    have = root_owner(want["path"], root_device) if mounted_before or not run.check_mode else dict(owner=0, group=0, mode="0755")
    wanted = dict(have)
    if owner is not None:
        wanted["owner"] = owner
    if group is not None:
        wanted["group"] = group
    if want["mode"] is not None:
        wanted["mode"] = "%04o" % want["mode"]
    before["root"], after["root"] = have, wanted
    if (wanted["owner"], wanted["group"]) != (have["owner"], have["group"]):
        run.mutate("chown %s:%s %s" % (wanted["owner"], wanted["group"], want["path"]),
                   lambda: set_root(want["path"], root_device, owner=wanted["owner"], group=wanted["group"]))
    if wanted["mode"] != have["mode"]:
        run.mutate("chmod %s %s" % (wanted["mode"], want["path"]),
                   lambda: set_root(want["path"], root_device, mode=int(wanted["mode"], 8)))
    for key in list(before):
        run.diff(key, before[key], after[key])


def absent(run, node, want):
    active, inactive = node.arrays()
    for device, held in sorted(inactive.items()):
        if parsers.md_name(held.get("MD_NAME")) == want["name"]:
            node.change([node.tool("mdadm"), "--stop", device])
    md_device, detail = state.find_array(active, want["name"])
    md_uuid = state.md_uuid_colons(detail.get("MD_UUID")) if detail else None
    run.update(array=array_info(want, md_device, detail))
    mounts = parsers.parse_mounts(node.read("/proc/self/mounts"))
    real = os.path.realpath(md_device) if md_device else None
    for entry in reversed(mounts):
        if real and os.path.realpath(entry["spec"]) == real:
            node.change([node.tool("umount"), entry["file"]])
            run.diff("mount:%s" % entry["file"], dict(mounted=True), dict(mounted=False))
    if want["path"]:
        fstab_text = node.read("/etc/fstab")
        # Only this array's entry: its file system's UUID, or its device. With the array not active there is no
        # telling, and another device's entry at that path is not ours to take out.
        fs_uuid = node.blkid(md_device).get("UUID") if md_device else None
        specs = set([want["device"]] + ([md_device, "UUID=%s" % fs_uuid, "/dev/disk/by-uuid/%s" % fs_uuid] if fs_uuid
                                        else ([md_device] if md_device else [])))
        new_fstab = state.fstab_edit(fstab_text, want["path"], None, specs)
        kept = [e for e in parsers.parse_fstab(new_fstab) if e["file"].rstrip("/") == want["path"]]
        if kept:
            run.module.warn("the /etc/fstab entry of %s (%s) is not the active array %s's: it is left as it is"
                            % (want["path"], kept[0]["spec"], want["name"]))
        if new_fstab != fstab_text:
            node.write("/etc/fstab", new_fstab, "the entry of %s removed" % want["path"])
            run.diff("fstab", [x for x in fstab_text.splitlines() if x not in new_fstab.splitlines()], None)
    conf_path = mdadm_conf_path()
    conf_text = node.read(conf_path)
    new_conf = state.mdadm_conf_edit(conf_text, want, None, md_uuid)
    if new_conf != conf_text:
        node.write(conf_path, new_conf, "the ARRAY line of %s removed" % want["device"])
        run.diff("mdadm_conf", [x for x in conf_text.splitlines() if x not in new_conf.splitlines()], None)
    if md_device:
        node.change([node.tool("mdadm"), "--stop", md_device])
        run.diff("array", array_info(want, md_device, detail), None)


def converge(run, params):
    try:
        want = state.check_input(params)
    except state.ScratchInputError as exc:
        raise FabricError("Invalid input, nothing was changed: %s" % exc, kind="invalid")
    node = Node(run.module, run)
    try:
        if want["state"] == "present":
            present(run, node, want)
        else:
            absent(run, node, want)
    except state.ScratchInputError as exc:
        raise FabricError(str(exc), kind="refused")
