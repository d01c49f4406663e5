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
