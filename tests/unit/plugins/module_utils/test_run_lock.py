# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common import run_lock
from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError
from ansible_collections.roce.fabric.plugins.modules import run_lock as module
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module


@pytest.fixture
def lock(tmp_path):
    return str(tmp_path / "roce-fabric" / "validate.lock")


def test_second_owner_is_refused_and_the_lock_is_unchanged(lock):
    """Hardening (issue 15 item 8): two validations on one host shared its ports and run directory, and the cleanup
    of one stopped the other's test servers. The second run is now refused while the first holds the lock."""
    assert run_lock.take(lock, "run-a", 7200, now=1000.0, current_boot="boot-1") == (
        True, dict(owner="run-a", since=1000.0, boot_id="boot-1"), None)
    assert oct(os.stat(os.path.dirname(lock)).st_mode & 0o777) == "0o700" and oct(os.stat(lock).st_mode & 0o777) == "0o600"
    with pytest.raises(run_lock.LockHeld, match="held by run run-a since 1970-01-01T00:16:40Z"):
        run_lock.take(lock, "run-b", 7200, now=1060.0, current_boot="boot-1")
    assert json.load(open(lock))["owner"] == "run-a"
    assert run_lock.take(lock, "run-a", 7200, now=1100.0, current_boot="boot-1")[0] is False, "the owner's own lock"
    assert run_lock.release(lock, "run-b") == (False, dict(owner="run-a", since=1000.0, boot_id="boot-1"))
    assert os.path.exists(lock), "another owner's lock is not released"
    assert run_lock.release(lock, "run-a")[0] is True and not os.path.exists(lock)
    assert run_lock.release(lock, "run-a") == (False, {})


@pytest.mark.parametrize("boot, now, reason", [
    ("boot-2", 1100.0, "taken before the host's last boot"),
    ("boot-1", 1000.0 + 7201, "more than stale_after (7200 s)"),
])
def test_an_abandoned_lock_is_taken_over_and_named(lock, boot, now, reason):
    run_lock.take(lock, "run-a", 7200, now=1000.0, current_boot="boot-1")
    changed, holder, taken_over = run_lock.take(lock, "run-b", 7200, now=now, current_boot=boot)
    assert changed and holder["owner"] == "run-b" and taken_over["owner"] == "run-a" and reason in taken_over["reason"]
    assert json.load(open(lock))["owner"] == "run-b"


def test_an_empty_lock_file_left_by_a_power_loss_is_taken_over(lock):
    """Found in the lab: a VM powered off just after a run left its lock file empty (created, its content and
    its removal never written to disk). Such a file was read as no lock, and then refused the next take as
    "held by run ?" on every run after. It is taken over now, and a lock is written whole before it gets its
    name, so there is no empty lock file to see."""
    os.makedirs(os.path.dirname(lock), 0o700)
    open(lock, "w").close()
    changed, holder, taken_over = run_lock.take(lock, "run-b", 7200, now=10.0, current_boot="b")
    assert changed and holder["owner"] == "run-b" and taken_over["reason"] == "the lock file cannot be read"
    assert json.load(open(lock))["owner"] == "run-b"
    assert os.listdir(os.path.dirname(lock)) == ["validate.lock"], "no temporary file is left"


def test_check_mode_writes_nothing_but_still_refuses(lock):
    assert run_lock.take(lock, "run-a", 7200, check_mode=True, now=1.0, current_boot="b")[0] is True
    assert not os.path.exists(os.path.dirname(lock)), "check mode makes no folder"
    run_lock.take(lock, "run-a", 7200, now=1.0, current_boot="b")
    with pytest.raises(run_lock.LockHeld):
        run_lock.take(lock, "run-b", 7200, check_mode=True, now=2.0, current_boot="b")
    assert run_lock.release(lock, "run-a", check_mode=True)[0] is True and os.path.exists(lock)


def test_a_lock_planted_as_a_link_or_in_a_shared_folder_is_refused(tmp_path):
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    target = tmp_path / "target"
    target.write_text("")
    os.symlink(str(target), str(folder / "validate.lock"))
    with pytest.raises(PrivateDirError, match="symbolic link"):
        run_lock.take(str(folder / "validate.lock"), "run-a", 7200)
    assert target.read_text() == ""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    with pytest.raises(PrivateDirError, match="group or others may write"):
        run_lock.take(str(shared / "validate.lock"), "run-a", 7200)


@pytest.mark.parametrize("args, message", [
    (dict(path="relative.lock", owner="run-a"), "path must be an absolute file path"),
    (dict(owner="run a;rm"), "owner must be 1 to 128 letters"),
    (dict(owner="run-a", stale_after=5), "stale_after 5 is outside 60-604800 seconds"),
    (dict(state="absent"), "state is absent but all of the following are missing: owner"),
])
def test_module_bad_input_changes_nothing(lock, args, message):
    result = run_module(module.main, dict(dict(path=lock), **args))
    assert result["failed"] is True and message in result["msg"], result
    assert not os.path.exists(os.path.dirname(lock))


def test_the_module_names_a_run_that_gives_no_owner_and_that_name_releases_it(lock):
    first = run_module(module.main, dict(path=lock))
    owner = first["owner"]
    assert first["changed"] is True and first["holder"]["owner"] == owner
    assert re.match(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$", owner) and run_lock.OWNER_RE.match(owner)
    other = run_module(module.main, dict(path=lock))
    assert other["failed"] is True and other["owner"] != owner and other["holder"]["owner"] == owner
    released = run_module(module.main, dict(path=lock, owner=owner, state="absent"))
    assert released["changed"] is True and released["owner"] == owner and not os.path.exists(lock)


def test_module_takes_refuses_and_releases(lock):
    checked = run_module(module.main, dict(path=lock, owner="run-a"), check_mode=True, diff=True)
    assert checked["changed"] is True and checked["commands"] == ["take %s for run-a" % lock]
    assert checked["diff"] == {"before": {"held_by": None}, "after": {"held_by": "run-a"}}
    assert not os.path.exists(os.path.dirname(lock))
    first = run_module(module.main, dict(path=lock, owner="run-a"))
    assert first["changed"] is True and first["holder"]["owner"] == "run-a" and first["taken_over"] is None
    assert first["commands"] == ["take %s for run-a" % lock]
    again = run_module(module.main, dict(path=lock, owner="run-a"))
    assert again["changed"] is False and again["commands"] == []
    refused = run_module(module.main, dict(path=lock, owner="run-b"))
    assert refused["failed"] is True and refused["failure"] == "locked" and "held by run run-a" in refused["msg"]
    assert refused["holder"]["owner"] == "run-a"
    assert refused["commands"] == []
    released = run_module(module.main, dict(path=lock, owner="run-a", state="absent"))
    assert released["changed"] is True and released["commands"] == ["release %s held by run-a" % lock]
    assert not os.path.exists(lock)


def test_two_runs_taking_over_the_same_abandoned_lock_do_not_both_hold_it(lock, monkeypatch):
    """Hardening (issue 37, 8): two runs that found the same abandoned lock (after a reboot) both removed it and took
    it: run-c removed run-b's new lock. The take-over now reads the lock again under the folder's flock."""
    run_lock.take(lock, "run-a", 7200, now=1000.0, current_boot="boot-1")
    real = run_lock.stale_reason
    raced = []

    def stale_reason(holder, now, current_boot, stale_after):
        reason = real(holder, now, current_boot, stale_after)
        if holder.get("owner") == "run-a" and not raced:
            # run-b takes the abandoned lock over between run-c's read and run-c's take-over.
            raced.append(None)
            raced[0] = run_lock.take(lock, "run-b", 7200, now=now, current_boot=current_boot)
        return reason

    monkeypatch.setattr(run_lock, "stale_reason", stale_reason)
    with pytest.raises(run_lock.LockHeld, match="held by run run-b"):
        run_lock.take(lock, "run-c", 7200, now=1100.0, current_boot="boot-2")
    assert raced[0][1]["owner"] == "run-b" and json.load(open(lock))["owner"] == "run-b"


def test_a_long_run_refreshes_its_own_lock(lock):
    """A run that holds the lock longer than half of stale_after refreshes it when it takes it again, so that no
    other run takes over a lock whose run is still going."""
    run_lock.take(lock, "run-a", 7200, now=1000.0, current_boot="boot-1")
    assert run_lock.take(lock, "run-a", 7200, now=4000.0, current_boot="boot-1")[0] is False
    changed, holder, taken_over = run_lock.take(lock, "run-a", 7200, now=5000.0, current_boot="boot-1")
    assert changed and taken_over is None and holder["since"] == 5000.0 and json.load(open(lock))["since"] == 5000.0
    with pytest.raises(run_lock.LockHeld):
        run_lock.take(lock, "run-b", 7200, now=5000.0 + 7000, current_boot="boot-1")


def test_a_validation_longer_than_stale_after_keeps_its_lock_when_refreshed_at_its_steps(lock):
    """A run that only takes its lock at the start and never again is taken over by another once it lasts longer
    than stale_after, while it still runs. Refreshed at its steps when a quarter of stale_after has passed on the
    controller's clock (refresh_due), the lock stays its own for as long as it runs."""
    run_lock.take(lock, "run-a", 600, now=1000.0, current_boot="boot-1")
    # Unrefreshed, 601 s later: another run takes it over, the first one still running.
    unrefreshed = str(os.path.join(os.path.dirname(lock), "other.lock"))
    run_lock.take(unrefreshed, "run-a", 600, now=1000.0, current_boot="boot-1")
    assert run_lock.take(unrefreshed, "run-b", 600, now=1601.0, current_boot="boot-1")[2]["owner"] == "run-a"
    # Refreshed at its steps: the controller's clock says when (stamps 0 s, 160 s, ...; the host's clock is another).
    stamp = 50.0
    for step in range(1, 9):
        controller_now = 50.0 + 160 * step
        assert run_lock.refresh_due(stamp, 600, controller_now) is True
        assert run_lock.refresh_due(stamp, 600, stamp + 149) is False
        changed, holder, _over = run_lock.take(lock, "run-a", 600, now=1000.0 + 160 * step, current_boot="boot-1",
                                               refresh=True)
        assert changed and holder["since"] == 1000.0 + 160 * step
        stamp = controller_now
        with pytest.raises(run_lock.LockHeld):
            run_lock.take(lock, "run-b", 600, now=1000.0 + 160 * step + 300, current_boot="boot-1")
    assert run_lock.refresh_due(None, 600, 1.0) is True, "no stamp: due"
    # A refresh is the owner's only: another owner's refresh is a take, refused while the lock lives.
    with pytest.raises(run_lock.LockHeld):
        run_lock.take(lock, "run-b", 600, now=1000.0 + 160 * 8 + 10, current_boot="boot-1", refresh=True)
    # Check mode writes nothing.
    before = json.load(open(lock))
    assert run_lock.take(lock, "run-a", 600, now=9999.0, current_boot="boot-1", check_mode=True, refresh=True)[0] is False
    assert json.load(open(lock)) == before


def test_the_module_refreshes_its_owner_s_lock_on_request(lock):
    first = run_module(module.main, dict(path=lock, owner="run-a", stale_after=600))
    since = first["holder"]["since"]
    again = run_module(module.main, dict(path=lock, owner="run-a", stale_after=600, refresh=True))
    assert again["changed"] is True and again["holder"]["since"] >= since and again["holder"]["owner"] == "run-a"
    other = run_module(module.main, dict(path=lock, owner="run-b", stale_after=600, refresh=True))
    assert other["failed"] and other["failure"] == "locked" and json.load(open(lock))["owner"] == "run-a"
