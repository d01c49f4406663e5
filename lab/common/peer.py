"""The one base class of the lab's peers.

A peer is a host of the lab inventory with ``roce_lab_peer: <kind>``: it gets the host's variables
and keeps its state in ``<lab dir>/<state_dir>/<host>/``. Each family's peer (``lab/<family>/peer_*.py``)
implements the lifecycle (``start``, ``stop``, ``running``, ``reset``, ``describe``, ``exec_argv``)
and what the door (``lab/door.py``) offers tests: ``state``, ``calls``, ``fault``, ``admin`` and the
files it names in ``artifacts``. What a peer does not offer raises ``LabError``.
"""

from __future__ import annotations

import json
import os
import subprocess

from labutil import live_pid, stop_process, wait_for


class LabError(Exception):
    """A request the lab cannot serve (unknown host, a peer without that capability)."""


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


class Peer(object):
    kind = None
    # The folder under the lab directory where peers of this kind keep their state.
    state_dir = None
    # Whether the peer sits on the lab bridge (network-namespace hosts do; loopback peers do not).
    needs_bridge = True
    # Files the peer writes that tests may read: name -> path under the peer's directory.
    artifacts = {}

    def __init__(self, lab, name, host_vars, index):
        self.lab = lab
        self.name = name
        self.vars = host_vars
        self.index = index
        self.dir = os.path.join(lab.dir, self.state_dir or self.kind, name)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def secret_file(self, name, value):
        """Write a secret (a simulator's login password) to ``<dir>/<name>`` readable by its owner only, and return
        the path: simulators read secrets from files, never from their command line, which any local user can read
        in ``ps``."""
        os.makedirs(self.dir, exist_ok=True)
        path = self.path(name)
        if os.path.exists(path + ".tmp"):
            os.unlink(path + ".tmp")
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("%s\n" % value)
        os.replace(path + ".tmp", path)
        return path

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self, keep_state=False):
        raise NotImplementedError

    def reset(self):
        """Back to the initial state, keeping the peer running."""
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def running(self):
        raise NotImplementedError

    def describe(self):
        return ""

    def exec_argv(self, command):
        raise LabError("%s (%s) has no shell to run commands in" % (self.name, self.kind))

    # --- what the door reads and arms ------------------------------------------------------------------

    def state(self):
        """The peer's state, read from outside the peer."""
        raise LabError("%s (%s) exposes no state" % (self.name, self.kind))

    def calls(self):
        """What the peer's simulator recorded, one dict per call."""
        return read_jsonl(self.path("calls.jsonl"))

    def fault(self, **faults):
        raise LabError("%s (%s) has no faults to arm" % (self.name, self.kind))

    def admin(self, *args):
        raise LabError("%s (%s) has no administration commands" % (self.name, self.kind))

    def reset_calls(self):
        raise LabError("%s (%s) cannot forget its calls" % (self.name, self.kind))

    def command_line(self):
        raise LabError("%s (%s) is no single process on this machine" % (self.name, self.kind))

    def query(self, expr, at=None):
        raise LabError("%s (%s) answers no PromQL" % (self.name, self.kind))

    def query_range(self, expr, start, end, step="1s"):
        raise LabError("%s (%s) answers no PromQL" % (self.name, self.kind))

    def artifact(self, name):
        if name not in self.artifacts:
            raise LabError("%s (%s) has no artifact '%s' (it has: %s)"
                           % (self.name, self.kind, name, ", ".join(sorted(self.artifacts)) or "none"))
        return self.path(self.artifacts[name])


class ProcessPeer(Peer):
    """A peer that is one process on this machine (a simulator on loopback): its PID in ``<dir>/pid``,
    stopped with SIGTERM then SIGKILL, reset by a restart."""

    def pid(self):
        return live_pid(self.path("pid"))

    def command_line(self):
        """The running simulator's argv as any local user reads it (``/proc/<pid>/cmdline``, what ``ps`` shows)."""
        pid = self.pid()
        if pid is None:
            raise LabError("%s (%s) is not running" % (self.name, self.kind))
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]

    def stop(self):
        stop_process(self.pid)

    def reset(self):
        self.stop()
        self.start()

    def spawn(self, argv, log_name, ready, what):
        """Start ``argv`` in a session of its own, output to ``<dir>/<log_name>``; wait until ``ready()``."""
        os.makedirs(self.dir, exist_ok=True)
        log = open(self.path(log_name), "a")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        with open(self.path("pid"), "w") as handle:
            handle.write("%d\n" % proc.pid)
        wait_for(lambda: proc.poll() is not None or ready(), 20, what)
        if proc.poll() is not None:
            raise SystemExit("lab: %s did not start, see %s" % (what, self.path(log_name)))
