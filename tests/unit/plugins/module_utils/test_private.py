# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private working directories: what is accepted, what is refused, and that a refusal makes nothing."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, private_dir


def mode(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def test_a_new_directory_is_made_private_with_its_parents(tmp_path):
    target = tmp_path / "a" / "b" / "work"
    assert private_dir(str(target), check_mode=True) is True and not (tmp_path / "a").exists()
    assert private_dir(str(target)) is True
    assert mode(target) == 0o700 and (tmp_path / "a" / "b").is_dir()
    # Made once: the next call accepts it and changes nothing.
    assert private_dir(str(target)) is False


@pytest.mark.parametrize("plant, words", [
    ("link", "it is a symbolic link"),
    ("open", "group or others may write to it (mode 0777)"),
    ("file", "it is not a directory"),
])
def test_an_existing_path_that_is_not_private_is_refused(tmp_path, plant, words):
    target = tmp_path / "work"
    if plant == "link":
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")
    elif plant == "open":
        target.mkdir()
        target.chmod(0o777)
    else:
        target.write_text("x")
    with pytest.raises(PrivateDirError) as raised:
        private_dir(str(target))
    assert words in str(raised.value)


def test_a_folder_above_that_others_may_write_without_the_sticky_bit_is_refused_before_anything_is_made(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    target = shared / "own" / "work"
    with pytest.raises(PrivateDirError) as raised:
        private_dir(str(target))
    assert "%s above it may be written by group or others (mode 0777) and has no sticky bit" % shared in str(raised.value)
    assert os.listdir(str(shared)) == []
    # Sticky, as /var/tmp is: accepted.
    shared.chmod(0o1777)
    assert private_dir(str(target)) is True and mode(target) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_above_owned_by_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(str(theirs), 65534, 65534)
    with pytest.raises(PrivateDirError) as raised:
        private_dir(str(theirs / "work"), check_mode=True)
    assert "%s above it is owned by" % theirs in str(raised.value) and "uid 65534" in str(raised.value)
    assert os.listdir(str(theirs)) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a directory to another user")
def test_the_parents_of_a_links_target_are_checked_too(tmp_path):
    """Hardening (issue 37, 14): a root-owned link to a root-owned directory passed, though the directory above the
    link's target belonged to another user, who could swap the target (and everything below it) at will."""
    other = tmp_path / "theirs"
    other.mkdir()
    target = other / "target"
    target.mkdir()
    os.chown(str(other), 65534, 65534)  # nobody
    os.chmod(str(other), 0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(PrivateDirError) as refused:
        private_dir(str(link / "work"))
    assert str(other) in str(refused.value) and "owned by" in str(refused.value)
    assert not (target / "work").exists()
    # Without the other user's directory on the way, the same layout is accepted.
    os.chown(str(other), 0, 0)
    assert private_dir(str(link / "work")) is True and (target / "work").is_dir()
