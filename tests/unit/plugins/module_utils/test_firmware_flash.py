# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nic_firmware role's pinned images as the module takes them (module_utils/firmware/flash.py image_files), and
which cards a live reset must spare (reset_blocker)."""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.firmware.flash import check_versions, image_files, reset_blocker
from ansible_collections.roce.fabric.plugins.module_utils.firmware.image import parse_flint_query
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

SHA = "a" * 64


def test_an_image_on_the_controller_is_copied_and_one_on_the_host_is_used_where_it_is():
    plan = image_files({
        "MT_0000000436": dict(version="22.45.3608", src="/srv/fw/fw-ConnectX6Dx-rel-22_45_3608.bin", sha256=SHA),
        "MT_0000000834": dict(version="28.43.1014", image="/opt/fw/cx7.bin", sha256=SHA),
        "MT_0000000575": dict(version="26.43.1014"),
    }, "/var/lib/roce-fabric/firmware")
    assert plan["problems"] == []
    assert plan["copies"] == [dict(psid="MT_0000000436", src="/srv/fw/fw-ConnectX6Dx-rel-22_45_3608.bin",
                                   dest="/var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_45_3608.bin", downloaded=False)]
    assert plan["downloads"] == []
    assert plan["versions"] == {
        "MT_0000000436": dict(version="22.45.3608", image="/var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_45_3608.bin",
                              sha256=SHA),
        "MT_0000000834": dict(version="28.43.1014", image="/opt/fw/cx7.bin", sha256=SHA),
        "MT_0000000575": dict(version="26.43.1014")}


def test_entries_that_cannot_be_used_are_named():
    plan = image_files({
        "MT_1": dict(version="1.2.3", src="/a/x.bin", image="/b/x.bin", sha256=SHA),
        "MT_2": dict(version="1.2.3", src="/a/x.bin"),
        "MT_3": dict(version="1.2.3", src="/a/.hidden;rm", sha256=SHA),
        "MT_4": dict(version="1.2", uri="https://example.invalid/x.bin"),
        "MT_5": "22.45.3608",
        "MT_6": dict(version="1.2.3", url="file:///etc/shadow", sha256=SHA),
        "MT_7": dict(version="1.2.3", url="https://mirror.example/fw/x.bin", src="/a/x.bin", sha256=SHA),
        "MT_8": dict(version="1.2.3", url="https://mirror.example/fw/x.bin", sha256="abc"),
    }, "/var/lib/roce-fabric/firmware", "/home/ops/.cache/roce-fabric/firmware")
    text = "; ".join(plan["problems"])
    assert "MT_1: give one of src (a file on the controller), url (downloaded by the controller) or image (a file on " \
           "the host), not src and image" in text
    assert "MT_2: src needs its sha256" in text
    assert "MT_3: '.hidden;rm' is not an image file name" in text
    assert "MT_4: unknown keys uri" in text and "versions.MT_4.version" in text
    assert "MT_5: expected a dictionary" in text
    assert "MT_6: url 'file:///etc/shadow' is not an http or https address" in text
    assert "MT_7: give one of" in text and "not src and url" in text
    assert "MT_8: url needs its sha256" in text
    assert [c["psid"] for c in plan["copies"]] == ["MT_2", "MT_8"]


def test_an_image_from_a_url_is_downloaded_on_the_controller_then_copied():
    plan = image_files({"MT_0000000436": dict(version="22.45.3608", sha256=SHA.upper(),
                                              url="https://mirror.example/nvidia/fw-ConnectX6Dx-rel-22_45_3608.bin?token=x")},
                       "/var/lib/roce-fabric/firmware", "/home/ops/.cache/roce-fabric/firmware")
    assert plan["problems"] == []
    assert plan["downloads"] == [dict(psid="MT_0000000436", sha256=SHA,
                                      url="https://mirror.example/nvidia/fw-ConnectX6Dx-rel-22_45_3608.bin?token=x",
                                      dest="/home/ops/.cache/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_45_3608.bin")]
    assert plan["copies"] == [dict(psid="MT_0000000436", src="/home/ops/.cache/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_45_3608.bin",
                                   dest="/var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_45_3608.bin", downloaded=True)]
    assert plan["versions"]["MT_0000000436"]["image"] == "/var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_45_3608.bin"
    assert image_files({"MT_1": dict(version="1.2.3", url="https://m.example/x.bin", sha256=SHA)},
                       "/var/lib/roce-fabric/firmware")["problems"] == ["MT_1: url needs a download directory on the controller"]


def test_the_module_s_own_checks_of_versions():
    assert check_versions({"MT_0000000436": dict(version="22.45.3608", image="/x.bin", sha256=SHA)}) == []
    problems = check_versions({"MT 1": dict(version="1.2.3"), "MT_2": dict(version="22.45.3608", image="x.bin")})
    assert problems == ["'MT 1' is neither a PSID (letters, digits and _, at most 16) nor a part number (letters, digits, - and _, at most 40)",
                        "versions.MT_2.image must be an absolute path on the host"]


def test_a_live_reset_spares_every_pci_function_of_a_protected_card():
    """reset_blocker on the Base MACs the real queries print: a Socket Direct card's two PCI devices print one query
    (one flash), so the same Base MAC; another card prints its own; an FS2 query (ConnectX-3) prints none."""
    mac = dict((name, parse_flint_query(corpus.read("fwimage", name))["base_mac"]) for name in (
        "flint_query_cx5_fs4.txt", "flint_query_cx4_fs3.txt", "flint_query_cx3_fs2_before_burn.txt"))
    protected = {"0000:3b:00.0": "it carries the controller's session (eno1np0: the route to 192.0.2.10)"}
    # The other slot of the same card: one Base MAC.
    macs = {"0000:3b:00.0": mac["flint_query_cx5_fs4.txt"], "0000:86:00.0": mac["flint_query_cx5_fs4.txt"]}
    assert reset_blocker("0000:86:00.0", protected, macs, set(protected)) == (
        "it is one card with 0000:3b:00.0 (Socket Direct, Base MAC e41d2de70f8e), and 0000:3b:00.0: it carries the "
        "controller's session (eno1np0: the route to 192.0.2.10)")
    # The card itself.
    assert reset_blocker("0000:3b:00.0", protected, macs, set(protected)) == protected["0000:3b:00.0"]
    # Another card: its own Base MAC.
    macs["0000:86:00.0"] = mac["flint_query_cx4_fs3.txt"]
    assert reset_blocker("0000:86:00.0", protected, macs, set(protected)) is None
    # A query without a Base MAC: it cannot be told apart, no reset.
    macs["0000:86:00.0"] = mac["flint_query_cx3_fs2_before_burn.txt"]
    assert "cannot be told" in reset_blocker("0000:86:00.0", protected, macs, set(protected))
    # The session on a NIC that is no ConnectX (no card of ours to share): nothing to tell apart.
    assert reset_blocker("0000:86:00.0", {"0000:02:00.0": "it carries eno1"}, macs, set()) is None
