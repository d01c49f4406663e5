# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.onyx_roce through main(), with a stand-in for netmiko's connection that answers from captured show output."""

from __future__ import annotations

import json
import re

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.onyx import parsers
from ansible_collections.roce.fabric.plugins.module_utils.onyx import transport as onyx_transport
from ansible_collections.roce.fabric.plugins.modules import onyx_roce
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

SHOW_ROCE_OFF = "RoCE mode      : N/A\n"
SHOW_ROCE_LOSSLESS = "RoCE mode      : lossless\nLLDP           : enabled\nPort trust mode: L3\n"


def interfaces(release, ports=32, mtu=1500):
    names = ["1/%d" % n for n in range(1, ports + 1)]
    attrs = {"MTU": "%d bytes(Maximum packet size %d bytes)" % (mtu, mtu + 22), "Admin state": "Enabled"}
    if parsers.new_json_layout(release):
        return json.dumps([{"Eth" + name: [attrs]} for name in names])
    return json.dumps([dict(attrs, header="Eth" + name) for name in names])


class FakeSwitch(object):
    """What the module sees of netmiko: show answers, config lines recorded, optional refusals."""

    def __init__(self, release="3.10.4006", running="", roce=SHOW_ROCE_OFF, reject=None, auth_fails=False):
        self.release = release
        self.running = "##\n## Product release: %s\n##\n%s" % (release, running)
        self.roce = roce
        self.reject = reject
        self.auth_fails = auth_fails
        self.logins = 0
        self.config_lines = []
        self.saved = 0
        self.params = None

    def __call__(self, **params):
        if self.auth_fails:
            raise onyx_transport.NetmikoAuthenticationException("Authentication to device failed.")
        self.params = params
        self.logins += 1
        return self

    def enable(self):
        return ""

    def find_prompt(self):
        # The enable prompt as the Onyx manual prints it.
        return "switch #"

    def send_command(self, command, read_timeout=None, expect_string=None):
        # Every read ends at the prompt found once after login, not at one netmiko looks up again.
        assert expect_string == onyx_transport.prompt_pattern("switch #"), expect_string
        assert re.search(expect_string, "switch (config interface ethernet 1/1-1/4) # "), expect_string
        answers = {
            "show version | json-print": json.dumps({"Product name": "Onyx", "Product release": self.release}),
            "show running-config": self.running,
            "show roce": self.roce,
            "show interfaces ethernet | json-print": interfaces(self.release),
        }
        return answers[command]

    def config_mode(self):
        return ""

    def exit_config_mode(self):
        return ""

    def send_config_set(self, lines, enter_config_mode=True, exit_config_mode=True, read_timeout=None):
        assert enter_config_mode is False and exit_config_mode is False
        line = lines[0]
        if self.reject and re.search(self.reject, line):
            return line + "\n% Invalid input: " + line.split()[-1] + "\n"
        self.config_lines.append(line)
        return line + "\nsw (config) # "

    def save_config(self):
        self.saved += 1
        return "configuration write\nsw (config) # "

    def disconnect(self):
        return None


SEED = dict(
    host="192.0.2.2", username="admin", password="s3cret",
    roce_mode="lossless",
    vlans=[dict(id=111, access_ports=["1/1-1/4"])],
    ports=[dict(ports=["1/1-1/4"], mtu=9216, trust="L3", pfc=True, ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])],
    pfc=dict(enabled=True, priorities=[3]),
)
CONVERGED = "\n".join([
    "   roce", "   vlan 111", "   interface ethernet 1/1-1/4 switchport access vlan 111", "   interface ethernet 1/1-1/4 mtu 9216 force",
    "   interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500",
    "   dcb priority-flow-control enable force", "   dcb priority-flow-control priority 3 enable",
    "   interface ethernet 1/1-1/4 dcb priority-flow-control mode on force", "   interface ethernet 1/1-1/4 qos trust L3",
])


@pytest.fixture
def switch(monkeypatch):
    fake = FakeSwitch()
    install(monkeypatch, fake)
    return fake


def install(monkeypatch, fake):
    monkeypatch.setattr(onyx_transport, "OnyxSSH", fake)
    monkeypatch.setattr(onyx_roce, "NETMIKO_IMPORT_ERROR", None)


def test_seed_setup_one_login_all_commands_then_save(switch):
    result = run_module(onyx_roce.main, dict(SEED, save=True), diff=True)
    assert result["failed"] is False and result["changed"] is True
    assert switch.logins == 1 and result["logins"] == 1
    assert switch.config_lines == result["commands"] == result["applied"]
    assert switch.config_lines[:2] == ["roce", "vlan 111"]
    assert result["not_applied"] == [] and result["saved"] is True and switch.saved == 1
    assert result["toggles_ports"] is True and len(result["toggled_ports"]) == 32
    assert result["diff"]["before"]["roce"] == "disabled" and result["diff"]["after"]["roce"] == "lossless"
    assert result["diff"]["after"]["ports"]["1/1"]["mtu"] == 9216 and result["diff"]["before"]["ports"]["1/1"]["mtu"] == 1500
    # The password went to the connection, and nowhere into the result.
    assert switch.params["password"] == "s3cret" and "s3cret" not in json.dumps(result)


def test_converged_switch_gets_no_config_command(monkeypatch):
    fake = FakeSwitch(running=CONVERGED, roce=SHOW_ROCE_LOSSLESS)
    install(monkeypatch, fake)
    result = run_module(onyx_roce.main, dict(SEED, save=True))
    assert result["changed"] is False and result["commands"] == [] and fake.config_lines == [] and fake.saved == 0


def test_check_mode_sends_nothing(switch):
    result = run_module(onyx_roce.main, SEED, check_mode=True)
    assert result["changed"] is True and len(result["commands"]) == 9
    assert switch.config_lines == [] and "applied" not in result


def test_refused_command_stops_and_reports(monkeypatch):
    fake = FakeSwitch(reject=r"mtu 9216")
    install(monkeypatch, fake)
    result = run_module(onyx_roce.main, SEED)
    assert result["failed"] is True
    assert "The switch refused 'interface ethernet 1/1-1/4 mtu 9216 force' (% Invalid input: force)" in result["msg"]
    assert result["applied"] == ["roce", "vlan 111", "interface ethernet 1/1-1/4 switchport access vlan 111"]
    assert result["not_applied"][0] == "interface ethernet 1/1-1/4 mtu 9216 force" and len(result["not_applied"]) == 6
    assert fake.config_lines == result["applied"]


def test_old_release_json_layout_and_mtu_with_shutdown(monkeypatch):
    fake = FakeSwitch(release="3.5.1000")
    install(monkeypatch, fake)
    result = run_module(onyx_roce.main, dict(host="sw", username="admin", password="x", ports=[dict(ports=["1/5"], mtu=9216)]))
    assert fake.config_lines == ["interface ethernet 1/5 shutdown", "interface ethernet 1/5 mtu 9216", "interface ethernet 1/5 no shutdown"]
    assert result["release"] == "3.5.1000"


def test_port_the_switch_does_not_have(switch):
    result = run_module(onyx_roce.main, dict(host="sw", username="admin", password="x", ports=[dict(ports=["1/31-1/34"], mtu=9216)]))
    assert result["failed"] is True and "the switch has no port 1/33-1/34" in result["msg"]
    assert switch.config_lines == []


@pytest.mark.parametrize("params, message", [
    (dict(vlans=[dict(id=5000, access_ports=["1/1"])]), "VLAN 5000 is outside 1-4094"),
    (dict(ports=[dict(ports=["1/1-1/4", "1/2"], mtu=9216)]), "port 1/2 is given twice"),
    (dict(ports=[dict(ports=["1/1"], ecn=[dict(traffic_class=3, min_kb=900, max_kb=100)])]), "ECN minimum 900 KB is above the maximum 100 KB"),
    (dict(ports=[dict(ports=["ethernet1"], mtu=9216)]), "is not an Ethernet port name"),
])
def test_bad_input_fails_before_connecting(switch, params, message):
    result = run_module(onyx_roce.main, dict(dict(host="sw", username="admin", password="x"), **params))
    assert result["failed"] is True and message in result["msg"] and "nothing was sent" in result["msg"]
    assert switch.logins == 0


def test_wrong_credentials(monkeypatch):
    fake = FakeSwitch(auth_fails=True)
    install(monkeypatch, fake)
    result = run_module(onyx_roce.main, SEED)
    assert result["failed"] is True and result["failure"] == "auth" and "Authentication to 192.0.2.2 as admin failed" in result["msg"]


def test_rendered_needs_no_switch(switch):
    ecn = [dict(traffic_class=3, min_kb=150, max_kb=1500)]
    result = run_module(onyx_roce.main, dict(state="rendered", roce_mode="lossy", ports=[dict(ports=["1/1-1/3"], ecn=ecn)]))
    assert result["commands"] == ["roce lossy", "interface ethernet 1/1-1/3 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500"]
    assert switch.logins == 0


def test_password_or_key_is_required(switch):
    result = run_module(onyx_roce.main, dict(host="sw", username="admin", roce_mode="lossy"))
    assert result["failed"] is True and "password or ssh_key_file" in result["msg"]


def test_converged_switch_shows_an_empty_diff(monkeypatch):
    # The running-config has no 'switchport mode' line (an access port by default): no command, and no diff either.
    fake = FakeSwitch(running=CONVERGED, roce=SHOW_ROCE_LOSSLESS)
    install(monkeypatch, fake)
    result = run_module(onyx_roce.main, dict(SEED, save=True), diff=True)
    assert result["changed"] is False and result["commands"] == []
    assert result["diff"] == dict(before={}, after={})


def test_diff_names_exactly_what_the_commands_change(monkeypatch):
    # A trunk that carries more VLANs than asked: 'add' leaves them, so the diff must not show their removal.
    running = CONVERGED + "\n   interface ethernet 1/9 switchport mode trunk\n   interface ethernet 1/9 switchport trunk allowed-vlan 5,111\n"
    fake = FakeSwitch(running=running, roce=SHOW_ROCE_LOSSLESS)
    install(monkeypatch, fake)
    args = dict(SEED, vlans=[dict(id=111, access_ports=["1/1-1/4"], trunk_ports=["1/9"]), dict(id=112, trunk_ports=["1/9"])])
    result = run_module(onyx_roce.main, args, diff=True)
    assert result["commands"] == ["vlan 112", "interface ethernet 1/9 switchport trunk allowed-vlan add 112"]
    assert result["diff"]["before"] == {"vlans": {"112": None}, "ports": {"1/9": {"allowed_vlans": [5, 111]}}}
    assert result["diff"]["after"] == {"vlans": {"112": {"name": None}}, "ports": {"1/9": {"allowed_vlans": [5, 111, 112]}}}
