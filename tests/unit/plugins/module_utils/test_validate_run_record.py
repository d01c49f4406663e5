# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report's record of the run (module_utils/validate/run_record.py), which the validation_report action fills."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.validate.run_record import generated_record

WHEN = "2026-11-28T06:00:00Z"


@pytest.mark.parametrize("kwargs, command", [
    (dict(inventory_dir="/srv/site/inventories/lab"), "ansible-playbook -i lab"),
    (dict(inventory_dir="/srv/site/inventories/lab/", limit="node1", run_tags=["all"]),
     "ansible-playbook -i lab --limit node1"),
    (dict(inventory_dir="inventories/prod", run_tags=["validate", "qos"], check_mode=True),
     "ansible-playbook -i prod --tags validate,qos --check"),
    (dict(), "ansible-playbook -i "),
])
def test_the_command_repeats_the_run(kwargs, command):
    assert generated_record(WHEN, **kwargs)["command"] == command


def test_the_record_names_the_inventory_not_its_path_and_keeps_the_play_and_version():
    record = generated_record(WHEN, inventory_dir="/home/ops/inventories/site-a", play="Validate", ansible_version="2.17.0")
    assert record == dict(time=WHEN, inventory="site-a", play="Validate", command="ansible-playbook -i site-a",
                          ansible_version="2.17.0")
    assert generated_record(WHEN)["play"] == "" and generated_record(WHEN)["ansible_version"] == ""
