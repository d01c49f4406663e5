# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.private_dir through main(): check mode, idempotence, removal and refusals that change nothing."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.modules import private_dir
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module


def test_made_once_then_unchanged_then_removed(tmp_path):
    target = str(tmp_path / "work")
    checked = run_module(private_dir.main, dict(path=target), check_mode=True, diff=True)
    assert checked["changed"] is True and not os.path.exists(target), checked
    assert checked["diff"] == dict(before=dict(path=target, state="absent"), after=dict(path=target, state="present"))
    made = run_module(private_dir.main, dict(path=target + "/"))
    assert made["changed"] is True and made["path"] == target and oct(os.stat(target).st_mode & 0o777) == "0o700"
    assert made["commands"] == ["mkdir -m 0700 %s" % target]
    again = run_module(private_dir.main, dict(path=target))
    assert again["changed"] is False and not again["failed"] and again["commands"] == []
    (tmp_path / "work" / "script.py").write_text("x")
    assert run_module(private_dir.main, dict(path=target, state="absent"), check_mode=True)["changed"] is True
    assert os.path.isdir(target)
    assert run_module(private_dir.main, dict(path=target, state="absent"))["changed"] is True
    assert not os.path.exists(target)
    assert run_module(private_dir.main, dict(path=target, state="absent"))["changed"] is False


@pytest.mark.parametrize("path", ["relative/work", "/", "/var/tmp/../etc", "/var/tmp/a b", "/var/tmp/x\nroot"])
def test_a_path_that_is_not_plain_is_refused(path):
    result = run_module(private_dir.main, dict(path=path))
    assert result["failed"] and "path must be an absolute path" in result["msg"], result


def test_a_planted_link_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep")
    (tmp_path / "work").symlink_to(victim)
    for state in ("present", "absent"):
        result = run_module(private_dir.main, dict(path=str(tmp_path / "work"), state=state))
        assert result["failed"] and "it is a symbolic link" in result["msg"] and "nothing was changed" in result["msg"]
    assert (victim / "keep").read_text() == "keep" and os.path.islink(str(tmp_path / "work"))
