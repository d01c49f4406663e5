# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The authorized_keys options of the validate role's MPI keys (module_utils/validate/ssh.py)."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import TrustError, key_options


def test_a_key_is_accepted_from_the_hosts_roce_addresses_only():
    got = key_options("node1", ["10.78.0.1", None, "10.78.1.1"], ["192.0.2.0/24"], command="/usr/bin/true")
    assert got["options"] == 'from="10.78.0.1,10.78.1.1,192.0.2.0/24",restrict,command="/usr/bin/true"'
    assert got["own"] == ["10.78.0.1", "10.78.1.1"]


def test_a_host_without_a_roce_address_is_refused_not_trusted_from_anywhere():
    """Hardening (issue 37, 13): the from= option disappeared when a host had no IPv4 address on an active RoCE port
    and the key was then accepted from anywhere."""
    with pytest.raises(TrustError) as refused:
        key_options("node2", [None, ""], [])
    assert "node2 has no IPv4 address on an active RoCE port" in str(refused.value)
    assert key_options("node2", [], ["10.0.0.5"])["options"] == 'from="10.0.0.5",restrict'


@pytest.mark.parametrize("addresses, extra, words", [
    (['10.78.0.1",restrict'], [], "is not an IP address"),
    (["not-an-ip"], [], "is not an IP address"),
    (["10.78.0.1"], ['10.0.0.1",command="x'], "is not an address or sshd pattern"),
])
def test_values_that_would_change_the_key_line_are_refused(addresses, extra, words):
    with pytest.raises(TrustError) as refused:
        key_options("node1", addresses, extra)
    assert words in str(refused.value)


def test_the_forced_command_is_quoted_and_one_line():
    assert key_options("h", ["10.0.0.1"], command='a "b" \\c')["options"].endswith('command="a \\"b\\" \\\\c"')
    with pytest.raises(TrustError):
        key_options("h", ["10.0.0.1"], command="a\nb")
