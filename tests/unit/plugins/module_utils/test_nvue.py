# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVUE family: port names, the configuration parser, the comparison, the patch and the commands."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers, state
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def real_config():
    return json.loads(corpus.read("nvue", "config_applied_5.5.0_vx.json"))


def params(**kwargs):
    base = dict(roce_mode=None, trust=None, pfc=None, ecn=None, vlans=None, ports=None)
    base.update(kwargs)
    return base


FULL = params(
    roce_mode="lossless", trust="l3",
    pfc=dict(enabled=True, priorities=[3]),
    ecn=[dict(traffic_class=3, min_bytes=150000, max_bytes=1500000)],
    vlans=[dict(id=111, access_ports=["swp1-4"], trunk_ports=None), dict(id=112, access_ports=None, trunk_ports=["swp31-32"])],
    ports=[dict(ports=["swp1-4", "swp31-32"], mtu=9216, shutdown=None)],
)


def test_port_ranges_and_breakouts():
    assert parsers.expand_ports("swp1-4") == ["swp1", "swp2", "swp3", "swp4"]
    assert parsers.expand_ports("swp1s0-swp1s3") == ["swp1s0", "swp1s1", "swp1s2", "swp1s3"]
    assert parsers.expand_ports("swp12") == ["swp12"]
    assert parsers.compress_ports(["swp4", "swp1", "swp2", "swp3", "swp7", "swp9s1"]) == "swp1-4,swp7,swp9s1"


@pytest.mark.parametrize("spec", ["eth0", "swp0", "swp1-", "swp4-1", "swp1s0-swp2s1", "swp1;reboot", "swp1 swp2", "swp1s8", "lo"])
def test_port_names_outside_the_pattern_are_refused(spec):
    with pytest.raises(parsers.NvueInputError):
        parsers.expand_ports(spec)


def test_versions_compare_as_numbers():
    assert parsers.version_at_least("5.10.0", "5.3.0")
    assert not parsers.version_at_least("5.2.1", "5.3.0")
    assert parsers.version_at_least("5.12.1", parsers.SINGLE_IPOOL_VERSION)
    assert not parsers.version_at_least("5.9.2", parsers.SINGLE_IPOOL_VERSION)


def test_release_comes_from_the_header():
    assert parsers.release_of(real_config()) == "5.5.0"
    with pytest.raises(ValueError):
        parsers.release_of({"interface": {}})


def test_the_real_default_config_parses_to_no_roce():
    have = parsers.parse_config(real_config())
    assert have["roce_mode"] == "disabled"
    assert have["pfc"] == dict(priorities=[], tx=None, rx=None)
    assert have["ports"] == {}


def test_full_plan_against_the_real_config():
    want = state.normalize_want(FULL)
    planned = state.plan(want, parsers.parse_config(real_config()))
    assert planned["commands"] == [
        "nv set qos roce enable on",
        "nv set qos roce mode lossless",
        "nv set qos mapping default-global trust l3",
        "nv set qos pfc default-global switch-priority 3",
        "nv set qos pfc default-global tx enable",
        "nv set qos pfc default-global rx enable",
        "nv set qos congestion-control default-global traffic-class 3 ecn enable",
        "nv set qos congestion-control default-global traffic-class 3 min-threshold 150000",
        "nv set qos congestion-control default-global traffic-class 3 max-threshold 1500000",
        "nv set bridge domain br_default vlan 111",
        "nv set bridge domain br_default vlan 112",
        "nv set interface swp1-4 bridge domain br_default access 111",
        "nv set interface swp1-4,swp31-32 link mtu 9216",
        "nv set interface swp31-32 bridge domain br_default vlan 112",
    ]
    patch = planned["patch"]
    assert patch["qos"]["roce"] == {"enable": "on", "mode": "lossless"}
    assert patch["qos"]["congestion-control"]["default-global"]["traffic-class"]["3"] == {
        "ecn": "enable", "min-threshold": 150000, "max-threshold": 1500000}
    assert patch["interface"]["swp2"] == {"bridge": {"domain": {"br_default": {"access": 111}}}, "link": {"mtu": 9216}}
    assert patch["interface"]["swp31"]["bridge"]["domain"]["br_default"]["vlan"] == {"112": {}}
    assert planned["toggled"] == ["swp1", "swp2", "swp3", "swp4", "swp31", "swp32"]
    assert planned["switch_wide"] == ["pfc", "roce_mode"]
    assert planned["diff"]["before"]["roce_mode"] == "disabled" and planned["diff"]["after"]["roce_mode"] == "lossless"


def apply_patch(config, patch):
    """Merge a PATCH document as NVUE does (None unsets; link.state replaces)."""
    for key, value in patch.items():
        if value is None:
            config.pop(key, None)
        elif key == "state" and isinstance(value, dict):
            config[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(config.get(key), dict):
            apply_patch(config[key], value)
        else:
            config[key] = copy.deepcopy(value)


def test_after_the_patch_nothing_differs():
    config = real_config()
    want = state.normalize_want(FULL)
    planned = state.plan(want, parsers.parse_config(config))
    apply_patch(config, planned["patch"])
    again = state.plan(want, parsers.parse_config(config))
    assert again["commands"] == [] and again["patch"] == {}
    assert again["diff"] == dict(before={}, after={})
    assert state.converged(want, parsers.parse_config(config))


def test_the_diff_names_exactly_the_items_the_commands_change():
    """The --diff comes from compare's changes: every item and port it shows has a command, and every command's item
    and port is in it."""
    config = real_config()
    want = state.normalize_want(FULL)
    planned = state.plan(want, parsers.parse_config(config))
    items = set(change["item"] for change in planned["changes"])
    assert set(planned["diff"]["before"]) == set(planned["diff"]["after"]) == items
    ports = set(change["path"][1] for change in planned["changes"] if change["item"] == "ports")
    assert set(planned["diff"]["after"]["ports"]) == ports
    classes = set(int(change["path"][4]) for change in planned["changes"] if change["item"] == "ecn")
    assert set(planned["diff"]["after"]["ecn"]) == classes
    # Half applied (the PATCH's RoCE part only): what is left, and nothing more, is in both.
    apply_patch(config, {"qos": planned["patch"]["qos"]})
    left = state.plan(want, parsers.parse_config(config))
    assert set(left["diff"]["after"]) == set(change["item"] for change in left["changes"]) == {"vlans", "ports"}


def test_disable_unsets_roce_and_pfc_priorities_not_listed_are_unset():
    config = real_config()
    config["qos"]["roce"] = {"enable": "on", "mode": "lossy"}
    config["qos"]["pfc"] = {"default-global": {"switch-priority": {"3": {}, "4": {}}, "tx": "enable", "rx": "enable"}}
    want = state.normalize_want(params(roce_mode="disabled", pfc=dict(enabled=True, priorities=[3])))
    planned = state.plan(want, parsers.parse_config(config))
    assert planned["commands"] == ["nv unset qos roce", "nv unset qos pfc default-global switch-priority 4"]
    assert planned["patch"] == {"qos": {"roce": None, "pfc": {"default-global": {"switch-priority": {"4": None}}}}}


def test_shutdown_replaces_the_link_state_and_a_down_port_is_not_toggled():
    config = real_config()
    config["interface"]["swp5"] = {"type": "swp", "link": {"mtu": 1500, "state": {"down": {}}}}
    want = state.normalize_want(params(ports=[dict(ports=["swp5", "swp6"], mtu=9000, shutdown=False)]))
    planned = state.plan(want, parsers.parse_config(config))
    assert planned["patch"]["interface"]["swp5"]["link"] == {"mtu": 9000, "state": {"up": {}}}
    assert planned["toggled"] == ["swp6"]


@pytest.mark.parametrize("bad, words", [
    (params(vlans=[dict(id=3800, access_ports=None, trunk_ports=None)]), "reserves"),
    (params(vlans=[dict(id=0, access_ports=None, trunk_ports=None)]), "outside"),
    (params(vlans=[dict(id=10, access_ports=["swp1"], trunk_ports=None), dict(id=20, access_ports=["swp1"], trunk_ports=None)]), "access port"),
    (params(ports=[dict(ports=["swp1"], mtu=9217, shutdown=None)]), "MTU 9217"),
    (params(ports=[dict(ports=["swp1"], mtu=None, shutdown=None), dict(ports=["swp1-2"], mtu=None, shutdown=None)]), "two ports entries"),
    (params(ecn=[dict(traffic_class=3, min_bytes=2000, max_bytes=1000)]), "min_bytes <= max_bytes"),
    (params(ecn=[dict(traffic_class=8, min_bytes=1, max_bytes=2)]), "outside 0-7"),
    (params(pfc=dict(enabled=True, priorities=[9])), "outside 0-7"),
    (params(ports=[dict(ports=["swp1;nv config apply"], mtu=9000, shutdown=None)]), "not a Cumulus port"),
])
def test_bad_input_is_refused(bad, words):
    with pytest.raises(parsers.NvueInputError) as info:
        state.normalize_want(bad)
    assert words in str(info.value)


def test_releases_without_the_objects_are_refused():
    want = state.normalize_want(FULL)
    with pytest.raises(parsers.NvueInputError) as info:
        state.check_release(want, "5.2.1")
    assert "5.3.0" in str(info.value) and "5.2.1" in str(info.value)
    state.check_release(want, "5.3.0")
    ipool = state.normalize_want(params(roce_mode="lossless-single-ipool"))
    with pytest.raises(parsers.NvueInputError):
        state.check_release(ipool, "5.9.2")
    state.check_release(ipool, "5.12.0")


def test_rendered_plan_starts_from_nothing():
    planned = state.plan(state.normalize_want(params(roce_mode="lossy", ports=[dict(ports=["swp1s0-swp1s3"], mtu=9216, shutdown=None)])),
                         state.factory_state())
    assert planned["commands"] == ["nv set qos roce enable on", "nv set qos roce mode lossy", "nv set interface swp1s0,swp1s1,swp1s2,swp1s3 link mtu 9216"]


def test_nv_config_show_list_becomes_the_root_document():
    config = real_config()
    body = dict((k, v) for k, v in config.items() if k != "header")
    shown = [{"header": config["header"]}, {"set": body}]
    assert parsers.config_from_show(shown) == config
    assert parsers.config_from_show(config) == config
    with pytest.raises(ValueError):
        parsers.config_from_show([{"set": body}])


def test_apply_result_of_a_clean_apply():
    assert parsers.apply_result("applied [rev_id: 7]\n", 0) == ("applied", [], "7")
    state, issues, _rev = parsers.apply_result("", 255)
    assert state == "apply_fail" and issues == ["nv config apply exited 255"]


def test_gathered_given_back_as_merged_changes_nothing():
    """Issue 36 (5): state gathered returns the switch's RoCE configuration in the module's own option shape; fed
    back to state merged, nothing differs (the applied configuration of a Cumulus Linux 5.5.0 VX, from the
    corpus)."""
    have = parsers.parse_config(real_config())
    got = state.gathered(have)
    assert set(got) >= {"roce_mode", "vlans", "ports", "pfc", "ecn"}
    want = state.normalize_want(got)
    assert state.compare(want, have) == []
    planned = state.plan(want, have)
    assert planned["commands"] == [] and planned["before"] == planned["after"]


def test_before_and_after_follow_the_wanted_state_and_after_needs_no_second_change():
    have = parsers.parse_config(real_config())
    want = state.normalize_want(dict(roce_mode="lossless", trust="l3", pfc=dict(enabled=True, priorities=[3]),
                                     ecn=[dict(traffic_class=3, min_bytes=150000, max_bytes=1500000)],
                                     vlans=[dict(id=111, access_ports=["swp1-2"])],
                                     ports=[dict(ports=["swp1-2"], mtu=9216)]))
    planned = state.plan(want, have)
    assert planned["commands"]
    after = planned["after"]
    assert after["roce_mode"] == "lossless" and after["trust"] == "l3" and after["pfc"]["priorities"] == [3]
    assert [v for v in after["vlans"] if v["id"] == 111] == [dict(id=111, access_ports=["swp1-2"], trunk_ports=[])]
    assert dict(ports=["swp1-2"], mtu=9216) in after["ports"]
    # What after shows is what the change makes: nothing is left to send once it is applied.
    assert state.compare(want, state.applied(want, have)) == []


def test_auto_save_follows_the_setting_else_the_release():
    """Cumulus Linux 5.9 and later save every apply by default (NVUE command reference, nv config apply): the module
    reported saved false there, as if the change would be lost at the next reboot."""
    config = real_config()
    assert parsers.auto_save(config, "5.5.0") is False
    assert parsers.auto_save(config, "5.9.2") is True and parsers.auto_save(config, "5.10.0") is True
    config["system"] = dict(config.get("system") or {}, config={"auto-save": {"enable": "off"}})
    assert parsers.auto_save(config, "5.9.2") is False
    config["system"]["config"]["auto-save"]["enable"] = "on"
    assert parsers.auto_save(config, "5.5.0") is True


def test_what_the_login_has_pending():
    """Issue 37, 11: nv over SSH detached whatever the login had pending. What nv config diff prints decides now:
    nothing pending is an empty object (NVIDIA's NVUE tests read {} after an apply) or nothing; a pending change is
    the guide's list of set/unset entries, refused by the transport."""
    assert parsers.pending_changes("") is None and parsers.pending_changes("{}\n") is None
    assert parsers.pending_changes("[]") is None
    documented = corpus.read("nvue", "nv_config_diff_5.9_doc.txt")
    assert parsers.pending_changes(documented).startswith("- unset:")
    assert parsers.pending_changes('[{"set": {"interface": {"swp9": {"link": {"mtu": 1500}}}}}]')
