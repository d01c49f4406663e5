# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the RDMA exporter listens: one judgement, pure (the rdma_exporter role passes the host's facts in).

PRIVATE to the roce.fabric collection: may change without notice.

The exporter has no authentication, so by default (``management``) it listens on one address of the network the
host is managed over, never on every address (the RoCE networks too). That address is, in this order:

1. the server end of the controller's own SSH connection (``SSH_CONNECTION``, four fields: client address, client
   port, server address, server port; OpenSSH's ssh(1)): the address the controller reached the host on, which is
   the management network by definition, unless it is a loopback address (a tunnel or a port forward ends there:
   nothing outside the host could scrape it);
2. the address of the interface with the host's default route (a connection without SSH, such as ``local``);

and a host with neither is refused with a message that says what to set.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.roce.fabric.plugins.module_utils.common.netpath import parse_ssh_connection


class ListenError(ValueError):
    """A listen setting that cannot be used; the message says what to set."""


def _address(text):
    try:
        return ipaddress.ip_address((text or "").strip().split("%", 1)[0])
    except ValueError:
        return None


def ssh_server_address(ssh_connection):
    """The server address of an SSH_CONNECTION value, or None (absent, malformed, or loopback)."""
    parsed = parse_ssh_connection(ssh_connection)
    if parsed is None or parsed["server"].is_loopback or parsed["server"].is_unspecified:
        return None
    return parsed["server"]


def listen_address(setting, host="", ssh_connection=None, default_address=None):
    """{"address": text ('' for every address), "source": why} for the rdma_exporter_listen_address ``setting``.

    ``setting``: ``management``, an IPv4 or IPv6 address, or '' (every address). ``ssh_connection``: the host's
    SSH_CONNECTION as its login shell sees it; ``default_address``: the IPv4 address of its default route's
    interface (Ansible's ``default_ipv4.address``), either may be None.
    """
    setting = "" if setting is None else str(setting).strip()
    if setting == "":
        return {"address": "", "source": "every address (rdma_exporter_listen_address is empty)"}
    if setting != "management":
        address = _address(setting)
        if address is None or setting != setting.split("%", 1)[0]:
            raise ListenError("rdma_exporter_listen_address must be management, an IPv4 or IPv6 address or empty, not %r; "
                              "nothing was installed" % setting)
        return {"address": str(address), "source": "rdma_exporter_listen_address"}
    server = ssh_server_address(ssh_connection)
    if server is not None:
        return {"address": str(server), "source": "the address the controller's SSH connection reached %s on" % (host or "the host")}
    default = _address(default_address) if default_address else None
    if default is not None and not default.is_loopback and not default.is_unspecified:
        return {"address": str(default), "source": "the address of the interface with the default route"}
    raise ListenError(
        "%s has no management address for the exporter to listen on: the controller does not reach it over SSH on a "
        "non-loopback address and it has no default route; set rdma_exporter_listen_address to one of its addresses "
        "(or \"\" for every address, the RoCE networks too); nothing was installed" % (host or "the host"))
