# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CommandRunner's bound on every command: real processes through AnsibleModule.run_command."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.module_utils.common.run import (
    CommandRunner, FabricError, ModuleRun, command_family, descendants, run_change, start_time)
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import set_module_args


@pytest.fixture
def module():
    with set_module_args(dict(command_timeout=None)):
        yield basic.AnsibleModule(argument_spec=dict(command_timeout=dict(type="int")))


def without_coreutils(module, monkeypatch):
    """A target without coreutils timeout (ESXi's busybox may lack it): the runner stops the process itself."""
    real = module.get_bin_path
    monkeypatch.setattr(module, "get_bin_path", lambda name, *a, **kw: None if name == "timeout" else real(name, *a, **kw))


def sleepers(duration):
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.strip() == "sleep %s" % duration]


@pytest.mark.parametrize("with_coreutils", [True, False])
def test_a_command_that_never_ends_is_stopped_with_its_children(module, monkeypatch, with_coreutils):
    if not with_coreutils:
        without_coreutils(module, monkeypatch)
    runner = CommandRunner(module, timeout=1)
    # Durations no other process has, so the test finds exactly its own sleepers.
    background, foreground = ("%d.%d" % (n, os.getpid()) for n in (700 + with_coreutils, 710 + with_coreutils))
    script = "sleep %s & exec sleep %s" % (background, foreground)
    started = time.monotonic()
    with pytest.raises(FabricError) as raised:
        runner.run(["sh", "-c", script], mutating=True)
    assert time.monotonic() - started < 8
    assert "did not finish within 1 seconds" in str(raised.value)
    assert "may have changed part" in str(raised.value)
    assert raised.value.details["failure"] == "timeout"
    assert runner.executed == runner.mutating == ["sh -c '%s'" % script]
    time.sleep(0.3)
    left = sleepers(background)
    subprocess.run(["pkill", "-f", "sleep %s" % background], check=False)
    assert sleepers(foreground) == []
    # The background child is gone too: timeout(1) signals the whole process group; without it, the runner stops
    # every process below the command (hardening, issue 15: it stopped only the command itself).
    assert left == []


@pytest.mark.parametrize("with_coreutils", [True, False])
def test_a_child_that_detached_from_a_stopped_command_is_stopped_too(module, monkeypatch, with_coreutils):
    """Hardening (issue 15): a child that left the command's process group and its parent (setsid in a subshell
    that exits, a double fork) was re-parented to init, where neither timeout(1) nor the runner's own timer found
    it; holding the command's output open, it also kept run_command waiting until it ended."""
    if not with_coreutils:
        without_coreutils(module, monkeypatch)
    runner = CommandRunner(module, timeout=1)
    detached, foreground = ("%d.%d" % (n, os.getpid()) for n in (720 + with_coreutils, 730 + with_coreutils))
    script = "(setsid sleep %s &); exec sleep %s" % (detached, foreground)
    started = time.monotonic()
    try:
        with pytest.raises(FabricError) as raised:
            runner.run(["sh", "-c", script])
        elapsed = time.monotonic() - started
        time.sleep(0.3)
        left = sleepers(detached)
    finally:
        subprocess.run(["pkill", "-f", "sleep %s" % detached], check=False)
    assert raised.value.details["failure"] == "timeout"
    # Bounded by the timeout, timeout(1)'s grace period and the runner's backstop, not by the detached child.
    assert elapsed < 12, elapsed
    assert left == [] and sleepers(foreground) == []


def test_a_command_family_is_what_it_started_and_what_detached_from_it(tmp_path):
    """The processes a stopped command leaves: below it, and those re-parented to the module (its subreaper) since
    the command started; not the module's older children."""
    for pid, ppid, start in ((1, 0, 1), (50, 1, 10), (60, 50, 20), (61, 60, 21), (70, 50, 30), (71, 70, 31),
                             (40, 50, 5), (41, 40, 6)):
        (tmp_path / str(pid)).mkdir()
        fields = ["S", str(ppid)] + ["0"] * 17 + [str(start), "0"]
        (tmp_path / str(pid) / "stat").write_text("%d (p %d) %s\n" % (pid, pid, " ".join(fields)))
    assert start_time(60, str(tmp_path)) == 20 and start_time(99, str(tmp_path)) == 0
    assert sorted(command_family(60, 20, me=50, proc_root=str(tmp_path))) == [61, 70, 71]
    assert sorted(command_family(None, 20, me=50, proc_root=str(tmp_path))) == [60, 61, 70, 71]
    assert command_family(60, None, me=50, proc_root=str(tmp_path)) == []


def test_descendants_reads_the_process_tree(tmp_path):
    for pid, ppid, comm in ((1, 0, "init"), (10, 1, "sh"), (11, 10, "a) (b"), (12, 11, "sleep"), (20, 1, "other")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text("%d (%s) S %d 1 1 0 -1\n" % (pid, comm, ppid))
    (tmp_path / "self").mkdir()
    assert sorted(descendants(10, str(tmp_path))) == [11, 12]
    assert descendants(12, str(tmp_path)) == [] and descendants(10, str(tmp_path / "missing")) == []


def test_a_command_that_ends_in_time_is_not_touched(module):
    runner = CommandRunner(module, timeout=5)
    rc, out, err = runner.run(["sh", "-c", "echo ok; exit 124"])
    # Its own exit code 124 is not mistaken for the timeout: it ended long before.
    assert (rc, out) == (124, "ok\n")


def test_run_change_records_runs_and_fails_with_the_output(module, tmp_path):
    marker = tmp_path / "made"
    run = ModuleRun(module)
    runner = CommandRunner(module, timeout=5)
    assert run_change(run, runner, ["sh", "-c", "touch %s; echo done" % marker]) == "done\n"
    assert marker.exists() and run.result["changed"] is True and runner.mutating == run.result["commands"]
    with pytest.raises(FabricError, match=r"^making it failed \(rc=3\): nope$") as failed:
        run_change(run, runner, ["sh", "-c", "echo nope >&2; exit 3"], "making it")
    assert failed.value.details["rc"] == 3 and failed.value.details["failed_command"].startswith("sh -c ")
    # Check mode: recorded, not run.
    run.check_mode = True
    assert run_change(run, runner, ["sh", "-c", "rm %s" % marker]) is None and marker.exists()
    assert run.result["commands"][-1] == "sh -c 'rm %s'" % marker


def test_the_option_is_bounded(monkeypatch):
    with set_module_args(dict(command_timeout=0)):
        module = basic.AnsibleModule(argument_spec=dict(command_timeout=dict(type="int")))
    failures = []

    def fail_json(**kw):
        failures.append(kw["msg"])
        raise SystemExit(1)
    monkeypatch.setattr(module, "fail_json", fail_json)
    with pytest.raises(SystemExit):
        CommandRunner(module)
    assert failures == ["command_timeout must be 1 to 86400 seconds, not 0"]


def test_busybox_timeout_is_not_taken_for_coreutils(module, monkeypatch, tmp_path):
    """ESXi's and Alpine's timeout is a BusyBox applet (older ones take -t and no -k): the runner's own timer is used."""
    busybox = tmp_path / "busybox"
    busybox.write_text("")
    applet = tmp_path / "timeout"
    applet.symlink_to(busybox)
    monkeypatch.setattr(module, "get_bin_path", lambda name, *a, **kw: str(applet) if name == "timeout" else None)
    assert CommandRunner(module).timeout_tool() is None
    monkeypatch.setattr(module, "get_bin_path", lambda name, *a, **kw: "/usr/bin/timeout" if name == "timeout" else None)
    assert CommandRunner(module).timeout_tool() == "/usr/bin/timeout"


def test_cause_of_joins_every_line_of_the_chain_once():
    from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import cause_of
    try:
        try:
            raise EOFError()
        except EOFError:
            raise ValueError("Error reading SSH protocol banner")
    except ValueError as inner:
        try:
            raise RuntimeError("\nA paramiko SSHException occurred during connection creation:\n\n"
                               "Error reading SSH protocol banner\n\n") from inner
        except RuntimeError as outer:
            assert cause_of(outer) == ("A paramiko SSHException occurred during connection creation: "
                                       "Error reading SSH protocol banner")
    assert cause_of(TimeoutError()) == "TimeoutError"


@pytest.mark.parametrize("ssh_args, paramiko_proxy, expected", [
    # The forms Ansible's documentation and network guides give for a bastion.
    (['-o ProxyCommand="ssh -W %h:%p -q admin@bastion.example.com"'], None, "ssh -W %h:%p -q admin@bastion.example.com"),
    (["-o StrictHostKeyChecking=no -o ProxyJump=netops@bastion:2222"], None, "ssh -p 2222 -W %h:%p netops@bastion"),
    (["-J bastion1,bastion2"], None, "ssh -J bastion2 -W %h:%p bastion1"),
    (["-o ProxyCommand=none"], None, None),
    (["-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"], None, None),
    ([], "ssh -W %h:%p jump", "ssh -W %h:%p jump"),
    (['-o ProxyCommand="ssh -W %h:%p a"'], "ssh -W %h:%p b", "ssh -W %h:%p b"),
    (None, None, None),
])
def test_a_jump_host_is_taken_as_ansibles_ssh_connections_take_it(ssh_args, paramiko_proxy, expected):
    from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import proxy_command
    assert proxy_command(ssh_args, paramiko_proxy) == expected


def test_proxy_command_tokens():
    from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import substitute
    assert substitute("ssh -W %h:%p -l %r jump 100%%", "192.0.2.11", 22, "admin") == \
        "ssh -W 192.0.2.11:22 -l admin jump 100%"
    assert substitute("nc %h %p %x", "sw", 2222) == "nc sw 2222 %x"


def test_an_oserror_inside_a_change_fails_with_the_commands_run_so_far(module, tmp_path, monkeypatch):
    """Hardening (issue 37, 9): an OSError raised in a module's change (a device gone, a full disk) escaped
    ModuleRun.execute as a traceback, and the commands already run (an array created, a file system made) were not
    reported. It now fails with the error and every command so far."""
    run = ModuleRun(module)
    runner = CommandRunner(module, timeout=5)
    failures = []

    def fail_json(**result):
        failures.append(result)
        raise SystemExit(1)

    monkeypatch.setattr(module, "fail_json", fail_json)

    def body(run):
        run_change(run, runner, ["sh", "-c", "true"], "first")
        with open(str(tmp_path / "missing" / "file")) as handle:
            handle.read()

    with pytest.raises(SystemExit):
        run.execute(body)
    assert len(failures) == 1
    assert failures[0]["msg"].startswith("FileNotFoundError: [Errno 2] No such file or directory")
    assert "after these commands ran: sh -c true" in failures[0]["msg"]
    assert failures[0]["commands"] == ["sh -c true"] and failures[0]["changed"] is True
