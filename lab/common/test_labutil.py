"""The lab's process helpers: a peer that has ended but is not reaped yet counts as stopped."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labutil import live_pid, stop_process, zombie  # noqa: E402  pylint: disable=wrong-import-position


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
