"""roce.fabric.nvue_roce against the project's NVUE simulator (Cumulus Linux) through the action plugin that takes
the switch's inventory connection variables: leaf1 (Cumulus Linux 5.9.2) over the REST API on HTTPS, its certificate
checked against the lab's CA; leaf2 (5.4.0, REST API off) with nv over SSH, its host key pinned. Every case reads
the switch's applied configuration and its request log from outside."""

import json
import os
import subprocess
import time
from urllib.parse import quote

import pytest

from conftest import INVENTORY, LAB, REPO

MODULE = "roce.fabric.nvue_roce"
SEED = dict(
    roce_mode="lossless",
    trust="l3",
    pfc=dict(enabled=True, priorities=[3]),
    ecn=[dict(traffic_class=3, min_bytes=150000, max_bytes=1500000)],
    vlans=[dict(id=111, access_ports=["swp1-4"]), dict(id=112, trunk_ports=["swp31s0-swp31s3"])],
    ports=[dict(ports=["swp1-4", "swp31s0-swp31s3"], mtu=9216)],
)


def port(switch, name):
    return switch.applied()["interface"][name]


def converges(switch, args):
    """The next run after a failure makes the change, and the one after it none."""
    again = switch.module(MODULE, args)
    assert again.get("failed") is not True and again["changed"] is True, again.get("msg", again)
    assert switch.module(MODULE, args)["changed"] is False


def unchanged(switch, before):
    """The switch's applied and startup configuration are as they were, and no revision waits half-staged."""
    after = switch.state()
    assert after["applied"] == before["applied"] and after["startup"] == before["startup"]
    assert after["applies"] == before["applies"]
    assert [r for r, v in after["revisions"].items() if v["state"] == "pending"] == []


def test_change_then_no_change_then_check_mode(leaf1):
    first = leaf1.module(MODULE, dict(SEED, save=True), diff=True)
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["saved"] is True and first["release"] == "5.9.2"
    assert first["revision_state"] == "applied" and first["revision"].startswith("changeset/cumulus/")
    state = leaf1.state()
    # Cumulus Linux 5.9 saves every apply by itself (auto-save): the module sends no save of its own and says so.
    assert first["auto_save"] is True
    assert state["applies"] == 1 and state["saves"] == 0 and state["startup"] == state["applied"]
    assert state["applied"]["qos"]["roce"] == {"enable": "on", "mode": "lossless"}
    assert state["applied"]["qos"]["mapping"]["default-global"]["trust"] == "l3"
    assert state["applied"]["qos"]["congestion-control"]["default-global"]["traffic-class"]["3"]["min-threshold"] == 150000
    assert port(leaf1, "swp3")["bridge"]["domain"]["br_default"]["access"] == 111
    assert port(leaf1, "swp31s2")["bridge"]["domain"]["br_default"]["vlan"] == {"112": {}}
    assert port(leaf1, "swp4")["link"]["mtu"] == 9216 and "swp5" not in state["applied"]["interface"]
    # One revision, staged with one PATCH, applied once (which saved it).
    mutating = ["%s %s" % (r["method"], r["path"]) for r in leaf1.mutating_requests()]
    assert mutating == ["POST /nvue_v1/revision", "PATCH /nvue_v1/", "PATCH /nvue_v1/revision/%s" % quote(first["revision"], safe="")]
    assert first["diff"]["before"]["roce_mode"] == "disabled" and first["diff"]["after"]["ports"]["swp1"]["access"] == 111
    assert first["toggled_ports"][:4] == ["swp1", "swp2", "swp3", "swp4"] and first["switch_wide"] == ["pfc", "roce_mode"]

    second = leaf1.module(MODULE, dict(SEED, save=True), diff=True)
    assert second["changed"] is False and second["commands"] == [] and second["diff"] == dict(before={}, after={})
    assert len(leaf1.mutating_requests()) == 3, "the no-op run changed something"

    before = leaf1.state()
    check = leaf1.module(MODULE, dict(ports=[dict(ports=["swp1-4"], mtu=4200)]), check=True)
    assert check["changed"] is True and check["commands"] == ["nv set interface swp1-4 link mtu 4200"]
    unchanged(leaf1, before)
    assert len(leaf1.mutating_requests()) == 3 and before["revisions"] == leaf1.state()["revisions"]


def test_rendered_needs_no_switch(leaf1):
    result = leaf1.module(MODULE, dict(SEED, state="rendered", host="192.0.2.1"))
    assert result["changed"] is False and result["commands"][:2] == ["nv set qos roce enable on", "nv set qos roce mode lossless"]
    assert leaf1.calls() == []


@pytest.mark.parametrize("args, message", [
    (dict(ports=[dict(ports=["swp1-x"], mtu=9216)]), "'swp1-x' is not a Cumulus port"),
    (dict(ports=[dict(ports=["swp1; nv config apply"], mtu=9216)]), "is not a Cumulus port"),
    (dict(ports=[dict(ports=["swp1-4"], mtu=9216), dict(ports=["swp4"], shutdown=True)]), "swp4 appears in two ports entries"),
    (dict(vlans=[dict(id=3800, access_ports=["swp1"])]), "VLAN 3800 is in 3725-3999"),
    (dict(vlans=[dict(id=4095)]), "VLAN 4095 is outside 1-4094"),
    (dict(ports=[dict(ports=["swp1"], mtu=9300)]), "MTU 9300 of swp1 is outside 552-9216"),
    (dict(ecn=[dict(traffic_class=3, min_bytes=1500000, max_bytes=150000)]), "min_bytes <= max_bytes"),
    (dict(pfc=dict(priorities=[8])), "PFC priorities 8 are outside 0-7"),
    (dict(roce_mode="turbo"), "roce_mode must be one of"),
    (dict(roce_mode="lossless", timeout=0), "timeout 0 is outside 1-3600"),
    (dict(roce_mode="lossless", apply_timeout=-1), "apply_timeout -1 is outside 1-3600"),
])
def test_bad_input_fails_before_connecting(leaf1, args, message):
    before = leaf1.state()
    result = leaf1.module(MODULE, args)
    assert result.get("failed") is True and message in result["msg"], result
    unchanged(leaf1, before)
    assert leaf1.calls() == []


def test_release_without_the_mode_is_refused_before_staging(leaf1):
    before = leaf1.state()
    result = leaf1.module(MODULE, dict(roce_mode="lossless-single-ipool"))
    assert result["failed"] is True and "needs Cumulus Linux 5.12.0 or later" in result["msg"] and "5.9.2" in result["msg"]
    unchanged(leaf1, before)
    assert leaf1.mutating_requests() == []


def test_switch_refuses_a_port_it_does_not_have(leaf1):
    before = leaf1.state()
    result = leaf1.module(MODULE, dict(ports=[dict(ports=["swp33", "swp2s1"], mtu=9216)]))
    assert result["failed"] is True and result["revision_state"] == "invalid", result
    assert "Config invalid at interface.swp33" in result["msg"] and "swp2s1 is not a port" in result["msg"]
    assert "The applied configuration is unchanged" in result["msg"]
    unchanged(leaf1, before)
    assert leaf1.state()["revisions"] == {}, "the refused revision was left behind"


def test_apply_failure_and_hang_leave_the_applied_configuration(leaf1):
    before = leaf1.state()
    leaf1.set_faults(apply="fail")
    failed = leaf1.module(MODULE, SEED)
    assert failed["failed"] is True and failed["revision_state"] == "apply_fail" and "switchd reload failed" in failed["msg"]
    unchanged(leaf1, before)
    leaf1.set_faults(apply="hang")
    hung = leaf1.module(MODULE, dict(SEED, apply_timeout=2))
    assert hung["failed"] is True and "still applying after 2 s" in hung["msg"], hung
    state = leaf1.state()
    assert state["applied"] == before["applied"] and state["applies"] == 0
    leaf1.set_faults()
    converges(leaf1, SEED)


def test_connection_dropped_before_apply_converges(leaf1):
    before = leaf1.state()
    leaf1.set_faults(drop_after=2)  # the read and the revision answer, then silence
    result = leaf1.module(MODULE, dict(SEED, timeout=5))
    assert result.get("unreachable") is True and result["failure"] == "unreachable" and "did not answer" in result["msg"], result
    assert leaf1.state()["applied"] == before["applied"]
    leaf1.set_faults()
    again = leaf1.module(MODULE, SEED)
    assert again.get("failed") is not True and again["changed"] is True


def test_link_toggle_refused_when_not_allowed(leaf1):
    before = leaf1.state()
    result = leaf1.module(MODULE, dict(SEED, allow_link_toggle=False))
    assert result["failed"] is True and "toggle the links of swp1-4" in result["msg"] and "nothing was staged" in result["msg"]
    unchanged(leaf1, before)
    assert leaf1.mutating_requests() == []


def test_wrong_credentials(leaf1):
    result = leaf1.module(MODULE, dict(SEED, password="not-the-password"))
    assert result["failed"] is True and "HTTP 401" in result["msg"], result
    assert "not-the-password" not in str(result)
    assert leaf1.mutating_requests() == []


def test_certificate_not_signed_by_a_trusted_ca_is_refused(leaf1):
    result = leaf1.module(MODULE, dict(SEED, ca_path="/etc/ssl/certs/ca-certificates.crt"))
    assert result["failed"] is True and "certificate" in result["msg"].lower(), result
    assert leaf1.calls() == [], "a request reached a switch whose certificate was not trusted"


def test_switch_down(leaf1):
    result = leaf1.module(MODULE, dict(SEED, port=28799, timeout=5))
    assert result.get("unreachable") is True and result["failure"] == "unreachable" and "did not answer" in result["msg"], result


# --- nv over SSH (leaf2: Cumulus Linux 5.4.0, REST API off) ----------------------------------------------------------

SSH_SEED = dict(
    roce_mode="lossy",
    trust="l3",
    ecn=[dict(traffic_class=3, min_bytes=150000, max_bytes=1500000)],
    vlans=[dict(id=111, access_ports=["swp1-3"])],
    ports=[dict(ports=["swp1-3"], mtu=9216), dict(ports=["swp16"], shutdown=True)],
)


def ssh_commands(switch):
    return [r["path"] for r in switch.calls() if r["method"] == "SSH"]


def test_ssh_change_then_no_change_then_check_mode(leaf2):
    first = leaf2.module(MODULE, dict(SSH_SEED, save=True), diff=True)
    assert first.get("failed") is not True, first
    assert first["changed"] is True and first["release"] == "5.4.0" and first["revision_state"] == "applied"
    state = leaf2.state()
    assert state["applies"] == 1 and state["saves"] == 1 and state["startup"] == state["applied"]
    assert state["applied"]["qos"]["roce"] == {"enable": "on", "mode": "lossy"}
    assert port(leaf2, "swp2")["bridge"]["domain"]["br_default"]["access"] == 111 and port(leaf2, "swp3")["link"]["mtu"] == 9216
    assert port(leaf2, "swp16")["link"]["state"] == {"down": {}}
    ran = ssh_commands(leaf2)
    # The login's pending configuration is read, not detached: nothing was pending, so nothing was thrown away.
    assert ran[0] == "nv config show -r applied -o json" and ran[1] == "nv config diff -o json"
    assert "nv config detach" not in ran
    assert "nv set interface swp1-3 link mtu 9216" in ran and ran[-1] == "nv config save"
    assert "nv config apply -y" in ran and first["requests"] == ran
    assert first["diff"]["after"]["ports"]["swp16"] == {"state": "down"}

    count = len(ssh_commands(leaf2))
    second = leaf2.module(MODULE, dict(SSH_SEED, save=True))
    assert second["changed"] is False and second["commands"] == []
    assert ssh_commands(leaf2)[count:] == ["nv config show -r applied -o json"], "the no-op run changed something"

    before = leaf2.state()
    check = leaf2.module(MODULE, dict(ports=[dict(ports=["swp1-3"], mtu=4200)]), check=True)
    assert check["changed"] is True and check["commands"] == ["nv set interface swp1-3 link mtu 4200"]
    unchanged(leaf2, before)


def test_ssh_switch_refuses_a_port_it_does_not_have(leaf2):
    before = leaf2.state()
    result = leaf2.module(MODULE, dict(ports=[dict(ports=["swp17"], mtu=9216)]))
    assert result["failed"] is True and result["revision_state"] == "invalid", result
    assert "Config invalid at interface.swp17" in result["msg"] and "unchanged" in result["msg"]
    unchanged(leaf2, before)
    assert leaf2.state().get("pending") == {}, "the refused change is still staged"
    assert ssh_commands(leaf2)[-1] == "nv config detach"


def test_ssh_release_gates(leaf2):
    before = leaf2.state()
    result = leaf2.module(MODULE, dict(roce_mode="lossless-single-ipool"))
    assert result["failed"] is True and "needs Cumulus Linux 5.12.0 or later" in result["msg"] and "5.4.0" in result["msg"]
    unchanged(leaf2, before)
    assert ssh_commands(leaf2) == ["nv config show -r applied -o json"]


def test_ssh_hung_apply_is_reported_and_the_next_run_converges(leaf2):
    leaf2.set_faults(apply="hang")
    hung = leaf2.module(MODULE, dict(SSH_SEED, apply_timeout=2))
    assert hung["failed"] is True and "whether the switch applied it is not known" in hung["msg"], hung
    assert "detach it there (nv config detach) first" in hung["msg"], hung["msg"]
    # The simulator holds the apply (a loaded machine may take it after the module gave up): cleared only then,
    # so the apply it took is the hung one, never a real one.
    deadline = time.monotonic() + 30
    while "nv config apply -y" not in ssh_commands(leaf2) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "nv config apply -y" in ssh_commands(leaf2) and leaf2.state()["applies"] == 0
    leaf2.set_faults()
    # The hung apply's change is still pending (the simulator's apply never ends): refused, not applied or thrown away,
    # until the account detaches it; then the next run converges.
    refused = leaf2.module(MODULE, SSH_SEED)
    assert refused["failed"] is True and refused["failure"] == "pending" and leaf2.state()["applies"] == 0, refused
    assert nv_as_the_account("nv config detach") == 0
    converges(leaf2, SSH_SEED)


def test_ssh_unknown_host_key_is_refused_before_login(leaf2, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    result = leaf2.module(MODULE, dict(SSH_SEED, known_hosts_file=str(empty)))
    assert result["failed"] is True and "is not in" in result["msg"] and "nothing was sent" in result["msg"], result
    assert leaf2.calls() == []


def test_simulator_password_is_not_on_its_command_line(cumulus):
    """ps shows a process's argv to any local user: the simulators read their passwords from a file only root reads."""
    for name in ("leaf1", "leaf2"):
        argv = LAB.command_line(name)
        assert "cumulus-Lab-secret" not in " ".join(argv) and "--password" not in argv, argv
        secret = argv[argv.index("--password-file") + 1]
        assert oct(os.stat(secret).st_mode & 0o777) == "0o600"


def test_ssh_wrong_password(leaf2):
    result = leaf2.module(MODULE, dict(SSH_SEED, password="not-the-password"))
    assert result["failed"] is True and "Authentication" in result["msg"] and "not-the-password" not in str(result)
    assert leaf2.calls() == []


# --- the roce_switch role: one play, an Onyx and a Cumulus switch, one set of variables --------------------------------

def play(*args, check=False):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    argv = ["ansible-playbook", "-i", INVENTORY] + list(args) + (["--check", "--diff"] if check else [])
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, check=False)


def test_switch_role_configures_onyx_and_cumulus_in_one_play(sw1, leaf1, tmp_path):
    """playbooks/switch.yml on sw1 (Onyx 3.10) and leaf1 (Cumulus 5.9.2) in one play: the same QoS variables
    (roce_switch_roce_mode, _trust, _pfc, _ecn in host_vars/sw1.yml and host_vars/leaf1.yml), ports in each one's names."""
    proc = play("-l", "sw1,leaf1", "-e", "roce_switch_serial=2", "-e", "roce_allow_all_at_once=true", "playbooks/switch.yml")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.stdout.count("PLAY [RoCE on NVIDIA Spectrum switches") == 1, "not one play"
    running = sw1.state()["running"]
    assert running["roce"] == "lossless" and running["ports"]["1/2"]["trust"] == "L3" and running["ports"]["1/2"]["mtu"] == 9216
    qos = leaf1.applied()["qos"]
    assert qos["roce"] == {"enable": "on", "mode": "lossless"} and qos["mapping"]["default-global"]["trust"] == "l3"
    ecn = qos["congestion-control"]["default-global"]["traffic-class"]["3"]
    assert ecn == {"ecn": "enable", "min-threshold": 150000, "max-threshold": 1500000}
    assert qos["pfc"]["default-global"]["switch-priority"] == {"3": {}}
    assert port(leaf1, "swp31s1")["bridge"]["domain"]["br_default"]["vlan"] == {"112": {}}

    again = play("-l", "sw1,leaf1", "-e", "roce_switch_serial=2", "-e", "roce_allow_all_at_once=true", "playbooks/switch.yml")
    assert again.returncode == 0 and "changed=0" in again.stdout.split("PLAY RECAP")[1], again.stdout[-3000:]
    assert again.stdout.split("PLAY RECAP")[1].count("changed=0") == 2

    # validate.yml's first play: both switches agree with the contract.
    playbook = tmp_path / "verify.yml"
    playbook.write_text("- hosts: sw1,leaf1\n  gather_facts: false\n  tasks:\n    - ansible.builtin.include_role:\n"
                        "        name: roce.fabric.roce_switch\n        tasks_from: verify\n"
                        "    - ansible.builtin.assert:\n        that: roce_switch_check.status == 'passed'\n"
                        "        fail_msg: '{{ roce_switch_check.msg }}'\n")
    checked = play(str(playbook))
    assert checked.returncode == 0, checked.stdout[-3000:]


def test_switch_role_refuses_per_port_qos_on_cumulus_and_changes_nothing(leaf1, tmp_path):
    before = leaf1.state()
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: leaf1\n  gather_facts: false\n  roles:\n    - role: roce.fabric.roce_switch\n"
                        "      vars:\n        roce_switch_ports: [{ports: [swp5], mtu: 9216, trust: L3}]\n")
    proc = play(str(playbook))
    assert proc.returncode != 0 and "Cumulus Linux keeps them per switch" in proc.stdout, proc.stdout[-3000:]
    unchanged(leaf1, before)
    assert leaf1.calls() == []


def test_roce_check_mode_on_the_switches_changes_nothing(sw1, leaf1, leaf2):
    before = [s.state() for s in (leaf1, leaf2)]
    proc = play("-l", "leaf1,leaf2", "-e", "roce_switch_serial=2", "-e", "roce_allow_all_at_once=true", "playbooks/switch.yml", check=True)
    assert proc.returncode == 0 and "changed=1" in proc.stdout, proc.stdout[-3000:]
    for switch, state in zip((leaf1, leaf2), before):
        unchanged(switch, state)
        assert switch.mutating_requests() == [] and state["revisions"] == switch.state()["revisions"]


def nv_as_the_account(line):
    """One nv command on leaf2 as its login account, as someone logged in by hand would run it."""
    import paramiko  # pylint: disable=import-outside-toplevel
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # the lab's own simulator on loopback
    client.connect("127.0.0.1", port=22221, username="cumulus", password="cumulus-Lab-secret", allow_agent=False,
                   look_for_keys=False, timeout=10)
    try:
        _stdin, stdout, _stderr = client.exec_command(line, timeout=10)
        return stdout.channel.recv_exit_status()
    finally:
        client.close()


def test_ssh_session_dropped_while_staging_leaves_the_applied_configuration(leaf2):
    before = leaf2.state()
    leaf2.set_faults(drop_after=3)  # nv config show, nv config diff, one nv set; then the session is cut
    result = leaf2.module(MODULE, dict(SSH_SEED, timeout=5))
    assert result["failed"] is True and "Nothing was applied" in result["msg"], result
    state = leaf2.state()
    assert state["applied"] == before["applied"] and state["applies"] == 0
    leaf2.set_faults()
    # The dropped run's one nv set is still pending: the next run refuses it as any change it did not stage.
    refused = leaf2.module(MODULE, SSH_SEED)
    assert refused["failed"] is True and refused["failure"] == "pending", refused
    assert leaf2.state()["applies"] == 0
    assert nv_as_the_account("nv config detach") == 0
    converges(leaf2, SSH_SEED)
    assert leaf2.state()["pending"] == {}, "staged changes of the dropped run were applied or left behind"


def test_ssh_refuses_changes_the_account_has_pending(leaf2):
    """Issue 37, 11: nv over SSH emptied the login's pending configuration (nv config detach) before staging its own,
    throwing away what someone logged in as the same account had staged by hand. A change pending that this run did
    not stage is refused now, naming the account, and neither applied nor detached."""
    before = leaf2.state()
    assert nv_as_the_account("nv set interface swp9 link mtu 1500") == 0
    result = leaf2.module(MODULE, SSH_SEED)
    assert result["failed"] is True and result["failure"] == "pending", result
    assert "The account cumulus has configuration pending on 127.0.0.1:22221" in result["msg"]
    assert "nothing was sent" in result["msg"] and "swp9" in result["msg"]
    assert [r for r in leaf2.mutating_requests() if r["path"] != "nv set interface swp9 link mtu 1500"] == []
    after = leaf2.state()
    assert after["applied"] == before["applied"] and after["applies"] == 0
    assert list(after["pending"]) == ["cumulus"], "the hand-staged change was detached"
    assert nv_as_the_account("nv config detach") == 0


def leaf1_inventory(tmp_path, extra):
    """leaf1 as a site that uses Ansible's httpapi variables for the NVUE API, not the collection's own."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    leaf1:\n      ansible_host: 127.0.0.1\n      ansible_user: cumulus\n"
        "      ansible_password: cumulus-Lab-secret\n      ansible_network_os: nvue\n      nvue_ca_path: %s\n"
        "      roce_switch_ports: [{ports: [swp5-6], mtu: 9000}]\n%s"
        % (os.path.join(LAB.dir, "switches", "nvue-ca.pem"), extra))
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: leaf1\n  gather_facts: false\n  roles:\n    - role: roce.fabric.roce_switch\n")
    return str(inventory), str(playbook)


def test_the_httpapi_connection_variables_reach_the_nvue_api(leaf1, tmp_path):
    """Issue 36 (5): a site that already talks to its Cumulus switches through Ansible's httpapi connection names
    the API's port and certificate checking with ansible_httpapi_port and ansible_httpapi_validate_certs; the
    module takes them. ansible_httpapi_use_ssl false is refused before any request (the API is HTTPS only)."""
    inventory, playbook = leaf1_inventory(tmp_path, "      ansible_httpapi_port: 28765\n"
                                                    "      ansible_httpapi_validate_certs: true\n"
                                                    "      ansible_command_timeout: 10\n")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, playbook], capture_output=True, text=True, cwd=REPO,
                          check=False)
    assert proc.returncode == 0 and "changed=1" in proc.stdout, proc.stdout[-3000:]
    assert port(leaf1, "swp5")["link"]["mtu"] == 9000
    before = leaf1.state()
    inventory, playbook = leaf1_inventory(tmp_path, "      ansible_httpapi_port: 28765\n"
                                                    "      ansible_httpapi_use_ssl: false\n")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, playbook], capture_output=True, text=True, cwd=REPO,
                          check=False)
    assert proc.returncode != 0 and "the NVUE REST API is served over HTTPS only" in proc.stdout, proc.stdout[-3000:]
    assert len(leaf1.calls()) == len(before["requests"])
    unchanged(leaf1, before)


def test_nv_over_ssh_through_a_jump_host(gpu1, tmp_path):
    """Issue 36 (5): ansible_paramiko_proxy_command (the paramiko connection's jump host) carries the nv session to
    a Cumulus switch that listens only where the lab host gpu1 reaches it; its host key is checked as without it."""
    lab_key = os.path.join(LAB.dir, "ssh", "id_ed25519")
    with LAB.switch_behind("gpu1", "nvue", 22298) as switch:
        known = tmp_path / "known_hosts"
        known.write_text(switch.known_hosts_entry + "\n")
        inventory = tmp_path / "hosts.yml"
        inventory.write_text(
            "all:\n  hosts:\n    leaf-behind:\n      ansible_host: 127.0.0.1\n      ansible_port: 22298\n"
            "      ansible_user: cumulus\n      ansible_password: cumulus-Lab-secret\n      ansible_network_os: nvue\n"
            "      nvue_transport: ssh\n      nvue_known_hosts_file: %s\n"
            "      ansible_paramiko_proxy_command: ssh -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
            " -o LogLevel=ERROR -W %%h:%%p root@10.77.0.11\n"
            "      roce_switch_roce_mode: lossy\n      roce_switch_ports: [{ports: [swp1-2], mtu: 9216}]\n"
            % (known, lab_key))
        playbook = tmp_path / "play.yml"
        playbook.write_text("- hosts: leaf-behind\n  gather_facts: false\n  vars:\n    roce_fabric_qos: {mode: lossy}\n"
                            "  roles:\n    - role: roce.fabric.roce_switch\n")
        first = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], capture_output=True, text=True,
                               cwd=REPO, check=False)
        assert first.returncode == 0 and "changed=1" in first.stdout, first.stdout[-3000:]
        applied = switch.state()["applied"]
        assert applied["interface"]["swp1"]["link"]["mtu"] == 9216 and applied["qos"]["roce"]["mode"] == "lossy"
        second = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], capture_output=True,
                                text=True, cwd=REPO, check=False)
        assert second.returncode == 0 and "changed=0" in second.stdout, second.stdout[-3000:]


@pytest.mark.parametrize("which", ["leaf1", "leaf2"])
def test_gathered_is_the_switchs_configuration_in_the_modules_own_shape(which, request):
    """Issue 36 (5): state gathered reads the applied configuration once (REST on leaf1, nv over SSH on leaf2) and
    returns its RoCE part as the module's options; given back with state merged it changes nothing and creates no
    revision. Results carry before/after without --diff."""
    switch = request.getfixturevalue(which)
    seed = SEED if which == "leaf1" else SSH_SEED
    seeded = switch.module(MODULE, seed)
    assert seeded["changed"] is True and seeded["after"]["roce_mode"] == seed["roce_mode"], seeded
    assert seeded["before"] != seeded["after"]
    before = switch.state()
    got = switch.module(MODULE, dict(state="gathered"))
    assert got.get("failed") is not True and got["changed"] is False, got
    assert got["gathered"]["roce_mode"] == seed["roce_mode"] and got["gathered"]["trust"] == "l3"
    assert switch.mutating_requests() == [r for r in before["requests"] if r["method"] != "GET"
                                          and not (r["method"] == "SSH"
                                                   and r["path"].startswith(("nv config show", "nv config diff")))]
    again = switch.module(MODULE, got["gathered"])
    assert again["changed"] is False and again["commands"] == [] and again["before"] == again["after"], again
    unchanged(switch, before)


@pytest.mark.parametrize("which", ["leaf1", "leaf2"])
def test_gathered_reads_every_ports_counters_over_rest_and_ssh(which, request, tmp_path):
    """Issue 39: state gathered also reads the operational interface tree (GET /nvue_v1/interface?rev=operational on
    leaf1, nv show interface --operational -o json on leaf2) and returns each port's link.stats under the names the
    validation reads; the roce_switch role's counters tasks read them delegated from a play of another host, with
    the switch's LLDP table where the transport reads one (SSH). Reads only: no revision, nothing applied."""
    switch = request.getfixturevalue(which)
    switch.set_faults(counters={"swp3": {"in-errors": 40, "out-drops": 6, "carrier-transitions": 4}})
    before, mutating = switch.state(), switch.mutating_requests()
    got = switch.module(MODULE, dict(state="gathered"))
    assert got.get("failed") is not True and got["changed"] is False, got
    assert got["counters"]["swp3"] == dict(in_errors=40, in_discards=0, in_packets=0, out_errors=0, out_discards=6,
                                           out_packets=0, carrier_transitions=4)
    assert got["counters"]["swp1"]["in_errors"] == 0
    # What the switch hears over LLDP: read over SSH (nv show interface lldp, what the lab's leaf of this name hears,
    # nothing while no VM is cabled into it); over the REST API it is not read.
    if which == "leaf2":
        assert isinstance(got["lldp"], dict) and all(set(v) == {"host", "port", "speed", "type"}
                                                     for v in got["lldp"].values()), got["lldp"]
        assert "nv show interface lldp" in got["requests"]
    else:
        assert "lldp" not in got and "lldp_error" not in got
    # The PFC pauses of the ports asked for: over SSH (leaf2 runs 5.4.0: nv show interface swp3 qos counters
    # pfc-stats), summed over the switch priorities into the port's counters; over REST none, and said why.
    pfc = {"swp3": {"3": {"rx-pause-frames": 9000, "rx-pause-duration": 120}, "4": {"tx-pause-frames": 5}}}
    switch.set_faults(counters={"swp3": {"in-errors": 40}}, pfc=pfc)
    paused = switch.module(MODULE, dict(state="gathered", pause_ports=["swp3", "swp1-2"]))
    assert paused.get("failed") is not True and paused["changed"] is False, paused
    if which == "leaf2":
        assert paused["counters"]["swp3"]["rx_pause"] == 9000 and paused["counters"]["swp3"]["tx_pause"] == 5
        assert paused["counters"]["swp3"]["rx_pause_duration"] == 120 and paused["counters"]["swp1"]["rx_pause"] == 0
        assert "nv show interface swp3 qos counters pfc-stats" in paused["requests"] and "pause_errors" not in paused
    else:
        assert sorted(paused["pause_errors"]) == ["swp1", "swp2", "swp3"] and "rx_pause" not in paused["counters"]["swp3"]
    # A port name that is not one is refused before anything reaches the switch.
    calls = len(switch.calls())
    bad = switch.module(MODULE, dict(state="gathered", pause_ports=["swp3;reboot"]))
    assert bad["failed"] and "nothing was sent" in bad["msg"] and len(switch.calls()) == calls, bad
    out = tmp_path / "counters.json"
    playbook = tmp_path / "counters.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_role: {name: roce.fabric.roce_switch, tasks_from: counters}\n"
        "      vars: {roce_switch_counter_hosts: [%s], roce_switch_pause_ports: {%s: [swp3]}}\n"
        "    - ansible.builtin.copy: {content: '{{ roce_switch_counters | to_json }}', dest: %s, mode: '0600'}\n"
        % (which, which, out))
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, str(playbook)], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    read = json.loads(out.read_text())["before"][which]
    assert read["ports"]["swp3"]["in_errors"] == 40 and ("lldp" in read) == (which == "leaf2"), read.keys()
    assert read["ports"]["swp3"].get("rx_pause") == (9000 if which == "leaf2" else None), read["ports"]["swp3"]
    assert switch.mutating_requests() == mutating
    unchanged(switch, before)
