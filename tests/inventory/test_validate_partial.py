"""A validation of part of the fleet its cabling plan names (an AWX job slice, a --limit), with ansible-playbook and
no lab: the README's small site, its hosts on closed ports, and a cabling plan of its four GPU servers.

- ``--limit gpu01,gpu02``: the validate role's first task (once for the play) refuses it, naming what the play
  lacks, and nothing connects to any host (a connection would have found it unreachable); the run exits non-zero.
- ``validate_partial=plan``: the same play goes on to the hosts (here: unreachable, the closed ports).
- The whole site: no refusal.

Run alone: python -m pytest tests/inventory/test_validate_partial.py (after eval "$(tests/run env)").
"""

from __future__ import annotations

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_SITE = os.path.join(REPO, "inventories", "examples", "small_site", "hosts.yml")
sys.path.insert(0, os.path.join(REPO, "tests", "utils"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from closed_site import write_closed_site  # noqa: E402  pylint: disable=wrong-import-position
from test_check_summary import play  # noqa: E402  pylint: disable=wrong-import-position

TASK = "Refuse a run that holds only part of the fleet the cabling plan names, before anything runs"
REFUSED = ("this play holds 2 of the 4 hosts the cabling plan (validate_cabling) names; gpu03, gpu04 are not in it "
           "(a job slice or --limit?)")


def validate(tmp_path, *extra):
    inventory, _ports = write_closed_site(SMALL_SITE, str(tmp_path / "mysite"), command_timeout=5)
    cabling = dict(("gpu0%d" % n, {"ens1f0np0": dict(switch="leaf0%d" % ((n + 1) // 2), port="swp%d" % n)})
                   for n in range(1, 5))
    extra_vars = tmp_path / "cabling.json"
    extra_vars.write_text(json.dumps(dict(validate_cabling=cabling)))
    return play(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "validate.yml"),
                 "-e", "@%s" % extra_vars, "-e", "roce_validate_switches=false", "-e", "vault_switch_password=not-shown"]
                + list(extra))


def host_results(out, task_name):
    """{host: result} of the task named ``task_name`` (shown with its role's prefix)."""
    return dict((host, result) for p in out["plays"] for t in p["tasks"] if t["task"]["name"].endswith(task_name)
                for host, result in t["hosts"].items())


def test_a_limit_to_part_of_the_cabled_fleet_is_refused_before_anything_connects(tmp_path):
    proc, out = validate(tmp_path, "--limit", "gpu01,gpu02")
    assert proc.returncode != 0
    refused = host_results(out, TASK)
    # Once for the play (run_once): its failure ends the play for both hosts.
    assert len(refused) == 1, refused
    result = list(refused.values())[0]
    assert result.get("failed") is True and result["msg"].startswith(REFUSED), result
    assert "validate_partial: plan" in result["msg"]
    # Nothing connected: no host unreachable, no task after the refusal ran on either.
    stats = out["stats"]
    assert all(stats[host]["unreachable"] == 0 for host in ("gpu01", "gpu02")), stats
    assert sum(stats[host]["failures"] for host in ("gpu01", "gpu02")) == 1, stats
    assert "gpu03" not in stats and "gpu04" not in stats
    after = [t["task"]["name"] for p in out["plays"] for t in p["tasks"]]
    assert after[-1].endswith(TASK), after


def test_told_to_plan_within_the_part_or_given_the_whole_fleet_the_run_goes_on_to_the_hosts(tmp_path):
    for extra in (("--limit", "gpu01,gpu02", "-e", "validate_partial=plan"), ()):
        proc, out = validate(tmp_path, *extra)
        refused = host_results(out, TASK)
        assert refused and not any(result.get("failed") for result in refused.values()), refused
        # The next task reaches the host: its closed port makes it unreachable.
        assert proc.returncode != 0 and all(stats["unreachable"] == 1 for host, stats in out["stats"].items()
                                            if host.startswith("gpu")), out["stats"]
