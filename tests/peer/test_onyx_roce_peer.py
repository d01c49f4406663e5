"""roce.fabric.onyx_roce against the project's Onyx simulator over real SSH (netmiko), through the action plugin
that takes the switch's inventory connection variables. Every case reads the switch's state from outside."""

import concurrent.futures
import json
import os
import subprocess

import pytest

from conftest import INVENTORY, LAB, REPO

MODULE = "roce.fabric.onyx_roce"
SEED = dict(
    roce_mode="lossless",
    vlans=[dict(id=111, name="roce", access_ports=["1/1-1/4"])],
    ports=[dict(ports=["1/1-1/4"], mtu=9216, trust="L3", pfc=True, ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])],
    pfc=dict(enabled=True, priorities=[3]),
)


def running_port(switch, port):
    return switch.state()["running"]["ports"][port]


def test_change_then_no_change_then_check_mode(sw1):
    first = sw1.module(MODULE, dict(SEED, save=True), diff=True)
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["logins"] == 1 and first["saved"] is True
    assert first["applied"] == first["commands"] and first["not_applied"] == []
    state = sw1.state()
    assert state["running"]["roce"] == "lossless" and state["running"] == state["saved"]
    assert "111" in state["running"]["vlans"] or 111 in state["running"]["vlans"]
    port = running_port(sw1, "1/3")
    assert port["mtu"] == 9216 and port["access_vlan"] == 111 and port["trust"] == "L3"
    assert running_port(sw1, "1/5")["mtu"] == 1500, "ports that were not given are not touched"
    assert first["toggles_ports"] is True and state["logins"] == 1
    sent = len(sw1.config_lines())

    second = sw1.module(MODULE, dict(SEED, save=True))
    assert second["changed"] is False and second["commands"] == [] and second["logins"] == 1
    assert len(sw1.config_lines()) == sent, "the no-op run sent configuration commands"

    before = sw1.state()["running"]
    check = sw1.module(MODULE, dict(ports=[dict(ports=["1/1-1/4"], mtu=4200)]), check=True)
    assert check["changed"] is True and check["commands"] == ["interface ethernet 1/1-1/4 mtu 4200 force"]
    assert sw1.state()["running"] == before and len(sw1.config_lines()) == sent


def test_older_release_other_json_layout(sw2):
    args = dict(roce_mode="lossy", ports=[dict(ports=["1/1-1/3"], mtu=9216, ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])])
    first = sw2.module(MODULE, args)
    assert first.get("failed") is not True, first
    assert first["release"] == "3.6.5000" and first["changed"] is True
    assert running_port(sw2, "1/2")["mtu"] == 9216 and sw2.state()["running"]["roce"] == "lossy"
    assert sw2.module(MODULE, args)["changed"] is False


@pytest.mark.parametrize("args, message", [
    (dict(ports=[dict(ports=["1/x"], mtu=9216)]), "is not an Ethernet port name"),
    (dict(ports=[dict(ports=["1/1-1/4", "1/4-1/6"], mtu=9216)]), "port 1/4 is given twice"),
    (dict(vlans=[dict(id=4095, access_ports=["1/1"])]), "VLAN 4095 is outside 1-4094"),
    (dict(ports=[dict(ports=["1/1"], mtu=9300)]), "MTU 9300 on 1/1 is outside 1500-9216"),
    (dict(ports=[dict(ports=["1/1"], ecn=[dict(traffic_class=3, min_kb=1500, max_kb=150)])]), "ECN minimum 1500 KB is above the maximum 150 KB"),
    (dict(roce_mode="turbo"), "roce_mode must be one of"),
    # Hardening: no timeout (0 waits forever on a switch that stops answering) or a negative one.
    (dict(roce_mode="lossless", timeout=0), "timeout 0 is outside 1-3600 seconds"),
    (dict(roce_mode="lossless", timeout=-5), "timeout -5 is outside 1-3600 seconds"),
    (dict(roce_mode="lossless", lock_timeout=-1), "lock_timeout -1 is outside 0-86400 seconds"),
    # Hardening: a VLAN name that would end its quotes and add "no roce" and a rename of VLAN 1, then be saved.
    (dict(vlans=[dict(id=111, name='roce"\nno roce\nvlan 1 name "x', access_ports=["1/1"])], save=True), "VLAN 111 name"),
])
def test_bad_input_fails_before_connecting(sw1, args, message):
    before = sw1.state()
    result = sw1.module(MODULE, args)
    assert result.get("failed") is True and message in result["msg"], result
    after = sw1.state()
    assert after["logins"] == before["logins"] and after["running"] == before["running"] and after["saved"] == before["saved"]
    assert sw1.config_lines() == []


def test_port_the_switch_does_not_have(sw1):
    before = sw1.state()
    result = sw1.module(MODULE, dict(ports=[dict(ports=["1/31-1/34"], mtu=9216)]))
    assert result["failed"] is True and "the switch has no port 1/33-1/34" in result["msg"]
    assert sw1.state()["running"] == before["running"] and sw1.config_lines() == []


def test_wrong_credentials(sw1):
    result = sw1.module(MODULE, dict(SEED, password="not-the-password"))
    assert result["failed"] is True and result["failure"] == "auth", result
    assert "not-the-password" not in str(result)
    assert sw1.state()["logins"] == 0


def test_switch_down(sw1):
    result = sw1.module(MODULE, dict(SEED, port=22299, timeout=5))
    assert result.get("unreachable") is True and result["failure"] == "unreachable", result


def test_refused_command_reports_applied_and_converges(sw1):
    sw1.set_faults(reject="mtu 9216")
    result = sw1.module(MODULE, SEED)
    assert result["failed"] is True and "The switch refused 'interface ethernet 1/1-1/4 mtu 9216 force'" in result["msg"]
    assert "vlan 111" in result["applied"] and result["not_applied"][0] == "interface ethernet 1/1-1/4 mtu 9216 force"
    assert running_port(sw1, "1/1")["mtu"] == 1500 and running_port(sw1, "1/1")["access_vlan"] == 111
    sw1.set_faults()
    again = sw1.module(MODULE, SEED)
    assert again["changed"] is True and again["commands"][0] == "interface ethernet 1/1-1/4 mtu 9216 force"
    assert sw1.module(MODULE, SEED)["changed"] is False


def test_connection_dropped_mid_change_converges(sw1):
    sw1.set_faults(drop_after=3)
    result = sw1.module(MODULE, dict(SEED, timeout=5))
    assert result["failed"] is True, result
    assert len(result["applied"]) < len(result["commands"]) and result["not_applied"]
    assert sw1.state()["drops"] == 1
    again = sw1.module(MODULE, SEED)
    assert again.get("failed") is not True and again["changed"] is True
    assert sw1.module(MODULE, SEED)["changed"] is False
    assert running_port(sw1, "1/4")["mtu"] == 9216


# A release before 3.6, where an MTU change needs the port shut down: sw2 restarted on it for one test.
OLD_RELEASE = "3.5.1000"
OLD_PORTS = ["1/1", "1/2", "1/3"]


@pytest.fixture
def sw_old(sw2):
    assert LAB.admin("sw2", "release", OLD_RELEASE) == OLD_RELEASE
    yield sw2
    sw2.reset()


def port_states(switch):
    ports = switch.state()["running"]["ports"]
    return dict((p, (ports[p]["mtu"], ports[p]["shutdown"])) for p in OLD_PORTS)


def test_older_release_refused_mtu_change_brings_the_ports_back_up(sw_old, tmp_path):
    """Hardening (issue 15 item 6): before 3.6 the module sends shutdown, mtu, no shutdown; when the switch refused the
    mtu line, the ports stayed admin-down, and the re-run the error recommends never sent "no shutdown"."""
    args = dict(ports=[dict(ports=["1/1-1/3"], mtu=9216)], record_dir=str(tmp_path / "records"))
    sw_old.set_faults(reject="mtu 9216")
    result = sw_old.module(MODULE, args)
    assert result.get("failed") is True and result["release"] == OLD_RELEASE, result
    assert result["applied"] == ["interface ethernet 1/1-1/3 shutdown"]
    assert result["restored_ports"] == OLD_PORTS and result["held_down_ports"] == []
    assert "brought back up: 1/1, 1/2, 1/3" in result["msg"]
    assert port_states(sw_old) == dict((p, (1500, False)) for p in OLD_PORTS)
    records = [name for name in os.listdir(str(tmp_path / "records")) if name.endswith(".json")]
    assert records == [], "nothing is left to restore (the folder keeps only the switch's lock file)"
    sw_old.set_faults()
    again = sw_old.module(MODULE, args)
    assert again["changed"] is True and again["commands"] == [
        "interface ethernet 1/1-1/3 shutdown", "interface ethernet 1/1-1/3 mtu 9216", "interface ethernet 1/1-1/3 no shutdown"]
    assert port_states(sw_old) == dict((p, (9216, False)) for p in OLD_PORTS)
    assert sw_old.module(MODULE, args)["changed"] is False


def test_older_release_session_dropped_after_the_mtu_change_brings_the_ports_up_next_run(sw_old, tmp_path):
    """Hardening (issue 15 item 6): the session dropped after "shutdown" and "mtu": the re-run found the MTU right,
    reported converged and left the ports down. The ports are recorded before they are shut; the next run (in check
    mode: would) bring them up, and only then is the record gone."""
    records = tmp_path / "records"
    args = dict(ports=[dict(ports=["1/1-1/3"], mtu=9216)], record_dir=str(records))
    sw_old.set_faults(drop_after=2)
    result = sw_old.module(MODULE, dict(args, timeout=5))
    assert result.get("failed") is True and sw_old.state()["drops"] == 1, result
    assert result["held_down_ports"] == OLD_PORTS and "still down; running the task again brings them up" in result["msg"]
    assert port_states(sw_old) == dict((p, (9216, True)) for p in OLD_PORTS)
    record = records / "127.0.0.1_{}.json".format(LAB.peer("sw2").port)
    assert json.loads(record.read_text())["held_down"] == OLD_PORTS
    assert oct(record.stat().st_mode & 0o777) == "0o600" and oct(records.stat().st_mode & 0o777) == "0o700"

    sent = len(sw_old.config_lines())
    check = sw_old.module(MODULE, args, check=True, diff=True)
    assert check["changed"] is True and check["commands"] == ["interface ethernet 1/1-1/3 no shutdown"]
    assert check["restored_ports"] == OLD_PORTS and check["diff"]["after"]["ports"]["1/2"] == dict(shutdown=False)
    assert len(sw_old.config_lines()) == sent and port_states(sw_old) == dict((p, (9216, True)) for p in OLD_PORTS)
    assert record.exists(), "check mode keeps the record"

    again = sw_old.module(MODULE, args)
    assert again["changed"] is True and again["restored_ports"] == OLD_PORTS, again
    assert port_states(sw_old) == dict((p, (9216, False)) for p in OLD_PORTS)
    assert not record.exists()
    assert sw_old.module(MODULE, args)["changed"] is False


def test_two_tasks_against_one_switch_take_turns(sw1, tmp_path):
    """Hardening (issue 15 item 8): two tasks of one controller against the same switch (two plays, or two runs, at
    once) each read, compared and sent in a session of its own at the same time. The second now waits for the
    first's lock; their sessions do not interleave and both changes are made."""
    records = str(tmp_path / "records")
    first = dict(SEED, record_dir=records)
    second = dict(ports=[dict(ports=["1/9"], mtu=4200)], record_dir=records)
    sw1.set_faults(delay=0.3)  # every answer 0.3 s late: each session takes seconds
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = [future.result() for future in [pool.submit(sw1.module, MODULE, args) for args in (first, second)]]
    sw1.set_faults()
    assert all(r.get("failed") is not True for r in results), results
    assert max(r["lock_waited"] for r in results) > 0, [r["lock_waited"] for r in results]
    sessions = [c["session"] for c in sw1.state()["commands"]]
    turns = [s for i, s in enumerate(sessions) if i == 0 or sessions[i - 1] != s]
    assert len(turns) == len(set(turns)), "the two sessions interleaved: %s" % turns
    assert running_port(sw1, "1/2")["mtu"] == 9216 and running_port(sw1, "1/9")["mtu"] == 4200


def test_role_refuses_link_toggling_changes_when_asked(sw1, tmp_path):
    """roce_switch with roce_switch_allow_link_toggle false: an MTU change fails with the ports and commands, nothing is sent."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: sw1\n  gather_facts: false\n  roles:\n    - role: roce.fabric.roce_switch\n"
        "      vars:\n        roce_switch_allow_link_toggle: false\n        roce_switch_roce_mode: null\n"
        "        roce_switch_vlans: []\n        roce_switch_ports: [{ports: [1/7], mtu: 9216}]\n"
        "        roce_switch_trust: null\n        roce_switch_pfc: null\n        roce_switch_ecn: []\n"
    )
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, str(playbook)], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode != 0
    assert "would take links down and up on 1/7" in proc.stdout and "interface ethernet 1/7 mtu 9216 force" in proc.stdout
    assert sw1.config_lines() == [] and running_port(sw1, "1/7")["mtu"] == 1500
    # Hardening (issue 15 item 8): checked in the one session that would send the change, not in a login before it.
    assert sw1.state()["logins"] == 1


def test_a_switch_without_ansible_network_os_is_refused_and_unchanged(sw1, tmp_path):
    """A switch whose inventory names no OS is not taken as Onyx: the role fails naming the variable to set, and the
    switch gets no login and no command."""
    inventory = tmp_path / "hosts.yml"
    known_hosts = os.path.join(LAB.dir, "switches", "known_hosts")
    inventory.write_text(
        "all:\n  hosts:\n    sw1:\n      ansible_host: 127.0.0.1\n      ansible_port: 22201\n      ansible_user: admin\n"
        "      ansible_password: admin\n      onyx_known_hosts_file: %s\n"
        "      roce_switch_ports: [{ports: [1/5-1/6], mtu: 9000}]\n" % known_hosts)
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: sw1\n  gather_facts: false\n  roles:\n    - role: roce.fabric.roce_switch\n")
    before = sw1.state()
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], capture_output=True, text=True, cwd=REPO,
                          check=False)
    assert proc.returncode != 0
    assert "has no ansible_network_os" in proc.stdout, proc.stdout[-3000:]
    after = sw1.state()
    assert after["logins"] == before["logins"] and after["running"] == before["running"]
    assert sw1.config_lines() == []


def switch_check(tmp_path):
    """roce_switch's verify tasks on sw1 (what playbooks/validate.yml runs first): the report's "qos switch" check."""
    playbook = tmp_path / "verify.yml"
    playbook.write_text(
        "- hosts: sw1\n  gather_facts: false\n  tasks:\n    - name: verify\n      ansible.builtin.include_role:\n"
        "        name: roce.fabric.roce_switch\n        tasks_from: verify\n"
        "    - name: show\n      ansible.builtin.debug:\n        var: roce_switch_check\n")
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, str(playbook)], capture_output=True, text=True, cwd=REPO,
                          env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    return [t["hosts"]["sw1"]["roce_switch_check"] for t in tasks if "roce_switch_check" in t["hosts"].get("sw1", {})][-1]


def test_switch_check_for_the_report_names_the_fix_and_sends_nothing(sw1, tmp_path):
    """The validation report's "qos switch" check: a switch without the contract's RoCE mode fails with the command
    that fixes it, and nothing is sent; after the role's change it passes."""
    check = switch_check(tmp_path)
    assert check["name"] == "qos switch" and check["status"] == "failed", check
    assert "sw1 differs from the RoCE QoS contract" in check["msg"] and "would fix it" in check["msg"], check
    assert sw1.config_lines() == [], "the check sent configuration commands"
    # What the role sets of the contract: the RoCE mode, global PFC, the ports' trust, PFC and ECN (not VLANs, MTU).
    qos_ports = [dict((k, v) for k, v in entry.items() if k != "mtu") for entry in SEED["ports"]]
    assert sw1.module(MODULE, dict(roce_mode="lossless", pfc=SEED["pfc"], ports=qos_ports))["changed"] is True
    check = switch_check(tmp_path)
    assert check["status"] == "passed" and "sw1 agrees with the contract: roce lossless" in check["msg"], check
    assert "DSCP 26 on priority 3, PFC on priority 3" in check["msg"], check


def test_switch_with_a_new_host_key_is_refused_and_gets_no_password(sw1):
    """Hardening: a "switch" answering with another host key (impersonated, or replaced) is refused before any
    credential is offered; it sees no password. The explicit opt-out trusts it."""
    before = sw1.state()
    LAB.admin("sw1", "rekey")
    try:
        result = sw1.module(MODULE, dict(roce_mode="lossless", save=True))
        assert result.get("failed") is True and result["failure"] == "host_key", result
        assert "is not the one known for it" in result["msg"] and result["msg"].count("SHA256:") == 2, result["msg"]
        assert "nothing was sent" in result["msg"]
        after = sw1.state()
        assert after["auth_attempts"] == before["auth_attempts"] and after["logins"] == before["logins"]
        assert after["running"] == before["running"] and after["saved"] == before["saved"]
        # host_key_checking false: the operator's explicit choice to trust any key (here in check mode).
        trusted = sw1.module(MODULE, dict(roce_mode="lossless", host_key_checking=False), check=True)
        assert trusted.get("failed") is not True and trusted["changed"] is True, trusted
    finally:
        LAB.admin("sw1", "pin")


def test_switch_not_in_known_hosts_is_refused(sw1, tmp_path):
    """Hardening: an unknown switch is refused with how to pin it; no credential is offered."""
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    before = sw1.state()
    result = sw1.module(MODULE, dict(roce_mode="lossless", known_hosts_file=str(empty)))
    assert result.get("failed") is True and result["failure"] == "host_key", result
    assert "is not in ~/.ssh/known_hosts or %s" % empty in result["msg"] and "ssh-keyscan" in result["msg"], result["msg"]
    assert sw1.state()["auth_attempts"] == before["auth_attempts"]


def test_switch_playbook_takes_one_switch_at_a_time_and_refuses_all_at_once(sw1, sw2, tmp_path):
    """Issue 15 (11): switch.yml had no serial, so every switch of the fabric was changed at once and a change that
    failed on one was made on all. Now roce_switch_serial switches at a time (default 1), checked before anything is
    sent: a batch of every switch, or a value in group_vars that the play keyword cannot read, is refused."""
    site = tmp_path / "site.yml"
    cases = [
        (["-e", "roce_switch_serial=2"], "roce_switch_serial=\"2\" takes 2 of the play's 2 hosts down at once"),
        (["-e", "roce_switch_serial=100%"], "roce_switch_serial=\"100%\" takes 2 of the play's 2 hosts down at once"),
        (["-e", "roce_switch_serial=0"], "roce_switch_serial must be a number of hosts (1 or more)"),
    ]
    for args, message in cases:
        proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, "-l", "sw1,sw2", "playbooks/switch.yml"] + args, capture_output=True,
                              text=True, cwd=REPO, check=False)
        out = proc.stdout
        assert proc.returncode != 0 and message in out and "Nothing was changed." in out, (args, out[-3000:])
        assert "PLAY [RoCE on NVIDIA Spectrum switches" not in out, out[-3000:]
    # A group_vars value alone: Ansible would take batches of 1 and say nothing; the guard names it.
    site.write_text("all:\n  children:\n    roce_switches:\n      vars:\n        roce_switch_serial: 2\n")
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, "-i", str(site), "-l", "sw1,sw2", "playbooks/switch.yml"], capture_output=True,
                          text=True, cwd=REPO, check=False)
    assert proc.returncode != 0 and "roce_switch_serial is 2 for these hosts, but the play takes 1 at a time" in proc.stdout
    assert sw1.config_lines() == [] and sw2.config_lines() == []

    # The default: one switch, then the other; each batch is a play of its own, and sw1 is done before sw2 starts.
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, "-l", "sw1,sw2", "playbooks/switch.yml"], capture_output=True,
                          text=True, cwd=REPO, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    batches = out.split("PLAY [RoCE on NVIDIA Spectrum switches (Onyx, Cumulus Linux)]")[1:]
    assert len(batches) == 2, out[-3000:]
    assert "[sw1]" in batches[0] and "[sw2]" not in batches[0] and "[sw2]" in batches[1] and "[sw1]" not in batches[1]
    assert sw1.config_lines() and sw2.config_lines()


class ClosingPort(object):
    """A TCP port that takes every connection and closes it at once, as a switch whose SSH daemon is not running
    behind a port forward or a dying management plane does: paramiko reads no banner."""

    def __enter__(self):
        import socket
        import threading
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]

        def serve():
            while True:
                try:
                    conn, _peer = self.server.accept()
                except OSError:
                    return
                conn.close()

        threading.Thread(target=serve, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.close()


def two_switch_inventory(tmp_path, dead_port, known_hosts):
    """sw-dead (first: a serial run reaches it first) and the lab's sw1, both Onyx, in roce_switches."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    roce_switches:\n      hosts:\n"
        "        sw-dead: {ansible_host: 127.0.0.1, ansible_port: %d}\n"
        "        sw1: {ansible_host: 127.0.0.1, ansible_port: 22201}\n"
        "      vars:\n        ansible_network_os: onyx\n        ansible_user: admin\n        ansible_password: admin\n"
        "        ansible_command_timeout: 5\n        onyx_known_hosts_file: %s\n"
        "        roce_switch_ports: [{ports: [1/5-1/6], mtu: 9000}]\n" % (dead_port, known_hosts))
    return str(inventory)


def play_json(argv):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, check=False, timeout=600)
    return proc.returncode, json.loads(proc.stdout)


def task_results(out, name):
    return [t["hosts"] for play in out["plays"] for t in play["tasks"] if t["task"]["name"] == name]


def test_check_mode_reads_every_switch_and_ends_with_a_summary_naming_the_one_it_could_not_read(sw1, tmp_path):
    """Issue 36 (4): --check of roce.yml with an unreachable switch went no further than that switch. Now the others
    are read, and the run ends with one summary: what each would change, or why it could not be read, with the
    whole cause (netmiko's first line alone said only where it happened). Nothing is sent to sw1."""
    known = os.path.join(LAB.dir, "switches", "known_hosts")
    with ClosingPort() as dead:
        inventory = two_switch_inventory(tmp_path, dead.port, known)
        rc, out = play_json(["ansible-playbook", "-i", inventory, "playbooks/roce.yml", "--check", "--tags", "switch"])
    assert rc == 0, json.dumps(out)[-3000:]
    lines = task_results(out, "Show the summary")[0]["localhost"]["roce_run_summary.lines"]
    assert lines[0] == "summary, what each host would change (check mode): 1 unreachable, 1 would change"
    # paramiko adds the socket's own error when the port's close arrives as a reset ("[Errno 104] Connection reset by
    # peer"), which depends on timing: the cause up to the banner is what is always there.
    assert lines[1].startswith("sw-dead: switch: unreachable: Cannot reach 127.0.0.1:%d: A paramiko SSHException "
                               "occurred during connection creation: Error reading SSH protocol banner" % dead.port), lines
    # The lab's contract (lossless) brings RoCE, ECN, PFC and trust with the MTU: seven commands, six shown.
    assert len(lines) == 3 and lines[2].startswith("sw1: switch: would change: roce; interface ethernet 1/5-1/6 mtu "
                                                   "9000 force; ") and lines[2].endswith("; ... 1 more"), lines
    assert sw1.config_lines() == [] and running_port(sw1, "1/5")["mtu"] == 1500


def test_a_real_run_stops_at_the_switch_it_cannot_reach_and_reports_it_unreachable(sw1, tmp_path):
    """The real run keeps stopping at a failed switch, before the next one is touched; the recap counts the switch
    as unreachable."""
    known = os.path.join(LAB.dir, "switches", "known_hosts")
    before = sw1.state()
    with ClosingPort() as dead:
        inventory = two_switch_inventory(tmp_path, dead.port, known)
        rc, out = play_json(["ansible-playbook", "-i", inventory, "playbooks/switch.yml"])
    assert rc != 0
    assert out["stats"]["sw-dead"]["unreachable"] == 1 and "sw1" not in out["stats"]
    assert sw1.state()["logins"] == before["logins"] and sw1.config_lines() == []


def test_a_switch_behind_a_jump_host_is_configured_through_it(gpu1, tmp_path):
    """Issue 36 (5): the jump host network users already give Ansible (a ProxyCommand in ansible_ssh_common_args)
    carries the switch's session. The switch listens only on the loopback of the lab host gpu1's namespace, so it
    is reachable only through gpu1's sshd; its host key is checked as without a jump host."""
    lab_key = os.path.join(LAB.dir, "ssh", "id_ed25519")
    with LAB.switch_behind("gpu1", "onyx", 22299) as switch:
        known = tmp_path / "known_hosts"
        known.write_text(switch.known_hosts_entry + "\n")
        proxy = ("ssh -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "
                 "-W %%h:%%p root@10.77.0.11" % lab_key)
        inventory = tmp_path / "hosts.yml"
        common = ("all:\n  hosts:\n    sw-behind:\n      ansible_host: 127.0.0.1\n      ansible_port: 22299\n"
                  "      ansible_user: admin\n      ansible_password: admin\n      ansible_network_os: onyx\n"
                  "      ansible_command_timeout: 10\n      onyx_known_hosts_file: %s\n"
                  "      roce_switch_ports: [{ports: [1/1-1/2], mtu: 9000}]\n" % known)
        inventory.write_text(common + "      ansible_ssh_common_args: '-o ProxyCommand=\"%s\"'\n" % proxy)
        playbook = tmp_path / "play.yml"
        playbook.write_text("- hosts: sw-behind\n  gather_facts: false\n  roles:\n    - role: roce.fabric.roce_switch\n")
        first = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], capture_output=True, text=True,
                               cwd=REPO, check=False)
        assert first.returncode == 0 and "changed=1" in first.stdout, first.stdout[-3000:]
        running = switch.state()["running"]["ports"]
        assert running["1/1"]["mtu"] == 9000 and running["1/2"]["mtu"] == 9000 and running["1/3"]["mtu"] == 1500
        second = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], capture_output=True, text=True,
                                cwd=REPO, check=False)
        assert second.returncode == 0 and "changed=0" in second.stdout, second.stdout[-3000:]
        # Without the jump host the controller cannot reach the switch at all: it is unreachable, nothing changes.
        logins = switch.state()["logins"]
        inventory.write_text(common)
        direct = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], capture_output=True, text=True,
                                cwd=REPO, check=False)
        assert direct.returncode != 0 and "unreachable=1" in direct.stdout, direct.stdout[-3000:]
        assert switch.state()["logins"] == logins


def test_gathered_is_the_switchs_configuration_in_the_modules_own_shape(sw1):
    """Issue 36 (5): state gathered reads the switch (one login, nothing sent) and returns its RoCE configuration as
    the module's options; given back with state merged it changes nothing. Results carry before/after without
    --diff."""
    seeded = sw1.module(MODULE, SEED)
    assert seeded["changed"] is True and seeded["before"]["roce_mode"] == "disabled"
    assert seeded["after"]["roce_mode"] == "lossless" and seeded["after"]["pfc"] == dict(enabled=True, priorities=[3])
    sent = len(sw1.config_lines())
    got = sw1.module(MODULE, dict(state="gathered"))
    assert got.get("failed") is not True and got["changed"] is False and got["logins"] == 1, got
    gathered = got["gathered"]
    assert gathered["roce_mode"] == "lossless"
    vlan = [v for v in gathered["vlans"] if v["id"] == 111]
    assert vlan == [dict(id=111, name="roce", access_ports=["1/1-1/4"], trunk_ports=[])]
    roce_ports = [e for e in gathered["ports"] if e["ports"] == ["1/1-1/4"]]
    assert roce_ports == [dict(ports=["1/1-1/4"], mtu=9216, pfc=True, shutdown=False, trust="L3",
                               ecn=[dict(traffic_class=3, min_kb=150, max_kb=1500)])]
    assert len(sw1.config_lines()) == sent
    again = sw1.module(MODULE, gathered)
    assert again["changed"] is False and again["commands"] == [] and again["before"] == again["after"], again
    assert len(sw1.config_lines()) == sent


def counters_playbook(tmp_path, switches):
    """The roce_switch role's counters tasks as the validate role runs them: in a play of another host (the
    controller here), once, delegated to each switch; the reads it records, as JSON."""
    out = tmp_path / "counters.json"
    playbook = tmp_path / "counters.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_role: {name: roce.fabric.roce_switch, tasks_from: counters}\n"
        "      vars: {roce_switch_counter_hosts: %s, roce_switch_counters_phase: after}\n"
        "    - ansible.builtin.copy: {content: '{{ roce_switch_counters | to_json }}', dest: %s, mode: '0600'}\n"
        % (json.dumps(switches), out))
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, str(playbook)], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())["after"]


def test_gathered_reads_every_ports_counters_and_the_role_reads_them_delegated(sw1, tmp_path):
    """Issue 39: state gathered returns every port's counters from the same show interfaces ethernet it reads (the
    Rx/Tx labels of a real switch's output, in the simulator's table); the roce_switch role's counters tasks read them
    from a play of another host, delegated to the switch with its own inventory connection, and record a switch they
    cannot read with why. Nothing is sent to the switch but reads."""
    sw1.set_faults(counters={"1/2": {"Rx": {"error packets": 25}, "Tx": {"discard packets": 7, "hoq discard packets": 2}}})
    sent = len(sw1.config_lines())
    got = sw1.module(MODULE, dict(state="gathered"))
    assert got.get("failed") is not True and got["changed"] is False, got
    assert got["counters"]["1/2"] == dict(in_errors=25, in_discards=0, in_packets=0, out_errors=0, out_discards=7,
                                          out_hoq_discards=2, out_packets=0)
    assert got["counters"]["1/1"]["in_errors"] == 0 and len(got["counters"]) == len(sw1.state()["running"]["ports"])
    reads = counters_playbook(tmp_path, ["sw1", "nosuchswitch"])
    assert reads["sw1"]["ports"]["1/2"]["in_errors"] == 25 and reads["sw1"]["ports"]["1/3"]["out_discards"] == 0
    assert reads["nosuchswitch"] == {"error": "not a host of the inventory"}
    assert len(sw1.config_lines()) == sent
