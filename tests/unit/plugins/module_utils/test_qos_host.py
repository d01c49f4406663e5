# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nic_qos_interfaces, listed or auto (module_utils/qos/host.py), on device lists shaped as roce.fabric.rdma_facts
returns them (its RETURN: name, driver, software, virtual_function, ports with state, link_layer and netdev)."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.qos import host


def port(number, state="ACTIVE", link_layer="Ethernet", netdev="ens1f0np0"):
    return {"port": number, "state": state, "phys_state": "LinkUp", "link_layer": link_layer,
            "netdev": {"name": netdev, "mtu": 9000, "operstate": "up"} if netdev else None}


DEVICES = [
    {"name": "mlx5_0", "driver": "mlx5_core", "software": False, "virtual_function": False,
     "ports": [port(1, netdev="ens1f0np0")]},
    {"name": "mlx5_1", "driver": "mlx5_core", "software": False, "virtual_function": False,
     "ports": [port(1, state="DOWN", netdev="ens1f1np1")]},
    {"name": "mlx5_2", "driver": "mlx5_core", "software": False, "virtual_function": False,
     "ports": [port(1, link_layer="InfiniBand", netdev=None)]},
    {"name": "mlx5_3", "driver": "mlx5_core", "software": False, "virtual_function": True,
     "ports": [port(1, netdev="ens1f0v0")]},
    {"name": "rxe0", "driver": "rxe", "software": True, "virtual_function": False,
     "ports": [port(1, netdev="enp1s0")]},
    {"name": "mlx5_4", "driver": "mlx5_core", "software": False, "virtual_function": False,
     "ports": [port(1, netdev="ens2np0")]},
]


def test_auto_takes_the_active_roce_ports_of_physical_adapters_only():
    found = host.interfaces("auto", DEVICES)
    chosen = [(e["netdev"], e["rdma_device"], e["port"]) for e in found]
    assert chosen == [("ens1f0np0", "mlx5_0", 1), ("ens2np0", "mlx5_4", 1)]
    assert all(e["dcb"] and e["ecn"] and e["roce_tos"] and not e["traffic_class"] for e in found)
    assert host.interfaces(" AUTO ", []) == []


def test_a_list_is_checked_and_completed():
    assert host.interfaces([{"netdev": "ens1np0", "traffic_class": True}]) == [
        {"netdev": "ens1np0", "rdma_device": None, "port": 1, "dcb": True, "ecn": True, "roce_tos": True,
         "traffic_class": True}]
    assert host.interfaces([]) == [] and host.interfaces(None) == []


@pytest.mark.parametrize("value, words", [
    ("all", "list of NICs ({netdev: ...}) or auto, not 'all'"),
    ({"netdev": "ens1"}, "not a dict"),
    (["ens1np0"], "entry 1 is a str"),
    ([{"port": 1}], "entry 1 (?)"),
    ([{"netdev": "a"}, {"netdev": "a"}], "listed more than once: a"),
])
def test_what_cannot_be_used_is_refused_with_its_reason(value, words):
    with pytest.raises(host.InterfacesError) as exc:
        host.interfaces(value, [])
    assert words in str(exc.value)


def test_auto_without_the_devices_is_an_error():
    with pytest.raises(host.InterfacesError):
        host.interfaces("auto")


def test_the_contract_reaches_each_nic_through_one_function():
    """The nic_qos role decided in eight 'if item.x else omit' lines which settings each NIC gets (issue 38); the
    contract now reaches the NIC through qos.host.host_args as it reaches the switch through qos.switch.role_args."""
    from ansible_collections.roce.fabric.plugins.module_utils.qos import contract
    settings = contract.derive({})
    full = host.interfaces([{"netdev": "ens1f0np0", "rdma_device": "mlx5_0"}])[0]
    assert host.host_args(full, settings, "mlnx_qos") == dict(
        netdev="ens1f0np0", rdma_device="mlx5_0", port=1, backend="mlnx_qos", trust="dscp", pfc=[3], ecn=[3],
        cnp_dscp=48, cnp_priority=6, roce_tos=106)
    # A virtio NIC of the lab's VMs: no DCB, no mlx5 ECN files: the RDMA-CM ToS only.
    bare = host.interfaces([{"netdev": "enp1s0", "rdma_device": "rxe0", "dcb": False, "ecn": False}])[0]
    expected = dict(netdev="enp1s0", rdma_device="rxe0", port=1, backend="none", roce_tos=106)
    assert host.host_args(bare, settings, "mlnx_qos") == expected
    # Lossy with a moved priority: PFC off (an empty list, which turns it off), the DSCP map entry.
    lossy = contract.derive({"mode": "lossy", "roce_dscp": 24, "roce_priority": 4})
    args = host.host_args(dict(full, traffic_class=True, roce_tos=False), lossy, "dcb")
    assert args["pfc"] == [] and args["dscp2prio"] == {24: 4} and args["ecn"] == [4] and "roce_tos" not in args
    assert args["traffic_class"] == lossy["roce_tos"] and args["backend"] == "dcb"
    # Lossless without ECN: no ECN priorities, the CNP settings still.
    quiet = host.host_args(full, contract.derive({"ecn": False}), "mlnx_qos")
    assert "ecn" not in quiet and quiet["cnp_dscp"] == 48


def test_nic_checks_from_a_read_only_loop_in_a_real_and_a_check_mode_run():
    from ansible_collections.roce.fabric.plugins.module_utils.qos.host import nic_checks  # pylint: disable=import-outside-toplevel

    results = [
        {"item": {"netdev": "enp1s0"}, "changed": False, "failed": False, "after": {"roce_tos": 98, "trust": "dscp"}},
        {"item": {"netdev": "enp2s0"}, "changed": True, "failed": False,
         "commands": ["rdma_cm default_roce_tos: 98"], "after": {"roce_tos": 98}},
        {"item": {"netdev": "enp3s0"}, "changed": False, "failed": True, "msg": "no RDMA device on enp3s0"},
    ]
    real = nic_checks(results, check_mode=False)
    assert [(c["name"], c["status"]) for c in real] == [
        ("qos enp1s0", "passed"), ("qos enp2s0", "failed"), ("qos enp3s0", "failed")]
    assert real[0]["msg"] == 'enp1s0 agrees with the contract: {"roce_tos": 98, "trust": "dscp"}'
    assert real[1]["msg"] == ("enp2s0 differs from the RoCE QoS contract: rdma_cm default_roce_tos: 98 would fix it "
                              "(run playbooks/host.yml, role roce.fabric.nic_qos)")
    assert real[2]["msg"] == "enp3s0: no RDMA device on enp3s0"
    checked = nic_checks(results, check_mode=True)
    assert [c["status"] for c in checked] == ["passed", "skipped", "skipped"]
    assert checked[1]["msg"].startswith("check mode: what the host stage of this run would set is not there yet; enp2s0")
    assert nic_checks([], check_mode=False) == []
