# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SSH helpers shared by the switch families.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex


def fingerprint(key):
    """A host key's fingerprint as OpenSSH prints it (``SHA256:...``, unpadded base64 of its SHA-256)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def refused_host_key(chain, where, known_hosts_where, checking, keyscan, setting, bad_host_key=None):
    """The message for a refused host key found in ``chain`` (an exception and what it was raised from), or None.

    ``bad_host_key`` is paramiko's BadHostKeyException class (a changed key); an unknown key shows as an
    SSHException saying it is "not found in known_hosts" when ``checking`` is on."""
    for error in chain:
        if bad_host_key is not None and isinstance(error, bad_host_key):
            return ("The host key of %s (%s %s) is not the one known for it (%s %s in %s): refused before logging in, "
                    "nothing was sent. If the switch's key really changed, check the new fingerprint on its console "
                    "and replace its known_hosts entry."
                    % (where, error.key.get_name(), fingerprint(error.key), error.expected_key.get_name(),
                       fingerprint(error.expected_key), known_hosts_where))
    if checking and any("not found in known_hosts" in str(error) for error in chain):
        return ("%s is not in %s: refused before logging in, nothing was sent. Check the switch's key fingerprint on "
                "its console, then add it (%s) to that file, or set host_key_checking false (%s in inventory) to "
                "trust any key." % (where, known_hosts_where, keyscan, setting))
    return None


def exception_chain(exc, depth=5):
    chain, seen = [], exc
    while seen is not None and len(chain) < depth:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def cause_of(exc):
    """The whole cause of a connection error, on one line: every distinct line of the exception and of what it was
    raised from. netmiko's own message starts with a line that says only where it happened ("A paramiko
    SSHException occurred during connection creation:"); the cause ("Error reading SSH protocol banner") is on a
    later line or in the exception it wraps."""
    lines = []
    for error in exception_chain(exc):
        for line in str(error).splitlines():
            line = line.strip()
            if line and line not in lines:
                lines.append(line)
    return " ".join(lines) if lines else exc.__class__.__name__


def missing_known_hosts(path, host, port, setting):
    """The message for a known_hosts file that does not exist (None when it does or none is given): the switch's
    key cannot be checked, so nothing is sent. ``setting`` names the inventory variable."""
    if not path or os.path.isfile(path):
        return None
    return ("The known_hosts file %s (%s) does not exist: the switch's host key cannot be checked, nothing was sent. "
            "Check the key fingerprint on the switch's console, then pin it: ssh-keyscan -p %s %s >> %s"
            % (path, setting, port, host, path))


def proxy_command(ssh_args=None, paramiko_proxy=None, user=None):
    """The command that carries a switch's SSH session through a jump host, as Ansible's own connections take it:
    ``ansible_paramiko_proxy_command``, else a ``ProxyCommand`` or ``ProxyJump`` (``-J``) in
    ``ansible_ssh_common_args`` / ``ansible_ssh_extra_args``; None when there is none. ``%h``, ``%p`` and ``%r``
    stay in it (``substitute`` fills them in)."""
    if paramiko_proxy:
        return str(paramiko_proxy).strip() or None
    words = shlex.split(" ".join(str(a) for a in (ssh_args or []) if a))
    command = jump = None
    index = 0
    while index < len(words):
        word = words[index]
        option = None
        if word == "-o" and index + 1 < len(words):
            option, index = words[index + 1], index + 1
        elif word.startswith("-o") and len(word) > 2:
            option = word[2:]
        elif word == "-J" and index + 1 < len(words):
            jump, index = words[index + 1], index + 1
        elif word.startswith("-J") and len(word) > 2:
            jump = word[2:]
        if option:
            key, _sep, value = option.partition("=") if "=" in option else option.partition(" ")
            if key.strip().lower() == "proxycommand" and value.strip().lower() != "none":
                command = value.strip()
            elif key.strip().lower() == "proxyjump" and value.strip().lower() != "none":
                jump = value.strip()
        index += 1
    if command:
        return command
    if jump:
        # ProxyJump [user@]host[:port][,next...]: the first hop carries the session (ssh -W), as OpenSSH does.
        first = jump.split(",")[0]
        target, port = first, None
        if first.rsplit(":", 1)[-1].isdigit() and not first.startswith("["):
            target, port = first.rsplit(":", 1)
        parts = ["ssh"] + (["-J", ",".join(jump.split(",")[1:])] if "," in jump else [])
        parts += (["-p", port] if port else []) + ["-W", "%h:%p", target]
        return " ".join(shlex.quote(p) if p not in ("%h:%p",) else p for p in parts)
    return None


def substitute(command, host, port, user=None):
    """``%h``, ``%p``, ``%r`` and ``%%`` of a ProxyCommand, as ssh_config(5) has them."""
    out, index = [], 0
    while index < len(command):
        char = command[index]
        if char == "%" and index + 1 < len(command):
            token = command[index + 1]
            out.append({"h": str(host), "p": str(port), "r": str(user or ""), "%": "%"}.get(token, "%" + token))
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)
