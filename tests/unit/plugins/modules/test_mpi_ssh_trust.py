# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.mpi_ssh_trust through main(), as the user the tests run as, with the real ssh-keygen: the key made
once (and again when cut short), the trust written once with its options and pins, other lines kept, removal,
check mode, and refusals (links, another user, bad input) that change nothing."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess

import pytest

from ansible_collections.roce.fabric.plugins.modules import mpi_ssh_trust
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
ME = pwd.getpwuid(os.geteuid()).pw_name


def keypair(tmp_path, name, comment):
    """A real ed25519 key line, as ssh-keygen writes it."""
    path = tmp_path / ("keys-" + name)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return (tmp_path / ("keys-" + name + ".pub")).read_text().strip()


def args(where, **more):
    base = dict(user=ME, home=str(where), comment="roce-fabric-mpi@node1", host_key_file=str(where.parent / "hostkey.pub"))
    base.update(more)
    return base


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "hostkey.pub").write_text(keypair(tmp_path, "host", "root@node1") + "\n")
    return home


def snapshot(home):
    out = {}
    for root, _dirs, files in os.walk(str(home)):
        for name in files:
            path = os.path.join(root, name)
            with open(path) as handle:
                out[path] = handle.read()
    return out


def test_the_key_is_made_once_and_again_when_cut_short(home):
    checked = run_module(mpi_ssh_trust.main, args(home, state="key"), check_mode=True)
    assert checked["changed"] is True and "public_key" not in checked and not (home / ".ssh").exists(), checked
    made = run_module(mpi_ssh_trust.main, args(home, state="key"))
    key = home / ".ssh" / "id_ed25519_roce_mpi"
    assert made["changed"] is True and made["public_key"].startswith("ssh-ed25519 ") and made["public_key"].endswith(" roce-fabric-mpi@node1")
    assert made["host_key"].endswith(" root@node1") and oct((home / ".ssh").stat().st_mode & 0o777) == "0o700"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    again = run_module(mpi_ssh_trust.main, args(home, state="key"))
    assert again["changed"] is False and again["commands"] == [] and again["public_key"] == made["public_key"]
    key.write_text("")  # a crash left it empty
    remade = run_module(mpi_ssh_trust.main, args(home, state="key"))
    assert remade["changed"] is True and remade["public_key"] != made["public_key"], remade
    assert remade["commands"][0].startswith("rm -f ")


def test_trust_is_written_once_with_options_and_pins_and_other_lines_kept(home, tmp_path):
    peer = keypair(tmp_path, "node2", "roce-fabric-mpi@node2")
    host2 = keypair(tmp_path, "host2", "root@node2")
    (home / ".ssh").mkdir(mode=0o700)
    mine = keypair(tmp_path, "admin", "admin@laptop")
    (home / ".ssh" / "authorized_keys").write_text("# site keys\n" + mine + "\n")
    (home / ".ssh" / "known_hosts").write_text("node2 " + keypair(tmp_path, "old", "x").rsplit(" ", 1)[0] + "\nother ssh-ed25519 AAAA\n")
    peers = [dict(name="node2", addresses=["10.78.0.2"], public_key=peer, host_key=host2,
                  key_options='from="10.78.0.2",restrict')]
    checked = run_module(mpi_ssh_trust.main, args(home, peers=peers), check_mode=True, diff=True)
    before = snapshot(home)
    assert checked["changed"] is True and len(checked["diff"]) == 2, checked
    written = run_module(mpi_ssh_trust.main, args(home, peers=peers))
    assert written["changed"] is True and snapshot(home) != before
    authorized = (home / ".ssh" / "authorized_keys").read_text().splitlines()
    assert authorized == ["# site keys", mine, 'from="10.78.0.2",restrict ' + peer]
    known = (home / ".ssh" / "known_hosts").read_text().splitlines()
    # The old pin of node2 replaced, another host's line kept.
    assert known == ["other ssh-ed25519 AAAA", "node2,10.78.0.2 " + host2.rsplit(" ", 1)[0]]
    assert oct((home / ".ssh" / "authorized_keys").stat().st_mode & 0o777) == "0o600"
    again = run_module(mpi_ssh_trust.main, args(home, peers=peers))
    assert again["changed"] is False and again["commands"] == [], again
    # New options for the same key: its line changes in place.
    peers[0]["key_options"] = 'from="10.78.0.2",restrict,command="/usr/bin/true"'
    assert run_module(mpi_ssh_trust.main, args(home, peers=peers))["changed"] is True
    assert (home / ".ssh" / "authorized_keys").read_text().splitlines()[2] == peers[0]["key_options"] + " " + peer


def test_absent_removes_the_role_s_keys_and_pins_hashed_ones_too(home, tmp_path):
    run_module(mpi_ssh_trust.main, args(home, state="key"))
    peer = keypair(tmp_path, "node2", "roce-fabric-mpi@node2")
    gone = keypair(tmp_path, "node9", "roce-fabric-mpi@node9")  # a host no longer in the play
    mine = keypair(tmp_path, "admin", "admin@laptop")
    host2 = keypair(tmp_path, "host2", "root@node2")
    ssh = home / ".ssh"
    (ssh / "authorized_keys").write_text("\n".join([mine, 'from="10.78.0.2",restrict ' + peer, 'restrict ' + gone]) + "\n")
    known = ssh / "known_hosts"
    known.write_text("10.78.0.2 " + host2 + "\nkeep " + host2 + "\n")
    subprocess.run(["ssh-keygen", "-H", "-f", str(known)], check=True, capture_output=True)  # hashed, as HashKnownHosts
    peers = [dict(name="node2", addresses=["10.78.0.2"])]
    checked = run_module(mpi_ssh_trust.main, args(home, state="absent", peers=peers), check_mode=True)
    assert checked["changed"] is True and (ssh / "id_ed25519_roce_mpi").exists()
    removed = run_module(mpi_ssh_trust.main, args(home, state="absent", peers=peers))
    assert removed["changed"] is True, removed
    assert (ssh / "authorized_keys").read_text().splitlines() == [mine]
    lines = known.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("|1|"), lines  # the hashed "keep" line stays
    assert not (ssh / "id_ed25519_roce_mpi").exists() and not (ssh / "id_ed25519_roce_mpi.pub").exists()
    assert run_module(mpi_ssh_trust.main, args(home, state="absent", peers=peers))["changed"] is False


def test_links_another_user_and_bad_input_are_refused_and_nothing_changes(home, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep")
    (home / ".ssh").symlink_to(victim)
    before = snapshot(tmp_path)
    result = run_module(mpi_ssh_trust.main, args(home, state="key"))
    assert result["failed"] and "is a symbolic link" in result["msg"] and "nothing was changed" in result["msg"], result
    (home / ".ssh").unlink()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "authorized_keys").symlink_to(victim / "keep")
    peer = keypair(tmp_path, "node2", "roce-fabric-mpi@node2")
    good = dict(name="node2", addresses=["10.78.0.2"], public_key=peer, key_options="restrict")
    result = run_module(mpi_ssh_trust.main, args(home, peers=[good]))
    assert result["failed"] and "authorized_keys is a symbolic link" in result["msg"], result
    (home / ".ssh" / "authorized_keys").unlink()
    before = snapshot(tmp_path)
    for bad, words in ((dict(user="nobody" if ME != "nobody" else "root"), "would be made as %s" % ME),
                       (dict(peers=[dict(good, key_options="")]), "key_options must be one line, not empty"),
                       (dict(peers=[dict(good, key_options='restrict\nssh-ed25519 AAAA')]), "key_options must be one line"),
                       (dict(peers=[dict(good, public_key=peer + "\n" + peer)]), "is not one OpenSSH public key line"),
                       (dict(peers=[dict(good, name="node2;reboot")]), "is not a host name or address"),
                       (dict(comment="someone@else"), "comment must start with roce-fabric-mpi@"),
                       (dict(key_name="../id"), "key_name must be a file name"),
                       (dict(home="relative/home"), "home must be an absolute path")):
        result = run_module(mpi_ssh_trust.main, args(home, **bad))
        assert result["failed"] and words in result["msg"] and "nothing was changed" in result["msg"], (bad, result)
        assert snapshot(tmp_path) == before and (victim / "keep").read_text() == "keep"
