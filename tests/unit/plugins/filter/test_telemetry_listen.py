# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the RDMA exporter listens (module_utils/telemetry/listen.py, the filter roce.fabric.exporter_listen_address).

SSH_CONNECTION is "client address, client port, server address, server port" (OpenSSH, ssh(1), ENVIRONMENT). The
values are those a lab VM's login shell prints behind QEMU's user network (``echo $SSH_CONNECTION``: the forward
arrives from 10.0.2.2 on the guest's 10.0.2.15), and the IPv6 and tunnel forms OpenSSH writes.
"""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.filter.telemetry import exporter_listen_address
from ansible_collections.roce.fabric.plugins.module_utils.telemetry.listen import ListenError, listen_address

LAB_VM = "10.0.2.2 45890 10.0.2.15 22"


def test_management_is_where_the_controller_reaches_the_host_even_without_a_default_route():
    got = listen_address("management", "node1", LAB_VM, "")
    assert got["address"] == "10.0.2.15" and "SSH connection" in got["source"]


def test_the_ssh_address_wins_over_the_default_route():
    assert listen_address("management", "gpu01", "192.0.2.10 50000 198.51.100.7 22", "203.0.113.5")["address"] == "198.51.100.7"


@pytest.mark.parametrize("connection", ["127.0.0.1 40000 127.0.0.1 22", "::1 40000 ::1 22", "", None, "garbage",
                                        "10.0.0.1 1 not-an-address 22"])
def test_a_loopback_or_missing_ssh_end_falls_back_to_the_default_route(connection):
    got = listen_address("management", "gpu01", connection, "203.0.113.5")
    assert got == {"address": "203.0.113.5", "source": "the address of the interface with the default route"}


def test_ipv6_and_ipv4_mapped_server_ends():
    assert listen_address("management", "h", "2001:db8::1 5000 2001:db8::2 22", None)["address"] == "2001:db8::2"
    assert listen_address("management", "h", "::ffff:192.0.2.1 5000 ::ffff:192.0.2.9 22", None)["address"] == "192.0.2.9"


def test_neither_is_refused_with_what_to_set():
    with pytest.raises(ListenError) as exc:
        listen_address("management", "node1", "127.0.0.1 40000 127.0.0.1 22", "")
    message = str(exc.value)
    assert message.startswith("node1 has no management address") and "rdma_exporter_listen_address" in message
    assert "nothing was installed" in message


@pytest.mark.parametrize("setting,address", [("192.0.2.9", "192.0.2.9"), ("2001:DB8:0:0::9", "2001:db8::9"),
                                             ("", ""), (None, "")])
def test_explicit_settings(setting, address):
    assert listen_address(setting, "h", LAB_VM, "203.0.113.5")["address"] == address


@pytest.mark.parametrize("setting", ["10.0.0.999", "10.0.0.1; touch /tmp/x", "fe80::1%eth0", "eth0", "manage"])
def test_bad_settings_are_refused(setting):
    with pytest.raises(ListenError, match="must be management, an IPv4 or IPv6 address or empty"):
        listen_address(setting, "h", LAB_VM, "203.0.113.5")


def test_the_filter_raises_ansible_s_error():
    assert exporter_listen_address("management", "node1", LAB_VM, "")["address"] == "10.0.2.15"
    with pytest.raises(AnsibleFilterError, match="no management address"):
        exporter_listen_address("management", "node1", "", "")
