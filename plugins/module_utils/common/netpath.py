# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The path between a host and the controller: which of the host's interfaces carry the controller's session.

PRIVATE to the roce.fabric collection: may change without notice.

What a module can know of it, in the order it is tried:

- ``SSH_CONNECTION`` (OpenSSH, ssh(1) ENVIRONMENT: client address, client port, server address, server port), which
  sshd gives the login session. A module run with ``become`` does not see it in its own environment (sudo's
  ``env_reset``, su's ``-l``), but the processes of the login session above it still hold it in
  ``/proc/<pid>/environ`` (their environment at exec, which sudo does not touch), which root may read: the nearest
  ancestor that has it is taken.
- The address the inventory connects to (``ansible_host``), resolved on the host: the interface that holds it.

The interfaces are then the one the host routes the client address through (``ip -j route get``), the one that
holds the server address and the one that holds the inventory's address (``ip -j address show``). A caller that
must not cut the controller's link fails closed when ``controller_path`` finds none.
"""

from __future__ import annotations

import ipaddress
import json
import os

from ansible_collections.roce.fabric.plugins.module_utils.common.run import _stat_fields

SSH_CONNECTION = "SSH_CONNECTION"
# How far up the process tree the login session's environment is looked for (sudo with use_pty, su, a shell or two).
MAX_ANCESTORS = 32


class NetPathError(ValueError):
    """Output that is not iproute2's JSON."""


def ip_address(text):
    """An ``ipaddress`` address of ``text`` (a zone index dropped, an IPv4-mapped IPv6 address as IPv4), or None."""
    try:
        address = ipaddress.ip_address((text or "").strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def parse_ssh_connection(text):
    """``{"client", "server"}`` (``ipaddress`` addresses) of an SSH_CONNECTION value, or None when it is not one."""
    fields = (text or "").split()
    if len(fields) != 4:
        return None
    client, server = ip_address(fields[0]), ip_address(fields[2])
    if client is None or server is None or not fields[1].isdigit() or not fields[3].isdigit():
        return None
    return dict(client=client, server=server)


def _environ_of(pid, proc_root):
    """The environment ``pid`` was started with (``/proc/<pid>/environ``), {} where it cannot be read."""
    try:
        with open(os.path.join(proc_root, str(pid), "environ"), "rb") as handle:
            data = handle.read(1 << 20)
    except (IOError, OSError):
        return {}
    found = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            found[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return found


def _parent_of(pid, proc_root):
    try:
        with open(os.path.join(proc_root, str(pid), "stat")) as handle:
            fields = _stat_fields(handle.read())
    except (IOError, OSError):
        return None
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def session_ssh_connection(environ=None, pid=None, proc_root="/proc"):
    """``(value, source)`` of the SSH_CONNECTION this process runs under: its own environment's, else the nearest
    ancestor's (the login session's, above sudo); ``(None, None)`` when neither has one."""
    environ = os.environ if environ is None else environ
    if parse_ssh_connection(environ.get(SSH_CONNECTION)):
        return environ[SSH_CONNECTION], "the module's environment"
    pid = os.getpid() if pid is None else pid
    for _step in range(MAX_ANCESTORS):
        pid = _parent_of(pid, proc_root)
        if not pid or pid <= 1:
            break
        value = _environ_of(pid, proc_root).get(SSH_CONNECTION)
        if parse_ssh_connection(value):
            return value, "the login session's environment (process %d)" % pid
    return None, None


def route_device(text):
    """The interface of ``ip -j route get <address>``'s route (None when it names none)."""
    try:
        routes = json.loads(text or "")
    except ValueError:
        raise NetPathError("not ip -j route get output")
    return routes[0].get("dev") if routes and isinstance(routes, list) and isinstance(routes[0], dict) else None


def address_interfaces(text):
    """``{address: interface}`` of ``ip -j address show`` (every address of every interface, ``ipaddress``
    addresses as keys)."""
    try:
        links = json.loads(text or "")
    except ValueError:
        raise NetPathError("not ip -j address show output")
    if not isinstance(links, list):
        raise NetPathError("not ip -j address show output")
    found = {}
    for link in links:
        if not isinstance(link, dict) or not link.get("ifname"):
            continue
        for info in link.get("addr_info") or []:
            address = ip_address(info.get("local")) if isinstance(info, dict) else None
            if address is not None:
                found.setdefault(address, link["ifname"])
    return found


def resolved_addresses(text):
    """The addresses of ``getent ahosts <name>`` (its first column; each address once, in its order)."""
    found = []
    for line in (text or "").splitlines():
        words = line.split()
        address = ip_address(words[0]) if words else None
        if address is not None and address not in found:
            found.append(address)
    return found


def controller_path(ssh, ssh_source, client_route, addresses, host_addresses):
    """Which interfaces carry the controller's session: ``{"interfaces": [(name, why)], "unknown": None or why}``.

    ``ssh``: :func:`parse_ssh_connection` of the session's value (None without one) and ``ssh_source`` where it was
    found; ``client_route``: the interface of the route to its client address (None where not read);
    ``addresses``: :func:`address_interfaces` of the host; ``host_addresses``: the inventory's address for the host,
    resolved on it (``ipaddress`` addresses). A loopback address says nothing of the path (a tunnel, a port forward
    or a local connection ends there). ``unknown`` says why no interface was found; the path is then unknown."""
    interfaces, tried = [], []

    def add(name, why):
        if name and name != "lo" and name not in [known for known, _why in interfaces]:
            interfaces.append((name, why))
    if ssh is None:
        tried.append("no SSH_CONNECTION in the module's environment or its login session's")
    else:
        if ssh["client"].is_loopback:
            tried.append("the SSH session comes from %s (a loopback address: a tunnel or port forward)" % ssh["client"])
        elif client_route:
            add(client_route, "the route to the controller's address %s (SSH_CONNECTION, %s)" % (ssh["client"], ssh_source))
        else:
            tried.append("no route to the controller's address %s could be read" % ssh["client"])
        if not ssh["server"].is_loopback and addresses.get(ssh["server"]):
            add(addresses[ssh["server"]], "it holds %s, where the controller's SSH session arrives" % ssh["server"])
    usable = [address for address in host_addresses or [] if not address.is_loopback]
    for address in usable:
        if addresses.get(address):
            add(addresses[address], "it holds %s, the inventory's address of the host" % address)
    if host_addresses and not usable:
        tried.append("the inventory's address of the host is a loopback address")
    elif usable and not [address for address in usable if addresses.get(address)]:
        tried.append("the inventory's address of the host (%s) is none of its own" % ", ".join(str(a) for a in usable))
    elif not host_addresses:
        tried.append("no inventory address of the host was given")
    if interfaces:
        return dict(interfaces=interfaces, unknown=None)
    return dict(interfaces=[], unknown="; ".join(tried))
