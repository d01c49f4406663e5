# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RoCE QoS contract and the host NIC QoS family: contract, parsers on real output, state and actions."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.qos import contract, parsers, state
from ansible_collections.roce.fabric.plugins.module_utils.qos import switch as qos_switch
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


# --- the contract -------------------------------------------------------------------------------------

def test_defaults_are_nvidias_lossless_roce():
    derived = contract.derive({})
    assert derived["mode"] == "lossless" and derived["pfc"] and derived["ecn"]
    assert (derived["roce_dscp"], derived["roce_priority"], derived["cnp_dscp"], derived["cnp_priority"]) == (26, 3, 48, 6)
    # NVIDIA's guides: cma_roce_tos -t 106, traffic_class 106, mlnx_qos --pfc 0,0,0,1,0,0,0,0.
    assert derived["roce_tos"] == derived["nccl_ib_tc"] == derived["perftest_tclass"] == 106
    assert derived["pfc_vector"] == "0,0,0,1,0,0,0,0" and derived["pfc_priorities"] == [3]
    assert derived["dscp2prio"] == {} and derived["trust"] == "dscp"


def test_lossy_has_no_pfc_and_a_moved_priority_needs_a_map_entry():
    derived = contract.derive({"mode": "lossy", "roce_dscp": 24, "roce_priority": 4})
    assert derived["pfc"] is False and derived["pfc_priorities"] == [] and derived["pfc_vector"] == "0,0,0,0,0,0,0,0"
    assert derived["roce_tos"] == 98 and derived["dscp2prio"] == {24: 4}
    assert contract.derive({"ecn": False, "mode": "lossless"})["roce_tos"] == 104


@pytest.mark.parametrize("bad, words", [
    ({"mode": "lossless", "pfc": False}, "needs pfc true"),
    ({"mode": "lossy", "pfc": True}, "no PFC"),
    ({"mode": "lossy", "ecn": False}, "needs ecn true"),
    ({"mode": "semi"}, "lossless or lossy"),
    ({"roce_dscp": 64}, "0..63"),
    ({"roce_priority": "three"}, "integer"),
    ({"roce_priority": True}, "integer"),
    ({"cnp_priority": 3}, "own priority"),
    ({"cnp_dscp": 26}, "both 26"),
    ({"dscp": 26}, "unknown keys dscp"),
    ("lossless", "must be a dict"),
])
def test_contract_refuses_contradictions(bad, words):
    with pytest.raises(contract.ContractError, match=words):
        contract.derive(bad)


def test_switch_settings_that_agree():
    ports = [{"ports": ["1/1-1/4"], "trust": "L3", "pfc": True, "ecn": [{"traffic_class": 3, "min_kb": 150}]}]
    assert contract.switch_conflicts({}, "lossless", ports, {"enabled": True, "priorities": [3]}) == []
    lossy = [{"ports": ["1/1-1/3"], "ecn": [{"traffic_class": 3}]}]
    assert contract.switch_conflicts({"mode": "lossy"}, "lossy", lossy, None) == []
    # Any DSCP that the default map puts on priority 3 is fine for Onyx's roce command.
    assert contract.switch_conflicts({"roce_dscp": 24}, "lossless") == []
    # Leaving the mode alone or disabling RoCE makes no claim Onyx cannot keep.
    assert contract.switch_conflicts({"roce_priority": 4, "roce_dscp": 34}, None) == []


def test_switch_settings_that_contradict_are_named():
    errors = contract.switch_conflicts(
        {}, "lossy", [{"ports": ["1/1"], "trust": "L2", "pfc": False, "ecn": [{"traffic_class": 4}]}],
        {"enabled": True, "priorities": [3, 4]})
    joined = " | ".join(errors)
    assert "roce mode lossy on the switch, the contract says lossless" in joined
    assert "ports 1/1 trust L2" in joined and "ports 1/1 pfc off" in joined
    assert "ECN on traffic class 4" in joined and "global PFC on priorities [3, 4]" in joined
    assert len(errors) == 5


def test_onyx_roce_cannot_move_roce_or_cnps():
    (message,) = contract.switch_conflicts({"roce_dscp": 34, "roce_priority": 4}, "lossless")
    assert "priority 3" in message and "DSCP 34" in message and "roce_switch_roce_mode to null" in message and "Onyx's roce command" in message
    assert len(contract.switch_conflicts({"cnp_dscp": 40, "cnp_priority": 5}, "lossy", None, None)) == 2


def test_value_conflicts_name_the_layer():
    assert contract.value_conflicts({}, "nccl", {"nccl_ib_tc": "106"}) == []
    assert contract.value_conflicts({}, "nccl", {"nccl_ib_tc": None}) == []
    (message,) = contract.value_conflicts({}, "validate (NCCL)", {"nccl_ib_tc": 96})
    assert message.startswith("validate (NCCL): nccl_ib_tc is 96") and "gives 106" in message


# --- parsers on real output -----------------------------------------------------------------------------

def test_mlnx_qos_os_controlled_trust_dscp():
    parsed = parsers.parse_mlnx_qos(corpus.read("qos", "mlnx_qos_trust_dscp_os.txt"))
    assert parsed["trust"] == "dscp" and parsed["dcbx"] == "os" and parsed["cable_len"] == 7
    assert parsed["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0] and parsed["pfc_buffer"] is None
    assert len(parsed["dscp2prio"]) == 64 and all(parsed["dscp2prio"][d] == d >> 3 for d in range(64))
    assert parsed["tcs"][0] == {"ratelimit": "unlimited", "tsa": "vendor", "bw": None, "priorities": [1]}


def test_mlnx_qos_without_dcb_is_an_error():
    with pytest.raises(parsers.QosParseError):
        parsers.parse_mlnx_qos("Priority trust state is not supported on your system\n")


def test_dcb_outputs():
    assert parsers.parse_dcb_pfc(corpus.read("qos", "dcb_pfc_show_mlxsw_patch.txt")) == [0, 1, 0, 0, 0, 0, 0, 1]
    assert parsers.parse_dcb_app_dscp(corpus.read("qos", "dcb_app_show_dscp_patch.txt")) == {0: [0], 24: [3], 48: [6]}
    assert parsers.parse_dcb_apptrust("order: dscp pcp \n") == ["dscp", "pcp"]
    assert parsers.dcb_trust(["pcp", "dscp"]) == "pcp" and parsers.dcb_trust([]) == "pcp"
    with pytest.raises(parsers.QosParseError):
        parsers.parse_dcb_pfc("prio-pfc 0:off 1:on\n")
    with pytest.raises(parsers.QosParseError):
        parsers.parse_dcb_app_dscp("dscp-prio XY9:3\n")


def test_traffic_class_file_forms():
    assert parsers.parse_traffic_class("Global tclass=106") == 106
    assert parsers.parse_traffic_class("106\n") == 106
    assert parsers.parse_traffic_class("") is None


# --- state ----------------------------------------------------------------------------------------------

def test_want_checks_every_value():
    wanted = state.want({"trust": "dscp", "pfc": [3, 3], "dscp2prio": {"26": 3}, "ecn": [3], "roce_tos": 106})
    assert wanted == {"trust": "dscp", "pfc": [3], "dscp2prio": {26: 3}, "ecn": [3], "roce_tos": 106}
    for bad in ({"pfc": [8]}, {"dscp2prio": {"64": 1}}, {"dscp2prio": {"x": 1}}, {"roce_tos": 256},
                {"cnp_priority": -1}, {"trust": "l3"}, {"ecn": [True]}):
        with pytest.raises(state.QosInputError):
            state.want(bad)
    with pytest.raises(state.QosInputError):
        state.check_names("eth0; reboot")
    with pytest.raises(state.QosInputError):
        state.check_names("eth0", "mlx5_0/../x")


def test_compare_and_mlnx_qos_actions():
    have = {"trust": "pcp", "pfc": [], "dscp2prio": dict((d, d >> 3) for d in range(64)),
            "ecn": dict((p, {"np": 0, "rp": 1}) for p in range(8)), "cnp_dscp": 48, "cnp_priority": 6, "roce_tos": 0}
    wanted = state.want({"trust": "dscp", "pfc": [3], "dscp2prio": {24: 4}, "ecn": [3], "cnp_dscp": 48,
                         "cnp_priority": 6, "roce_tos": 106})
    changes = state.compare(wanted, have)
    assert sorted(changes) == ["dscp2prio", "ecn", "pfc", "roce_tos", "trust"]
    actions = state.dcb_actions("mlnx_qos", "/usr/bin/mlnx_qos", "ens1f0np0", changes)
    assert [a["run"][3:] for a in actions] == [["--trust", "dscp"], ["--pfc", "0,0,0,1,0,0,0,0"], ["--dscp2prio", "set,24,4"]]
    writes = state.sysfs_actions("ens1f0np0", "mlx5_0", 1, changes, configfs_present=False, device_dir_present=False)
    assert [state.describe(a) for a in writes] == [
        "write /sys/class/net/ens1f0np0/ecn/roce_np/enable/3: 1", "write /sys/class/net/ens1f0np0/ecn/roce_rp/enable/3: 1",
        "modprobe rdma_cm", "mkdir /sys/kernel/config/rdma_cm/mlx5_0",
        "write /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos: 106"]
    # Nothing differs: no action at all.
    have.update(trust="dscp", pfc=[3], roce_tos=106, ecn=dict((p, {"np": 1, "rp": 1}) for p in range(8)))
    have["dscp2prio"][24] = 4
    assert state.compare(wanted, have) == {}


def test_dcb_actions():
    changes = {"trust": ("pcp", "dscp"), "pfc": ([], [3]), "dscp2prio": ({24: 3}, {24: 4})}
    actions = state.dcb_actions("dcb", "/usr/sbin/dcb", "enp1s0", changes)
    assert [a["run"][1:] for a in actions] == [
        ["apptrust", "set", "dev", "enp1s0", "order", "dscp", "pcp"],
        ["pfc", "set", "dev", "enp1s0", "prio-pfc", "0:off", "1:off", "2:off", "3:on", "4:off", "5:off", "6:off", "7:off"],
        ["app", "replace", "dev", "enp1s0", "dscp-prio", "24:4"]]


def test_boot_actions_set_everything_from_driver_defaults():
    wanted = state.want({"trust": "dscp", "pfc": [3], "roce_tos": 106, "cnp_dscp": 48})
    actions = state.boot_actions("mlnx_qos", "/usr/bin/mlnx_qos", "ens1f0np0", "mlx5_0", 1, wanted)
    assert [state.describe(a) for a in actions] == [
        "/usr/bin/mlnx_qos -i ens1f0np0 --trust dscp", "/usr/bin/mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0",
        "write /sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp: 48", "modprobe rdma_cm",
        "mkdir /sys/kernel/config/rdma_cm/mlx5_0", "write /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos: 106"]
    assert state.boot_actions(None, None, "enp1s0", "rxe0", 1, {"roce_tos": 106})[-1]["value"] == "106"


def test_a_dscp_change_reaches_every_layer_and_nothing_else():
    """DSCP 26 -> 24 (same priority): the ToS of RDMA-CM, perftest and NCCL change; trust, PFC, ECN, CNPs and the
    switch (Onyx's roce carries 24-31 on priority 3) do not."""
    old, new = contract.derive({}), contract.derive({"roce_dscp": 24})
    changed = sorted(key for key in old if old[key] != new[key])
    assert changed == ["nccl_ib_tc", "perftest_tclass", "roce_dscp", "roce_tos"]
    assert new["roce_tos"] == 98
    ports = [{"ports": ["1/1-1/4"], "trust": "L3", "pfc": True, "ecn": [{"traffic_class": 3}]}]
    assert contract.switch_conflicts({"roce_dscp": 24}, "lossless", ports, {"enabled": True, "priorities": [3]}) == []
    # The host NIC: only the RDMA-CM ToS write differs between the two contracts' actions.
    have = {"trust": "dscp", "pfc": [3], "dscp2prio": {}, "ecn": dict((p, {"np": 1, "rp": 1}) for p in range(8)),
            "cnp_dscp": 48, "cnp_priority": 6, "roce_tos": 106}
    for derived, expected in ((old, {}), (new, {"roce_tos": (106, 98)})):
        wanted = state.want(dict(trust=derived["trust"], pfc=derived["pfc_priorities"], ecn=derived["ecn_priorities"],
                                 cnp_dscp=derived["cnp_dscp"], cnp_priority=derived["cnp_priority"], roce_tos=derived["roce_tos"]))
        assert state.compare(wanted, have) == expected


def test_one_set_of_switch_variables_for_both_operating_systems():
    from ansible_collections.roce.fabric.plugins.module_utils.qos import switch
    common = dict(roce_mode="lossless", vlans=[dict(id=111, name="roce", access_ports=["1/1-1/4"])],
                  pfc=dict(enabled=True, priorities=[3]), trust="l3",
                  ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])
    onyx = switch.role_args({}, "mellanox.onyx.onyx", ports=[dict(ports=["1/1-1/4"], mtu=9216), dict(ports=["1/32"], roce=False)],
                            **common)
    assert onyx["errors"] == [] and onyx["module"] == "roce.fabric.onyx_roce"
    assert onyx["args"]["ports"][0] == dict(ports=["1/1-1/4"], mtu=9216, trust="L3", pfc=True,
                                            ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])
    assert onyx["args"]["ports"][1] == dict(ports=["1/32"]) and onyx["args"]["vlans"][0]["name"] == "roce"
    nvue = switch.role_args({}, "nvue", ports=[dict(ports=["swp1-4"], mtu=9216)], **common)
    assert nvue["errors"] == [] and nvue["module"] == "roce.fabric.nvue_roce"
    assert nvue["args"]["trust"] == "l3" and nvue["args"]["ecn"] == [dict(traffic_class=3, min_bytes=150000, max_bytes=1500000)]
    assert nvue["args"]["pfc"] == dict(enabled=True, priorities=[3]) and "name" not in nvue["args"]["vlans"][0]
    # The read-only comparison sends the QoS keys per port only; a port without one is left out.
    assert onyx["qos_ports"] == [dict(ports=["1/1-1/4"], trust="L3", pfc=True,
                                      ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])]
    assert nvue["qos_ports"] == []


def test_switch_variables_an_os_cannot_take_or_the_contract_refuses():
    from ansible_collections.roce.fabric.plugins.module_utils.qos import switch
    per_port = switch.role_args({}, "cumulus", ports=[dict(ports=["swp1"], trust="L3")])
    assert "Cumulus Linux keeps them per switch" in per_port["errors"][0]
    semi = switch.role_args({}, "nvue", roce_mode="semi-lossless")
    assert "is Onyx's" in semi["errors"][0]
    lossy = switch.role_args({"mode": "lossy"}, "nvue", roce_mode="lossy", pfc=dict(enabled=True, priorities=[3]))
    assert any("global PFC enabled" in e for e in lossy["errors"])
    l2 = switch.role_args({}, "nvue", trust="l2")
    assert any("trust L2" in e for e in l2["errors"])
    assert "not one this collection configures" in switch.role_args({}, "eos")["errors"][0]


def test_a_switch_without_ansible_network_os_is_refused_not_taken_as_onyx():
    from ansible_collections.roce.fabric.plugins.module_utils.qos import switch
    for missing in ("", None, "  "):
        result = switch.role_args({}, missing, ports=[dict(ports=["1/1"], mtu=9216)])
        assert result["os"] is None and result["args"] == {}
        assert "has no ansible_network_os" in result["errors"][0]


# --- the switches' port counters for the validation (roce_switch tasks_from counters) --------------------------------

def test_switches_are_read_by_their_familys_module_and_the_others_say_why():
    hostvars = {"sw1": {"ansible_network_os": "mellanox.onyx.onyx"}, "leaf1": {"roce_switch_os": "nvue"},
                "leaf2": {"ansible_network_os": "cumulus", "roce_switch_os": ""}, "ios1": {"ansible_network_os": "ios"},
                "bare": {}}
    found = qos_switch.families(["sw1", "leaf1", "leaf2", "ios1", "bare", "gone"], hostvars)
    assert found["onyx"] == ["sw1"] and found["nvue"] == ["leaf1", "leaf2"]
    assert sorted(found["unknown"]) == ["bare", "gone", "ios1"]
    assert "not one this collection configures" in found["unknown"]["ios1"]
    assert "no ansible_network_os" in found["unknown"]["bare"] and found["unknown"]["gone"] == "not a host of the inventory"


def test_the_counter_reads_keep_each_switchs_ports_or_why_it_was_not_read():
    onyx = {"results": [{"item": "sw1", "changed": False, "counters": {"1/1": {"in_errors": 0}}},
                        {"item": "sw2", "failed": True, "msg": "Authentication to sw2 failed"}]}
    nvue = {"results": [{"item": "leaf1", "unreachable": True, "msg": "The switch's NVUE API did not answer"},
                        {"item": "leaf2", "skipped": True}]}
    reads = qos_switch.counter_reads([onyx, nvue, {"skipped": True}], {"ios1": "its OS is not one..."})
    assert reads == {"sw1": {"ports": {"1/1": {"in_errors": 0}}}, "sw2": {"error": "Authentication to sw2 failed"},
                     "leaf1": {"error": "The switch's NVUE API did not answer"}, "ios1": {"error": "its OS is not one..."}}
    # A phase's reads join the earlier phases' (the role's before and after).
    earlier = {"before": {"sw1": {"error": "timed out"}}}
    both = qos_switch.counter_reads([onyx], None, earlier, "after")
    assert both == {"before": {"sw1": {"error": "timed out"}}, "after": qos_switch.counter_reads([onyx])}
    assert earlier == {"before": {"sw1": {"error": "timed out"}}}
