#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: perftest
short_description: Run one side of an RDMA test (rping, ib_write_bw, ib_read_bw, ib_send_lat, ...) between two hosts
version_added: 1.0.0
description:
  - Runs the server or the client side of a perftest benchmark (C(ib_write_bw), C(ib_read_bw), C(ib_send_bw),
    C(ib_write_lat), C(ib_read_lat), C(ib_send_lat)) or of C(rping), so that a play can orchestrate a test
    across two hosts; the server and client tasks of one pair use the same O(port).
  - O(mode=server) starts the server in its own session under C(timeout), waits until it listens (or
    exits with an error such as a port in use) and returns at once. It listens once its RDMA-CM id is in
    the LISTEN state on O(port) (C(rdma resource show cm_id), for rping and O(rdma_cm=true)) or its TCP
    socket listens (perftest's socket exchange); the tool's own banner stays in its output buffer while
    the output goes to a file. Without the C(rdma) tool the module falls back to the banner, and for rping
    to the server being alive after a second. O(mode=client) runs the client to the
    end under C(timeout). O(mode=collect) waits for the server started on O(port) to finish, stops it
    (its whole process group) when O(timeout) passes, parses its output and removes its files.
    O(mode=cleanup) stops stray servers of these tools still holding a port in O(port) to O(port_last).
  - Output is parsed into numbers (bandwidth in Gb/s whatever the tool printed, latencies in usec) and
    judged against O(min_bw_gbps) or O(max_lat_usec). A failed test names its cause (C(port_in_use),
    C(unreachable), C(no_device), C(timeout), C(completion_error), C(tool_error), C(parse_error),
    C(below_threshold)) and returns the exact command line to reproduce it.
  - With O(fail_on_error=false) a failed test is returned with RV(passed=false) instead of failing the
    task, so a validation run can go on with the next pair.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  check_mode:
    support: full
    details: In check mode no benchmark runs (RV(skipped) is true); O(mode=cleanup) reports the processes it would stop.
  diff_mode:
    support: full
    details: Only O(mode=cleanup) changes anything; its diff lists the stray processes before and after.
  idempotent:
    support: partial
    details:
      - A benchmark is a measurement and leaves nothing behind (O(mode=collect) reaps the server and removes its
        files), so O(mode=server), O(mode=client) and O(mode=collect) report no change; O(mode=cleanup) reports a
        change only when it stopped a process.
  platform:
    description: Runs on a Linux host with RDMA devices.
    support: full
    platforms: posix
options:
  tool:
    description: The program to run.
    type: str
    choices: [rping, ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat]
    default: ib_write_bw
  mode:
    description: Which side to run, or collect a server's result, or stop stray servers.
    type: str
    choices: [server, client, collect, cleanup]
    required: true
  port:
    description:
      - TCP or RDMA-CM port of the test (C(-p)). Server, client and collect of one pair use the same port;
        pairs that run at the same time on one host need different ports.
    type: int
    required: true
  port_last:
    description: With O(mode=cleanup), the last port of the range to clean (default O(port)).
    type: int
  server:
    description:
      - With O(mode=client), the server's address (its RoCE IPv4 address with O(rdma_cm=true)).
      - With O(mode=server) and O(tool=rping), the address to bind (default all addresses).
    type: str
  device:
    description: RDMA device (C(-d)), for example V(mlx5_0) or V(rxe0). Default lets the tool pick the first one.
    type: str
  ib_port:
    description: Port of the RDMA device (C(-i)).
    type: int
    default: 1
  gid_index:
    description: GID index (C(-x)), the RoCE v2 index from M(roce.fabric.rdma_facts). Not used with O(rdma_cm=true),
      where the connection manager picks the GID of the address.
    type: int
  rdma_cm:
    description: Connect through the RDMA connection manager (C(-R)), as RoCE deployments do. Ignored by C(rping), which always uses it.
    type: bool
    default: true
  tos:
    description:
      - The ToS byte (IP DSCP and ECN bits) of the test's RoCE packets, for example V(106) for DSCP 26 with ECT(0), so
        that the test runs in the class the fabric protects. With O(rdma_cm=true) the tool's C(-T) (C(--tos)),
        else C(--tclass) (the GRH traffic class).
      - Ignored by C(rping), which has no such option; it uses the port's RDMA-CM default ToS
        (M(roce.fabric.nic_qos) sets it).
    type: int
  size:
    description: Message size in bytes (C(-s)). Ignored when O(all_sizes=true).
    type: int
  all_sizes:
    description: Run every size from 2 bytes to 8 MiB (C(-a)), one row each, for a bandwidth-versus-size plot.
    type: bool
    default: false
  duration:
    description: Seconds each size runs (C(-D)); bandwidth tests only. Without it the tool's iteration count is used.
    type: int
  iterations:
    description: Iterations per size (C(-n)); for C(rping) the number of pings (C(-C)).
    type: int
  qps:
    description: Number of queue pairs (C(-q)); bandwidth tests only.
    type: int
  extra_args:
    description: Further arguments passed to the tool as they are (no shell).
    type: list
    elements: str
    default: []
  numa_node:
    description: Run the tool bound to this NUMA node's CPUs and memory (C(numactl --cpunodebind --membind)) when C(numactl) exists.
    type: int
  timeout:
    description:
      - Seconds the client may run, and the server may wait for its client and run, before it is stopped.
    type: int
    default: 60
  start_timeout:
    description: Seconds O(mode=server) waits for the server to listen; when it cannot tell, the server is returned as running after this.
    type: int
    default: 15
  min_bw_gbps:
    description: Bandwidth tests fail below this average (Gb/s) at the largest message size.
    type: float
  max_lat_usec:
    description: Latency tests fail above this average latency (usec) at the largest message size.
    type: float
  fail_on_error:
    description: Fail the task when the test fails; V(false) returns RV(passed=false) and the cause instead.
    type: bool
    default: true
  kill_stray:
    description:
      - With O(mode=server), stop a stray server of the same tools found on O(port) before starting
        (otherwise the test fails with cause C(port_in_use)).
    type: bool
    default: false
  run_dir:
    description:
      - Directory on the host for the server's output and process files, created with mode 0700 when missing.
      - An existing one is used only when it is a real directory (not a symbolic link) owned by the user the
        module runs as, with no group or other write permission; otherwise the module fails and changes
        nothing, since another user of a shared host may have made it first.
    type: path
    default: /var/tmp/roce-fabric-perftest
  executable:
    description: Path of the tool when it is not on the PATH.
    type: path
notes:
  - "Requires C(perftest) (and C(rdmacm-utils) for C(rping)) and coreutils C(timeout), C(setsid) on the host."
seealso:
  - module: roce.fabric.rdma_facts
  - name: perftest
    description: The benchmark suite.
    link: https://github.com/linux-rdma/perftest
"""

EXAMPLES = r"""
- name: Start an ib_write_bw server on node1
  roce.fabric.perftest:
    tool: ib_write_bw
    mode: server
    port: 18515
    device: mlx5_0
  delegate_to: node1

- name: Run the client on node2 against node1's RoCE address
  roce.fabric.perftest:
    tool: ib_write_bw
    mode: client
    port: 18515
    device: mlx5_0
    server: 10.10.11.11
    size: 65536
    duration: 5
    min_bw_gbps: 90
  delegate_to: node2
  register: client

- name: Collect the server side (stops it if it hangs)
  roce.fabric.perftest:
    tool: ib_write_bw
    mode: collect
    port: 18515
  delegate_to: node1

- name: Stop stray perftest or rping servers on ports 18515-18531
  roce.fabric.perftest:
    mode: cleanup
    port: 18515
    port_last: 18531
"""

RETURN = r"""
passed:
  description: Whether the test ran, parsed and met its threshold (always true for O(mode=server) once listening).
  returned: always
  type: bool
cause:
  description: Why the test failed, or null.
  returned: always
  type: str
  sample: port_in_use
msg:
  description: One line about the outcome.
  returned: always
  type: str
command:
  description: The exact command line run (reproduce a number with it).
  returned: when a tool ran
  type: str
  sample: "ib_write_bw -d mlx5_0 -i 1 -p 18515 -R --report_gbits -s 65536 -D 5 10.10.11.11"
rc:
  description: Exit code of the tool (124 when stopped by the timeout).
  returned: when a tool ran
  type: int
result:
  description:
    - Parsed output. perftest - C(kind), C(settings), C(unit), C(rows) (per size, bandwidth also in C(bw_average_gbps)).
      rping - C(pings), C(errors).
  returned: when output was parsed
  type: dict
summary:
  description: The headline number (C(bytes), C(value), C(unit)), the largest message size's average.
  returned: when a perftest run parsed
  type: dict
  sample: {bytes: 65536, value: 92.4, unit: Gb/s}
output:
  description: The tool's output as printed.
  returned: when a tool ran
  type: str
pid:
  description: Process id of the started server (O(mode=server)).
  returned: when a server was started
  type: int
stopped:
  description: Processes stopped (O(mode=cleanup), or a hung server in O(mode=collect)), each C(pid) and C(cmdline).
  returned: always
  type: list
  elements: dict
skipped:
  description: True in check mode, where no benchmark runs.
  returned: always
  type: bool
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.private import (
    PrivateDirError,
    check_private_dir,
    open_private,
    private_dir,
    read_private,
)
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, DEFAULT_COMMAND_TIMEOUT, FabricError, MAX_COMMAND_TIMEOUT
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


def listening(module, params, pid, port, rdma):
    """True once the server of session ``pid`` listens on ``port``: its TCP socket for perftest's socket exchange,
    its RDMA-CM id for rping and perftest with ``-R``. None when this host cannot tell (no ``rdma`` tool, or one
    without cm_id resources)."""
    if not params["rdma_cm"] and params["tool"] != "rping":
        # The server's own socket, from the fds of its session: another program on the port is not it.
        return tcp_listening(port, [pid] + list(session_members(pid)))
    if not rdma:
        return None
    try:
        rc, out, _err = CommandRunner(module, timeout=10).run([rdma, "-j", "resource", "show", "cm_id"])
    except FabricError:
        return None
    listeners = parse_cm_listeners(out) if rc == 0 else None
    if listeners is None:
        return None
    members = set([pid]) | set(session_members(pid))
    return any(owner in members and at == port for owner, at in listeners)


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


def wrap(module, params, argv, limit):
    """Put the tool under timeout (and numactl when asked and present)."""
    timeout = module.get_bin_path("timeout", required=True)
    prefix = [timeout, "-k", "5", str(limit)]
    if params["numa_node"] is not None:
        numactl = module.get_bin_path("numactl")
        if numactl:
            prefix += [numactl, "--cpunodebind=%d" % params["numa_node"], "--membind=%d" % params["numa_node"]]
        else:
            module.warn("numactl not found: the test runs without NUMA binding")
    return prefix + argv


def finish(module, result):
    if not result["passed"] and module.params["fail_on_error"] and not result.get("skipped"):
        module.fail_json(**result)
    # Said explicitly: Ansible marks a result holding a non-zero rc as failed unless told otherwise.
    module.exit_json(failed=False, **result)


def record(result, params, output, rc):
    """Put a finished side's verdict, parsed result and summary into the module result."""
    passed, cause, msg, parsed, summary = judge(params, output, rc)
    result.update(passed=passed, cause=cause, msg=msg, rc=rc, output=output)
    if parsed is not None:
        result["result"] = parsed
    if summary is not None:
        result["summary"] = summary


def run_bounded(module, runner, argv, result):
    """``runner.run(argv)``; a run stopped at its bound ends the module with cause ``timeout``."""
    try:
        return runner.run(argv)
    except FabricError as exc:
        result.update(passed=False, cause="timeout", msg=str(exc))
        finish(module, result)
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
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
        ),
        required_if=[("mode", "client", ("server",))],
        supports_check_mode=True,
    )
    params = module.params
    port = params["port"]
    if not 1 <= port <= 65535 or (params["port_last"] is not None and not port <= params["port_last"] <= 65535):
        module.fail_json(msg="port must be 1-65535 and port_last between port and 65535 (got %s, %s)"
                         % (port, params["port_last"]))
    for key in ("timeout", "start_timeout"):
        if params[key] < 1:
            module.fail_json(msg="%s must be at least 1 second" % key)
    for key in ("size", "duration", "iterations", "qps"):
        if params[key] is not None and params[key] < 1:
            module.fail_json(msg="%s must be a positive number" % key)
    run_dir = params["run_dir"] or ""
    if not os.path.isabs(run_dir) or os.path.normpath(run_dir) in ("/", "//") or \
            any(part in (".", "..") for part in run_dir.split("/")) or any(ord(c) < 32 or ord(c) == 127 for c in run_dir):
        module.fail_json(msg="run_dir must be an absolute path below / without . or .. parts or control characters"
                             " (got %r)" % run_dir)
    if params["tos"] is not None and not 0 <= params["tos"] <= 255:
        module.fail_json(msg="tos must be 0-255 (got %s)" % params["tos"])
    result = dict(changed=False, passed=True, cause=None, skipped=False, stopped=[], msg="")
    pid_file = os.path.join(params["run_dir"], "%d.json" % port)
    out_file = os.path.join(params["run_dir"], "%d.out" % port)

    if params["mode"] == "cleanup":
        last = params["port_last"] if params["port_last"] is not None else port
        strays = stray_processes(port, last, exclude=(os.getpid(), os.getppid()))
        result["diff"] = dict(before="\n".join(s["cmdline"] for s in strays) + ("\n" if strays else ""), after="")
        result["stopped"] = strays
        result["changed"] = bool(strays)
        if strays and not module.check_mode:
            for stray in strays:
                stop_group(stray["pid"])
        result["msg"] = "stopped %d stray processes on ports %d-%d" % (len(strays), port, last)
        module.exit_json(**result)

    if module.check_mode:
        result.update(skipped=True, msg="check mode: %s %s not run" % (params["tool"], params["mode"]))
        module.exit_json(**result)

    # The tool runs under its own timeout (below); the runner's bound only stops what outlives that.
    runner = CommandRunner(module, timeout=min(MAX_COMMAND_TIMEOUT, max(DEFAULT_COMMAND_TIMEOUT, params["timeout"] + params["start_timeout"] + 30)))
    if params["mode"] in ("server", "client"):
        executable = params["executable"] or module.get_bin_path(params["tool"])
        if not executable:
            result.update(passed=False, cause="tool_missing",
                          msg="%s is not installed (package perftest, or rdmacm-utils for rping)" % params["tool"])
            finish(module, result)
        argv = tool_argv(params, executable, params["mode"])
        result["command"] = CommandRunner.render(argv)

    if params["mode"] == "server":
        strays = stray_processes(port, port, exclude=(os.getpid(), os.getppid()))
        if strays and params["kill_stray"]:
            for stray in strays:
                stop_group(stray["pid"])
            result["stopped"] = strays
        elif strays or (not params["rdma_cm"] and params["tool"] != "rping" and tcp_listening(port)):
            owner = strays[0]["cmdline"] + " (pid %d)" % strays[0]["pid"] if strays else "another process"
            result.update(passed=False, cause="port_in_use", msg="port %d is in use by %s" % (port, owner))
            finish(module, result)
        try:
            private_dir(params["run_dir"])
        except PrivateDirError as exc:
            result.update(passed=False, cause="unsafe_run_dir", msg=str(exc))
            finish(module, result)
        for path in (pid_file, out_file, out_file + ".pid", out_file + ".rc"):
            if os.path.exists(path):
                os.unlink(path)
        pid_path = out_file + ".pid"
        setsid = module.get_bin_path("setsid", required=True)
        sh = module.get_bin_path("sh", required=True)
        # The shell leads a new session (so the group can be stopped), records its pid, runs the
        # tool under timeout with output to a file and keeps its exit code; argv passes as arguments.
        script = ('exec > /dev/null 2>&1 < /dev/null; echo $$ > "$1"; out=$2; shift 2; '
                  '"$@" > "$out" 2>&1; echo $? > "$out.rc"')
        full = wrap(module, params, argv, params["timeout"] + params["start_timeout"])
        rc, out, err = run_bounded(module, runner, [setsid, "-f", sh, "-c", script, "perftest-server", pid_path, out_file] + full,
                                   result)
        deadline = time.time() + params["start_timeout"]
        pid = None
        while time.time() < deadline and pid is None:
            text = read_private(pid_path).strip()
            pid = int(text) if text.isdigit() else None
            if pid is None:
                time.sleep(0.1)
        if rc != 0 or pid is None:
            result.update(passed=False, cause="tool_error", msg="could not start the server: %s" % (err or out).strip())
            finish(module, result)
        with open_private(pid_file, "w") as handle:
            json.dump(dict(pid=pid, command=result["command"], tool=params["tool"]), handle)
        result["pid"] = pid
        # Wait until it listens (its socket or RDMA-CM id). Where that cannot be read: perftest's banner
        # (seen only once flushed), and rping counts as listening when still alive after a second.
        rdma = module.get_bin_path("rdma")
        can_tell = True
        quiet_ok = time.time() + 1.0
        while time.time() < deadline:
            output = read_private(out_file)
            if not alive(pid):
                passed, cause, msg, parsed, summary = judge(params, output, 1)
                cause = cause if cause not in (None, "parse_error") else "tool_error"
                result.update(passed=False, cause=cause, output=output,
                              msg="server exited at once: %s" % (output.strip().splitlines() or ["no output"])[-1])
                os.unlink(pid_file)
                finish(module, result)
            state = listening(module, params, pid, port, rdma) if can_tell else None
            can_tell = state is not None
            if state or LISTEN_BANNER in output or (state is None and params["tool"] == "rping" and time.time() > quiet_ok):
                result["msg"] = "server listening on port %d (pid %d)" % (port, pid)
                module.exit_json(**result)
            time.sleep(0.2)
        result["msg"] = "server running on port %d (pid %d); no listen banner within %ds" % (port, pid, params["start_timeout"])
        module.exit_json(**result)

    if params["mode"] == "client":
        full = wrap(module, params, argv, params["timeout"])
        rc, out, err = run_bounded(module, runner, full, result)
        record(result, params, out + (err or ""), rc)
        finish(module, result)

    # collect: only from a private run_dir, and only a process that is still the server it recorded
    try:
        if os.path.lexists(params["run_dir"]):
            check_private_dir(params["run_dir"])
    except PrivateDirError as exc:
        result.update(passed=False, cause="unsafe_run_dir", msg=str(exc))
        finish(module, result)
    if not os.path.exists(pid_file):
        result.update(passed=False, cause="tool_error", msg="no server was started on port %d (no %s)" % (port, pid_file))
        finish(module, result)
    try:
        info = json.loads(read_private(pid_file))
        pid = int(info["pid"])
    except (ValueError, KeyError, TypeError) as exc:
        result.update(passed=False, cause="tool_error", msg="unreadable server record %s: %s" % (pid_file, exc))
        finish(module, result)
    result["command"] = info.get("command")
    if alive(pid) and not runs_tool(pid, params["tool"]):
        result.update(passed=False, cause="tool_error",
                      msg="pid %d named by %s no longer runs %s; it was left alone" % (pid, pid_file, params["tool"]))
        finish(module, result)
    deadline = time.time() + params["timeout"]
    while time.time() < deadline and alive(pid):
        time.sleep(0.2)
    if alive(pid):
        stop_group(pid)
        result["stopped"] = [dict(pid=pid, cmdline=info.get("command"), port=port)]
        rc = 124
    else:
        text = read_private(out_file + ".rc").strip()
        rc = int(text) if text.lstrip("-").isdigit() else 1
    record(result, params, read_private(out_file), rc)
    for path in (pid_file, out_file, out_file + ".pid", out_file + ".rc"):
        if os.path.exists(path):
            os.unlink(path)
    finish(module, result)


if __name__ == "__main__":
    main()
