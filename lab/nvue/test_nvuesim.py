# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-tests of lab/nvue/nvuesim.py, the NVUE REST API simulator, over HTTPS with its certificate checked.

The shapes it answers are held against the real samples of the corpus (tests/unit/.../fixtures/nvue/): the
applied configuration of a Cumulus Linux 5.5.0 switch and the revision answers of NVIDIA's NVUE API guide.
Run: python3 -m pytest -q -p no:cacheprovider lab/nvue/test_nvuesim.py
"""

import base64
import importlib.util
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import corpus  # noqa: E402  pylint: disable=wrong-import-position
import nvuesim  # noqa: E402  pylint: disable=wrong-import-position
import peer_nvue  # noqa: E402  pylint: disable=wrong-import-position
from peer_nvue import leaf  # noqa: E402  pylint: disable=wrong-import-position

USER, PASSWORD = "cumulus", "sim-Secret-1"


class FakeLab(object):
    def __init__(self, folder):
        self.dir = folder


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def sim(tmp_path):
    port = free_port()
    switch = peer_nvue.NvueSwitch(FakeLab(str(tmp_path)), "leaf9", dict(ansible_host="127.0.0.1", nvue_api_port=port,
                                  ansible_user=USER, ansible_password=PASSWORD, roce_lab_cumulus_version="5.9.2",
                                  roce_lab_cumulus_breakouts=[31]), 0)
    switch.start()
    context = ssl.create_default_context(cafile=switch.ca_files()[0])

    def call(method, path, body=None, auth=(USER, PASSWORD)):
        request = urllib.request.Request("https://127.0.0.1:%d/nvue_v1%s" % (port, path), method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
        if auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % auth).encode()).decode())
        try:
            with urllib.request.urlopen(request, context=context, timeout=5) as response:
                text = response.read()
                return response.status, json.loads(text) if text else {}
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, json.loads(text) if text else {}

    call.switch = switch
    yield call
    switch.stop()


def real(name):
    return json.loads(corpus.body("nvue", name))


def quoted(rev):
    return urllib.parse.quote(rev, safe="")


def test_starts_from_the_real_applied_configuration(sim):
    status, config = sim("GET", "/?rev=applied")
    expected = real("config_applied_5.5.0_vx.json")
    expected["header"]["version"] = "Cumulus Linux 5.9.2"
    assert status == 200 and config == expected


def test_revision_answers_have_the_shapes_of_the_guide(sim):
    status, created = sim("POST", "/revision", {})
    sample = real("revision_create_5.1_doc.json")
    rev = next(iter(created))
    assert status == 200 and rev.startswith("changeset/cumulus/")
    assert created[rev] == next(iter(sample.values()))
    status, staged = sim("PATCH", "/interface/swp1/link?rev=" + quoted(rev), {"mtu": 9216})
    assert status == 200 and staged == {"mtu": 9216}
    assert sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})[1] == \
        real("revision_apply_5.1_doc.json")
    assert sim("GET", "/revision/" + quoted(rev))[1] == real("revision_applied_5.1_doc.json")
    assert sim("GET", "/interface/swp1/link/mtu?rev=applied")[1] == 9216


def test_invalid_configuration_is_refused_with_the_guides_issue_shape(sim):
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"interface": {"swp40": {"link": {"mtu": 9216}}, "swp2": {"link": {"mtu": 99999}}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    status, answer = sim("GET", "/revision/" + quoted(rev))
    sample = real("revision_invalid_5.1_doc.json")
    assert answer["state"] == sample["state"] and answer["transition"]["progress"] == sample["transition"]["progress"]
    issues = answer["transition"]["issue"]
    assert set(issues["0"]) == set(sample["transition"]["issue"]["0"])
    assert set(issues["0"]["data"]) == set(sample["transition"]["issue"]["0"]["data"])
    messages = " ".join(i["message"] for i in issues.values())
    assert "Config invalid at interface.swp40" in messages and "interface.swp2.link.mtu" in messages
    assert "swp40" not in sim("GET", "/interface?rev=applied")[1]


def test_apply_without_the_prompt_answer_aborts_as_the_guide_shows(sim):
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"qos": {"roce": {"enable": "on", "mode": "lossy"}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply"})
    answer = sim("GET", "/revision/" + quoted(rev))[1]
    sample = next(iter(real("revision_ays_fail_5.1_doc.json").values()))
    assert answer == sample
    assert sim("GET", "/qos/roce")[1] == {"enable": "off"}


def test_modes_follow_the_release_and_breakouts_the_cabling(sim):
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"qos": {"roce": {"enable": "on", "mode": "lossless-single-ipool"}},
                                          "interface": {"swp31s2": {"link": {"mtu": 9000}}, "swp30s1": {"link": {"mtu": 9000}}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    issues = sim("GET", "/revision/" + quoted(rev))[1]["transition"]["issue"]
    locations = sorted(i["data"]["location"] for i in issues.values())
    assert locations == ["interface.swp30s1", "qos.roce.mode"]


def test_unset_save_delete_and_authentication(sim):
    assert sim("GET", "/", auth=("cumulus", "wrong"))[0] == 401
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"qos": {"roce": None}, "bridge": {"domain": {"br_default": {"vlan": {"10": None}}}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert "roce" not in sim("GET", "/qos")[1] and sim("GET", "/bridge/domain/br_default/vlan")[1] == {}
    assert sim("PATCH", "/revision/applied", {"state": "save", "auto-prompt": {"ays": "ays_yes"}})[1]["state"] == "save"
    assert sim("GET", "/?rev=startup")[1] == sim("GET", "/?rev=applied")[1]
    other = next(iter(sim("POST", "/revision", {})[1]))
    assert sim("DELETE", "/revision/" + quoted(other))[0] == 204
    assert sim("DELETE", "/revision/" + quoted(rev))[0] == 409
    assert other not in sim("GET", "/revision")[1]


def test_faults_armed_between_requests(sim):
    switch = sim.switch
    switch.fault(apply="hang")
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"qos": {"roce": {"enable": "on", "mode": "lossy"}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert sim("GET", "/revision/" + quoted(rev))[1]["state"] == "applying"
    switch.fault(drop_after=0)
    started = time.monotonic()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        sim("GET", "/")
    assert time.monotonic() - started < 5
    assert switch.state()["applies"] == 0


def test_the_certificate_is_checked(sim):
    context = ssl.create_default_context()
    port = sim.switch.port
    with pytest.raises(ssl.SSLError):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1"):
                pass


def test_an_apply_on_5_9_saves_by_itself_unless_auto_save_is_off(sim):
    """Cumulus Linux 5.9 and later save every apply (system config auto-save on by default, NVUE command reference,
    nv config apply); with auto-save set off, the startup configuration stays as it was until a save."""
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"qos": {"roce": {"enable": "on", "mode": "lossy"}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert sim("GET", "/?rev=startup")[1] == sim("GET", "/?rev=applied")[1] and sim.switch.state()["saves"] == 0
    rev = next(iter(sim("POST", "/revision", {})[1]))
    sim("PATCH", "/?rev=" + quoted(rev), {"system": {"config": {"auto-save": {"enable": "off"}}},
                                          "qos": {"roce": {"enable": "on", "mode": "lossless"}}})
    sim("PATCH", "/revision/" + quoted(rev), {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert sim("GET", "/?rev=applied")[1]["qos"]["roce"]["mode"] == "lossless"
    assert sim("GET", "/?rev=startup")[1]["qos"]["roce"]["mode"] == "lossy"


def test_nv_over_ssh_closes_a_channel_only_after_the_client_and_the_door_keeps_its_fault(tmp_path):
    """sshd answers an exec request before the command's output; paramiko sends that answer only after the server's
    handler returns, so a channel the simulator closed from its worker first could reach the client before the
    answer, and paramiko's client then raised "Channel closed." with the output unread. The simulator's channel
    waits for the client's close. And a fault the door arms is not lost to a request the simulator saves at the
    same time (both take its file lock)."""
    paramiko = pytest.importorskip("paramiko")
    port, ssh_port = free_port(), free_port()
    switch = peer_nvue.NvueSwitch(FakeLab(str(tmp_path)), "leaf8", dict(ansible_host="127.0.0.1", nvue_api_port=port,
                                  ansible_port=ssh_port, ansible_user=USER, ansible_password=PASSWORD,
                                  roce_lab_cumulus_version="5.4.0"), 0)
    switch.start()
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # the test's own simulator on loopback
    try:
        client.connect("127.0.0.1", port=ssh_port, username=USER, password=PASSWORD, allow_agent=False,
                       look_for_keys=False, timeout=10)
        for dummy in range(20):
            _stdin, stdout, _stderr = client.exec_command("nv config diff -o json", timeout=10)
            assert stdout.read().decode().strip() == "{}" and stdout.channel.recv_exit_status() == 0
            time.sleep(0.05)
            assert not stdout.channel.closed, "the simulator closed the channel before the client did"
            stdout.channel.close()
        switch.fault(apply="fail")
        _stdin, stdout, _stderr = client.exec_command("nv config show -o json", timeout=10)
        stdout.read()
        assert switch.state()["faults"]["apply"] == "fail"
    finally:
        client.close()
        switch.stop()


def test_operational_interfaces_carry_the_guides_link_stats_and_the_armed_counters(sim):
    """The operational interface tree has each port's link.stats with the keys of the Cumulus Linux 5.9 guide's
    GET /nvue_v1/interface (the corpus sample), 0 but for what the lab armed; the applied tree has none."""
    guide = set(real("api_interface_stats_5.9_doc.json")["eth0"]["link"]["stats"])
    sim.switch.fault(counters={"swp3": {"in-errors": 25, "carrier-transitions": 3}})
    status, tree = sim("GET", "/interface?rev=operational")
    assert status == 200 and set(tree["swp1"]["link"]["stats"]) == guide
    assert tree["swp3"]["link"]["stats"]["in-errors"] == 25 and tree["swp3"]["link"]["stats"]["carrier-transitions"] == 3
    assert tree["swp1"]["link"]["stats"]["in-errors"] == 0
    # Port 31 is broken out (roce_lab_cumulus_breakouts): its four lanes, not swp31.
    assert "swp31s2" in tree and "swp31" not in tree
    assert "stats" not in (sim("GET", "/interface?rev=applied")[1].get("swp1") or {}).get("link", {})
    assert sim.switch.state()["applies"] == 0


def _ip(*argv):
    return subprocess.run(["ip"] + list(argv), capture_output=True, text=True, check=False)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("lldpd"), reason="a leaf needs root, ip netns and lldpd")
def test_nv_show_interface_lldp_lists_what_the_lab_leaf_of_the_switch_hears():
    """``nv show interface lldp`` is what the lab's leaf of the switch's name hears (lab/rdma/leaf.py: a bridge and
    a real lldpd in a namespace): a host namespace's lldpd cabled into its swp3 is listed with its system name and
    its default port ID (the MAC address), in the layout of NVIDIA's published sample (the collection's parser of
    that sample, nvue/parsers.py lldp_neighbours, reads the lab's through nvue_roce in the VM tiers). Without a leaf
    the table has its header only."""
    tag = os.getpid() % 100000
    name, host_ns, link = "tl%d" % tag, "tlh%d" % tag, "tlv%d" % tag
    # A short folder: a unix socket's path has at most 107 characters, pytest's own folders are longer.
    lab = tempfile.mkdtemp(prefix="tl", dir="/tmp")
    os.chmod(lab, 0o755)  # lldpd's unprivileged user reaches its socket through it, as through the lab's folder
    socket_path = leaf.socket_path(lab, name)
    assert nvuesim.lldp_table(socket_path).splitlines() == [
        "Interface  Speed  Type  Remote Host  Remote Port", "---------  -----  ----  -----------  -----------"]
    host_lldpd = None
    try:
        assert _ip("netns", "add", host_ns).returncode == 0
        assert _ip("link", "add", link, "type", "veth", "peer", "name", "ens1np0", "netns", host_ns).returncode == 0
        leaf.plug(lab, link, name, "swp3")
        _ip("-n", host_ns, "link", "set", "ens1np0", "up")
        mac = _ip("-n", host_ns, "-j", "link", "show", "ens1np0").stdout
        mac = json.loads(mac)[0]["address"]
        conf = os.path.join(lab, "host.conf")
        with open(conf, "w") as handle:
            handle.write("configure system hostname gpu07\nconfigure lldp tx-interval 1\n")
        host_lldpd = subprocess.Popen(["ip", "netns", "exec", host_ns, "lldpd", "-d", "-u", os.path.join(lab, "host.sock"),
                                       "-O", conf, "-I", "ens1np0"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        deadline, rows = time.time() + 30, []
        while time.time() < deadline and not rows:
            rows = [line for line in nvuesim.lldp_table(socket_path).splitlines()[2:] if line.strip()]
            time.sleep(0.5)
        assert [line.split() for line in rows] == [["swp3", "swp", "gpu07", mac]], rows
        # NVIDIA's layout: the header, the rule as wide as each column (the MAC the widest of the last), the row.
        assert nvuesim.lldp_table(socket_path).splitlines() == [
            "Interface  Speed  Type  Remote Host  Remote Port      ", "---------  -----  ----  -----------  " + "-" * 17,
            "swp3              swp   gpu07        " + mac]
    finally:
        if host_lldpd is not None:
            os.killpg(host_lldpd.pid, signal.SIGTERM)
            host_lldpd.wait(timeout=10)
        # The cable out first (both ends of a veth go at once; a namespace's removal frees them later).
        _ip("-n", host_ns, "link", "del", "ens1np0")
        _ip("netns", "del", host_ns)
        leaf.remove_unused(lab)
        shutil.rmtree(lab, ignore_errors=True)
    assert _ip("netns", "pids", leaf.namespace(name)).returncode != 0


def lldp_frame(mac):
    """An LLDP frame with a chassis ID and a port ID (both ``mac``) and a TTL, and no system name: what a NIC's
    firmware LLDP agent sends (IEEE 802.1AB TLVs: 1 chassis ID, subtype 4 MAC; 2 port ID, subtype 3 MAC; 3 TTL)."""
    raw = bytes.fromhex(mac.replace(":", ""))

    def tlv(kind, value):
        return struct.pack("!H", (kind << 9) | len(value)) + value
    payload = tlv(1, b"\x04" + raw) + tlv(2, b"\x03" + raw) + tlv(3, struct.pack("!H", 120)) + tlv(0, b"")
    frame = bytes.fromhex("0180c200000e") + raw + struct.pack("!H", 0x88CC) + payload
    return frame + b"\x00" * max(0, 60 - len(frame))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("lldpd"), reason="a leaf needs root, ip netns and lldpd")
def test_a_neighbour_without_a_system_name_is_listed_by_its_port_id():
    """A NIC that sends only its MAC as chassis and port ID (no system name) cabled into the leaf's swp4: the leaf's
    real lldpd hears it, and ``nv show interface lldp`` lists it with an empty Remote Host and its MAC as Remote Port;
    the collection's parser keeps it (it dropped such rows, and with them the port the cabling check compares)."""
    tag = os.getpid() % 100000
    name, host_ns, link = "tn%d" % tag, "tnh%d" % tag, "tnv%d" % tag
    lab = tempfile.mkdtemp(prefix="tn", dir="/tmp")
    os.chmod(lab, 0o755)
    socket_path = leaf.socket_path(lab, name)
    mac = "0c:42:a1:%02x:%02x:07" % (tag // 256 % 256, tag % 256)
    try:
        assert _ip("netns", "add", host_ns).returncode == 0
        assert _ip("link", "add", link, "type", "veth", "peer", "name", "ens4np0", "netns", host_ns).returncode == 0
        leaf.plug(lab, link, name, "swp4")
        _ip("-n", host_ns, "link", "set", "ens4np0", "address", mac)
        _ip("-n", host_ns, "link", "set", "ens4np0", "up")
        send = ("import socket, sys; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind(('ens4np0', 0)); "
                "s.send(bytes.fromhex(sys.argv[1]))")
        deadline, rows = time.time() + 30, []
        while time.time() < deadline and not rows:
            subprocess.run(["ip", "netns", "exec", host_ns, sys.executable, "-c", send, lldp_frame(mac).hex()],
                           check=True, timeout=10)
            rows = [line for line in nvuesim.lldp_table(socket_path).splitlines()[2:] if line.strip()]
            time.sleep(0.5)
        assert [line.split() for line in rows] == [["swp4", "swp", mac]], rows
        # The collection's own parser of the table (standard library only: loaded from its file).
        spec = importlib.util.spec_from_file_location("nvue_parsers", os.path.join(
            HERE, "..", "..", "plugins", "module_utils", "nvue", "parsers.py"))
        parsers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(parsers)
        table = parsers.lldp_neighbours(nvuesim.lldp_table(socket_path))
        assert table == {"swp4": dict(host=None, port=mac, speed="", type="swp")}, table
    finally:
        _ip("-n", host_ns, "link", "del", "ens4np0")
        _ip("netns", "del", host_ns)
        leaf.remove_unused(lab)
        shutil.rmtree(lab, ignore_errors=True)
    assert _ip("netns", "pids", leaf.namespace(name)).returncode != 0


def test_pfc_stats_are_laid_out_as_nvidia_s_sample_and_carry_what_the_lab_armed():
    """``nv show interface <port> counters qos pfc-stats``: with nothing armed, the table is NVIDIA's published
    example (the corpus sample), line for line, each row's cells padded alike (the example's last line lost its
    trailing spaces in the documentation's code block); armed counters widen their column as NVUE's tables do."""
    sample = corpus.body("nvue", "nv_show_counters_qos_pfc_stats_5.5_doc.txt").splitlines()
    table = nvuesim.pfc_table(None).splitlines()
    assert table[:-1] == sample[:-1] and table[-1].rstrip() == sample[-1] and len(table) == len(sample) == 10
    armed = nvuesim.pfc_table({"3": {"rx-pause-frames": 1234567890123456789, "tx-pause-duration": 7}}).splitlines()
    assert armed[0].split() == list(nvuesim.PFC_COLUMNS) and armed[5].split() == ["3", "1234567890123456789", "0", "0", "7"]
    assert len(armed[1].split()[1]) == 19
