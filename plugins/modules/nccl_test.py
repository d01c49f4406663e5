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
    description: Seconds each collective may run before it is stopped.
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
    C(transports), C(findings)), and C(output_tail) when the output could not be parsed.
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
checks:
  description: The validation report's check records, one per run - C(name) (C(nccl <collective>), with
    C( (mpi, <N> hosts)) for O(launcher=mpi)), C(status), C(msg) (average bus bandwidth; the transports, or the ranks
    and the hosts they ran on; why it failed), C(command), C(tables).
  returned: always
  type: list
  elements: dict
launcher:
  description: How the ranks were started (V(local) or V(mpi)) and how many ran.
  returned: always
  type: dict
  sample: {"kind": "mpi", "hosts": ["10.78.0.1", "10.78.0.2"], "ranks": 2}
"""

import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl as _nccl
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, LOCALE_ENV

NCCL_TESTS = {"all_reduce": "all_reduce_perf", "all_to_all": "alltoall_perf"}
# A host's environment must keep NVLink multicast settings it was given; these are only defaults.
DEFAULT_ENV = {"NCCL_DEBUG": "INFO"}


def gpu_count(module, runner):
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        return 0
    rc, out, err = runner.run([smi, "-L"])
    return len([line for line in out.splitlines() if line.startswith("GPU ")]) if rc == 0 else 0


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
    result = dict(changed=False, passed=True, skipped=False, runs=[], checks=[], findings=[], msg="",
                  launcher=dict(kind=p["launcher"], hosts=p["hosts"] if mpi else [], ranks=0))
    if module.check_mode:
        result.update(skipped=True, msg="check mode: NCCL benchmark not run")
        module.exit_json(**result)
    runner = CommandRunner(module)
    try:
        gpus = p["gpus"] or gpu_count(module, runner)
    except FabricError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    ranks = gpus * (len(p["hosts"]) if mpi else 1)
    result["launcher"]["ranks"] = ranks
    if gpus < 1 or ranks < 2:
        result.update(passed=False, msg="need at least 2 GPUs for an NCCL test (%s), found %d" % (
            "%d hosts x %d GPUs" % (len(p["hosts"]), gpus) if mpi else "on this host", ranks))
        module.fail_json(**result) if p["fail_on_error"] else module.exit_json(**result)
    if p["numa_nodes"] is not None and len(p["numa_nodes"]) != gpus:
        module.fail_json(msg="numa_nodes names %d NUMA nodes for %d GPUs per host" % (len(p["numa_nodes"]), gpus))
    mpirun = numactl = None
    if mpi:
        mpirun = module.get_bin_path(p["mpirun"]) if "/" not in p["mpirun"] else p["mpirun"]
        if not mpirun or not os.access(mpirun, os.X_OK):
            module.fail_json(msg="launcher=mpi: '%s' not found: install Open MPI (openmpi-bin) on the hosts" % p["mpirun"])
        if p["ssh_key"]:
            try:
                _nccl.check_ssh_key(p["ssh_key"])
            except ValueError as exc:
                module.fail_json(msg="launcher=mpi: %s" % exc)
        if p["ssh_key"] and not os.path.exists(p["ssh_key"]):
            module.fail_json(msg="launcher=mpi: ssh_key %s does not exist (validate_mpi_ssh creates it)" % p["ssh_key"])
        if p["numa_nodes"] and any(node >= 0 for node in p["numa_nodes"]):
            numactl = module.get_bin_path("numactl")
            if not numactl:
                module.fail_json(msg="numa_nodes needs numactl on the hosts (package numactl)")
    kind = p["benchmark"]
    binaries = {}
    for collective in p["collectives"]:
        name = NCCL_TESTS[collective]
        path = os.path.join(p["nccl_tests_dir"], name) if p["nccl_tests_dir"] else module.get_bin_path(name)
        binaries[collective] = path if path and os.access(path, os.X_OK) else None
    if kind == "auto":
        kind = "nccl_tests" if all(binaries.values()) else "torch"
    if kind == "nccl_tests" and not all(binaries.values()):
        module.fail_json(msg="nccl-tests binaries not found: %s" % ", ".join(
            NCCL_TESTS[c] for c, b in binaries.items() if not b))
    if kind == "torch" and not (p["script"] and os.path.exists(p["script"])):
        module.fail_json(msg="benchmark script not found at %s (the validate role copies nccl_bench.py there)" % p["script"])
    timeout = module.get_bin_path("timeout", required=True)
    workdir = tempfile.mkdtemp(prefix="nccl-test-")
    env = dict(DEFAULT_ENV)
    env.update(dict((str(k), str(v)) for k, v in p["env"].items()))
    if mpi and kind == "torch":
        env.update(MASTER_ADDR=p["hosts"][0], MASTER_PORT=str(p["master_port"]))
    ifname = p["mpi_ifname"] or env.get("NCCL_SOCKET_IFNAME", "").lstrip("=^").split(",")[0] or None
    try:
        for collective in p["collectives"]:
            log = os.path.join(workdir, "%s.%%h.%%p.log" % collective)
            if kind == "nccl_tests":
                argv = [binaries[collective], "-b", p["min_bytes"], "-e", p["max_bytes"], "-f", str(p["factor"]),
                        "-n", str(p["iters"]), "-g", "1" if mpi else str(gpus), "-c", "1"]
            else:
                argv = [p["python"], p["script"], "--ops", collective, "-b", p["min_bytes"], "-e", p["max_bytes"],
                        "-f", str(p["factor"]), "-n", str(p["iters"])]
                if not mpi:
                    argv += ["--nproc", str(gpus)]
                    if p["numa_nodes"]:
                        # One argument: a list that starts with -1 would otherwise read as an option.
                        argv += ["--numa=" + ",".join(str(node) for node in p["numa_nodes"])]
            if mpi:
                # The ranks' NCCL logs stay on their hosts' standard output, which mpirun collects here.
                argv = _nccl.mpirun_argv(mpirun, p["hosts"], gpus, argv, env=env, ifname=ifname, ssh_key=p["ssh_key"],
                                         numa_nodes=p["numa_nodes"] if numactl else None, numactl=numactl or "numactl",
                                         as_root=os.geteuid() == 0, extra_args=p["mpi_args"])
                run_env = dict(LOCALE_ENV)
                command = CommandRunner.render(argv)
            else:
                run_env = dict(env, NCCL_DEBUG_FILE=log)
                run_env.update(LOCALE_ENV)
                command = " ".join("%s=%s" % (k, v) for k, v in sorted(env.items())) + " " + CommandRunner.render(argv)
            rc, out, err = module.run_command([timeout, "-k", "10", str(p["timeout"])] + argv, environ_update=run_env,
                                              expand_user_and_vars=False)
            logs = ""
            for name in sorted(os.listdir(workdir)):
                if name.startswith(collective + "."):
                    with open(os.path.join(workdir, name)) as handle:
                        logs += handle.read()
            run = dict(collective=collective, command=command, rc=rc, reasons=[])
            try:
                tables = _nccl.parse_all_results(out)
                run["table"] = tables[0]
                run["avg_busbw"] = tables[0]["avg_busbw"]
                ok, reasons = _nccl.results_verdict(tables[0], p["min_busbw"])
                run["reasons"].extend(reasons)
            except _nccl.NcclParseError as exc:
                cause = _nccl.mpi_failure(out + "\n" + err) if mpi else None
                run["reasons"].append("%s (rc %d): %s" % (
                    "timed out after %ds" % p["timeout"] if rc in (124, 137) else "no results", rc, cause or exc))
                run["output_tail"] = (out + err)[-2000:]
            if rc != 0 and "table" in run and not run["reasons"]:
                run["reasons"].append("the benchmark exited with rc %d after printing its results: %s" % (
                    rc, (err.strip().splitlines() or ["no error output"])[-1]))
            check = _nccl.check_log(logs or (out + "\n" + err), require_net=None if p["require_net"] == "any" else "IB",
                                    require_gdr=p["require_gdr"])
            run["log_check"] = check
            for finding in check["findings"]:
                result["findings"].append(dict(finding, collective=collective))
                if finding["severity"] == "error":
                    run["reasons"].append("%s: %s" % (finding["code"], finding["message"]))
            run["passed"] = not run["reasons"]
            result["runs"].append(run)
    finally:
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)
    result["passed"] = all(r["passed"] for r in result["runs"])
    result["checks"] = _nccl.run_checks(result["runs"], result["launcher"])
    result["msg"] = "; ".join(
        "%s %s" % (r["collective"], ("avg busbw %.2f GB/s" % r["avg_busbw"]) if r.get("avg_busbw") is not None else "")
        + ("" if r["passed"] else " FAILED: " + "; ".join(r["reasons"])) for r in result["runs"])
    if not result["passed"] and p["fail_on_error"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
