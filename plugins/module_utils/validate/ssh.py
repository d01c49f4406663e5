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

import base64
import hashlib
import hmac
import ipaddress
import re

# sshd_config(5) PATTERNS: host names, addresses, CIDR, wildcards, negation.
PATTERN_RE = re.compile(r"^!?[A-Za-z0-9_.:*?/-]+$")


class TrustError(ValueError):
    """The key cannot be authorised safely; nothing is written."""


MPI_SSH_VALUES = ("true", "false", "yes", "no", "absent")


def settings_problems(mpi_ssh, user, command="", extra=(), allow_root=False):
    """What in the role's MPI SSH settings would break authorized_keys or trust root too far, checked before anything
    runs: ``validate_mpi_ssh`` true, false or absent; a one-line forced command; extra sources as sshd patterns; and,
    when the trust is set up, root's key (trusted by every host's root) only with a forced command or
    ``validate_mpi_ssh_allow_root``. Returns the messages (none: the settings are sound)."""
    problems = []
    wanted = str(mpi_ssh).strip().lower()
    if wanted not in MPI_SSH_VALUES:
        problems.append("validate_mpi_ssh must be true, false or absent, not %r" % (mpi_ssh,))
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in str(command or "")):
        problems.append("validate_mpi_ssh_forced_command must be one line")
    if not isinstance(extra, (list, tuple)):
        problems.append("validate_mpi_ssh_from_extra must be a list of addresses or sshd patterns")
    else:
        bad = [str(value) for value in extra if not PATTERN_RE.match(str(value).strip())]
        if bad:
            problems.append("validate_mpi_ssh_from_extra takes addresses, host names or patterns (letters, digits and "
                            ". : * ? ! / - _ only), not %s" % ", ".join(repr(value) for value in bad))
    if wanted in ("true", "yes") and str(user) == "root" and not command and not allow_root:
        problems.append("validate_mpi_ssh_user root gives every host's root an SSH key every other host's root accepts, "
                        "with no forced command: use the dedicated account (the default, roce-mpi), or set "
                        "validate_mpi_ssh_forced_command (the job container's exec), or validate_mpi_ssh_allow_root=true "
                        "to accept it knowingly")
    return problems


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


# --- the MPI user's SSH files (roce.fabric.mpi_ssh_trust) -----------------------------------------------------------

# The comment every MPI key the role makes carries (roce-fabric-mpi@<inventory name>): removal finds the role's keys
# by it, also those of hosts no longer in the play.
KEY_MARK = "roce-fabric-mpi@"
# Key types of sshd(8) AUTHORIZED_KEYS FILE FORMAT, and their certificates.
KEY_TYPE_RE = re.compile(r"^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)"
                         r"@openssh\.com)(-cert-v01@openssh\.com)?$")
BLOB_RE = re.compile(r"^[A-Za-z0-9+/]+={0,3}$")


def split_key_line(line):
    """``(options, type, blob, comment)`` of one authorized_keys line, None for a blank line, a comment or a line
    that is not a key. Options end at the first blank outside double quotes (a quote inside is escaped with a
    backslash), as sshd reads them."""
    text = (line or "").strip()
    if not text or text.startswith("#"):
        return None
    options = ""
    if not KEY_TYPE_RE.match(text.split(None, 1)[0]):
        i, quoted = 0, False
        while i < len(text):
            char = text[i]
            if char == "\\" and quoted:
                i += 2
                continue
            if char == '"':
                quoted = not quoted
            elif char in " \t" and not quoted:
                break
            i += 1
        options, text = text[:i], text[i:].strip()
    parts = text.split(None, 2)
    if len(parts) < 2 or not KEY_TYPE_RE.match(parts[0]) or not BLOB_RE.match(parts[1]):
        return None
    return options, parts[0], parts[1], parts[2].strip() if len(parts) > 2 else ""


def public_key(text, what="public key"):
    """``(type, blob, comment)`` of an OpenSSH public key line; TrustError when it is not one."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    parsed = split_key_line(lines[0]) if len(lines) == 1 else None
    if parsed is None or parsed[0]:
        raise TrustError("%s is not one OpenSSH public key line: %r" % (what, (text or "")[:120]))
    return parsed[1:]


def authorized_keys_text(current, wanted=(), remove_marked=False):
    """The authorized_keys text with every key of ``wanted`` (``(options, key line)``) on a line of its own, with
    exactly those options, where it was or else at the end; every other line of the file kept as it is, but for a
    second line of the same key. ``remove_marked``: the lines of keys whose comment starts with KEY_MARK go."""
    want = []
    for options, key in wanted:
        kind, blob, comment = public_key(key)
        want.append((blob, ("%s %s %s %s" % (options, kind, blob, comment)).strip()))
    by_blob = dict(want)
    placed, out = set(), []
    for line in (current or "").splitlines():
        parsed = split_key_line(line)
        if parsed is None:
            out.append(line)
            continue
        blob = parsed[2]
        if blob in by_blob:
            if blob not in placed:
                out.append(by_blob[blob])
                placed.add(blob)
            continue
        if remove_marked and parsed[3].startswith(KEY_MARK):
            continue
        out.append(line)
    out.extend(line for blob, line in want if blob not in placed)
    return "\n".join(out) + "\n" if out else ""


def _host_matches(field, names):
    """Whether one host entry of a known_hosts line (plain, or hashed ``|1|salt|hash``) is one of ``names``."""
    if field.startswith("|1|"):
        parts = field.split("|")
        if len(parts) != 4:
            return False
        try:
            salt = base64.b64decode(parts[2])
            digest = base64.b64decode(parts[3])
        except (ValueError, TypeError):
            return False
        return any(hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest) for name in names)
    return field in names


def known_hosts_text(current, pins=(), forget=()):
    """The known_hosts text with one line ``<names> <type> <blob>`` per pin (``(names, host key line)``) and no other
    line for any of those names or of ``forget`` (plain or hashed: ssh-keygen -R removes the same); a pin already
    there stays where it is. @cert-authority and @revoked lines, and lines of other hosts, are kept."""
    want = []
    for names, key in pins:
        kind, blob, _comment = public_key(key, "the host key of %s" % names[0])
        want.append((list(names), "%s %s %s" % (",".join(names), kind, blob)))
    managed = set(forget)
    for names, _line in want:
        managed.update(names)
    placed, out = set(), []
    for line in (current or "").splitlines():
        fields = line.split()
        if not fields or fields[0].startswith(("#", "@")):
            out.append(line)
            continue
        hosts = fields[0].split(",")
        if not any(_host_matches(host, managed) for host in hosts):
            out.append(line)
            continue
        for index, (names, pin) in enumerate(want):
            if line.strip() == pin and index not in placed:
                out.append(pin)
                placed.add(index)
                break
    out.extend(pin for index, (names, pin) in enumerate(want) if index not in placed)
    return "\n".join(out) + "\n" if out else ""


def trust_peers(hosts, keys, facts, extra=(), command="", keyed=True):
    """The peers of roce.fabric.mpi_ssh_trust: for each host of ``hosts`` with a key in ``keys`` (``{host:
    {public_key, host_key}}``, its state=key result), its name, RoCE addresses (``facts``: ``{host: rdma_facts}``),
    keys and authorized_keys options. ``keyed`` false: every host, names and addresses only (removal). Every host
    that cannot be trusted safely is named in one TrustError."""
    peers, errors = [], []
    for host in hosts or []:
        addresses = []
        for port in (facts.get(host) or {}).get("ports") or []:
            if port.get("ipv4") and port["ipv4"] not in addresses:
                addresses.append(port["ipv4"])
        if not keyed:
            peers.append(dict(name=host, addresses=addresses))
            continue
        key = keys.get(host) or {}
        if not key.get("public_key"):
            continue
        try:
            options = key_options(host, addresses, extra or [], command or "")["options"]
        except TrustError as exc:
            errors.append(str(exc))
            continue
        peers.append(dict(name=host, addresses=addresses, public_key=key["public_key"], host_key=key.get("host_key"),
                          key_options=options))
    if errors:
        raise TrustError("; ".join(errors) + "; no authorized_keys file was changed")
    return peers
