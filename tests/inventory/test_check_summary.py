"""playbooks/roce.yml on a site where nothing answers, and its stage tags, with ansible-playbook and no lab.

- ``--check`` on the README's small site whose two switches and four GPU servers refuse every connection (their
  addresses moved to closed ports on loopback) goes through every stage and ends with the summary: one line per
  host, each saying it was unreachable and why. Before, the run stopped at the first switch.
- A site without ESXi hosts or Kubernetes clusters gets no "Could not match supplied host pattern" warning.
- The stage tags run the preflight, that stage and the summary only.

Run alone: python -m pytest tests/inventory/test_check_summary.py (after eval "$(tests/run env)").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_SITE = os.path.join(REPO, "inventories", "examples", "small_site", "hosts.yml")
sys.path.insert(0, os.path.join(REPO, "tests", "utils"))
from closed_site import write_closed_site  # noqa: E402  pylint: disable=wrong-import-position


def site_where_nothing_answers(tmp_path):
    """The small site, its six hosts on closed ports: (inventory path, {host: port})."""
    return write_closed_site(SMALL_SITE, str(tmp_path / "mysite"), command_timeout=5)


def play(argv, env=None):
    full_env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                    ANSIBLE_HOST_KEY_CHECKING="false", **(env or {}))
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=full_env, check=False, timeout=900)
    return proc, json.loads(proc.stdout)


def test_check_mode_reads_every_host_and_ends_with_one_summary(tmp_path):
    inventory, ports = site_where_nothing_answers(tmp_path)
    proc, out = play(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "roce.yml"), "--check",
                      "-e", "vault_switch_password=not-shown"])
    plays = [p["play"]["name"] for p in out["plays"]]
    assert "Validate the RDMA fabric" in plays and plays[-1] == "Summary of the run", plays
    summary = [t for t in out["plays"][-1]["tasks"] if t["task"]["name"] == "Show the summary"][0]
    lines = summary["hosts"]["localhost"]["roce_run_summary.lines"]
    assert lines[0] == "summary, what each host would change (check mode): 6 unreachable", lines
    by_host = dict(line.split(": ", 1) for line in lines[1:])
    assert sorted(by_host) == ["gpu01", "gpu02", "gpu03", "gpu04", "leaf01", "leaf02"]
    for leaf in ("leaf01", "leaf02"):
        assert by_host[leaf].startswith("switch: unreachable: The switch at 127.0.0.1:%d did not answer over SSH: "
                                        % ports[leaf]), by_host[leaf]
        assert "Connection refused" in by_host[leaf] or "Unable to connect" in by_host[leaf], by_host[leaf]
    for node in ("gpu01", "gpu02", "gpu03", "gpu04"):
        assert by_host[node].startswith("connection: unreachable: ") and "port %d" % ports[node] in by_host[node]
    # No host failed: the ones --check could not read are reported, not fatal to the others.
    assert all(stats["failures"] == 0 for stats in out["stats"].values()), out["stats"]
    assert proc.returncode == 0


def test_no_host_pattern_warning_for_a_site_without_esxi_or_kubernetes():
    proc = subprocess.run(["ansible-playbook", "-i", SMALL_SITE, os.path.join(REPO, "playbooks", "roce.yml"),
                           "--list-hosts"], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Could not match supplied host pattern" not in proc.stdout + proc.stderr, proc.stderr
    assert "hosts (4):" in proc.stdout and "hosts (2):" in proc.stdout


def test_stage_tags_run_the_preflight_that_stage_and_the_summary():
    proc = subprocess.run(["ansible-playbook", "-i", SMALL_SITE, os.path.join(REPO, "playbooks", "roce.yml"),
                           "--list-tasks", "--tags", "switch"], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    # Ansible's own check of each role's arguments is tagged always: it runs (and changes nothing) with any tag.
    listed = [line.strip() for line in proc.stdout.splitlines() if "TAGS:" in line and
              not line.lstrip().startswith("play #") and "Validating arguments against arg spec" not in line]
    assert any("Every host of every stage against the roles it will run" in t for t in listed)
    assert any("roce.fabric.roce_switch" in t for t in listed)
    assert any("Per host, what each stage changed or would change" in t for t in listed)
    assert not any(r in t for t in listed for r in ("roce.fabric.rdma_host", "roce.fabric.validate", "nic_firmware"))
