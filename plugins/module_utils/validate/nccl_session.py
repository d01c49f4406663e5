# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: one NCCL benchmark call on this host (local GPUs, or mpirun across hosts), inside ModuleRun.

PRIVATE to the roce.fabric collection: may change without notice.

The roce.fabric.nccl_test module checks its arguments and hands them to ``NcclSession``: it finds the GPUs and
the launcher (``prepare``), picks nccl-tests' binaries or the torch script (``benchmark``), runs each collective
with NCCL's log kept (``run_collective``) and judges it with ``validate/nccl.py`` (the results table, the log's
transports, the report's records). A collective that runs into its timeout is asked, shortly before it is stopped,
which ranks NCCL's RAS finds missing (``validate/nccl_ras.py``): the host, process and GPU the others wait for.
"""

from __future__ import annotations

import os
import tempfile
import threading

from ansible_collections.roce.fabric.plugins.module_utils.common.run import LOCALE_ENV, CommandRunner, descendants
from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl as _nccl
from ansible_collections.roce.fabric.plugins.module_utils.validate import nccl_ras as _ras

NCCL_TESTS = {"all_reduce": "all_reduce_perf", "all_to_all": "alltoall_perf"}
# A host's environment must keep NVLink multicast settings it was given; these are only defaults.
DEFAULT_ENV = {"NCCL_DEBUG": "INFO"}
# RAS is asked this long before a collective's timeout (at three quarters of it for short ones), each of its reads
# and writes bounded by RAS_TIMEOUT: its answer (it waits up to 5 s for the other nodes) is in before the stop.
RAS_MARGIN = 20
RAS_TIMEOUT = 12.0


def ras_watch(seconds, addr):
    """A timer that asks RAS at ``addr`` for the job's status after ``seconds``: ``(timer, box)``, the answer put
    in ``box`` as ``text`` (or ``error``)."""
    box = {}

    def ask():
        # Only the RAS of this run's NCCL: the socket on its port must be held by a process below this module.
        why = _ras.not_this_run(addr, descendants(os.getpid()))
        if why:
            box["error"] = why
            return
        try:
            box["text"] = _ras.query(addr, timeout=RAS_TIMEOUT)
        except _ras.RasError as exc:
            box["error"] = str(exc)

    timer = threading.Timer(seconds, ask)
    timer.daemon = True
    return timer, box


class Stop(Exception):
    """The call ends with what the result holds (failed when it did not pass and fail_on_error)."""


class NcclSession:
    """One call of roce.fabric.nccl_test. ``run``: the module's ModuleRun."""

    def __init__(self, run):
        self.run = run
        self.module = run.module
        self.p = run.module.params
        self.mpi = self.p["launcher"] == "mpi"
        self.runner = CommandRunner(self.module)
        self.gpus = 0
        self.mpirun = self.numactl = None
        run.update(passed=True, skipped=False, runs=[], checks=[], findings=[], msg="",
                   launcher=dict(kind=self.p["launcher"], hosts=self.p["hosts"] if self.mpi else [], ranks=0))

    def __call__(self, run):
        if self.module.check_mode:
            run.update(skipped=True, msg="check mode: NCCL benchmark not run")
            return
        try:
            self.prepare()
            kind, binaries = self.benchmark()
            self.run_all(kind, binaries)
        except Stop:
            pass
        if not run.result["passed"] and self.p["fail_on_error"]:
            run.fail(run.result["msg"])

    def prepare(self):
        p, module = self.p, self.module
        gpus = p["gpus"] or self.gpu_count()
        ranks = gpus * (len(p["hosts"]) if self.mpi else 1)
        self.gpus = gpus
        self.run.result["launcher"]["ranks"] = ranks
        if gpus < 1 or ranks < 2:
            self.run.update(passed=False, msg="need at least 2 GPUs for an NCCL test (%s), found %d" % (
                "%d hosts x %d GPUs" % (len(p["hosts"]), gpus) if self.mpi else "on this host", ranks))
            raise Stop()
        if p["numa_nodes"] is not None and len(p["numa_nodes"]) != gpus:
            self.run.fail("numa_nodes names %d NUMA nodes for %d GPUs per host" % (len(p["numa_nodes"]), gpus))
        if not self.mpi:
            return
        mpirun = module.get_bin_path(p["mpirun"]) if "/" not in p["mpirun"] else p["mpirun"]
        if not mpirun or not os.access(mpirun, os.X_OK):
            self.run.fail("launcher=mpi: '%s' not found: install Open MPI (openmpi-bin) on the hosts" % p["mpirun"])
        self.mpirun = mpirun
        if p["ssh_key"]:
            try:
                _nccl.check_ssh_key(p["ssh_key"])
            except ValueError as exc:
                self.run.fail("launcher=mpi: %s" % exc)
            if not os.path.exists(p["ssh_key"]):
                self.run.fail("launcher=mpi: ssh_key %s does not exist (validate_mpi_ssh creates it)" % p["ssh_key"])
        if p["numa_nodes"] and any(node >= 0 for node in p["numa_nodes"]):
            self.numactl = module.get_bin_path("numactl")
            if not self.numactl:
                self.run.fail("numa_nodes needs numactl on the hosts (package numactl)")

    def gpu_count(self):
        smi = self.module.get_bin_path("nvidia-smi")
        if not smi:
            return 0
        rc, out, _err = self.runner.run([smi, "-L"])
        return len([line for line in out.splitlines() if line.startswith("GPU ")]) if rc == 0 else 0

    def benchmark(self):
        """(kind, {collective: binary}): nccl-tests where every binary is there (or asked for), else the script."""
        p = self.p
        binaries = {}
        for collective in p["collectives"]:
            name = NCCL_TESTS[collective]
            path = os.path.join(p["nccl_tests_dir"], name) if p["nccl_tests_dir"] else self.module.get_bin_path(name)
            binaries[collective] = path if path and os.access(path, os.X_OK) else None
        kind = p["benchmark"]
        if kind == "auto":
            kind = "nccl_tests" if all(binaries.values()) else "torch"
        if kind == "nccl_tests" and not all(binaries.values()):
            self.run.fail("nccl-tests binaries not found: %s" % ", ".join(NCCL_TESTS[c] for c, b in binaries.items() if not b))
        if kind == "torch" and not (p["script"] and os.path.exists(p["script"])):
            self.run.fail("benchmark script not found at %s (the validate role copies nccl_bench.py there)" % p["script"])
        return kind, binaries

    def environment(self, kind):
        env = dict(DEFAULT_ENV)
        env.update(dict((str(k), str(v)) for k, v in self.p["env"].items()))
        if self.mpi and kind == "torch":
            env.update(MASTER_ADDR=self.p["hosts"][0], MASTER_PORT=str(self.p["master_port"]))
        return env

    def argv_of(self, kind, binary, collective):
        p = self.p
        if kind == "nccl_tests":
            return [binary, "-b", p["min_bytes"], "-e", p["max_bytes"], "-f", str(p["factor"]), "-n", str(p["iters"]),
                    "-g", "1" if self.mpi else str(self.gpus), "-c", "1"]
        argv = [p["python"], p["script"], "--ops", collective, "-b", p["min_bytes"], "-e", p["max_bytes"],
                "-f", str(p["factor"]), "-n", str(p["iters"])]
        if not self.mpi:
            argv += ["--nproc", str(self.gpus)]
            if p["numa_nodes"]:
                # One argument: a list that starts with -1 would otherwise read as an option.
                argv += ["--numa=" + ",".join(str(node) for node in p["numa_nodes"])]
        return argv

    def run_all(self, kind, binaries):
        p = self.p
        env = self.environment(kind)
        ifname = p["mpi_ifname"] or env.get("NCCL_SOCKET_IFNAME", "").lstrip("=^").split(",")[0] or None
        workdir = tempfile.mkdtemp(prefix="nccl-test-")
        try:
            for collective in p["collectives"]:
                self.run_collective(kind, binaries.get(collective), collective, env, ifname, workdir)
        finally:
            for name in os.listdir(workdir):
                os.unlink(os.path.join(workdir, name))
            os.rmdir(workdir)
        result = self.run.result
        result["passed"] = all(r["passed"] for r in result["runs"])
        result["checks"] = _nccl.run_checks(result["runs"], result["launcher"])
        result["msg"] = "; ".join(
            "%s %s" % (r["collective"], ("avg busbw %.2f GB/s" % r["avg_busbw"]) if r.get("avg_busbw") is not None else "")
            + ("" if r["passed"] else " FAILED: " + "; ".join(r["reasons"])) for r in result["runs"])

    def run_collective(self, kind, binary, collective, env, ifname, workdir):
        p, module = self.p, self.module
        log = os.path.join(workdir, "%s.%%h.%%p.log" % collective)
        argv = self.argv_of(kind, binary, collective)
        if self.mpi:
            # The ranks' NCCL logs stay on their hosts' standard output, which mpirun collects here.
            argv = _nccl.mpirun_argv(self.mpirun, p["hosts"], self.gpus, argv, env=env, ifname=ifname, ssh_key=p["ssh_key"],
                                     numa_nodes=p["numa_nodes"] if self.numactl else None,
                                     numactl=self.numactl or "numactl", as_root=os.geteuid() == 0, extra_args=p["mpi_args"])
            run_env = dict(LOCALE_ENV)
            command = CommandRunner.render(argv)
        else:
            run_env = dict(env, NCCL_DEBUG_FILE=log)
            run_env.update(LOCALE_ENV)
            command = " ".join("%s=%s" % (k, v) for k, v in sorted(env.items())) + " " + CommandRunner.render(argv)
        timeout = module.get_bin_path("timeout", required=True)
        watch, asked = ras_watch(max(p["timeout"] - RAS_MARGIN, p["timeout"] * 0.75), _ras.ras_addr(env))
        watch.start()
        try:
            rc, out, err = module.run_command([timeout, "-k", "10", str(p["timeout"])] + argv, environ_update=run_env,
                                              expand_user_and_vars=False)
        finally:
            watch.cancel()
        if rc in (124, 137):
            watch.join(RAS_TIMEOUT * 4)
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
            run["reasons"].extend(_nccl.results_verdict(tables[0], p["min_busbw"])[1])
        except _nccl.NcclParseError as exc:
            cause = _nccl.mpi_failure(out + "\n" + err) if self.mpi else None
            run["reasons"].append("%s (rc %d): %s" % (
                "timed out after %ds" % p["timeout"] if rc in (124, 137) else "no results", rc, cause or exc))
            run["output_tail"] = (out + err)[-2000:]
        if rc != 0 and "table" in run and not run["reasons"]:
            run["reasons"].append("the benchmark exited with rc %d after printing its results: %s" % (
                rc, (err.strip().splitlines() or ["no error output"])[-1]))
        check = _nccl.check_log(logs or (out + "\n" + err), require_net=None if p["require_net"] == "any" else "IB",
                                require_gdr=p["require_gdr"])
        if rc in (124, 137):
            self.hung(run, check, asked)
        run["log_check"] = check
        for finding in check["findings"]:
            self.run.result["findings"].append(dict(finding, collective=collective))
            if finding["severity"] == "error":
                run["reasons"].append("%s: %s" % (finding["code"], finding["message"]))
        run["passed"] = not run["reasons"]
        self.run.result["runs"].append(run)

    @staticmethod
    def hung(run, check, asked):
        """A collective stopped at its timeout: what RAS said of its ranks before the stop (``run["ras"]``), its
        missing or failed ranks as findings of the log check; why RAS could not say, where it could not."""
        if "text" not in asked:
            run["ras"] = dict(error=asked.get("error", "RAS was not asked: the collective ended first"))
            return
        try:
            status = _ras.parse_status(asked["text"])
        except _ras.RasError as exc:
            run["ras"] = dict(error=str(exc))
            return
        found = _ras.findings(status)
        run["ras"] = dict(version=status["version"], communicators=len(status["communicators"]),
                          missing=_ras.missing_ranks(status))
        check["findings"].extend(found)
