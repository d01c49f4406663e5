"""roce.fabric.nic_qos against the lab's namespace hosts over SSH: gpu1 answers as a ConnectX host with MLNX_OFED
(mlnx_qos and mlx5's ECN files), gpu2 as one with the inbox driver (iproute2 dcb), both through lab/qos/qossim.py.
Every case reads the simulator's state from outside."""

import pytest

MODULE = "roce.fabric.nic_qos"
CONTRACT = dict(trust="dscp", pfc=[3], ecn=[3], cnp_dscp=48, cnp_priority=6)


def qos(host, netdev):
    return host.state()["qos"][netdev]


def ecn(host, netdev, point, prio):
    return host.state()["ecn"]["%s/ecn/%s/enable/%d" % (netdev, point, prio)]


def test_mlnx_qos_change_then_no_change_then_check_mode(gpu1):
    before = qos(gpu1, "ens1f0np0")
    assert before["trust"] == "pcp" and before["pfc"] == [0] * 8
    check = gpu1.module(MODULE, dict(CONTRACT, netdev="ens1f0np0", backend="mlnx_qos"), check=True, diff=True)
    assert check["changed"] is True and check["backend"] == "mlnx_qos"
    assert check["commands"] == ["/usr/sbin/mlnx_qos -i ens1f0np0 --trust dscp", "/usr/sbin/mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0"]
    assert check["diff"] == {"before": {"trust": "pcp", "pfc": []}, "after": {"trust": "dscp", "pfc": [3]}}
    assert qos(gpu1, "ens1f0np0") == before

    first = gpu1.module(MODULE, dict(CONTRACT, netdev="ens1f0np0", backend="mlnx_qos"))
    assert first["changed"] is True and first["after"]["trust"] == "dscp"
    after = qos(gpu1, "ens1f0np0")
    assert after["trust"] == "dscp" and after["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    # The ECN files already held the driver's defaults (on for every priority, CNPs on 48 / 6): not written.
    assert not any(c.startswith("write") for c in first["commands"])

    second = gpu1.module(MODULE, dict(CONTRACT, netdev="ens1f0np0", backend="mlnx_qos"))
    assert second["changed"] is False and second["commands"] == []
    assert qos(gpu1, "ens1f0np0") == after
    # The other port was never touched.
    assert qos(gpu1, "ens1f1np1")["trust"] == "pcp"


def test_ecn_and_cnp_files_are_written_only_where_they_differ(gpu1):
    gpu1.write_sys("ens2np0/ecn/roce_rp/enable/3", "0")
    gpu1.write_sys("ens2np0/ecn/roce_np/cnp_dscp", "46")
    result = gpu1.module(MODULE, dict(netdev="ens2np0", ecn=[3], cnp_dscp=48), diff=True)
    assert result["changed"] is True
    assert result["commands"] == ["write /sys/class/net/ens2np0/ecn/roce_np/enable/3: 1",
                                  "write /sys/class/net/ens2np0/ecn/roce_rp/enable/3: 1",
                                  "write /sys/class/net/ens2np0/ecn/roce_np/cnp_dscp: 48"]
    assert ecn(gpu1, "ens2np0", "roce_rp", 3) == "1" and gpu1.state()["ecn"]["ens2np0/ecn/roce_np/cnp_dscp"] == "48"
    assert gpu1.module(MODULE, dict(netdev="ens2np0", ecn=[3], cnp_dscp=48))["changed"] is False


def test_dcb_backend_on_the_inbox_host(gpu2):
    wanted = dict(netdev="ens3f0np0", backend="dcb", trust="dscp", pfc=[3], dscp2prio={"24": 4})
    first = gpu2.module(MODULE, wanted)
    assert first["changed"] is True and first["backend"] == "dcb"
    assert first["commands"] == [
        "/usr/sbin/dcb apptrust set dev ens3f0np0 order dscp pcp",
        "/usr/sbin/dcb pfc set dev ens3f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off",
        "/usr/sbin/dcb app replace dev ens3f0np0 dscp-prio 24:4"]
    state = qos(gpu2, "ens3f0np0")
    assert state["apptrust"] == ["dscp", "pcp"] and state["pfc"][3] == 1 and state["app"] == {"24": 4}
    assert gpu2.module(MODULE, wanted)["changed"] is False


def test_a_reboot_forgets_and_the_role_way_puts_it_back(gpu1):
    gpu1.module(MODULE, dict(CONTRACT, netdev="ens1f0np0"))
    assert qos(gpu1, "ens1f0np0")["trust"] == "dscp"
    reboot = gpu1.module("ansible.builtin.reboot", dict(reboot_timeout=120))
    assert reboot.get("rebooted") is True, reboot
    assert qos(gpu1, "ens1f0np0")["trust"] == "pcp", "a rebooted NIC has the driver's defaults"
    again = gpu1.module(MODULE, dict(CONTRACT, netdev="ens1f0np0"))
    assert again["changed"] is True and qos(gpu1, "ens1f0np0")["trust"] == "dscp"


@pytest.mark.parametrize("host, args, message", [
    ("gpu1", dict(netdev="ens1f0np0", pfc=[8]), "priority 8 is not 0..7"),
    ("gpu1", dict(netdev="ens1f0np0", dscp2prio={"64": 1}), "DSCP 64 is not 0..63"),
    ("gpu1", dict(netdev="ens1f0np0", roce_tos=300), "roce_tos must be 0..255"),
    ("gpu1", dict(netdev="ens1f0np0;reboot", trust="dscp"), "is not an interface name"),
    ("gpu1", dict(netdev="ens9", trust="dscp"), "No network interface ens9"),
    ("gpu1", dict(netdev="ens1f0np0", trust="dscp", backend="none"), "backend is none"),
    ("gpu1", dict(netdev="ens1f0np0", trust="dscp", roce_tos=106), "has no RDMA device"),
    ("gpu1", dict(netdev="ens1f0np0", trust="dscp", traffic_class=106, rdma_device="mlx5_0"), "no traffic class file"),
    ("gpu2", dict(netdev="ens3f0np0", trust="dscp", ecn=[3]), "no DCQCN ECN settings"),
    ("gpu2", dict(netdev="ens3f0np0", trust="dscp", backend="mlnx_qos"), "mlnx_qos is not installed"),
])
def test_bad_input_fails_clearly_and_changes_nothing(lab, host, args, message):
    peer = lab[host]
    peer.reset()
    before = peer.state()
    calls = len(peer.qos_calls())
    result = peer.module(MODULE, args)
    assert result.get("failed") is True, result
    assert message in result["msg"], result["msg"]
    assert peer.state() == before
    assert not [c for c in peer.qos_calls()[calls:] if set(c["argv"]) & {"set", "replace", "--trust", "--pfc", "--dscp2prio"}]
