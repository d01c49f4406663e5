# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small readers of the node's files shared by the families that read /sys, and the atomic file writers.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import binascii
import errno
import os
import stat
import tempfile

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, check_private_dir


def listdir(path):
    """The names in a directory, sorted; none when it is not there or cannot be read (a device gone meanwhile)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def write_atomic(path, data, mode, prefix=".roce-fabric-", suffix="", owner=None, sync=False):
    """Replace the file at ``path`` at once: ``data`` (text, or bytes) goes into a fresh, randomly named file
    (O_EXCL) beside it, which gets ``mode`` (and ``owner``, ``(uid, gid)``) and is renamed over ``path``. A crash
    leaves the old file or the new one, never half of it, and a link planted at a fixed temporary name or at
    ``path`` itself is replaced, never written through. ``sync``: the data reaches the disk before the rename."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=prefix, suffix=suffix)
    try:
        with (os.fdopen(fd, "wb") if isinstance(data, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if owner is not None:
            os.chown(tmp, owner[0], owner[1])
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_together(folder, files, mode=0o644):
    """Replace the files ``files`` (``[(name, bytes)]``, names without a folder) in ``folder`` together or not at all:
    the folder is made when missing (0755), then what is there is checked through an open handle of it (a real
    folder, not a link, owned by the caller, that group and others may not write, under folders no other user can
    swap: ``private.check_private_dir``), and every file is written into it under a fresh name (O_EXCL, relative to
    that handle) and flushed to disk before the first is renamed over its name. A failure before the renames leaves
    every old file as it was. PrivateDirError when the folder cannot be used (nothing is written)."""
    try:
        os.makedirs(folder, 0o755)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise PrivateDirError("%s: %s" % (folder, exc.strerror))
    # Made by us or found: checked as it now is, by name, then held open so that nothing else can be put there.
    check_private_dir(folder)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        dir_fd = os.open(folder, flags)
    except OSError as exc:
        raise PrivateDirError("%s: %s" % (folder, exc.strerror))
    written = []
    try:
        held = os.fstat(dir_fd)
        if held.st_uid != os.geteuid() or held.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise PrivateDirError("refusing %s: it changed while it was opened" % folder)
        for name, data in files:
            tmp = ".%s.%s.tmp" % (name, binascii.hexlify(os.urandom(6)).decode("ascii"))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode, dir_fd=dir_fd)
            written.append((tmp, name))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
        for tmp, name in written:
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        written = []
    finally:
        for tmp, _name in written:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
        os.close(dir_fd)
