# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onyx parsers and command generation, on real show output (fixtures/onyx and peers' samples)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import fingerprint
from ansible_collections.roce.fabric.plugins.module_utils.onyx import held_down, parsers, state
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "onyx")

SHOW_ROCE_3_10 = """RoCE mode      : lossless
LLDP           : enabled
Port trust mode: L3

Application TLV:
  Selector: udp
  Protocol: 4791
  Priority: 3

Port congestion-control:
  Mode    : ecn, absolute
  Min (KB): 150
  Max (KB): 1500

PFC              : enabled
switch-priority 3: enabled
"""


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


def empty_have(ports=32):
    have = parsers.parse_running_config("")
    for number in range(1, ports + 1):
        have["ports"]["1/%d" % number] = parsers.empty_port_state()
    return have


SEED = dict(
    roce_mode="lossless",
    vlans=[dict(id=111, access_ports=["1/1-1/4"])],
    ports=[dict(ports="1/1-1/4", mtu=9216, trust="L3", pfc=True,
                ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])],
    pfc=dict(enabled=True, priorities=[3]),
)


def test_versions_compare_as_numbers():
    assert parsers.version_at_least("3.10.1000", "3.6.6000")
    assert not parsers.version_at_least("3.6.5000", "3.6.6000")
    assert parsers.new_json_layout("3.10.4006") and not parsers.new_json_layout("3.6.5000")


@pytest.mark.parametrize("spec, ports", [
    ("1/1-1/4", ["1/1", "1/2", "1/3", "1/4"]),
    ("1/7", ["1/7"]),
    ("Eth1/9", ["1/9"]),
    ("1/1/2", ["1/1/2"]),
    ("1/1/1-1/1/4", ["1/1/1", "1/1/2", "1/1/3", "1/1/4"]),
])
def test_expand_ports(spec, ports):
    assert parsers.expand_ports(spec) == ports


@pytest.mark.parametrize("spec, message", [
    ("1/x", "is not an Ethernet port name"),
    ("0/1", "numbers start at 1"),
    ("1/4-1/1", "runs backwards"),
    ("1/1-2/4", "same slot"),
    ("1/1/1-1/2/1", "same split port"),
    ("1/1/9", "breakouts go up to 8"),
])
def test_bad_port_specs(spec, message):
    with pytest.raises(parsers.OnyxInputError, match=message):
        parsers.expand_ports(spec)


def test_overlapping_ranges_are_refused():
    with pytest.raises(parsers.OnyxInputError, match=r"port 1/3 is given twice .*'1/1-1/4' and '1/3-1/6'"):
        parsers.expand_port_list(["1/1-1/4", "1/3-1/6"])


def test_compress_ports():
    assert parsers.compress_ports(["1/4", "1/2", "1/1", "1/3", "1/7", "1/1/2", "1/1/1", "1/9"]) == ["1/1-1/4", "1/7", "1/9", "1/1/1-1/1/2"]


def test_real_running_config_spine():
    have = parsers.parse_running_config(fixture("running_config_3.9_spine.txt"))
    assert have["release"] == "3.9.3210" and have["hostname"] == "sw-spine-001"
    assert sorted(have["vlans"]) == [1999, 4000, 4091] and have["vlans"][4000]["name"] == "MLAG"
    assert have["pfc"]["enabled"] is True
    assert have["ports"]["1/5"]["speed"] == "40G" and have["ports"]["1/15"]["speed"] == "10G"
    assert have["ports"]["1/13"]["description"] == "sw-spine02-1/10"


def test_real_running_config_access_and_trunk():
    have = parsers.parse_running_config(fixture("running_config_access_trunk.txt"))
    assert have["ports"]["1/1"]["switchport_mode"] == "trunk"
    assert have["ports"]["1/1"]["allowed_vlans"] == {123}
    assert have["ports"]["1/16"]["access_vlan"] == 1000
    assert have["ports"]["1/4"]["shutdown"] is True
    assert have["ports"]["1/18"]["speed"] == "10G"


def test_show_roce():
    assert parsers.parse_show_roce(SHOW_ROCE_3_10) == dict(mode="lossless", trust="L3", pfc=True, ecn=dict(min=150, max=1500))
    assert parsers.parse_show_roce("RoCE mode      : N/A\n")["mode"] == "disabled"


def test_interfaces_json_both_layouts():
    old = [{"Fec": "auto", "MTU": "1500 bytes(Maximum packet size 1522 bytes)", "header": "Eth1/1", "Admin state": "Enabled"}]
    new = [{"Eth1/1": [{"MTU": "9216 bytes(Maximum packet size 9238 bytes)", "Admin state": "Enabled"}]}]
    assert parsers.mtu_from_attrs(parsers.interfaces_from_json(old, "3.6.5000")["1/1"]) == 1500
    assert parsers.mtu_from_attrs(parsers.interfaces_from_json(new, "3.10.4006")["1/1"]) == 9216
    assert parsers.parse_show_version_json([{"Product name": "Onyx", "Product release": "3.10.4006"}]) == "3.10.4006"


def test_seed_setup_from_factory_state():
    commands, toggles = state.generate_commands(state.normalize_want(SEED), empty_have(), "3.10.4006", roce_mode="disabled")
    assert commands == [
        "roce",
        "vlan 111",
        "interface ethernet 1/1-1/4 switchport access vlan 111",
        "interface ethernet 1/1-1/4 mtu 9216 force",
        "interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500",
        "dcb priority-flow-control enable force",
        "dcb priority-flow-control priority 3 enable",
        "interface ethernet 1/1-1/4 dcb priority-flow-control mode on force",
        "interface ethernet 1/1-1/4 qos trust L3",
    ]
    assert len(toggles) == 32


def test_converged_switch_needs_no_command():
    text = "\n".join([
        "## Product release: 3.10.4006",
        "   roce",
        "   vlan 111",
        "   interface ethernet 1/1-1/4 switchport access vlan 111",
        "   interface ethernet 1/1-1/4 mtu 9216 force",
        "   interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500",
        "   dcb priority-flow-control enable force",
        "   dcb priority-flow-control priority 3 enable",
        "   interface ethernet 1/1-1/4 dcb priority-flow-control mode on force",
        "   interface ethernet 1/1-1/4 qos trust L3",
    ])
    have = parsers.parse_running_config(text)
    commands, toggles = state.generate_commands(state.normalize_want(SEED), have, "3.10.4006", roce_mode="lossless")
    assert commands == [] and toggles == []


def test_older_release_shuts_the_port_to_change_mtu():
    want = state.normalize_want(dict(ports=[dict(ports=["1/1-1/2"], mtu=9216)]))
    commands, toggles = state.generate_commands(want, empty_have(), "3.5.1000")
    assert commands == ["interface ethernet 1/1-1/2 shutdown", "interface ethernet 1/1-1/2 mtu 9216", "interface ethernet 1/1-1/2 no shutdown"]
    assert toggles == ["1/1", "1/2"]


def test_older_release_mtu_change_leaves_a_port_its_operator_shut_down_shut():
    """Hardening (issue 15 item 6): 1/1 shut by its operator and 1/2 up were one "shutdown / mtu / no shutdown" group,
    so the MTU change brought 1/1 up (the group counted as down only when all of its ports were)."""
    want = state.normalize_want(dict(ports=[dict(ports=["1/1-1/2"], mtu=9216)]))
    have = empty_have()
    have["ports"]["1/1"]["shutdown"] = True
    result = state.plan(want, have, "3.5.1000")
    assert result["commands"] == ["interface ethernet 1/2 shutdown", "interface ethernet 1/1-1/2 mtu 9216", "interface ethernet 1/2 no shutdown"]
    assert result["shut_for_mtu"] == ["1/2"] and result["restores"] == []


def test_older_release_mtu_change_with_shutdown_wanted_shuts_once_and_stays_down():
    want = state.normalize_want(dict(ports=[dict(ports=["1/1-1/2"], mtu=9216, shutdown=True)]))
    result = state.plan(want, empty_have(), "3.5.1000")
    assert result["commands"] == ["interface ethernet 1/1-1/2 shutdown", "interface ethernet 1/1-1/2 mtu 9216"]
    assert result["shut_for_mtu"] == []


def test_ports_held_down_by_an_earlier_run_come_back_up_once():
    """Hardening (issue 15 item 6): the session dropped after "shutdown" and "mtu 9216"; the re-run found the MTU
    right and sent nothing, leaving the ports down. With the record of what was shut, it brings them up."""
    want = state.normalize_want(dict(ports=[dict(ports=["1/1-1/3"], mtu=9216)]))
    have = empty_have()
    for port in ("1/1", "1/2", "1/3"):
        have["ports"][port].update(mtu=9216, shutdown=True)
    assert state.plan(want, have, "3.5.1000")["commands"] == [], "without the record nothing tells the ports were ours"
    have["ports"]["1/3"]["shutdown"] = False  # brought up by hand meanwhile
    result = state.plan(want, have, "3.5.1000", held_down=["1/1", "1/2", "1/3", "1/9"])
    assert result["commands"] == ["interface ethernet 1/1-1/2 no shutdown"]
    assert result["restores"] == ["1/1", "1/2"]
    assert result["diff"]["before"]["ports"]["1/1"] == dict(shutdown=True) and result["diff"]["after"]["ports"]["1/1"] == dict(shutdown=False)
    # A port the task itself wants shut stays shut.
    keep = state.normalize_want(dict(ports=[dict(ports=["1/1"], shutdown=True), dict(ports=["1/2-1/3"], mtu=9216)]))
    assert state.plan(keep, have, "3.5.1000", held_down=["1/1", "1/2"])["commands"] == ["interface ethernet 1/2 no shutdown"]


def test_held_down_record_is_private_and_names_the_switch(tmp_path):
    record = held_down.HeldDown(str(tmp_path / "onyx"), "sw/../1", 22)
    assert record.load() == []
    record.save(["1/1", "1/2"])
    assert record.path == str(tmp_path / "onyx" / "sw_.._1_22.json")
    assert oct(os.stat(str(tmp_path / "onyx")).st_mode & 0o777) == "0o700" and oct(os.stat(record.path).st_mode & 0o777) == "0o600"
    assert held_down.HeldDown(str(tmp_path / "onyx"), "sw/../1", 22).load() == ["1/1", "1/2"]
    record.save([])
    assert not os.path.exists(record.path) and record.load() == []
    assert held_down.HeldDown("", "sw1", 22).load() == []


def test_held_down_record_planted_as_a_link_is_refused(tmp_path):
    folder = tmp_path / "onyx"
    folder.mkdir(mode=0o700)
    target = tmp_path / "target"
    target.write_text("")
    record = held_down.HeldDown(str(folder), "sw1", 22)
    os.symlink(str(target), record.path)
    with pytest.raises(FabricError, match="symbolic link"):
        record.load()
    assert target.read_text() == ""


def test_one_task_at_a_time_per_switch(tmp_path):
    """Hardening (issue 15 item 8): two tasks against one switch each read, compared and sent in sessions of their
    own at the same time. The second now waits for the first's lock, and fails with nothing sent after lock_timeout."""
    folder = str(tmp_path / "onyx")
    with held_down.SwitchLock(folder, "sw1", 22, 5) as first:
        assert first.waited == 0 and oct(os.stat(first.path).st_mode & 0o777) == "0o600"
        with pytest.raises(FabricError, match="Another task of this controller is configuring sw1:22") as exc:
            with held_down.SwitchLock(folder, "sw1", 22, 0):
                pass
        assert exc.value.details["failure"] == "locked"
        with held_down.SwitchLock(folder, "sw2", 22, 0):
            pass  # another switch is not held up
    with held_down.SwitchLock(folder, "sw1", 22, 0) as again:
        assert again.waited == 0
    with held_down.SwitchLock("", "sw1", 22, 0) as none:
        assert none.path is None


def test_lossy_ecn_worker_setup_and_only_the_given_ports():
    want = state.normalize_want(dict(roce_mode="lossy", ports=[dict(ports="1/1-1/3", ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])]))
    have = empty_have()
    have["ports"]["1/9"]["mtu"] = 4000
    commands, _toggles = state.generate_commands(want, have, "3.10.4006", roce_mode="lossless")
    assert commands == ["roce lossy",
                        "interface ethernet 1/1-1/3 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500"]


@pytest.mark.parametrize("params, message", [
    (dict(roce_mode="fast"), "unknown RoCE mode 'fast'"),
    (dict(vlans=[dict(id=4095, access_ports=["1/1"])]), "VLAN 4095 is outside 1-4094"),
    (dict(vlans=[dict(id=0)]), "VLAN 0 is outside"),
    (dict(ports=[dict(ports="1/1", mtu=9217)]), "MTU 9217 on 1/1 is outside 1500-9216"),
    (dict(ports=[dict(ports="1/1", mtu=1400)]), "MTU 1400"),
    (dict(ports=[dict(ports="1/1", ecn=[dict(traffic_class=3, min_kb=1500, max_kb=150)])]), "ECN minimum 1500 KB is above the maximum 150 KB"),
    (dict(ports=[dict(ports="1/1", ecn=[dict(traffic_class=9, min_kb=1, max_kb=2)])]), "traffic class 9 is outside 0-7"),
    (dict(ports=[dict(ports="1/1-1/4", mtu=9216), dict(ports="1/4", trust="L3")]), "port 1/4 is in two ports entries"),
    (dict(vlans=[dict(id=10, access_ports=["1/1-1/2"]), dict(id=20, access_ports=["1/2"])]), "port 1/2 is an access port of VLAN 10 and of VLAN 20"),
    (dict(ports=[dict(ports="1/1", trust="L4")]), "trust mode 'L4'"),
    (dict(pfc=dict(enabled=True, priorities=[8])), "PFC priorities [8] are outside 0-7"),
    (dict(ports=[dict(ports="eth1")]), "is not an Ethernet port name"),
    # Hardening: a VLAN name that would close the quote and start commands of its own.
    (dict(vlans=[dict(id=111, name='roce"\nno roce\nvlan 1 name "x')]), "VLAN 111 name 'roce\"\\nno roce"),
    (dict(vlans=[dict(id=111, name="two words")]), "is not 1 to 32 letters"),
    (dict(vlans=[dict(id=111, name="x" * 33)]), "is not 1 to 32 letters"),
])
def test_bad_input(params, message):
    with pytest.raises(parsers.OnyxInputError) as exc:
        state.normalize_want(params)
    assert message in str(exc.value)


def test_ports_must_exist():
    want = state.normalize_want(dict(ports=[dict(ports="1/30-1/33", mtu=9216)]))
    with pytest.raises(parsers.OnyxInputError, match="the switch has no port 1/33"):
        state.check_ports_exist(want, empty_have()["ports"])


class RecordingConnection(object):
    """Stands in for a netmiko connection: records every line it is asked to send."""

    def __init__(self, **params):
        self.sent = []

    def enable(self):
        pass

    def find_prompt(self):
        return "switch #"

    def config_mode(self):
        self.sent.append("configure terminal")

    def exit_config_mode(self):
        pass

    def send_config_set(self, commands, **kwargs):
        self.sent.extend(commands)
        return ""

    def send_command(self, command, **kwargs):
        self.sent.append(command)
        return ""


@pytest.mark.parametrize("line", ['vlan 111 name "roce"\nno roce', "show version\r", "vlan 1 name \"a\x1bb\""])
def test_vlan_name_injection_the_session_refuses_control_characters(line):
    """Defence in depth below the input checks: no line with a control character reaches the switch."""
    from ansible_collections.roce.fabric.plugins.module_utils.onyx import transport  # pylint: disable=import-outside-toplevel
    conns = []
    session = transport.OnyxSession("sw", 22, "admin", "pw", connect=lambda **p: conns.append(RecordingConnection(**p)) or conns[-1])
    session.open()
    with pytest.raises(transport.OnyxCliError, match="control character"):
        session.configure(["vlan 111", line])
    with pytest.raises(transport.OnyxCliError, match="control character"):
        session.show(line)
    assert conns[0].sent == [] and session.sent_config == [] and session.sent_show == []


def test_a_changed_host_key_is_named_by_both_fingerprints_and_nothing_is_sent(tmp_path):
    paramiko = pytest.importorskip("paramiko")
    known = tmp_path / "known_hosts"
    known.write_text("")
    from ansible_collections.roce.fabric.plugins.module_utils.onyx import transport  # pylint: disable=import-outside-toplevel
    got, expected = paramiko.ECDSAKey.generate(), paramiko.ECDSAKey.generate()
    seen = {}

    def connect(**params):
        seen.update(params)
        raise paramiko.BadHostKeyException("[127.0.0.1]:2201", got, expected)

    session = transport.OnyxSession("127.0.0.1", 2201, "admin", "pw", connect=connect, known_hosts_file=str(known))
    with pytest.raises(transport.OnyxCliError) as exc:
        session.open()
    assert exc.value.kind == "host_key" and fingerprint(got) in str(exc.value)
    assert fingerprint(expected) in str(exc.value) and str(known) in str(exc.value)
    assert fingerprint(got).startswith("SHA256:") and not fingerprint(got).endswith("=")
    # Checking is on by default: netmiko's strict policy with the controller's and the given known_hosts.
    assert seen["ssh_strict"] is True and seen["system_host_keys"] is True and seen["alt_key_file"] == str(known)
    assert session.logins == 0


def test_a_known_hosts_file_that_is_not_there_is_refused_before_connecting():
    from ansible_collections.roce.fabric.plugins.module_utils.onyx import transport  # pylint: disable=import-outside-toplevel
    tried = []
    session = transport.OnyxSession("192.0.2.11", 22, "admin", "pw", connect=lambda **p: tried.append(p),
                                    known_hosts_file="/nonexistent/roce/known_hosts")
    with pytest.raises(transport.OnyxCliError) as exc:
        session.open()
    assert exc.value.kind == "host_key" and tried == [] and session.logins == 0
    assert "/nonexistent/roce/known_hosts (onyx_known_hosts_file) does not exist" in str(exc.value)
    assert "ssh-keyscan -p 22 192.0.2.11 >> /nonexistent/roce/known_hosts" in str(exc.value)


def test_a_connection_error_carries_the_whole_cause_not_netmikos_first_line():
    """netmiko wraps paramiko's 'Error reading SSH protocol banner' (seen against a port that closes the connection
    at once) in a message whose first line says only where it happened."""
    paramiko = pytest.importorskip("paramiko")
    pytest.importorskip("netmiko")
    from ansible_collections.roce.fabric.plugins.module_utils.onyx import transport  # pylint: disable=import-outside-toplevel

    def connect(**params):
        try:
            try:
                raise EOFError()
            except EOFError as eof:
                raise paramiko.SSHException("Error reading SSH protocol banner") from eof
        except paramiko.SSHException as exc:
            raise transport.NetmikoTimeoutException(
                "\nA paramiko SSHException occurred during connection creation:\n\nError reading SSH protocol banner\n\n"
            ) from exc

    session = transport.OnyxSession("127.0.0.1", 2201, "admin", "pw", connect=connect, host_key_checking=False)
    with pytest.raises(transport.OnyxCliError) as exc:
        session.open()
    assert exc.value.kind == "unreachable"
    assert str(exc.value) == ("Cannot reach 127.0.0.1:2201: A paramiko SSHException occurred during connection "
                              "creation: Error reading SSH protocol banner")


def test_host_key_checking_off_is_explicit():
    from ansible_collections.roce.fabric.plugins.module_utils.onyx import transport  # pylint: disable=import-outside-toplevel
    conns = []
    session = transport.OnyxSession("sw", 22, "admin", "pw", host_key_checking=False,
                                    connect=lambda **p: conns.append(p) or RecordingConnection(**p))
    session.open()
    assert conns[0]["ssh_strict"] is False and conns[0]["system_host_keys"] is False


def as_params(gathered):
    """What state: merged is given: the gathered shape is the module's option shape."""
    return dict(roce_mode=gathered["roce_mode"], vlans=gathered["vlans"], ports=gathered["ports"], pfc=gathered["pfc"])


@pytest.mark.parametrize("name", ["running_config_3.9_spine.txt", "running_config_access_trunk.txt"])
def test_gathered_given_back_as_merged_changes_nothing(name):
    """Issue 36 (5): state gathered returns the switch's RoCE configuration in the module's own option shape; fed
    back to state merged, the one comparison finds nothing to send (real running-configs of the corpus)."""
    have = parsers.parse_running_config(fixture(name))
    got = state.gathered(have, roce_mode="lossless")
    assert got["roce_mode"] == "lossless" and got["ports"]
    want = state.normalize_want(as_params(got))
    changes = state.compare(want, have, roce_mode="lossless")
    assert changes == dict(roce=None, vlans={}, pfc=None, ports={})
    covered = set()
    for entry in got["ports"]:
        covered.update(parsers.expand_port_list(entry["ports"], "gathered"))
    assert covered == set(have["ports"]), "every port the running-config names is in one entry"


def test_before_and_after_come_from_the_same_comparison_as_the_commands():
    have = parsers.parse_running_config(fixture("running_config_access_trunk.txt"))
    want = state.normalize_want(dict(roce_mode="lossless", ports=[dict(ports=["1/1-1/2"], mtu=9216, trust="L3", pfc=True)],
                                     pfc=dict(enabled=True, priorities=[3])))
    planned = state.plan(want, have, "3.10.4006", roce_mode="disabled")
    assert planned["commands"] and planned["before"] != planned["after"]
    assert planned["before"]["roce_mode"] == "disabled" and planned["after"]["roce_mode"] == "lossless"
    after_ports = [e for e in planned["after"]["ports"] if "1/1" in parsers.expand_port_list(e["ports"], "x")][0]
    assert after_ports["mtu"] == 9216 and after_ports["trust"] == "L3" and after_ports["pfc"] is True
    # The state after is the state the commands make: compared with it, the same want has nothing left to send.
    changes = state.compare(want, have, roce_mode="disabled")
    left = state.compare(want, state.applied(have, changes), roce_mode="lossless")
    assert left == dict(roce=None, vlans={}, pfc=None, ports={})
    again = state.plan(want, state.applied(have, changes), "3.10.4006", roce_mode="lossless")
    assert again["commands"] == [] and again["before"] == again["after"] == planned["after"]
