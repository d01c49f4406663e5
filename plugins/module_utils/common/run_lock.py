# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A lock that one run holds on a host across many tasks: a file made with ``O_EXCL`` in a private folder.

PRIVATE to the roce.fabric collection: may change without notice.

Each Ansible task is a process of its own, so an ``flock`` cannot last from the first task of a run to its last.
The lock is a file that names its owner (the run's id), the time it was taken and the host's boot id. Another
owner is refused while the lock is live; a lock from an earlier boot, or older than ``stale_after`` seconds, was
left by a run that ended without releasing it and is taken over (the result says whose it was).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.private import check_private_dir, open_private, private_dir, read_private

OWNER_RE = re.compile(r"^[A-Za-z0-9_.:@+-]{1,128}$")


def boot_id(path="/proc/sys/kernel/random/boot_id"):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return ""


def read_holder(path):
    """The lock's record (``owner``, ``since``, ``boot_id``), ``{}`` when there is no lock; a link is refused."""
    text = read_private(path)
    if not text.strip():
        # An empty file is not a lock: a host that lost power while one was being written can leave one.
        return dict(owner="?", since=0, boot_id="", unreadable=True) if os.path.lexists(path) else {}
    try:
        holder = json.loads(text)
    except ValueError:
        return dict(owner="?", since=0, boot_id="", unreadable=True)
    return holder if isinstance(holder, dict) else dict(owner="?", since=0, boot_id="", unreadable=True)


def stale_reason(holder, now, current_boot, stale_after):
    """Why ``holder``'s lock no longer holds (its run ended without releasing it), or None while it does."""
    if holder.get("unreadable"):
        return "the lock file cannot be read"
    if holder.get("boot_id") and current_boot and holder["boot_id"] != current_boot:
        return "taken before the host's last boot"
    age = now - float(holder.get("since") or 0)
    if age > stale_after:
        return "taken %d s ago, more than stale_after (%d s)" % (age, stale_after)
    return None


def refresh_due(stamp, stale_after, now):
    """Whether a run should refresh its lock now: a quarter of ``stale_after`` has passed since ``stamp``, the
    controller's time when the lock was last taken or refreshed (one clock for both, whatever the host's says), so a
    lock refreshed at the run's steps never grows older than ``stale_after`` while a step takes less than three
    quarters of it. No stamp: due."""
    try:
        return now - float(stamp) >= stale_after / 4.0
    except (TypeError, ValueError):
        return True


def take(path, owner, stale_after, check_mode=False, now=None, current_boot=None, refresh=False):
    """Take the lock for ``owner``. Returns ``(changed, holder, taken_over)``; raises LockHeld while another
    owner's live lock is there. In check mode nothing is written. ``refresh``: the owner's lock gets the time now
    whatever its age (a long run keeps it; the caller decides when, ``refresh_due``)."""
    now = time.time() if now is None else now
    current_boot = boot_id() if current_boot is None else current_boot
    mine = dict(owner=owner, since=now, boot_id=current_boot)
    if check_mode and not os.path.lexists(os.path.dirname(path)):
        return True, mine, None  # no folder, so no lock; check mode creates nothing
    if check_mode:
        check_private_dir(os.path.dirname(path))
    else:
        private_dir(os.path.dirname(path))
    holder = read_holder(path)
    taken_over = None
    if holder:
        if holder.get("owner") == owner:
            # A long run refreshes its own lock (past half of stale_after), so that no other run takes it over.
            if (not refresh and now - float(holder.get("since") or 0) <= stale_after / 2.0) or check_mode:
                return False, holder, None
            refreshed = dict(holder, since=now)
            _write(path, refreshed, replace=True)
            return True, refreshed, None
        reason = stale_reason(holder, now, current_boot, stale_after)
        if reason is None:
            raise LockHeld(holder, now)
        taken_over = dict(holder, reason=reason)
    if check_mode:
        return True, mine, taken_over
    if taken_over:
        # Two runs can find the same abandoned lock: the take-over is made under the folder's flock, after reading
        # the lock again. One that finds another run's live lock there now is refused; it never removes it.
        with _folder_lock(os.path.dirname(path)):
            again = read_holder(path)
            if again and again != holder:
                if again.get("owner") == owner:
                    return False, again, None
                if stale_reason(again, now, current_boot, stale_after) is None:
                    raise LockHeld(again, now)
            if again:
                os.unlink(path)
            _write(path, mine)
        return True, mine, taken_over
    _write(path, mine)
    return True, mine, taken_over


def _folder_lock(folder):
    """An exclusive flock on the lock's folder for the length of a ``with`` block."""
    class FolderLock(object):
        def __enter__(self):
            self.fd = os.open(folder, os.O_RDONLY)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            return self

        def __exit__(self, *exc):
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
    return FolderLock()


def _write(path, record, replace=False, now=None):
    """The lock's record written and flushed under a name of its own, then linked to the lock's name (which fails if
    it exists: LockHeld) or, for the owner's refresh, renamed over it: never a lock without its content."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open_private(tmp, "w") as handle:
        json.dump(record, handle)
        handle.flush()
        os.fsync(handle.fileno())
    if replace:
        os.rename(tmp, path)
        return
    try:
        os.link(tmp, path)
    except OSError as exc:
        if exc.errno == errno.EEXIST:  # another run took it between the read and now
            raise LockHeld(read_holder(path), time.time() if now is None else now)
        raise
    finally:
        os.unlink(tmp)


def release(path, owner, check_mode=False):
    """Remove the lock if ``owner`` holds it. Returns ``(changed, holder)``; another owner's lock stays."""
    if not os.path.isdir(os.path.dirname(path)):
        return False, {}
    holder = read_holder(path)
    if not holder or holder.get("owner") != owner:
        return False, holder
    if not check_mode:
        os.unlink(path)
        # Gone for good: a host that loses power next does not bring the lock back.
        directory = os.open(os.path.dirname(path), os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    return True, holder


class LockHeld(Exception):
    """Another owner's live lock."""

    def __init__(self, holder, now):
        self.holder = holder
        age = now - float(holder.get("since") or now)
        super(LockHeld, self).__init__("held by run %s since %s (%d s ago)" % (
            holder.get("owner", "?"), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(holder.get("since") or now))), age))
