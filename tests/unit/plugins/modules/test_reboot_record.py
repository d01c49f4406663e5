# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.reboot_record through main(), and the rule of module_utils/common/reboot_record: never reboot twice
for what a reboot did not clear; a record that cannot be read is no record (issue 37, 10: an empty or cut-short
record stopped every later reboot with a template error)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common import reboot_record
from ansible_collections.roce.fabric.plugins.modules import reboot_record as module
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

BOOT = "9c6f0a1e-5e0b-4a4e-9d3f-3c1f7d2a8b11"
OTHER = "1b2c3d4e-0000-4000-8000-000000000001"
REASON = "ConnectX firmware settings pending on 0000:17:00.0 (ADVANCED_PCI_SETTINGS=True)"


def test_a_reason_the_reboot_of_this_boot_did_not_clear_does_not_reboot_again():
    record = reboot_record.new_record([REASON], BOOT, OTHER, "2026-11-27T08:01:02Z")
    assert reboot_record.decide(record, [REASON, "new"], BOOT) == dict(not_cleared=[REASON], reboot_for=["new"])
    # Another boot (a power cycle) allows one more.
    assert reboot_record.decide(record, [REASON], OTHER) == dict(not_cleared=[], reboot_for=[REASON])
    # A subject keeps a reason from another reboot only for the same subject (ESXi: the settings asked for).
    about = reboot_record.new_record(["settings"], BOOT, "", "t", subject={"ATS": True})
    assert reboot_record.not_cleared(about, ["settings"], BOOT, {"ATS": True}) == ["settings"]
    assert reboot_record.not_cleared(about, ["settings"], BOOT, {"ATS": False}) == []


@pytest.mark.parametrize("text, problem", [
    ("", "empty"),
    ("\n", "empty"),
    ('{"reasons": ["a"', "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"reasons": "a", "boot_id": "b"}', "reasons are not a list"),
    ('{"reasons": ["a"], "boot_id": 7}', "boot_id is not a string"),
    ('{"reasons": ["a"]}', "no boot_id"),
])
def test_a_record_that_cannot_be_read_is_no_record(text, problem):
    record, why = reboot_record.parse_record(text)
    assert record is None and problem in why
    assert reboot_record.parse_record(None) == (None, None)


def test_read_write_read_through_the_module(tmp_path):
    path = str(tmp_path / "state" / "host_reboot.json")
    first = run_module(module.main, dict(path=path, reasons=[REASON], boot_id=OTHER))
    assert first["changed"] is False and first["record"] is None and first["reboot_for"] == [REASON]
    checked = run_module(module.main, dict(path=path, state="write", reasons=[REASON], boot_id=BOOT,
                                           previous_boot_id=OTHER), check_mode=True, diff=True)
    assert checked["changed"] is True and not os.path.exists(path) and checked["diff"]["after"]["record"]["boot_id"] == BOOT
    written = run_module(module.main, dict(path=path, state="write", reasons=[REASON], boot_id=BOOT, previous_boot_id=OTHER))
    assert written["changed"] is True and oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600" and json.load(open(path))["boot_id"] == BOOT
    again = run_module(module.main, dict(path=path, state="write", reasons=[REASON], boot_id=BOOT, previous_boot_id=OTHER))
    assert again["changed"] is False
    after = run_module(module.main, dict(path=path, reasons=[REASON], boot_id=BOOT))
    assert after["not_cleared"] == [REASON] and after["reboot_for"] == []


def test_a_cut_short_record_allows_one_reboot_and_is_written_whole_again(tmp_path):
    path = tmp_path / "host_reboot.json"
    tmp_path.chmod(0o700)
    path.write_text('{"reasons": ["%s"], "boot_id": "%s"' % (REASON, BOOT))
    result = run_module(module.main, dict(path=str(path), reasons=[REASON], boot_id=BOOT))
    assert not result["failed"] and result["record"] is None and "not JSON" in result["problem"]
    assert result["reboot_for"] == [REASON]
    written = run_module(module.main, dict(path=str(path), state="write", reasons=[REASON], boot_id=OTHER, previous_boot_id=BOOT))
    assert written["changed"] and reboot_record.parse_record(path.read_text())[0]["boot_id"] == OTHER


def test_a_record_that_is_a_link_is_refused(tmp_path):
    tmp_path.chmod(0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "host_reboot.json").symlink_to(victim)
    result = run_module(module.main, dict(path=str(tmp_path / "host_reboot.json"), reasons=[REASON], boot_id=BOOT))
    assert result["failed"] and "symbolic link" in result["msg"] and victim.read_text() == "keep"
