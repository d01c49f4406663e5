# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.nccl_test through main() with a stand-in all_reduce_perf that prints a captured run.

The stand-in prints nccl-tests 2.19.6's output with NCCL_DEBUG=INFO as captured on the 2x H200 machine
(fixtures/nccl/info_nccl_tests_2.19.6_p2p_h200x2.log); the module parses it, checks the log and returns the
report's records. A binary that prints nothing is a failed run that says why.
"""

from __future__ import annotations

import os
import stat

from ansible_collections.roce.fabric.plugins.modules import nccl_test
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

CAPTURE = "info_nccl_tests_2.19.6_p2p_h200x2.log"


def stand_in(folder, body):
    folder.mkdir(exist_ok=True)
    path = folder / "all_reduce_perf"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_a_captured_run_is_parsed_judged_and_recorded(tmp_path):
    (tmp_path / "out.txt").write_text(corpus.read("nccl", CAPTURE))
    folder = stand_in(tmp_path / "bin", "cat %s\n" % (tmp_path / "out.txt"))
    result = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2,
                                             collectives=["all_reduce"], min_bytes="1M", max_bytes="16M"))
    assert result["failed"] is False and result["passed"] is True and result["changed"] is False, result.get("msg")
    assert result["commands"] == [] and result["launcher"] == {"kind": "local", "hosts": [], "ranks": 2}
    run = result["runs"][0]
    assert run["command"].endswith("all_reduce_perf -b 1M -e 16M -f 4 -n 20 -g 2 -c 1")
    assert "NCCL_DEBUG=INFO" in run["command"]
    check = result["checks"][0]
    assert check["name"] == "nccl all_reduce" and check["status"] == "passed"
    assert check["msg"] == "avg busbw %.2f GB/s; transports %s" % (
        run["avg_busbw"], ",".join(run["log_check"]["transports"]))
    assert check["tables"] == [run["table"]]


def test_a_run_without_results_fails_and_says_why(tmp_path):
    folder = stand_in(tmp_path / "bin", "echo 'no GPU found' >&2\nexit 3\n")
    args = dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2, collectives=["all_reduce"])
    soft = run_module(nccl_test.main, dict(args, fail_on_error=False))
    assert soft["failed"] is False and soft["passed"] is False
    assert soft["checks"][0]["status"] == "failed" and "no results (rc 3)" in soft["checks"][0]["msg"]
    hard = run_module(nccl_test.main, args)
    assert hard["failed"] is True and "FAILED: no results (rc 3)" in hard["msg"]


def test_check_mode_runs_nothing_and_one_gpu_is_not_a_test(tmp_path):
    marker = tmp_path / "ran"
    folder = stand_in(tmp_path / "bin", "touch %s\n" % marker)
    checked = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=2), check_mode=True)
    assert checked["skipped"] is True and not marker.exists()
    one = run_module(nccl_test.main, dict(benchmark="nccl_tests", nccl_tests_dir=folder, gpus=1, fail_on_error=False))
    assert one["passed"] is False and "need at least 2 GPUs" in one["msg"] and not marker.exists()
    assert not os.path.exists(str(marker))
