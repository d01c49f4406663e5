# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ConnectX firmware images (module_utils/firmware/image.py) on the corpus's real firmware manager and flint
reports (fixtures/fwimage/), and the plan for a site's pinned versions."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.firmware.image import (
    FirmwareImageError, fw_version, image_plan, parse_burn, parse_flint_query, parse_fwmanager, parse_reset_levels)
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

SAMPLES = sorted(os.listdir(os.path.join(corpus.FIXTURES, "fwimage")))


def expect(name):
    return dict(word.split("=", 1) for word in corpus.meta("fwimage", name)["expect"].split(" ") if "=" in word)


@pytest.mark.parametrize("name", [n for n in SAMPLES if n.startswith(("mlxup_", "mlxfwmanager_"))])
def test_the_firmware_manager_report_of_every_sample(name):
    (device,) = parse_fwmanager(corpus.read("fwimage", name))
    want = expect(name)
    assert device["psid"] == want["psid"] and device["fw"] == want["fw"]
    assert device["running"] == want.get("running", want["fw"])
    # The card's Base MAC, which tells the two PCI devices of a Socket Direct card; N/A where the manager has none.
    assert device["base_mac"] == (None if want["base_mac"] == "none" else want["base_mac"])
    if "available" in want:
        assert device["available"] == (None if want["available"] == "none" else want["available"])


def test_the_manager_report_s_fields():
    (cx6lx,) = parse_fwmanager(corpus.read("fwimage", "mlxup_query_cx6lx_update_required.txt"))
    assert (cx6lx["device_type"], cx6lx["part_number"], cx6lx["pci"]) == ("ConnectX6LX", "MCX631102AS-ADA_Ax", "0002:01:00.0")
    assert cx6lx["status"] == "Update required" and cx6lx["roms"] == {"PXE": "3.6.0502", "UEFI": "14.26.0017"}
    (cx5,) = parse_fwmanager(corpus.read("fwimage", "mlxup_query_cx5_no_image.txt"))
    assert cx5["status"] == "No matching image found" and cx5["available"] is None and cx5["pci"] == "pci0:6:0:0"


@pytest.mark.parametrize("name", [n for n in SAMPLES if n.startswith("flint_")])
def test_flint_query_of_every_sample(name):
    parsed = parse_flint_query(corpus.read("fwimage", name))
    want = expect(name)
    assert (parsed["psid"], parsed["fw"], parsed["image_type"]) == (want["psid"], want["fw"], want["image_type"])
    # FW Version(Running) only while the burnt image waits for a reset or reboot.
    assert parsed["running"] == want.get("running", want["fw"])
    # FS3 and FS4 print the card's Base MAC (and its count); a ConnectX-3's FS2 query prints MACs per port, no base.
    assert parsed["base_mac"] == (None if want["base_mac"] == "none" else want["base_mac"])
    if parsed["image_type"] in ("FS3", "FS4"):
        assert parsed["roms"] == ["type=UEFI version=14.21.17 cpu=AMD64", "type=PXE version=3.6.102 cpu=AMD64"]
    else:
        assert len(parsed["roms"]) == 1 and parsed["roms"][0].startswith("type=PXE version=3.4.")


@pytest.mark.parametrize("name", [n for n in SAMPLES if n.startswith("burn_")])
def test_the_burn_transcript_of_every_sample(name):
    parsed = parse_burn(corpus.read("fwimage", name))
    want = expect(name)
    assert (parsed["current"], parsed["new"]) == (want["current"], want["new"])
    assert parsed["done"] is (want["done"] == "true") and len(parsed["errors"]) == int(want["errors"])


def test_a_psid_mismatch_is_the_tool_s_own_refusal():
    parsed = parse_burn(corpus.read("fwimage", "burn_psid_mismatch.txt"))
    assert parsed["errors"] == ["PSID mismatch. The PSID on flash (IBM1080111023) differs from the PSID in the given "
                                "image (MT_1080110023)."]


def test_what_is_not_the_tool_s_output_is_refused():
    with pytest.raises(FirmwareImageError, match="no FW Version and PSID"):
        parse_flint_query("a text that is no query report")
    assert parse_fwmanager("a text without a Device block") == []
    with pytest.raises(FirmwareImageError, match="not a firmware version"):
        fw_version("22.45")


def test_versions_compare_part_by_part():
    assert fw_version("22.45.3608") > fw_version("22.43.1020") > fw_version("22.9.9999")
    assert fw_version("16_28_2006") == (16, 28, 2006) and fw_version("N/A") is None


def plan_of(name, versions, **kwargs):
    return image_plan(parse_fwmanager(corpus.read("fwimage", name)), versions, **kwargs)[0]


def test_the_plan_for_each_adapter():
    cx6lx = "mlxup_query_cx6lx_update_required.txt"
    assert plan_of(cx6lx, {"MT_0000000575": "26.43.1014"})["action"] == "burn"
    assert plan_of(cx6lx, {"MT_0000000575": "26.33.1048"})["action"] == "none"
    # Pinned by part number, with or without the _Ax suffix the manager prints.
    assert plan_of(cx6lx, {"MCX631102AS-ADA": "26.33.1048"})["key"] == "MCX631102AS-ADA"
    # An older pin is a downgrade: refused unless allowed; minimum accepts the newer image as it is.
    refused = plan_of(cx6lx, {"MT_0000000575": "26.32.1010"})
    assert refused["action"] == "refuse" and "allow_downgrade" in refused["reason"]
    assert plan_of(cx6lx, {"MT_0000000575": "26.32.1010"}, allow_downgrade=True)["action"] == "burn"
    assert plan_of(cx6lx, {"MT_0000000575": "26.32.1010"}, policy="minimum")["action"] == "none"
    # No entry: reported, never guessed.
    unknown = plan_of(cx6lx, {"MT_0000000436": "22.45.3608"})
    assert unknown["action"] == "unknown" and "left as it is (26.33.1048)" in unknown["reason"]
    # Burnt but not running: to activate (a reset or reboot), nothing to burn.
    pending = plan_of("mlxfwmanager_cx6dx_running_older.txt", {"MT_0000000436": "22.45.3608"})
    assert (pending["action"], pending["burnt"], pending["running"]) == ("activate", "22.45.3608", "22.43.1020")
    with pytest.raises(FirmwareImageError, match="policy"):
        image_plan([], {}, policy="latest")


def test_the_reset_levels_of_the_mlxfwreset_query():
    levels = parse_reset_levels(corpus.read("fwimage", "mlxfwreset_query_bf3.txt"))
    want = expect("mlxfwreset_query_bf3.txt")
    assert sorted(n for n, level in levels.items() if level["supported"]) == [int(n) for n in want["supported"].split(",")]
    assert [n for n, level in levels.items() if level["default"]] == [int(want["default"])]
    assert levels[3]["description"] == "Driver restart and PCI reset" and levels[1]["supported"] is False
    # The reset types and syncs after the levels are not levels (type 4, "ARM OS shut down", would be one).
    assert sorted(levels) == [0, 1, 3, 4]
    with pytest.raises(FirmwareImageError, match="no Reset-levels"):
        parse_reset_levels(corpus.read("fwimage", "mlxfwreset_reset_cx4.txt"))
