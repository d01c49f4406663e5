# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: one side of a perftest or rping pair test on this host, run inside the module's ModuleRun.

PRIVATE to the roce.fabric collection: may change without notice.

The roce.fabric.perftest module checks its arguments and hands them to ``PerftestSession``, whose four modes are
the test's lifecycle: ``server`` starts the tool in a session of its own (output to a private run directory) and
returns once it listens; ``client`` runs the tool to its end; ``collect`` waits for the server it recorded and
judges its output; ``cleanup`` stops stray tools on a port range. The verdicts are ``validate/perftest.py``'s
``judge``; processes are read and stopped through ``validate/process.py``.
"""

from __future__ import annotations

import json
import os
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.private import (
    PrivateDirError,
    check_private_dir,
    open_private,
    private_dir,
    read_private,
)
from ansible_collections.roce.fabric.plugins.module_utils.common.run import (
    DEFAULT_COMMAND_TIMEOUT,
    MAX_COMMAND_TIMEOUT,
    CommandRunner,
    FabricError,
)
from ansible_collections.roce.fabric.plugins.module_utils.validate.perftest import TOOLS, judge, tool_argv
from ansible_collections.roce.fabric.plugins.module_utils.validate.process import (
    alive,
    parse_cm_listeners,
    session_members,
    stop_group,
    stray_processes,
    tcp_listening,
)

# perftest prints this once it listens (rping prints nothing); with output to a file it shows at exit only.
LISTEN_BANNER = "Waiting for client to connect"
# The shell leads a new session (so the group can be stopped), records its pid, runs the tool under timeout with
# output to a file and keeps its exit code; argv passes as arguments.
SERVER_SCRIPT = ('exec > /dev/null 2>&1 < /dev/null; echo $$ > "$1"; out=$2; shift 2; '
                 '"$@" > "$out" 2>&1; echo $? > "$out.rc"')


def perftest_argument_spec():
    """roce.fabric.perftest's arguments: the module's, and each side a pair_schedule slot runs."""
    return dict(
        tool=dict(type="str", default="ib_write_bw", choices=list(TOOLS)),
        mode=dict(type="str", required=True, choices=["server", "client", "collect", "cleanup"]),
        port=dict(type="int", required=True),
        port_last=dict(type="int"),
        server=dict(type="str"),
        device=dict(type="str"),
        ib_port=dict(type="int", default=1),
        gid_index=dict(type="int"),
        rdma_cm=dict(type="bool", default=True),
        tos=dict(type="int"),
        size=dict(type="int"),
        all_sizes=dict(type="bool", default=False),
        duration=dict(type="int"),
        iterations=dict(type="int"),
        qps=dict(type="int"),
        extra_args=dict(type="list", elements="str", default=[]),
        numa_node=dict(type="int"),
        timeout=dict(type="int", default=60),
        start_timeout=dict(type="int", default=15),
        min_bw_gbps=dict(type="float"),
        max_lat_usec=dict(type="float"),
        fail_on_error=dict(type="bool", default=True),
        kill_stray=dict(type="bool", default=False),
        run_dir=dict(type="path", default="/var/tmp/roce-fabric-perftest"),
        executable=dict(type="path"),
    )


def params_problem(params):
    """Why a side's arguments cannot run (a message), or None."""
    port = params["port"]
    if not 1 <= port <= 65535 or (params["port_last"] is not None and not port <= params["port_last"] <= 65535):
        return "port must be 1-65535 and port_last between port and 65535 (got %s, %s)" % (port, params["port_last"])
    for key in ("timeout", "start_timeout"):
        if params[key] < 1:
            return "%s must be at least 1 second" % key
    for key in ("size", "duration", "iterations", "qps"):
        if params[key] is not None and params[key] < 1:
            return "%s must be a positive number" % key
    run_dir = params["run_dir"] or ""
    if not os.path.isabs(run_dir) or os.path.normpath(run_dir) in ("/", "//") or \
            any(part in (".", "..") for part in run_dir.split("/")) or any(ord(c) < 32 or ord(c) == 127 for c in run_dir):
        return ("run_dir must be an absolute path below / without . or .. parts or control characters (got %r)"
                % run_dir)
    if params["tos"] is not None and not 0 <= params["tos"] <= 255:
        return "tos must be 0-255 (got %s)" % params["tos"]
    if params["mode"] == "client" and not params.get("server"):
        return "mode is client but the following are missing: server"
    return None


class Finished(Exception):
    """The side's outcome is in the result: the run ends (failed when it did not pass and fail_on_error)."""


def runs_tool(pid, tool):
    """True when pid's session still runs ``tool`` (the recorded server, not a process that reused its pid)."""
    for member in set([pid]) | set(session_members(pid)):
        try:
            with open("/proc/%d/cmdline" % member, "rb") as handle:
                words = handle.read().split(b"\0")
        except (IOError, OSError):
            continue
        if any(os.path.basename(word.decode("utf-8", "replace")) == tool for word in words):
            return True
    return False


# What perftest prints when an RDMA-CM connection's setup fails ("RDMA CM event error:", then the event), and the
# seconds before the client's one more try.
CM_SETUP_FAILED = "RDMA CM event error"
CM_RETRY_AFTER = 2


class PerftestSession:
    """One call of roce.fabric.perftest. ``run``: the module's ModuleRun."""

    def __init__(self, run):
        self.run = run
        self.module = run.module
        self.params = run.module.params
        port = self.params["port"]
        self.port = port
        self.pid_file = os.path.join(self.params["run_dir"], "%d.json" % port)
        self.out_file = os.path.join(self.params["run_dir"], "%d.out" % port)
        self.argv = None
        # The tool runs under its own timeout; the runner's bound only stops what outlives that.
        self.runner = CommandRunner(self.module, timeout=min(MAX_COMMAND_TIMEOUT, max(
            DEFAULT_COMMAND_TIMEOUT, self.params["timeout"] + self.params["start_timeout"] + 30)))
        run.update(passed=True, cause=None, skipped=False, stopped=[], msg="")

    # --- the module's entry ---------------------------------------------------------------------------

    def __call__(self, run):
        mode = self.params["mode"]
        try:
            if mode == "cleanup":
                self.cleanup()
            elif self.module.check_mode:
                run.update(skipped=True, msg="check mode: %s %s not run" % (self.params["tool"], mode))
            else:
                if mode in ("server", "client"):
                    self.prepare()
                getattr(self, mode)()
        except Finished:
            pass
        result = run.result
        if not result["passed"] and self.params["fail_on_error"] and not result.get("skipped"):
            run.fail(result["msg"])
        # Said explicitly: Ansible marks a result holding a non-zero rc as failed unless told otherwise.
        run.update(failed=False)

    def fail(self, cause, msg, **values):
        self.run.update(passed=False, cause=cause, msg=msg, **values)
        raise Finished()

    # --- helpers ------------------------------------------------------------------------------------------

    def prepare(self):
        executable = self.params["executable"] or self.module.get_bin_path(self.params["tool"])
        if not executable:
            self.fail("tool_missing", "%s is not installed (package perftest, or rdmacm-utils for rping)" % self.params["tool"])
        self.argv = tool_argv(self.params, executable, self.params["mode"])
        self.run.update(command=CommandRunner.render(self.argv))

    def wrap(self, argv, limit):
        """The tool under timeout (and numactl when asked and present)."""
        prefix = [self.module.get_bin_path("timeout", required=True), "-k", "5", str(limit)]
        node = self.params["numa_node"]
        if node is not None:
            numactl = self.module.get_bin_path("numactl")
            if numactl:
                prefix += [numactl, "--cpunodebind=%d" % node, "--membind=%d" % node]
            else:
                self.module.warn("numactl not found: the test runs without NUMA binding")
        return prefix + argv

    def bounded(self, argv):
        """``runner.run(argv)``; a run stopped at its bound ends with cause ``timeout``."""
        try:
            return self.runner.run(argv)
        except FabricError as exc:
            self.fail("timeout", str(exc))

    def record(self, output, rc):
        """A finished side's verdict, parsed result and summary."""
        passed, cause, msg, parsed, summary = judge(self.params, output, rc)
        self.run.update(passed=passed, cause=cause, msg=msg, rc=rc, output=output)
        if parsed is not None:
            self.run.update(result=parsed)
        if summary is not None:
            self.run.update(summary=summary)

    def listening(self, pid, rdma):
        """True once the server of session ``pid`` listens on the port: its TCP socket for perftest's socket
        exchange, its RDMA-CM id for rping and perftest with ``-R``. None when this host cannot tell (no ``rdma``
        tool, or one without cm_id resources)."""
        if not self.params["rdma_cm"] and self.params["tool"] != "rping":
            # The server's own socket, from the fds of its session: another program on the port is not it.
            return tcp_listening(self.port, [pid] + list(session_members(pid)))
        if not rdma:
            return None
        try:
            rc, out, _err = CommandRunner(self.module, timeout=10).run([rdma, "-j", "resource", "show", "cm_id"])
        except FabricError:
            return None
        listeners = parse_cm_listeners(out) if rc == 0 else None
        if listeners is None:
            return None
        members = set([pid]) | set(session_members(pid))
        return any(owner in members and at == self.port for owner, at in listeners)

    def exit_status(self):
        """The tool's exit status from the wrapper's status file once the whole line is written, else None."""
        text = read_private(self.out_file + ".rc")
        return int(text) if text.endswith("\n") and text.strip().lstrip("-").isdigit() else None

    def remove_files(self):
        for path in (self.pid_file, self.out_file, self.out_file + ".pid", self.out_file + ".rc"):
            if os.path.exists(path):
                os.unlink(path)

    # --- the four modes -------------------------------------------------------------------------------

    def cleanup(self):
        last = self.params["port_last"] if self.params["port_last"] is not None else self.port
        strays = stray_processes(self.port, last, exclude=(os.getpid(), os.getppid()))
        self.run.text_diff("processes on ports %d-%d" % (self.port, last),
                           "\n".join(s["cmdline"] for s in strays) + ("\n" if strays else ""), "")
        for stray in strays:
            self.run.mutate("stop process group %d (%s)" % (stray["pid"], stray["cmdline"]),
                            lambda pid=stray["pid"]: stop_group(pid))
        self.run.update(stopped=strays, msg="stopped %d stray processes on ports %d-%d" % (len(strays), self.port, last))

    def server(self):
        params, port = self.params, self.port
        strays = stray_processes(port, port, exclude=(os.getpid(), os.getppid()))
        if strays and params["kill_stray"]:
            for stray in strays:
                stop_group(stray["pid"])
            self.run.update(stopped=strays)
        elif strays or (not params["rdma_cm"] and params["tool"] != "rping" and tcp_listening(port)):
            owner = strays[0]["cmdline"] + " (pid %d)" % strays[0]["pid"] if strays else "another process"
            self.fail("port_in_use", "port %d is in use by %s" % (port, owner))
        try:
            private_dir(params["run_dir"])
        except PrivateDirError as exc:
            self.fail("unsafe_run_dir", str(exc))
        self.remove_files()
        pid_path = self.out_file + ".pid"
        setsid = self.module.get_bin_path("setsid", required=True)
        sh = self.module.get_bin_path("sh", required=True)
        full = self.wrap(self.argv, params["timeout"] + params["start_timeout"])
        rc, out, err = self.bounded([setsid, "-f", sh, "-c", SERVER_SCRIPT, "perftest-server", pid_path, self.out_file] + full)
        deadline = time.time() + params["start_timeout"]
        pid = None
        while time.time() < deadline and pid is None:
            text = read_private(pid_path).strip()
            pid = int(text) if text.isdigit() else None
            if pid is None:
                time.sleep(0.1)
        if rc != 0 or pid is None:
            self.fail("tool_error", "could not start the server: %s" % (err or out).strip())
        with open_private(self.pid_file, "w") as handle:
            json.dump(dict(pid=pid, command=self.run.result["command"], tool=params["tool"]), handle)
        self.run.update(pid=pid)
        # Wait until it listens (its socket or RDMA-CM id). Where that cannot be read: perftest's banner (seen only
        # once flushed), and rping counts as listening when still alive after a second.
        rdma = self.module.get_bin_path("rdma")
        can_tell = True
        quiet_ok = time.time() + 1.0
        while time.time() < deadline:
            output = read_private(self.out_file)
            if not alive(pid):
                rc = self.exit_status()
                if rc == 0:
                    # Its client came as it started (a launched slot's client tries as soon as its host is ready) and
                    # the test has already run: its output is kept for the collection, which judges it.
                    self.run.update(msg="server on port %d (pid %d) ran its test as it started" % (port, pid))
                    return
                cause = judge(params, output, 1)[1]
                os.unlink(self.pid_file)
                self.fail(cause if cause not in (None, "parse_error") else "tool_error",
                          "server exited at once: %s" % (output.strip().splitlines() or ["no output"])[-1], output=output)
            state = self.listening(pid, rdma) if can_tell else None
            can_tell = state is not None
            if state or LISTEN_BANNER in output or (state is None and params["tool"] == "rping" and time.time() > quiet_ok):
                self.run.update(msg="server listening on port %d (pid %d)" % (port, pid))
                return
            time.sleep(0.2)
        self.run.update(msg="server running on port %d (pid %d); no listen banner within %ds" % (port, pid, params["start_timeout"]))

    def client(self):
        argv = self.wrap(self.argv, self.params["timeout"])
        rc, out, err = self.bounded(argv)
        output = out + (err or "")
        if rc != 0 and CM_SETUP_FAILED in output:
            # The connection's setup failed (perftest's RDMA-CM error handler): a CM exchange that timed out on a
            # loaded host as well as a fabric that refuses it. It is tried once more; a second failure is the verdict,
            # and the record keeps the first one.
            self.run.update(retried=dict(rc=rc, output=output))
            time.sleep(CM_RETRY_AFTER)
            rc, out, err = self.bounded(argv)
            output = out + (err or "")
        self.record(output, rc)

    def collect(self):
        """Only from a private run_dir, and only a process that is still the server it recorded."""
        params, port = self.params, self.port
        try:
            if os.path.lexists(params["run_dir"]):
                check_private_dir(params["run_dir"])
        except PrivateDirError as exc:
            self.fail("unsafe_run_dir", str(exc))
        if not os.path.exists(self.pid_file):
            self.fail("tool_error", "no server was started on port %d (no %s)" % (port, self.pid_file))
        try:
            info = json.loads(read_private(self.pid_file))
            pid = int(info["pid"])
        except (ValueError, KeyError, TypeError) as exc:
            self.fail("tool_error", "unreadable server record %s: %s" % (self.pid_file, exc))
        self.run.update(command=info.get("command"))
        # The wrapper writes the tool's exit status before its shell ends: once that file is there the server is
        # finished, and its pid (an exiting shell whose command line already reads empty, or a pid since reused) is
        # neither checked nor waited on; only the status line itself, which the shell may still be writing.
        status_file = self.out_file + ".rc"
        if not os.path.exists(status_file) and alive(pid) and not runs_tool(pid, params["tool"]) \
                and not os.path.exists(status_file):
            self.fail("tool_error", "pid %d named by %s no longer runs %s; it was left alone" % (pid, self.pid_file, params["tool"]))
        deadline = time.time() + params["timeout"]
        while time.time() < deadline and self.exit_status() is None and (os.path.exists(status_file) or alive(pid)):
            time.sleep(0.2)
        rc = self.exit_status()
        if rc is None and not os.path.exists(status_file) and alive(pid):
            stop_group(pid)
            self.run.update(stopped=[dict(pid=pid, cmdline=info.get("command"), port=port)])
            rc = 124
        elif rc is None:
            rc = 1
        self.record(read_private(self.out_file), rc)
        self.remove_files()
