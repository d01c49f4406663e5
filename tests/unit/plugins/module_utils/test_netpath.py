# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The path to the controller (module_utils/common/netpath.py): iproute2's JSON and getent as the lab machine printed
them (fixtures/fwimage/), SSH_CONNECTION found above ``become``, and where the path stays unknown."""

from __future__ import annotations

import ipaddress
import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.netpath import (
    NetPathError, address_interfaces, controller_path, parse_ssh_connection, resolved_addresses, route_device,
    session_ssh_connection)
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def expect(name):
    return dict(word.split("=", 1) for word in corpus.meta("fwimage", name)["expect"].split(" ") if "=" in word)


def addr(text):
    return ipaddress.ip_address(text)


@pytest.mark.parametrize("name", ["ip_route_get_via_gateway.txt", "ip_route_get_local.txt"])
def test_the_interface_of_a_route(name):
    assert route_device(corpus.read("fwimage", name)) == expect(name)["dev"]
    with pytest.raises(NetPathError):
        route_device("8.8.8.8 via 192.0.2.1 dev eth0")


def test_every_address_of_every_interface():
    found = address_interfaces(corpus.read("fwimage", "ip_address_show_netns_host.txt"))
    for address, ifname in expect("ip_address_show_netns_host.txt").items():
        assert found[addr(address)] == ifname
    with pytest.raises(NetPathError):
        address_interfaces("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536")


@pytest.mark.parametrize("name", ["getent_ahosts_localhost.txt", "getent_ahosts_address.txt"])
def test_the_addresses_a_name_resolves_to(name):
    assert [str(a) for a in resolved_addresses(corpus.read("fwimage", name))] == expect(name)["addresses"].split(",")


def test_an_ssh_connection_value():
    # ssh(1): "client address, client port, server address, server port".
    assert parse_ssh_connection("192.0.2.10 50022 10.77.0.11 22") == dict(client=addr("192.0.2.10"), server=addr("10.77.0.11"))
    assert parse_ssh_connection("::ffff:192.0.2.10 50022 fe80::1%eth0 22")["client"] == addr("192.0.2.10")
    for bad in (None, "", "192.0.2.10 50022 10.77.0.11", "host 1 other 2", "192.0.2.10 x 10.77.0.11 22"):
        assert parse_ssh_connection(bad) is None


def fake_proc(root, chain):
    """A /proc of the processes ``chain`` ([(pid, ppid, environ)], the module first): stat and environ files as the
    kernel lays them out (proc(5): ``pid (comm) state ppid ...``; environ NUL-separated)."""
    for pid, ppid, environ in chain:
        folder = os.path.join(root, str(pid))
        os.makedirs(folder)
        with open(os.path.join(folder, "stat"), "w") as handle:
            handle.write("%d (python3 (x)) S %d %d %d 0 -1\n" % (pid, ppid, pid, pid))
        with open(os.path.join(folder, "environ"), "wb") as handle:
            handle.write(b"".join(("%s=%s" % item).encode() + b"\0" for item in sorted(environ.items())))
    return root


def test_the_live_reset_guard_under_become_finds_the_session_above_sudo(tmp_path):
    """sudo's env_reset leaves the module without SSH_CONNECTION; the login shell above sudo still has it in its
    environment at exec, which root reads in /proc (the module, sudo's shell, sudo, the login shell, sshd)."""
    session = "192.0.2.10 50022 10.77.0.11 22"
    root = fake_proc(str(tmp_path), [
        (4200, 4199, {"PATH": "/usr/bin", "SUDO_USER": "ubuntu"}),
        (4199, 4198, {"PATH": "/usr/bin", "SUDO_USER": "ubuntu"}),
        (4198, 4197, {"SSH_CONNECTION": session, "USER": "ubuntu"}),  # sudo: the environment it was started with
        (4197, 4100, {"SSH_CONNECTION": session, "USER": "ubuntu"}),
        (4100, 1, {}),
    ])
    value, source = session_ssh_connection(environ={"PATH": "/usr/bin"}, pid=4200, proc_root=root)
    assert value == session and source == "the login session's environment (process 4198)"
    # Its own environment first, where it has one (no become).
    assert session_ssh_connection(environ={"SSH_CONNECTION": session}, pid=4200, proc_root=root) == (
        session, "the module's environment")
    # No session anywhere above (a local connection, a cron job): unknown, never a guess.
    none = fake_proc(str(tmp_path / "none"), [(10, 9, {}), (9, 1, {})])
    assert session_ssh_connection(environ={}, pid=10, proc_root=none) == (None, None)


ADDRESSES = {addr("10.77.0.11"): "eth0", addr("127.0.0.1"): "lo", addr("10.78.0.1"): "ens1f0np0"}


def test_the_controller_s_interfaces_come_from_the_session_and_the_inventory_address():
    ssh = parse_ssh_connection("192.0.2.10 50022 10.78.0.1 22")
    path = controller_path(ssh, "the module's environment", "eth0", ADDRESSES, [addr("10.77.0.11")])
    assert path["unknown"] is None
    assert [name for name, _why in path["interfaces"]] == ["eth0", "ens1f0np0"]
    assert path["interfaces"][0][1] == "the route to the controller's address 192.0.2.10 (SSH_CONNECTION, the module's environment)"
    assert path["interfaces"][1][1] == "it holds 10.78.0.1, where the controller's SSH session arrives"
    # Without a session, the inventory's address alone.
    alone = controller_path(None, None, None, ADDRESSES, [addr("10.78.0.1")])
    assert alone["interfaces"] == [("ens1f0np0", "it holds 10.78.0.1, the inventory's address of the host")]


@pytest.mark.parametrize("ssh, route, host, words", [
    (None, None, [], "no SSH_CONNECTION in the module's environment or its login session's; no inventory address"),
    (None, None, [addr("127.0.0.1")], "the inventory's address of the host is a loopback address"),
    (None, None, [addr("198.51.100.7")], "the inventory's address of the host (198.51.100.7) is none of its own"),
    (parse_ssh_connection("127.0.0.1 50022 127.0.0.1 22"), "lo", [],
     "the SSH session comes from 127.0.0.1 (a loopback address: a tunnel or port forward)"),
    (parse_ssh_connection("192.0.2.10 50022 198.51.100.7 22"), None, [],
     "no route to the controller's address 192.0.2.10 could be read"),
])
def test_no_path_to_the_controller_is_unknown_never_none_found(ssh, route, host, words):
    path = controller_path(ssh, "the module's environment", route, ADDRESSES, host)
    assert path["interfaces"] == [] and words in path["unknown"], path
