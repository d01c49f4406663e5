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
commands:
  description: The processes stopped by O(mode=cleanup) (in check mode, those a real run stops).
  returned: always
  type: list
  elements: str
retried:
  description: O(mode=client) - the first try (C(rc), C(output)) of a client whose RDMA-CM connection setup failed
    (perftest's C(RDMA CM event error)), which is tried once more; the result is the second try's.
  returned: when the client was tried again
  type: dict
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.validate.perftest_session import (
    PerftestSession,
    params_problem,
    perftest_argument_spec,
)


def main():
    module = AnsibleModule(argument_spec=perftest_argument_spec(), required_if=[("mode", "client", ("server",))],
                           supports_check_mode=True)
    problem = params_problem(module.params)
    if problem:
        module.fail_json(msg=problem)
    run = ModuleRun(module)
    run.execute(PerftestSession(run))


if __name__ == "__main__":
    main()
