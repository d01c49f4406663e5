# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private working directories and files for modules that run as root on shared hosts.

A directory under a world-writable parent such as /var/tmp may have been made first by another user, or be a
symbolic link planted there; root then writes through it, or runs what that user put in it. ``private_dir``
creates the directory with mode 0700, or accepts an existing one only when ``lstat`` shows a real directory
owned by the caller with no group or other write permission. Files inside are then opened with
``O_NOFOLLOW`` (and ``O_EXCL`` when created), so no link is ever followed. The directories above it must not
let another user swap it either (``check_ancestors``).
"""

from __future__ import annotations

import errno
import json
import os
import stat


class PrivateDirError(Exception):
    """A directory or file that is not private to the caller: the message says what is wrong and what to do."""


def _describe_owner(uid):
    try:
        import pwd
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except (ImportError, KeyError):
        return "uid %d" % uid


def user_name(uid):
    """The name of the user ``uid``, or ``uid N`` where the host has no name for it."""
    try:
        import pwd
        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return "uid %d" % uid


def current_user():
    """The name of the user this process runs as (its effective uid)."""
    return user_name(os.geteuid())


def check_private_dir(path, uid=None):
    """Raise PrivateDirError unless ``path`` is a real directory owned by ``uid`` (the caller's by default) that
    no one else may write to, under directories no other user can swap it in (``check_ancestors``). ``path``
    itself is read with lstat: a symbolic link is refused, never followed."""
    uid = os.geteuid() if uid is None else uid
    check_ancestors(path, uid)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise PrivateDirError("%s: %s" % (path, exc.strerror))
    if stat.S_ISLNK(info.st_mode):
        raise PrivateDirError("refusing %s: it is a symbolic link (to %s), which another user may have planted;"
                              " remove it or choose another directory" % (path, os.readlink(path)))
    if not stat.S_ISDIR(info.st_mode):
        raise PrivateDirError("refusing %s: it is not a directory" % path)
    if info.st_uid != uid:
        raise PrivateDirError("refusing %s: it is owned by %s, not by %s who runs this; another user may have made it"
                              " first: remove it or choose another directory" % (path, _describe_owner(info.st_uid),
                                                                                 _describe_owner(uid)))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PrivateDirError("refusing %s: group or others may write to it (mode %04o); it must be private"
                              " (chmod 0700) or another directory" % (path, stat.S_IMODE(info.st_mode)))


def check_ancestors(path, uid=None):
    """Raise PrivateDirError when a directory above ``path`` lets another user swap what lies below it: each one
    (and each link on the way) must belong to root or the caller, and one that others may write to must have the
    sticky bit, as /tmp and /var/tmp do."""
    uid = os.geteuid() if uid is None else uid
    _check_chain(path, os.path.dirname(os.path.abspath(path)), uid)
    # A link on the way leads elsewhere: the directories above its target (and above every link's target) must pass
    # the same check, or their owner could swap the target's parent and with it everything below.
    resolved = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if resolved != os.path.dirname(os.path.abspath(path)):
        _check_chain(path, resolved, uid)


def _check_chain(path, current, uid):
    """check_ancestors for one chain of directories, from ``current`` up to /."""
    while True:
        try:
            link = os.lstat(current)
            info = os.stat(current)
        except OSError as exc:
            raise PrivateDirError("%s: %s" % (current, exc.strerror))
        for what in (link, info):
            if what.st_uid not in (0, uid):
                raise PrivateDirError("refusing %s: %s above it is owned by %s, who could replace what lies below;"
                                      " choose a directory under one of your own" % (path, current,
                                                                                     _describe_owner(what.st_uid)))
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            raise PrivateDirError("refusing %s: %s above it may be written by group or others (mode %04o) and has no"
                                  " sticky bit" % (path, current, stat.S_IMODE(info.st_mode)))
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def check_usable_dir(path):
    """Raise PrivateDirError unless ``path`` is a private directory, or is missing and could be made one: the
    directories above its first missing part pass ``check_ancestors``. Returns the missing parts, deepest first."""
    path = os.path.abspath(path)
    missing = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        current = os.path.dirname(current)
    if not missing:
        check_private_dir(path)
    else:
        check_ancestors(missing[-1])
    return missing


def private_dir(path, check_mode=False):
    """Create ``path`` (mode 0700; missing parents 0755) or accept it if it is already private. The directories
    above it are checked before anything is made, so a refused path leaves nothing behind. Returns whether it
    was (or, with ``check_mode``, would be) created."""
    path = os.path.abspath(path)
    missing = check_usable_dir(path)
    if not missing:
        return False
    if check_mode:
        return True
    for parent in reversed(missing[1:]):
        try:
            os.mkdir(parent, 0o755)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise PrivateDirError("%s: %s" % (parent, exc.strerror))
    try:
        os.mkdir(path, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise PrivateDirError("%s: %s" % (path, exc.strerror))
    check_private_dir(path)
    return True


def open_private(path, mode="r"):
    """Open a file in a private directory without following a link: "r" reads, "w" creates it anew (an existing
    file of that name is removed first, O_EXCL then guarantees it is ours), "x" creates it only if no file of that
    name exists (EEXIST otherwise)."""
    flags = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if mode == "w":
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
    if mode in ("w", "x"):
        flags |= os.O_WRONLY | os.O_CREAT | os.O_EXCL
    else:
        flags |= os.O_RDONLY
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrivateDirError("refusing %s: it is a symbolic link" % path)
        raise
    return os.fdopen(fd, "w" if mode == "x" else mode)


def read_private(path):
    """The text of a file in a private directory, "" when it is missing; a link is refused, not followed."""
    try:
        with open_private(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if getattr(exc, "errno", None) == errno.ENOENT:
            return ""
        raise


def write_private_record(path, data):
    """Write ``data`` as JSON to ``path`` (0600, in a private folder made if needed), replacing it atomically;
    ``None`` (or an empty dict or list) removes ``path`` instead."""
    if not data:
        if os.path.lexists(path):
            os.unlink(path)
        return
    private_dir(os.path.dirname(path))
    tmp = path + ".tmp"
    with open_private(tmp, "w") as handle:
        json.dump(data, handle, sort_keys=True)
        # On disk before it takes the record's name: records are written just before a reboot or a power cycle.
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)
