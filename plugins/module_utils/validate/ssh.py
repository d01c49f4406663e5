# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MPI SSH trust of the validate role: the authorized_keys options of one host's MPI key.

PRIVATE to the roce.fabric collection: may change without notice.

A host's key is accepted only from that host's RoCE addresses (and the site's extra sources), ``restrict``ed, with
the forced command when one is set. A host without an IPv4 address on an active RoCE port gave an empty ``from=``
list, and the option was left out: the key was then accepted from anywhere. That is refused now.
"""

from __future__ import annotations

import ipaddress
import re

# sshd_config(5) PATTERNS: host names, addresses, CIDR, wildcards, negation.
PATTERN_RE = re.compile(r"^!?[A-Za-z0-9_.:*?/-]+$")


class TrustError(ValueError):
    """The key cannot be authorised safely; nothing is written."""


def key_options(host, addresses, extra=(), command=""):
    """``from="...",restrict[,command="..."]`` for the MPI key of ``host`` whose RoCE addresses (rdma_facts'
    ``ports[].ipv4``) are ``addresses``. Raises TrustError when an address is not an IP address, an extra source is
    not an sshd pattern, or nothing at all would restrict where the key is accepted from."""
    sources = []
    for value in addresses or []:
        if value in (None, ""):
            continue
        try:
            sources.append(str(ipaddress.ip_address(str(value).strip())))
        except ValueError:
            raise TrustError("%s: %r is not an IP address (rdma_facts ports[].ipv4); refusing to authorise its MPI key"
                             % (host, value))
    own = list(sources)
    for value in extra or []:
        text = str(value).strip()
        if not PATTERN_RE.match(text):
            raise TrustError("%s: validate_mpi_ssh_from_extra %r is not an address or sshd pattern" % (host, value))
        sources.append(text)
    if not sources:
        raise TrustError("%s has no IPv4 address on an active RoCE port, so its MPI key would be accepted from "
                         "anywhere: refusing. Give the port an address, or name where the launcher connects from "
                         "(validate_mpi_ssh_from_extra)" % host)
    unique = []
    for source in sources:
        if source not in unique:
            unique.append(source)
    options = ['from="%s"' % ",".join(unique), "restrict"]
    if command:
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in str(command)):
            raise TrustError("validate_mpi_ssh_forced_command must be one line")
        # Inside authorized_keys' double quotes a backslash and a quote are escaped with a backslash.
        options.append('command="%s"' % str(command).replace("\\", "\\\\").replace('"', '\\"'))
    return dict(options=",".join(options), own=own)


def path_problems(stats, home, user, uid):
    """Why the MPI user's SSH files cannot be used, read as root without following links (``stats``: ``(path, stat)``
    for the home, its .ssh and the files in it, as ansible.builtin.stat returns them with follow=false): a symbolic
    link among them (a link the user planted would turn a write as root into the user's), a home that is not a
    directory or not the user's own, a .ssh that is not a directory. Empty when they can be used."""
    problems = ["%s is a symbolic link" % path for path, stat in stats if (stat or {}).get("islnk")]
    home_stat = (stats[0][1] if stats else None) or {}
    if not home_stat.get("isdir", False):
        problems.append("%s is not a directory" % home)
    if home_stat.get("uid", -1) != int(uid):
        problems.append("%s is not owned by %s" % (home, user))
    ssh_stat = (stats[1][1] if len(stats) > 1 else None) or {}
    if not ssh_stat.get("isdir", True):
        problems.append("%s/.ssh is not a directory" % home)
    return problems
