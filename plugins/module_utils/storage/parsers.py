# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Local storage of a Linux node: pure parsers of what the block tools print.

PRIVATE to the roce.fabric collection: may change without notice.

- ``parse_lsblk``: ``lsblk --json --bytes --output NAME,KNAME,PATH,TYPE,SIZE,MODEL,SERIAL,FSTYPE,UUID,MOUNTPOINT,PKNAME``
  (util-linux 2.32 prints sizes as strings and older ones no PATH; both are read);
- ``parse_export``: the ``KEY=VALUE`` lines of ``mdadm --detail --export``, ``mdadm --examine --export`` and
  ``blkid --output export``;
- ``parse_mdstat``: ``/proc/mdstat``;
- ``parse_fstab`` / ``parse_mdadm_conf``: the lines that name a mount point or an array;
- ``parse_size``: ``1G``, ``894.3G``, ``512K`` or a number of bytes;
- ``parse_nvme_sysfs``: the controllers (and their transports: ``pcie``, ``rdma``, ``tcp``, ``fc``, ``loop``) behind
  each NVMe namespace, from a listing of ``/sys`` (``transport.nvme_sysfs_listing``);
- ``parse_wipefs``: ``wipefs --no-act --json``, every signature a drive holds (not only the first, as blkid says).
"""

from __future__ import annotations

import json
import re

LSBLK_COLUMNS = "NAME,KNAME,PATH,TYPE,SIZE,MODEL,SERIAL,FSTYPE,UUID,MOUNTPOINT,PKNAME"
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:i?B)?\s*$", re.IGNORECASE)
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
MDSTAT_RE = re.compile(r"^(md[\w/]+)\s*:\s*(\w+)\s+(?:\((?:auto-)?read-only\)\s+)?(raid\d+|linear|inactive)?\s*(.*)$")


def parse_size(value):
    """Bytes of ``value``: an int, or a string of a number with an optional binary unit (``1.5T``, ``512K``)."""
    if isinstance(value, bool):
        raise ValueError("not a size: %r" % (value,))
    if isinstance(value, int):
        return value
    match = SIZE_RE.match(str(value))
    if not match:
        raise ValueError("not a size: %r (a number of bytes, or one with K, M, G, T or P)" % (value,))
    return int(float(match.group(1)) * UNITS[match.group(2).upper()])


def _text(value):
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def parse_lsblk(text):
    """``lsblk --json`` -> ``{kname: device}``, every device of the tree once, each a dict of ``name`` (kernel name),
    ``path``, ``type``, ``size`` (bytes), ``model``, ``serial``, ``fstype``, ``uuid``, ``mountpoint``, ``parent``
    (kernel name or None) and ``children`` (kernel names). A device below several parents (an array's members)
    keeps every parent in ``parents``."""
    data = json.loads(text or "{}")
    devices = {}

    def walk(node, parent):
        kname = _text(node.get("kname")) or _text(node.get("name"))
        if not kname:
            return
        size = node.get("size")
        entry = devices.get(kname)
        if entry is None:
            entry = devices[kname] = dict(
                name=kname, path=_text(node.get("path")) or "/dev/" + kname, type=_text(node.get("type")),
                size=int(size) if size not in (None, "") else 0, model=_text(node.get("model")),
                serial=_text(node.get("serial")), fstype=_text(node.get("fstype")), uuid=_text(node.get("uuid")),
                mountpoint=_text(node.get("mountpoint")), parent=parent, parents=[], children=[])
        if parent and parent not in entry["parents"]:
            entry["parents"].append(parent)
            if kname not in devices[parent]["children"]:
                devices[parent]["children"].append(kname)
        for child in node.get("children") or []:
            walk(child, kname)

    for node in data.get("blockdevices") or []:
        walk(node, None)
    return devices


def parse_export(text):
    """``KEY=VALUE`` lines (``mdadm --export``, ``blkid -o export``) -> dict; other lines are skipped."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and re.match(r"^[A-Z][A-Za-z0-9_]*$", key):
            values[key] = value
    return values


def md_members(detail):
    """The member devices (``/dev/nvme0n1``) of ``mdadm --detail --export``, in role order."""
    members = []
    for key, value in detail.items():
        match = re.match(r"^MD_DEVICE_(.+)_DEV$", key)
        if match:
            role = detail.get("MD_DEVICE_%s_ROLE" % match.group(1), "")
            members.append((int(role) if role.isdigit() else 1 << 20, value))
    return [path for _role, path in sorted(members)]


def md_name(value):
    """The array name of a superblock's ``MD_NAME`` (``node1:scratch`` -> ``scratch``)."""
    return (value or "").rpartition(":")[2]


def parse_mdstat(text):
    """``/proc/mdstat`` -> ``{md127: dict(state, level, members)}``; members are kernel names (``nvme0n1``)."""
    arrays = {}
    for line in (text or "").splitlines():
        match = MDSTAT_RE.match(line)
        if not match or line.startswith("Personalities"):
            continue
        name, state, level, rest = match.groups()
        members = [re.sub(r"\[\d+\](\([A-Z]\))?$", "", word) for word in rest.split() if re.search(r"\[\d+\]", word)]
        arrays[name] = dict(state=state, level=level if level != "inactive" else None, members=members)
    return arrays


def parse_fstab(text):
    """``/etc/fstab`` -> list of dict(index, spec, file, vfstype, options, freq, passno) for every entry line."""
    entries = []
    for index, line in enumerate((text or "").splitlines()):
        fields = line.split()
        if not fields or fields[0].startswith("#") or len(fields) < 3:
            continue
        entries.append(dict(index=index, spec=fields[0], file=fields[1], vfstype=fields[2],
                            options=fields[3] if len(fields) > 3 else "defaults",
                            freq=fields[4] if len(fields) > 4 else "0", passno=fields[5] if len(fields) > 5 else "0"))
    return entries


def parse_mdadm_conf(text):
    """``mdadm.conf`` -> list of dict(index, device, uuid, name) for each ``ARRAY`` line."""
    arrays = []
    for index, line in enumerate((text or "").splitlines()):
        fields = line.split()
        if not fields or fields[0] != "ARRAY" or len(fields) < 2:
            continue
        values = dict(field.split("=", 1) for field in fields[2:] if "=" in field)
        arrays.append(dict(index=index, device=fields[1], uuid=values.get("UUID"), name=values.get("name")))
    return arrays


def parse_mounts(text):
    """``/proc/self/mounts`` -> the same entries as ``parse_fstab`` (one per mount, in mount order)."""
    return parse_fstab(text)


NVME_NAMESPACE_RE = re.compile(r"nvme\d+n\d+")
CONTROLLER_RE = re.compile(r"nvme\d+")


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def parse_nvme_sysfs(text):
    """A listing of the NVMe part of ``/sys`` -> ``{namespace: [dict(controller, transport, address, nqn)]}``.

    The listing's lines (``transport.nvme_sysfs_listing`` prints them from the node's /sys, the corpus' capture
    command from a real one):

    - ``block/nvme0n1/device -> nvme0`` (the last part of the resolved link: a controller, or ``nvme-subsys0`` for
      the head of a native multipath namespace);
    - ``block/nvme0n1/multipath/nvme0c1n1`` (one path of a multipath head, through controller ``nvme1``);
    - ``subsystem/nvme-subsys0/nvme0`` (a controller of a subsystem);
    - ``nvme/nvme0/transport: pcie``, ``nvme/nvme0/address: ...``, ``nvme/nvme0/subsysnqn: ...``.

    Every controller a namespace is reached through is listed, so a namespace with one path over a fabric is seen
    as such. A namespace without any controller found has an empty list."""
    device, paths, members, attrs = {}, {}, {}, {}
    for line in (text or "").splitlines():
        line = line.rstrip()
        match = re.match(r"^block/(nvme\d+n\d+)/device -> (\S+)$", line)
        if match:
            device[match.group(1)] = match.group(2)
            continue
        match = re.match(r"^block/(nvme\d+n\d+)/multipath/nvme\d+c(\d+)n\d+$", line)
        if match:
            paths.setdefault(match.group(1), []).append("nvme" + match.group(2))
            continue
        match = re.match(r"^subsystem/(nvme-subsys\d+)/(nvme\d+)$", line)
        if match:
            members.setdefault(match.group(1), []).append(match.group(2))
            continue
        match = re.match(r"^nvme/(nvme\d+)/(transport|address|subsysnqn):\s?(.*)$", line)
        if match:
            attrs.setdefault(match.group(1), {})[match.group(2)] = match.group(3).strip() or None
    out = {}
    for namespace in set(device) | set(paths):
        controllers = set(paths.get(namespace, []))
        target = device.get(namespace, "")
        if CONTROLLER_RE.fullmatch(target):
            controllers.add(target)
        elif target.startswith("nvme-subsys"):
            controllers.update(members.get(target, []))
        out[namespace] = [dict(controller=name, transport=attrs.get(name, {}).get("transport"),
                               address=attrs.get(name, {}).get("address"), nqn=attrs.get(name, {}).get("subsysnqn"))
                          for name in sorted(controllers, key=_natural)]
    return out


def parse_wipefs(text):
    """``wipefs --no-act --json DEVICE`` -> list of dict(type, offset (bytes), uuid, label); a drive without a
    signature prints an empty list (util-linux 2.38), and no output at all is read the same."""
    if not (text or "").strip():
        return []
    found = []
    for entry in json.loads(text).get("signatures") or []:
        offset = str(entry.get("offset") or "0")
        found.append(dict(type=_text(entry.get("type")), offset=int(offset, 16) if offset.lower().startswith("0x") else int(offset),
                          uuid=_text(entry.get("uuid")), label=_text(entry.get("label"))))
    return found
