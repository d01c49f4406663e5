#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_test
short_description: Run an NCCL collective benchmark on a host's GPUs and check which transports NCCL used
version_added: 1.0.0
description:
  - Runs nccl-tests (C(all_reduce_perf), C(alltoall_perf)) when installed, else the PyTorch benchmark the
    collection ships (C(roles/validate/files/nccl_bench.py), copied to the host by the C(validate) role),
    which prints the same table.
  - Runs with C(NCCL_DEBUG=INFO) into a log file and checks the log. A channel C(via NET/Socket) is a socket
    fallback (failure); NCCL's C(NET/IB) line saying C(No device found) fails when O(require_net=IB); RDMA channels
    without C(GDRDMA) mean no GPUDirect RDMA (failure with O(require_gdr)); UCX's C(ibv_create_srq() failed) is
    reported with its fix.
  - Parses the results table (both nccl-tests column layouts), fails on C(#wrong) or out-of-bounds values and
    on an average bus bandwidth below O(min_busbw).
  - With O(launcher=mpi) one Open MPI C(mpirun) on this host starts one rank per GPU on every host of
    O(hosts) over SSH (nccl-tests with C(-g 1), or O(script) with its rank taken from Open MPI's environment),
    with HCOLL off, the environment passed with C(-x), MPI's own TCP traffic kept on O(mpi_ifname) and each rank
    pinned to its GPU's NUMA node with C(numactl) when O(numa_nodes) is given. NCCL's log then comes on the output of
    the ranks and is checked from there.
  - Runs a measurement and changes nothing.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  check_mode:
    support: full
    details: In check mode nothing runs and RV(skipped) is true.
  diff_mode:
    support: none
    details: A measurement; there is never a difference to show.
  platform:
    description: Runs on a Linux host with NVIDIA GPUs.
    support: full
    platforms: posix
options:
  benchmark:
    description:
      - V(nccl_tests) runs nccl-tests' binaries from O(nccl_tests_dir) or the PATH, V(torch) runs O(script)
        with O(python), V(auto) prefers nccl-tests.
    type: str
    choices: [auto, nccl_tests, torch]
    default: auto
  collectives:
    description: Collectives to run.
    type: list
    elements: str
    choices: [all_reduce, all_to_all]
    default: [all_reduce, all_to_all]
  min_bytes:
    description: Smallest message size (nccl-tests' C(-b) syntax, V(1M)).
    type: str
    default: 1M
  max_bytes:
    description: Largest message size (V(1G)).
    type: str
    default: 1G
  factor:
    description: Size multiplier between rows.
    type: int
    default: 4
  iters:
    description: Timed iterations per size.
    type: int
    default: 20
  gpus:
    description:
      - GPUs to use on each host, one rank each (default all that C(nvidia-smi -L) lists on this host).
      - With O(launcher=local) at least 2; with O(launcher=mpi) at least 1 per host and 2 ranks in all.
    type: int
  launcher:
    description:
      - V(local) runs on this host's GPUs only. V(mpi) runs across O(hosts) with Open MPI's C(mpirun) from this
        host, which must reach every host over SSH without a password (the C(validate) role's C(validate_mpi_ssh)
        sets that up, host keys pinned).
    type: str
    choices: [local, mpi]
    default: local
  hosts:
    description:
      - Addresses of the hosts for O(launcher=mpi), as this host's SSH reaches them (their RoCE addresses, which
        the C(validate) role pins in C(known_hosts)). The first is rank 0's host and the PyTorch rendezvous.
    type: list
    elements: str
    default: []
  mpirun:
    description: Path or name of Open MPI's C(mpirun).
    type: str
    default: mpirun
  mpi_args:
    description:
      - Extra C(mpirun) arguments, one list element per argument (V([--mca, pml, ob1, --mca, btl, "tcp,self,vader"])
        keeps MPI's own traffic on TCP while NCCL carries the collectives).
    type: list
    elements: str
    default: []
  mpi_ifname:
    description:
      - Interface for MPI's out-of-band and TCP traffic (C(oob_tcp_if_include), C(btl_tcp_if_include)); default
        the interface of C(NCCL_SOCKET_IFNAME) in O(env).
    type: str
  ssh_key:
    description: Private key C(mpirun) uses for SSH (batch mode; host keys are checked against C(known_hosts)).
    type: path
  numa_nodes:
    description:
      - NUMA node of each local rank's GPU (C(ansible_facts.roce_rdma.gpus[*].numa_node)), one per rank on a host.
        With O(launcher=mpi) each rank runs under C(numactl --cpunodebind --membind) of its node; with the local
        PyTorch benchmark each process pins itself. V(-1) leaves a rank unpinned.
    type: list
    elements: int
  master_port:
    description: TCP port of the PyTorch rendezvous on the first host (O(launcher=mpi) with the PyTorch benchmark).
    type: int
    default: 29512
  env:
    description: Extra environment for the run (the NCCL environment from M(roce.fabric.rdma_facts), for example).
    type: dict
    default: {}
  min_busbw:
    description: Fail when a collective's average bus bandwidth (GB/s) is below this.
    type: float
  require_net:
    description: V(IB) when NCCL must find an RDMA network (IB or RoCE); V(any) for single-host runs.
    type: str
    choices: [any, IB]
    default: any
  require_gdr:
    description: Fail when RDMA channels do not use GPUDirect RDMA.
    type: bool
    default: false
  script:
    description: Path of C(nccl_bench.py) on the host (O(benchmark=torch)).
    type: path
  python:
    description: Python with PyTorch for O(script).
    type: path
    default: python3
  nccl_tests_dir:
    description: Directory holding nccl-tests' binaries when they are not on the PATH.
    type: path
  timeout:
    description:
      - Seconds each collective may run before it is stopped.
      - Twenty seconds before that (at three quarters of it when shorter), NCCL's RAS is asked which ranks it finds
        missing, on C(localhost:28028) or the address O(env) gives as C(NCCL_RAS_ADDR) (the JSON status of NCCL
        2.28.7 and later); the answer is kept only when the collective is stopped. Only a RAS port on this host's
        loopback whose listening socket a process of this run holds (one below the module - the benchmark and the
        NCCL processes it started) is asked - a port another local user bound first is not believed - and the
        exchange is bounded in time (12 s in all) and in bytes (4 KiB a line, 4 MiB the status).
    type: int
    default: 600
  fail_on_error:
    description: Fail the task when a check fails; V(false) returns RV(passed=false) instead.
    type: bool
    default: true
notes:
  - "The host's GPUs must be idle: a benchmark competes with any running job."
seealso:
  - module: roce.fabric.rdma_facts
  - name: nccl-tests
    description: NVIDIA's NCCL benchmarks and the meaning of bus bandwidth.
    link: https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
"""

EXAMPLES = r"""
- name: NCCL all-reduce and all-to-all on all GPUs of the host, with the discovered NCCL environment
  roce.fabric.nccl_test:
    script: /var/tmp/roce-fabric-validate/nccl_bench.py
    env: "{{ ansible_facts.roce_rdma.nccl_env }}"
    min_busbw: 100
  register: nccl

- name: nccl-tests from a build directory, all-reduce only
  roce.fabric.nccl_test:
    benchmark: nccl_tests
    nccl_tests_dir: /opt/nccl-tests/build
    collectives: [all_reduce]

- name: All-reduce across two hosts with 8 GPUs each, launched by mpirun over their RoCE addresses
  roce.fabric.nccl_test:
    launcher: mpi
    hosts: [192.168.10.11, 192.168.10.12]
    gpus: 8
    numa_nodes: [0, 0, 0, 0, 1, 1, 1, 1]
    ssh_key: /root/.ssh/id_ed25519_roce_mpi
    benchmark: nccl_tests
    nccl_tests_dir: /opt/nccl-tests/build
    collectives: [all_reduce]
    env: "{{ ansible_facts.roce_rdma.nccl_env }}"
    require_net: IB
    min_busbw: 20
"""

RETURN = r"""
passed:
  description: Whether every collective parsed, had no wrong values, met O(min_busbw) and the log check passed.
  returned: always
  type: bool
msg:
  description: One line about the outcome.
  returned: always
  type: str
runs:
  description: Per collective - C(collective), C(command), C(rc), C(table) (parsed results, see the nccl-tests layout;
    C(ranks) lists the host and device of every rank), C(avg_busbw), C(reasons), C(log_check) (C(passed), C(network), C(rdma),
    C(transports), C(findings)), and C(output_tail) when the output could not be parsed. A collective stopped at
    O(timeout) also has C(ras), what NCCL's RAS said of its ranks shortly before the stop (C(version),
    C(communicators), C(missing) - each missing rank's C(rank), C(host), C(pid), C(gpu), C(unresponsive), C(dead)
    and C(whole_host), true when no rank on its host answered), or C(error), why RAS could not say; a missing or
    failed rank is a C(ras_rank_missing) or C(ras_rank_error) finding of the log check.
  returned: when the benchmark ran
  type: list
  elements: dict
findings:
  description: All log-check findings of all runs (C(severity), C(code), C(message), C(fix)).
  returned: always
  type: list
  elements: dict
skipped:
  description: True in check mode.
  returned: always
  type: bool
commands:
  description: Nothing is changed on the hosts - always empty (every module of the collection returns this record).
  returned: always
  type: list
  elements: str
  sample: []
checks:
  description: The validation report's check records, one per run - C(name) (C(nccl <collective>), with
    C( (mpi, <N> hosts)) for O(launcher=mpi)), C(status), C(msg) (average bus bandwidth; the transports, or the ranks
    and the hosts they ran on; why it failed), C(command), C(tables), and C(ras_missing) where NCCL's RAS found ranks
    missing from a collective stopped at its timeout (the C(missing) list of C(ras) in RV(runs)), which the report's fault
    location turns into the GPU or the host to inspect.
  returned: always
  type: list
  elements: dict
launcher:
  description: How the ranks were started (V(local) or V(mpi)) and how many ran.
  returned: always
  type: dict
  sample: {"kind": "mpi", "hosts": ["10.78.0.1", "10.78.0.2"], "ranks": 2}
"""

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl as _nccl
from ansible_collections.roce.fabric.plugins.module_utils.validate.nccl_session import NcclSession


def main():
    module = AnsibleModule(
        argument_spec=dict(
            benchmark=dict(type="str", default="auto", choices=["auto", "nccl_tests", "torch"]),
            collectives=dict(type="list", elements="str", default=["all_reduce", "all_to_all"],
                             choices=["all_reduce", "all_to_all"]),
            min_bytes=dict(type="str", default="1M"),
            max_bytes=dict(type="str", default="1G"),
            factor=dict(type="int", default=4),
            iters=dict(type="int", default=20),
            gpus=dict(type="int"),
            env=dict(type="dict", default={}),
            min_busbw=dict(type="float"),
            require_net=dict(type="str", default="any", choices=["any", "IB"]),
            require_gdr=dict(type="bool", default=False),
            script=dict(type="path"),
            python=dict(type="path", default="python3"),
            nccl_tests_dir=dict(type="path"),
            timeout=dict(type="int", default=600),
            fail_on_error=dict(type="bool", default=True),
            launcher=dict(type="str", default="local", choices=["local", "mpi"]),
            hosts=dict(type="list", elements="str", default=[]),
            mpirun=dict(type="str", default="mpirun"),
            mpi_args=dict(type="list", elements="str", default=[]),
            mpi_ifname=dict(type="str"),
            ssh_key=dict(type="path"),
            numa_nodes=dict(type="list", elements="int"),
            master_port=dict(type="int", default=29512),
        ),
        required_if=[("launcher", "mpi", ("hosts",))],
        supports_check_mode=True,
    )
    p = module.params
    for key in ("min_bytes", "max_bytes"):
        if not re.match(r"^\d+[KMG]?$", p[key]):
            module.fail_json(msg="%s must be a size such as 1048576, 1M or 1G, got '%s'" % (key, p[key]))
    if p["factor"] < 2 or p["iters"] < 1 or p["timeout"] < 1:
        module.fail_json(msg="factor must be at least 2, iters and timeout at least 1")
    mpi = p["launcher"] == "mpi"
    if p["gpus"] is not None and p["gpus"] < 1:
        module.fail_json(msg="gpus must be at least 1, got %d" % p["gpus"])
    if not 1 <= p["master_port"] <= 65535:
        module.fail_json(msg="master_port must be a TCP port (1-65535), got %d" % p["master_port"])
    if mpi:
        try:
            _nccl.mpirun_argv("mpirun", p["hosts"], p["gpus"] or 1, ["true"], env=p["env"],
                              numa_nodes=p["numa_nodes"] if p["gpus"] else None)
        except ValueError as exc:
            module.fail_json(msg="launcher=mpi: %s" % exc)
    run = ModuleRun(module)
    run.execute(NcclSession(run))


if __name__ == "__main__":
    main()
