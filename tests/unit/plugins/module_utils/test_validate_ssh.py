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


def test_the_mpi_user_s_ssh_files_are_refused_for_links_and_a_home_not_its_own():
    from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import path_problems
    home = "/var/lib/roce-mpi"
    paths = [home, home + "/.ssh", home + "/.ssh/id_ed25519_roce_mpi", home + "/.ssh/id_ed25519_roce_mpi.pub",
             home + "/.ssh/authorized_keys", home + "/.ssh/known_hosts"]

    def stats(*found):
        return list(zip(paths, found))

    directory = {"exists": True, "isdir": True, "islnk": False, "uid": 998}
    absent = {}
    assert path_problems(stats(directory, dict(directory), absent, absent, absent, absent), home, "roce-mpi", "998") == []
    # Before the key was made: a .ssh not there yet is fine.
    assert path_problems(stats(directory, absent), home, "roce-mpi", 998) == []
    planted = stats(directory, dict(directory), absent, {"exists": True, "islnk": True, "isdir": False, "uid": 998})
    assert path_problems(planted, home, "roce-mpi", 998) == [home + "/.ssh/id_ed25519_roce_mpi.pub is a symbolic link"]
    linked_ssh = stats(directory, {"exists": True, "islnk": True, "isdir": False, "uid": 998})
    assert path_problems(linked_ssh, home, "roce-mpi", 998) == [
        home + "/.ssh is a symbolic link", home + "/.ssh is not a directory"]
    assert path_problems(stats(dict(directory, uid=0), dict(directory)), home, "roce-mpi", 998) == [
        home + " is not owned by roce-mpi"]
    assert path_problems(stats(absent, absent), home, "roce-mpi", 998) == [
        home + " is not a directory", home + " is not owned by roce-mpi"]


def test_authorized_keys_lines_are_read_as_sshd_reads_them():
    """Option strings with quoted blanks and escaped quotes (sshd(8) AUTHORIZED_KEYS FILE FORMAT's examples)."""
    from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import authorized_keys_text, split_key_line
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIGq4"
    assert split_key_line('command="dump /home",no-pty,no-port-forwarding ssh-ed25519 %s user@host' % blob) == (
        'command="dump /home",no-pty,no-port-forwarding', "ssh-ed25519", blob, "user@host")
    assert split_key_line('permitopen="192.0.2.1:80",command="echo \\"a b\\"" ssh-rsa %s' % blob) == (
        'permitopen="192.0.2.1:80",command="echo \\"a b\\""', "ssh-rsa", blob, "")
    assert split_key_line("# a comment") is None and split_key_line("") is None
    assert split_key_line("not a key line") is None
    # Lines this module cannot read are kept as they are; a second line of the same key goes.
    text = "garbage line\nssh-ed25519 %s a\nrestrict ssh-ed25519 %s b\n" % (blob, blob)
    assert authorized_keys_text(text, [("restrict", "ssh-ed25519 %s roce-fabric-mpi@n1" % blob)]) == (
        "garbage line\nrestrict ssh-ed25519 %s roce-fabric-mpi@n1\n" % blob)
    with pytest.raises(TrustError, match="not one OpenSSH public key line"):
        authorized_keys_text("", [("restrict", "ssh-ed25519 %s\nssh-ed25519 %s" % (blob, blob))])


def test_settings_that_would_break_authorized_keys_or_trust_root_are_named_before_anything_runs():
    from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import settings_problems
    # The role's defaults, and the sound variants.
    assert settings_problems(False, "roce-mpi") == []
    assert settings_problems(True, "roce-mpi", "", ["10.0.0.0/8", "!10.0.0.9", "mgmt-*.example"]) == []
    assert settings_problems("yes", "root", "/usr/bin/podman exec job") == []
    assert settings_problems(True, "root", "", [], True) == []
    # Taking the trust back as root needs no forced command.
    assert settings_problems("absent", "root") == []
    assert settings_problems("maybe", "roce-mpi") == ["validate_mpi_ssh must be true, false or absent, not 'maybe'"]
    assert settings_problems(True, "roce-mpi", "/bin/true\nssh-ed25519 AAAA") == [
        "validate_mpi_ssh_forced_command must be one line"]
    # A quote would end from="..." and add options of its own.
    problems = settings_problems(True, "roce-mpi", "", ['10.0.0.1",command="/bin/sh', "10.0.0.2"])
    assert problems == ["validate_mpi_ssh_from_extra takes addresses, host names or patterns (letters, digits and "
                        ". : * ? ! / - _ only), not '10.0.0.1\",command=\"/bin/sh'"]
    assert settings_problems(True, "roce-mpi", "", "10.0.0.1") == [
        "validate_mpi_ssh_from_extra must be a list of addresses or sshd patterns"]
    root = settings_problems("true", "root")
    assert len(root) == 1 and root[0].startswith("validate_mpi_ssh_user root gives every host's root an SSH key")
    assert len(settings_problems("sure", "root", "a\x7fb", ["a b"])) == 3
