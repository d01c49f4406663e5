#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mpi_ssh_trust
short_description: The SSH key, authorized_keys and known_hosts of the account MPI launchers use between hosts
version_added: 1.0.0
description:
  - Run as the account itself (become it). Its own files are then made by it, so a symbolic link it planted in its
    home leads only where it could go anyway; the module refuses to run as anyone else.
  - O(state=key) makes the account's MPI key (ed25519, no passphrase) when it is missing, or when the file left is
    not a key (a crash cut it short), and returns the public key and the host's ed25519 host key.
  - O(state=trusted) puts each key of O(peers) in C(~/.ssh/authorized_keys) with its options (the role's are
    C(from="<its RoCE addresses>",restrict), and a forced command when set) and pins each peer's host key in
    C(~/.ssh/known_hosts) under its name and addresses. Host-key checking stays on. Other lines are kept.
  - O(state=absent) removes every key line whose comment starts with C(roce-fabric-mpi@) (every MPI key the role
    made, also those of hosts no longer in the play), the known_hosts lines of the peers' names and addresses (plain
    or hashed) and the MPI key files.
  - The home, C(~/.ssh) and the files are read without following links; a link among them, a home that is not a
    directory of the account's own, or a C(~/.ssh) that is not a directory is refused and nothing is changed.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs on the host whose account it sets up, as that account.
    support: full
    platforms: posix
options:
  user:
    description: The account; the task must run as it (C(become_user)).
    type: str
    required: true
  home:
    description: The account's home directory (absolute). It must exist and belong to the account.
    type: path
    required: true
  state:
    description: V(key), V(trusted) or V(absent), see the description.
    type: str
    choices: [key, trusted, absent]
    default: trusted
  comment:
    description:
      - Comment of a new key. It must start with C(roce-fabric-mpi@), which O(state=absent) finds the keys by.
      - Default C(roce-fabric-mpi@) and the host's short name.
    type: str
  key_name:
    description: File name of the key in C(~/.ssh) (the public key has C(.pub) added).
    type: str
    default: id_ed25519_roce_mpi
  host_key_file:
    description: The host's public host key that O(state=key) returns.
    type: path
    default: /etc/ssh/ssh_host_ed25519_key.pub
  peers:
    description:
      - The hosts to trust (O(state=trusted)) or forget (O(state=absent)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The host's name (its inventory name), under which its host key is pinned.
        type: str
        required: true
      addresses:
        description: Its addresses (IPv4 of its RoCE ports), under which its host key is pinned too.
        type: list
        elements: str
        default: []
      public_key:
        description: Its MPI public key (one OpenSSH line). Needed for O(state=trusted).
        type: str
      key_options:
        description:
          - The authorized_keys options of its key. Needed for O(state=trusted); an empty value is refused (a key
            accepted from anywhere without restriction).
        type: str
      host_key:
        description: Its host key (one OpenSSH public key line); without it, no pin is written for it.
        type: str
notes:
  - In check mode nothing is written; a key that does not exist yet is reported as to be made and RV(public_key) is
    not returned.
  - The C(roce.fabric.validate) role sets up and removes its MPI SSH trust with this module (C(validate_mpi_ssh)).
seealso:
  - name: sshd(8) AUTHORIZED_KEYS FILE FORMAT and SSH_KNOWN_HOSTS FILE FORMAT
    description: The line formats this module reads and writes.
    link: https://man.openbsd.org/sshd.8#AUTHORIZED_KEYS_FILE_FORMAT
"""

EXAMPLES = r"""
- name: The MPI key, made by the account itself
  roce.fabric.mpi_ssh_trust:
    user: roce-mpi
    home: /home/roce-mpi
    state: key
    comment: "roce-fabric-mpi@{{ inventory_hostname }}"
  become: true
  become_user: roce-mpi
  register: mpi_key

- name: Trust one peer from its RoCE address only
  roce.fabric.mpi_ssh_trust:
    user: roce-mpi
    home: /home/roce-mpi
    peers:
      - name: gpu2
        addresses: [192.168.100.12]
        public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEl6eUe2GwRcE4NnqJ0F5s3ZpSbn1lhyd7N2VPLcLWZj roce-fabric-mpi@gpu2
        key_options: from="192.168.100.12",restrict
        host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3aNvvJr5X2N3Y4c2b0f0gtXw6m2aTrR7Vx1bS2T8U
  become: true
  become_user: roce-mpi
"""

RETURN = r"""
public_key:
  description: The account's MPI public key (O(state=key)); absent in check mode while the key does not exist.
  returned: state is key and the key exists
  type: str
  sample: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEl6eUe2GwRcE4NnqJ0F5s3ZpSbn1lhyd7N2VPLcLWZj roce-fabric-mpi@gpu1
host_key:
  description: The host's public host key (O(host_key_file)), null when it cannot be read.
  returned: state is key
  type: str
  sample: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq3aNvvJr5X2N3Y4c2b0f0gtXw6m2aTrR7Vx1bS2T8U root@gpu1
commands:
  description: What was done (or, in check mode, what a real run does).
  returned: always
  type: list
  elements: str
  sample: ["ssh-keygen -t ed25519 -f /home/roce-mpi/.ssh/id_ed25519_roce_mpi", "write /home/roce-mpi/.ssh/authorized_keys"]
"""

import os
import re
import socket
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.files import write_atomic
from ansible_collections.roce.fabric.plugins.module_utils.common.private import current_user
from ansible_collections.roce.fabric.plugins.module_utils.common.run import LOCALE_ENV, ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.validate.ssh import (
    KEY_MARK, TrustError, authorized_keys_text, known_hosts_text, path_problems, public_key)

NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]*[$]?$")


def _lstat(path):
    """ansible.builtin.stat's keys (follow=false) of what is at ``path``, {} when nothing is."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {}
    return dict(exists=True, islnk=stat.S_ISLNK(info.st_mode), isdir=stat.S_ISDIR(info.st_mode), uid=info.st_uid)


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def check_input(params):
    """Every refusal before anything is read or written."""
    if not USER_RE.match(params["user"] or "") or len(params["user"]) > 32:
        return "user %r is not a user name" % params["user"]
    if not os.path.isabs(params["home"] or "") or any(part in (".", "..") for part in params["home"].split("/")):
        return "home must be an absolute path without . or .. parts (got %r)" % params["home"]
    if not NAME_RE.match(params["key_name"] or ""):
        return "key_name must be a file name of letters, digits and _ . - (got %r)" % params["key_name"]
    comment = params["comment"]
    if comment is not None and (not comment.startswith(KEY_MARK) or not re.match(r"^[\x21-\x7e]+$", comment)):
        return "comment must start with %s and hold no blank or control character (got %r)" % (KEY_MARK, comment)
    for peer in params["peers"]:
        for name in [peer["name"]] + list(peer["addresses"]):
            if not re.match(r"^[A-Za-z0-9_.:-]+$", name or ""):
                return "peer %r: %r is not a host name or address" % (peer["name"], name)
        if params["state"] == "trusted":
            if not peer.get("key_options") or any(ord(ch) < 32 for ch in peer["key_options"]):
                return ("peer %s: key_options must be one line, not empty (a key accepted from anywhere, unrestricted, "
                        "is refused)" % peer["name"])
            try:
                public_key(peer.get("public_key"), "the MPI key of %s" % peer["name"])
                if peer.get("host_key"):
                    public_key(peer["host_key"], "the host key of %s" % peer["name"])
            except TrustError as exc:
                return str(exc)
    return None


def ensure_key(run, module, ssh_dir, key):
    """The MPI key, made when missing or broken; its public key line, None in check mode while there is none."""
    params = module.params
    if os.path.exists(key):
        rc, out, _err = module.run_command(["ssh-keygen", "-y", "-f", key], environ_update=LOCALE_ENV)
        if rc == 0 and os.path.exists(key + ".pub"):
            return _read(key + ".pub").strip()
        # Left empty or cut short by a crash (or its .pub lost): made again.
        run.mutate("rm -f %s %s.pub" % (key, key), lambda: [os.unlink(p) for p in (key, key + ".pub") if os.path.lexists(p)])
    comment = params["comment"] or KEY_MARK + socket.gethostname().split(".")[0]
    argv = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", key]

    def make():
        if os.path.lexists(key + ".pub"):
            os.unlink(key + ".pub")
        module.run_command(argv, environ_update=LOCALE_ENV, check_rc=True)

    run.mutate("ssh-keygen -t ed25519 -C %s -f %s" % (comment, key), make)
    if run.check_mode:
        return None
    return _read(key + ".pub").strip()


def body(run, module):
    params = module.params
    home = params["home"].rstrip("/") or "/"
    ssh_dir = os.path.join(home, ".ssh")
    key = os.path.join(ssh_dir, params["key_name"])
    authorized, known = os.path.join(ssh_dir, "authorized_keys"), os.path.join(ssh_dir, "known_hosts")
    me = current_user()
    if me != params["user"]:
        run.fail("The MPI user's files would be made as %s, not %s (check the become settings); nothing was changed"
                 % (me, params["user"]))
    paths = [home, ssh_dir, key, key + ".pub", authorized, known]
    problems = path_problems([(path, _lstat(path)) for path in paths], home, params["user"], os.geteuid())
    if problems:
        run.fail("The MPI user's SSH files are refused: %s; nothing was changed" % "; ".join(problems))

    if params["state"] != "absent" and not os.path.isdir(ssh_dir):
        run.mutate("mkdir -m 0700 %s" % ssh_dir, lambda: os.mkdir(ssh_dir, 0o700))
    elif os.path.isdir(ssh_dir) and stat.S_IMODE(os.lstat(ssh_dir).st_mode) & 0o077 and params["state"] != "absent":
        run.mutate("chmod 0700 %s" % ssh_dir, lambda: os.chmod(ssh_dir, 0o700))

    if params["state"] == "key":
        pub = ensure_key(run, module, ssh_dir, key)
        if pub is not None:
            run.update(public_key=pub)
        host_key = _read(params["host_key_file"]).strip() if os.access(params["host_key_file"], os.R_OK) else ""
        run.update(host_key=host_key or None)
        return

    peers = params["peers"]
    trusted = params["state"] == "trusted"
    before = _read(authorized)
    after = authorized_keys_text(before, [(p["key_options"], p["public_key"]) for p in peers] if trusted else [],
                                 remove_marked=not trusted)
    if after != before and (trusted or before):
        run.text_diff(authorized, before, after)
        run.mutate("write %s" % authorized, lambda: write_atomic(authorized, after, 0o600))
    pins = [([p["name"]] + [a for a in p["addresses"] if a != p["name"]], p["host_key"])
            for p in peers if trusted and p.get("host_key")]
    forget = [] if trusted else [name for p in peers for name in [p["name"]] + list(p["addresses"])]
    before = _read(known)
    after = known_hosts_text(before, pins, forget)
    if after != before and (trusted or before):
        run.text_diff(known, before, after)
        mode = stat.S_IMODE(os.lstat(known).st_mode) if before else 0o644
        run.mutate("write %s" % known, lambda: write_atomic(known, after, mode))
    if not trusted:
        for path in (key, key + ".pub"):
            if os.path.lexists(path):
                run.mutate("rm %s" % path, lambda path=path: os.unlink(path))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            user=dict(type="str", required=True),
            home=dict(type="path", required=True),
            state=dict(type="str", default="trusted", choices=["key", "trusted", "absent"]),
            comment=dict(type="str"),
            key_name=dict(type="str", default="id_ed25519_roce_mpi"),
            host_key_file=dict(type="path", default="/etc/ssh/ssh_host_ed25519_key.pub"),
            peers=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                addresses=dict(type="list", elements="str", default=[]),
                public_key=dict(type="str"),
                # Public: a key's options and a host's public key, no secret.
                key_options=dict(type="str", no_log=False),
                host_key=dict(type="str", no_log=False),
            )),
        ),
        supports_check_mode=True,
    )
    run = ModuleRun(module)
    problem = check_input(module.params)
    if problem:
        run.fail("Invalid input: %s; nothing was changed" % problem)
    run.execute(lambda run: body(run, module))


if __name__ == "__main__":
    main()
