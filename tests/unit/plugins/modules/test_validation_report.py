# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.validation_report: plan, write, idempotence, check mode and diff."""

from __future__ import annotations

import json
import os

from ansible_collections.roce.fabric.plugins.modules import validation_report
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

HOSTS = dict(a=dict(ports=[dict(device="rxe0", port=1, rate_gbps=10.0, ipv4="10.99.0.1", gid_index=1)]),
             b=dict(ports=[dict(device="rxe0", port=1, rate_gbps=10.0, ipv4="10.99.0.2", gid_index=1)]))


def test_plan_then_write_idempotent(tmp_path):
    planned = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, tests=["rping", "ib_write_bw"],
                                                      min_bw_gbps=0.01))
    assert planned["changed"] is False
    plan = planned["plan"]
    assert [t["id"] for t in plan["tests"]] == ["rping:a->b", "ib_write_bw:a->b"]
    dest = str(tmp_path / "report")
    args = dict(mode="write", plan=plan, dest=dest, results=[
        dict(test_id="rping:a->b", role="client", passed=True, command="rping -c -v -p 18515 -C 10 -a 10.99.0.1")])
    check = run_module(validation_report.main, args, check_mode=True, diff=True)
    assert check["changed"] is True and not os.path.exists(dest)
    assert json.loads(check["diff"]["after"]) == dict(passed=1, failed=0, skipped=0, not_run=1)
    first = run_module(validation_report.main, args)
    assert first["changed"] is True and first["passed"] is True
    with open(os.path.join(dest, "report.json")) as handle:
        assert json.load(handle)["tests"][0]["status"] == "passed"
    assert "<html>" in open(os.path.join(dest, "report.html")).read()
    second = run_module(validation_report.main, args)
    assert second["changed"] is False


def test_bad_input_changes_nothing(tmp_path):
    result = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, pairs=[dict(server="a", client="zz")]))
    assert result["failed"] is True and "not in the play" in result["msg"]
    result = run_module(validation_report.main, dict(mode="plan", hosts=HOSTS, bw_fraction=1.5))
    assert result["failed"] is True and "bw_fraction" in result["msg"]
    result = run_module(validation_report.main, dict(mode="write", dest=str(tmp_path / "r")))
    assert result["failed"] is True
    assert not os.path.exists(str(tmp_path / "r"))
