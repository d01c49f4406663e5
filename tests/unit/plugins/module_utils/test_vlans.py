# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VLAN and port-claim checks both switch families share (module_utils/common/vlans.py), with each family's own
port names (Onyx 1/1, Cumulus Linux swp1) and each module's input refusing the same mistakes alike."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.vlans import vlan_claims
from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers as nvue_parsers
from ansible_collections.roce.fabric.plugins.module_utils.nvue import state as nvue_state
from ansible_collections.roce.fabric.plugins.module_utils.onyx import parsers as onyx_parsers
from ansible_collections.roce.fabric.plugins.module_utils.onyx import state as onyx_state

FAMILIES = {
    "onyx": (onyx_parsers.expand_port_list, onyx_parsers.OnyxInputError, ("1/1-1/2", "1/2", "1/3")),
    "nvue": (nvue_parsers.expand_port_list, nvue_parsers.NvueInputError, ("swp1-2", "swp2", "swp3")),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_claims_and_refusals_are_the_same_on_both_families(family):
    expand, error, (pair, second, third) = FAMILIES[family]
    port = second
    problems, entries = vlan_claims([
        dict(id=10, access_ports=[pair]), dict(id=20, access_ports=[second]), dict(id=30, trunk_ports=[second, third]),
        dict(id=10), dict(id=4095), dict(id=True)], expand, error)
    assert problems == ["port %s is an access port of VLAN 10 and of VLAN 20" % port,
                        "port %s is an access port of VLAN 10 and cannot be a trunk port of VLAN 30" % port,
                        "VLAN 10 is listed twice", "VLAN 4095 is outside 1-4094", "VLAN True is outside 1-4094"]
    assert [(e["id"], len(e["access"]), e["trunk"]) for e in entries] == [(10, 2, []), (20, 0, []), (30, 0, [third])]


def test_a_reserved_range_and_a_port_list_the_parser_refuses():
    problems, entries = vlan_claims([dict(id=3800), dict(id=5, access_ports=["swp1", "swp1"])],
                                    nvue_parsers.expand_port_list, nvue_parsers.NvueInputError, reserved=(3725, 3999),
                                    reserved_by="Cumulus Linux")
    assert problems == ["VLAN 3800 is in 3725-3999, which Cumulus Linux reserves for itself",
                        "the access ports of VLAN 5 lists swp1 twice"] and entries == []


@pytest.mark.parametrize("normalize,error,ports", [
    (onyx_state.normalize_want, onyx_parsers.OnyxInputError, ["1/1"]),
    (nvue_state.normalize_want, nvue_parsers.NvueInputError, ["swp1"]),
])
def test_both_modules_refuse_a_port_claimed_twice_with_the_same_words(normalize, error, ports):
    with pytest.raises(error, match="is an access port of VLAN 10 and of VLAN 20"):
        normalize(dict(vlans=[dict(id=10, access_ports=ports), dict(id=20, access_ports=ports)]))
