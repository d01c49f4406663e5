# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: the processes of a test tool on this host, read from and stopped through ``/proc``.

PRIVATE to the roce.fabric collection: may change without notice.

A server side runs detached in a session of its own (``setsid``), so it and everything it started
can be found (``session_members``) and stopped together (``stop_group``); stray servers of an earlier
run are found by the port in their command line (``stray_processes``). A server listens once its TCP
socket (``tcp_listening``) or its RDMA-CM id (``parse_cm_listeners`` on ``rdma -j resource show cm_id``) is
in the listening state: perftest's own banner says so too, but it sits in stdio's buffer while the output
goes to a file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time

from ansible_collections.roce.fabric.plugins.module_utils.validate.perftest import TOOLS


def _net_namespace(pid):
    """The network namespace of ``pid`` (``net:[4026531840]``), or None where it cannot be read."""
    try:
        return os.readlink("/proc/%s/ns/net" % pid)
    except (IOError, OSError):
        return None


def stray_processes(port_first, port_last, exclude=()):
    """Processes of the known tools holding a port in the range (from /proc/<pid>/cmdline), in this process's network
    namespace: a tool in another one (a pod's, a container's) holds no port of this host's stack."""
    found = []
    mine = _net_namespace("self")
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in exclude:
            continue
        theirs = _net_namespace(name)
        if mine and theirs and theirs != mine:
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                argv = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
        except (IOError, OSError):
            continue
        # The tool itself, or a script run by an interpreter (argv[1]); wrappers such as timeout
        # are not counted, the tool under them is.
        names = [os.path.basename(a) for a in argv[:2]]
        if names and names[0] in TOOLS:
            pass
        elif len(names) == 2 and names[1] in TOOLS and re.match(r"^(python[0-9.]*|perl|sh|bash)$", names[0]):
            argv = argv[1:]
        else:
            continue
        port = None
        tool = os.path.basename(argv[0])
        for index, arg in enumerate(argv):
            if arg in ("-p", "--port") and index + 1 < len(argv):
                port = argv[index + 1]
            elif arg.startswith("--port="):
                port = arg.split("=", 1)[1]
        if port is None:
            port = "7174" if tool == "rping" else "18515"
        if port.isdigit() and port_first <= int(port) <= port_last:
            found.append(dict(pid=int(name), cmdline=" ".join(argv), port=int(port)))
    return found


def listening_inodes(table, port):
    """The socket inodes of a ``/proc/net/tcp`` (or tcp6) table's rows in the LISTEN state (0A) on ``port``."""
    inodes = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(fields[9])
    return inodes


def socket_inodes(pids):
    """The inodes of the sockets the processes ``pids`` hold open (``/proc/<pid>/fd`` links ``socket:[N]``)."""
    inodes = set()
    for pid in pids:
        folder = "/proc/%d/fd" % pid
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(os.path.join(folder, name))
            except OSError:
                continue
            if target.startswith("socket:[") and target.endswith("]"):
                inodes.add(target[len("socket:["):-1])
    return inodes


def listening_on(port):
    """The inodes of the TCP sockets (IPv4 and IPv6) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                found |= listening_inodes(handle.read(), port)
        except (IOError, OSError):
            continue
    return found


def socket_holders(inodes):
    """The pids that hold one of the sockets ``inodes`` open (a process whose files cannot be read is left out)."""
    pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    return set(pid for pid in pids if socket_inodes([pid]) & set(inodes))


def tcp_listening(port, pids=None):
    """True when a TCP socket listens on the port (perftest's socket exchange uses TCP); with ``pids``, only a socket
    one of those processes holds counts (another program on the port is not the server this run started)."""
    found = listening_on(port)
    if pids is None:
        return bool(found)
    return bool(found & socket_inodes(pids))


def parse_cm_listeners(text):
    """``{(pid, port)}`` of every RDMA-CM id in the LISTEN state in ``rdma -j resource show cm_id`` output;
    None when the text is no such listing (an iproute2 without cm_id resources, an error message)."""
    try:
        rows = json.loads(text)
    except ValueError:
        return None
    if not isinstance(rows, list):
        return None
    found = set()
    for row in rows:
        if not isinstance(row, dict) or row.get("state") != "LISTEN":
            continue
        port = str(row.get("src-addr", "")).rsplit(":", 1)[-1]
        if port.isdigit() and isinstance(row.get("pid"), int):
            found.add((row["pid"], int(port)))
    return found


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except (IOError, OSError):
        return False


def session_members(sid):
    """Pids whose session id is sid (timeout puts the tool in a process group of its own, not the session's)."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (IOError, OSError, IndexError):
            continue
        # After the command: state, ppid, pgrp, session.
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
            members.append(int(name))
    return members


def stop_group(pid):
    """Stop pid and everything in its session: SIGTERM, then SIGKILL after 3 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        targets = set(session_members(pid)) | set([pid])
        for target in targets:
            try:
                os.kill(target, sig)
            except OSError:
                pass
        deadline = time.time() + 3
        while time.time() < deadline and any(alive(t) for t in targets):
            time.sleep(0.1)
        if not any(alive(t) for t in targets):
            return
