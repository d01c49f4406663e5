# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling plays' batch guard (module_utils/common/batch.py), which the host_reboot role re-implemented in Jinja
(issue 38): the messages the firmware and switch peer tiers read, and Ansible's percentage arithmetic."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.batch import batch_problem, batch_size

NAME = "roce_reboot_serial"


@pytest.mark.parametrize("item, count, size", [
    ("1", 4, 1), ("2", 4, 2), ("9", 4, 4), ("50%", 4, 2), ("50%", 3, 1), ("25%", 2, 1), ("100%", 2, 2), ("1%", 300, 3),
])
def test_batch_sizes_follow_ansible(item, count, size):
    """ansible.utils.helpers.pct_to_int: N% of the hosts rounded down, at least 1; a number no more than the play."""
    assert batch_size(item, count) == size


def test_a_batch_that_is_fine():
    assert batch_problem([1, 1], 1, 2, NAME) == ""
    assert batch_problem(["50%"] * 4, 2, 4, NAME) == ""
    assert batch_problem([2, 2], 2, 2, NAME, all_at_once=True) == ""
    assert batch_problem([1], 1, 1, NAME) == ""  # one host: a batch of every host is the only batch


@pytest.mark.parametrize("serials, batch, words", [
    (["2", "2"], 2, 'roce_reboot_serial="2" takes 2 of the play\'s 2 hosts down at once, that is all of them.'),
    (["100%", "100%"], 2, 'roce_reboot_serial="100%" takes 2 of the play\'s 2 hosts down at once'),
    ([[1, "100%"], [1, "100%"]], 1, "takes 2 of the play's 2 hosts down at once"),
    (["0", "0"], 1, "roce_reboot_serial must be a number of hosts (1 or more), a percentage (1% to 100%) or a list "
                    "of them, not \"0\"."),
    (["abc", "abc"], 1, 'or a list of them, not "abc".'),
    ([[], []], 1, 'not "[]".'),
    ([2, 2], 1, "roce_reboot_serial is 2 for these hosts, but the play takes 1 at a time: Ansible reads the play "
                "keyword serial before inventory variables"),
    ([1, 2], 1, "roce_reboot_serial differs between the hosts of this play (1, 2): it sets one batch size"),
])
def test_batches_that_are_refused(serials, batch, words):
    assert words in batch_problem(serials, batch, 2, NAME)
