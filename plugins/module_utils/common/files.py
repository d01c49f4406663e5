# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small readers of the node's files shared by the families that read /sys, and the one atomic file writer.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import os
import tempfile


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
