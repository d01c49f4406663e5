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
    description: GPUs to use (default all that C(nvidia-smi -L) lists).
    type: int
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
  description: Per collective - C(collective), C(command), C(rc), C(table) (parsed results, see the nccl-tests layout),
    C(avg_busbw), C(reasons), C(log_check) (C(passed), C(network), C(transports), C(findings)).
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
"""

import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils import _nccl
from ansible_collections.roce.fabric.plugins.module_utils._command import CommandRunner, LOCALE_ENV

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
        ),
        supports_check_mode=True,
    )
    p = module.params
    for key in ("min_bytes", "max_bytes"):
        if not re.match(r"^\d+[KMG]?$", p[key]):
            module.fail_json(msg="%s must be a size such as 1048576, 1M or 1G, got '%s'" % (key, p[key]))
    if p["factor"] < 2 or p["iters"] < 1 or p["timeout"] < 1:
        module.fail_json(msg="factor must be at least 2, iters and timeout at least 1")
    result = dict(changed=False, passed=True, skipped=False, runs=[], findings=[], msg="")
    if module.check_mode:
        result.update(skipped=True, msg="check mode: NCCL benchmark not run")
        module.exit_json(**result)
    runner = CommandRunner(module)
    gpus = p["gpus"] or gpu_count(module, runner)
    if gpus < 2:
        result.update(passed=False, msg="need at least 2 GPUs on the host for an NCCL test, found %d" % gpus)
        module.fail_json(**result) if p["fail_on_error"] else module.exit_json(**result)
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
    try:
        for collective in p["collectives"]:
            log = os.path.join(workdir, "%s.%%h.%%p.log" % collective)
            if kind == "nccl_tests":
                argv = [binaries[collective], "-b", p["min_bytes"], "-e", p["max_bytes"], "-f", str(p["factor"]),
                        "-n", str(p["iters"]), "-g", str(gpus), "-c", "1"]
            else:
                argv = [p["python"], p["script"], "--ops", collective, "-b", p["min_bytes"], "-e", p["max_bytes"],
                        "-f", str(p["factor"]), "-n", str(p["iters"]), "--nproc", str(gpus)]
            run_env = dict(env, NCCL_DEBUG_FILE=log)
            run_env.update(LOCALE_ENV)
            rc, out, err = module.run_command([timeout, "-k", "10", str(p["timeout"])] + argv, environ_update=run_env,
                                              expand_user_and_vars=False)
            command = " ".join("%s=%s" % (k, v) for k, v in sorted(env.items())) + " " + CommandRunner.render(argv)
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
                run["reasons"].append("%s (rc %d): %s" % (
                    "timed out after %ds" % p["timeout"] if rc in (124, 137) else "no results", rc, exc))
                run["output_tail"] = (out + err)[-2000:]
            check = _nccl.check_log(logs or out, require_net=None if p["require_net"] == "any" else "IB",
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
    result["msg"] = "; ".join(
        "%s %s" % (r["collective"], ("avg busbw %.2f GB/s" % r["avg_busbw"]) if r.get("avg_busbw") is not None else "")
        + ("" if r["passed"] else " FAILED: " + "; ".join(r["reasons"])) for r in result["runs"])
    if not result["passed"] and p["fail_on_error"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
