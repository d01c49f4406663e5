"""The lab's process helpers: a peer that has ended but is not reaped yet counts as stopped; a namespace that a killed
lab left behind does not block the next start."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402  pylint: disable=wrong-import-position

from labutil import NETNS_DIR, add_netns, live_pid, remove_netns, started_at, stop_process, zombie  # noqa: E402  pylint: disable=wrong-import-position


def test_an_ended_process_not_yet_reaped_is_not_running(tmp_path):
    """A peer re-parented to a container's PID 1 stays a zombie until PID 1 reaps it, seconds later in some
    containers: live_pid took it for running, and every stop of a peer waited its full grace period."""
    proc = subprocess.Popen(["sleep", "30"])
    pid_file = tmp_path / "pid"
    pid_file.write_text("%d\n" % proc.pid)
    assert live_pid(str(pid_file)) == proc.pid and not zombie(proc.pid)
    started = time.time()
    stop_process(lambda: live_pid(str(pid_file)))
    # Not reaped: this process is its parent and has not waited for it yet.
    assert zombie(proc.pid) and live_pid(str(pid_file)) is None
    assert time.time() - started < 2
    proc.wait()
    assert not zombie(proc.pid) and live_pid(str(pid_file)) is None


def test_a_pid_file_older_than_the_process_of_its_pid_names_no_process(tmp_path):
    """A peer that ended without the lab's stop leaves its pid file; once the machine's PIDs wrap around, the PID is
    another process's, and a later stop of the peer signalled it (an SSH connection master of a tier running beside,
    say). A process that started after its pid file was written is not the file's: live_pid gives None and the stop
    leaves it running."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = tmp_path / "pid"
        pid_file.write_text("%d\n" % proc.pid)
        started = started_at(proc.pid)
        assert started is not None and abs(started - time.time()) < 5
        assert live_pid(str(pid_file)) == proc.pid
        # The same file, as a peer that ended a minute before this process started would have left it.
        os.utime(str(pid_file), (started - 60, started - 60))
        assert live_pid(str(pid_file)) is None
        stop_process(lambda: live_pid(str(pid_file)))
        assert proc.poll() is None and not zombie(proc.pid)
        # Written a second after the process started (a daemon writes its own once it has forked): still its.
        os.utime(str(pid_file), (started + 1, started + 1))
        assert live_pid(str(pid_file)) == proc.pid
    finally:
        proc.kill()
        proc.wait()
    assert started_at(proc.pid) is None


def ip_ok(*argv):
    return subprocess.run(["ip"] + list(argv), capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_namespace_left_by_a_killed_lab_does_not_block_the_next_start():
    name = "rfab-t%d" % os.getpid()
    link = ("rft%d" % os.getpid())[:14]
    path = os.path.join(NETNS_DIR, name)
    try:
        # Left mounted with no process in it and its veth still there: labctl was killed between start and stop.
        assert ip_ok("netns", "add", name)
        assert ip_ok("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name)
        assert not ip_ok("netns", "add", name)  # what the next start met
        add_netns(name, [link])
        assert ip_ok("netns", "exec", name, "true") and not ip_ok("link", "show", link)
        assert ip_ok("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name)
        # Only the file left: /run kept on a disk image taken while the lab ran, the mount gone with the machine.
        remove_netns(name, [link])
        assert not os.path.lexists(path) and not ip_ok("link", "show", link)
        with open(path, "w"):
            pass
        assert not ip_ok("netns", "add", name)
        add_netns(name)
        assert ip_ok("netns", "exec", name, "true")
    finally:
        remove_netns(name, [link])
    assert not os.path.lexists(path)
