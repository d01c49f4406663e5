# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux RDMA: parsers for the tools (iproute2 ``rdma``, ``ip netns``), the ib_core namespace mode
(modprobe options, initramfs) and container runtimes (``docker inspect``, ``crictl pods``).

PRIVATE to the roce.fabric collection: may change without notice. Pure functions fed the text the
tools printed; no function here runs a command.
"""

from __future__ import annotations

import json
import re

from ansible.module_utils.compat.version import LooseVersion

# iproute2 5.4 brought `rdma system` (netns mode) and `rdma dev set DEV netns NAME`.
MIN_IPROUTE2 = "5.4.0"
# iproute2 before 5.x printed snapshot dates (ss191125 was released as 5.4.0).
MIN_IPROUTE2_SNAPSHOT = 191125

# ib_core's module parameter: netns_mode=1 is shared (the kernel's default), 0 is exclusive.
NETNS_MODE_PARAM = {"shared": "1", "exclusive": "0"}
PARAM_NETNS_MODE = {"1": "shared", "0": "exclusive"}


class RdmaToolError(Exception):
    """What a tool's error text means: ``kind`` is one of the ERROR_KINDS keys, ``text`` the tool's words."""

    def __init__(self, kind, text):
        super(RdmaToolError, self).__init__(text)
        self.kind = kind
        self.text = text


# Error text of iproute2 and the kernel (strerror), most specific first.
ERROR_KINDS = [
    ("too_old", re.compile(r"Unknown object ['\"]?system|Object \"system\" is unknown|Unknown parameter ['\"]?netns")),
    ("no_netns", re.compile(r'Cannot open network namespace "?([^":]*)"?')),
    ("no_device", re.compile(r"Wrong device name|No such device|Unknown device")),
    ("not_supported", re.compile(r"Operation not supported")),
    ("busy", re.compile(r"Device or resource busy")),
    ("permission", re.compile(r"Operation not permitted|Permission denied")),
    ("invalid", re.compile(r"valid options are")),
    ("no_rdma", re.compile(r"(?i)netlink.*(error|fail)|Protocol not supported|Unknown family")),
]


def classify_error(text):
    """The kind of an ``rdma``/``ip`` failure from its output (``unknown`` when not recognised)."""
    for kind, pattern in ERROR_KINDS:
        if pattern.search(text or ""):
            return kind
    return "unknown"


def parse_system(text):
    """``rdma system [show]`` in every iproute2 variant.

    ``netns shared`` (5.4-5.12), ``netns shared copy-on-fork on`` (5.13+), and the newest
    ``netns shared privileged-qkey off monitor off copy-on-fork on``. Returns a dict with
    ``netns`` (shared|exclusive) and, when printed, ``copy_on_fork``, ``privileged_qkey``,
    ``monitor`` as booleans. Raises RdmaToolError for ``Unknown object 'system'`` (iproute2 too old)
    and for text that has no netns mode.
    """
    kind = classify_error(text)
    if kind == "too_old":
        raise RdmaToolError("too_old", text.strip())
    tokens = (text or "").split()
    result = {}
    names = {"netns": "netns", "copy-on-fork": "copy_on_fork", "privileged-qkey": "privileged_qkey", "monitor": "monitor"}
    index = 0
    while index < len(tokens) - 1:
        key, value = tokens[index], tokens[index + 1]
        if key in names:
            if key == "netns":
                result["netns"] = value
            else:
                result[names[key]] = value == "on"
            index += 2
        else:
            index += 1
    if result.get("netns") not in ("shared", "exclusive"):
        raise RdmaToolError(kind if kind != "unknown" else "unparsable", (text or "").strip() or "no output")
    return result


DEV_LINE = re.compile(r"^(\d+):\s+(\S+):\s*(.*)$")


def parse_dev_show(text):
    """``rdma dev show`` text: ``0: rxe0: node_type ca [fw 20.31.1014] node_guid ... sys_image_guid ...``.

    Returns a list of dicts (``index``, ``name`` and every ``key value`` pair of the line, dashes as
    underscores). Continuation lines (``caps: <...>`` with ``-d``) are ignored.
    """
    devices = []
    for line in (text or "").splitlines():
        match = DEV_LINE.match(line.strip())
        if not match:
            continue
        entry = {"index": int(match.group(1)), "name": match.group(2)}
        tokens = match.group(3).split()
        for key, value in zip(tokens[0::2], tokens[1::2]):
            entry[key.replace("-", "_")] = value
        devices.append(entry)
    return devices


def parse_dev_json(text):
    """``rdma -j dev show``: a JSON list with ``ifindex``/``ifname``; same shape as parse_dev_show."""
    text = (text or "").strip()
    if not text:
        return []
    devices = []
    for item in json.loads(text):
        entry = dict((k.replace("-", "_"), v) for k, v in item.items() if k not in ("ifindex", "ifname"))
        entry.update(index=item.get("ifindex"), name=item.get("ifname"))
        devices.append(entry)
    return devices


def parse_devices(text):
    """Device list from ``rdma dev show`` in either JSON or text form (iproute2 prints an error line before
    ``[]`` for an unknown device, so only the JSON part is read when there is one)."""
    stripped = (text or "").strip()
    start = stripped.find("[")
    if start != -1 and stripped.endswith("]"):
        try:
            return parse_dev_json(stripped[start:])
        except ValueError:
            pass
    return parse_dev_show(text)


LINK_LINE = re.compile(r"^link\s+(\S+)/(\d+)\s*(.*)$")


def parse_link_show(text):
    """``rdma link show``: ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens6f0np0``."""
    links = []
    for line in (text or "").splitlines():
        match = LINK_LINE.match(line.strip())
        if not match:
            continue
        entry = {"device": match.group(1), "port": int(match.group(2))}
        tokens = match.group(3).split()
        for key, value in zip(tokens[0::2], tokens[1::2]):
            entry[key.replace("-", "_")] = value
        links.append(entry)
    return links


def parse_netns_list(text):
    """``ip netns list``: one name per line, maybe followed by ``(id: 0)``."""
    names = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            names.append(line.split()[0])
    return names


def parse_iproute2_version(text):
    """The iproute2 version from ``rdma -V`` / ``ip -V`` (``rdma utility, iproute2-6.1.0`` or ``iproute2-ss190107``)."""
    match = re.search(r"iproute2-(?:v)?(ss\d{6}|\d+(?:\.\d+)*)", text or "")
    return match.group(1) if match else None


def iproute2_supports_netns(version):
    """True when that iproute2 has ``rdma system`` and ``rdma dev set ... netns``; None when unknown."""
    if not version:
        return None
    if version.startswith("ss"):
        return int(version[2:]) >= MIN_IPROUTE2_SNAPSHOT
    return LooseVersion(version) >= LooseVersion(MIN_IPROUTE2)


OPTIONS_LINE = re.compile(r"^\s*options\s+ib_core\s+(.*)$")


def modprobe_netns_mode(text):
    """The ``netns_mode`` an ``/etc/modprobe.d`` file gives ib_core (last one wins), or None."""
    mode = None
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0]
        match = OPTIONS_LINE.match(line)
        if not match:
            continue
        for word in match.group(1).split():
            if word.startswith("netns_mode="):
                mode = PARAM_NETNS_MODE.get(word.split("=", 1)[1].strip(), "invalid")
    return mode


def effective_persistent_mode(files):
    """The mode ib_core gets at load from ``[(file name, text), ...]`` of modprobe.d.

    modprobe reads the files in name order and the last ``netns_mode`` wins. Returns
    ``(mode, file)``: the kernel default ``shared`` with file None when no file sets it.
    """
    mode, source = "shared", None
    for name, text in sorted(files, key=lambda item: item[0].rsplit("/", 1)[-1]):
        found = modprobe_netns_mode(text)
        if found:
            mode, source = found, name
    return mode, source


def render_modprobe_file(mode):
    return ("# Managed by roce.fabric (rdma_netns): RDMA network namespace mode %s.\n"
            "options ib_core netns_mode=%s\n" % (mode, NETNS_MODE_PARAM[mode]))


def initramfs_has_module(listing, module="ib_core"):
    """True when an initramfs listing (``lsinitramfs``/``lsinitrd``) holds ``<module>.ko[.xz|.zst|.gz]``."""
    pattern = re.compile(r"(^|/)%s\.ko(\.(xz|zst|gz))?$" % re.escape(module))
    return any(pattern.search(line.strip().split()[-1]) for line in (listing or "").splitlines() if line.strip())


# --- container runtimes --------------------------------------------------------------------------------

def parse_inspect_pid(text):
    """PID of a container or pod sandbox from ``docker``/``nerdctl inspect`` (a list with ``State.Pid``)
    or ``crictl inspect``/``inspectp -o json`` (``info.pid``). Returns None when it has none (not running)."""
    data = json.loads(text)
    if isinstance(data, list):
        if not data:
            return None
        data = data[0]
    pid = None
    if isinstance(data.get("State"), dict):
        pid = data["State"].get("Pid")
    elif isinstance(data.get("info"), dict):
        pid = data["info"].get("pid")
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return None
    return pid if pid > 0 else None


def parse_crictl_pods(text, name, namespace):
    """Ready pod sandbox ids of exactly ``namespace/name`` from ``crictl pods -o json``
    (crictl's ``--name`` filter is a pattern, so the match is checked here)."""
    data = json.loads(text or "{}")
    ids = []
    for item in data.get("items") or []:
        meta = item.get("metadata") or {}
        if meta.get("name") == name and meta.get("namespace") == namespace and item.get("state") == "SANDBOX_READY":
            ids.append(item.get("id"))
    return ids
