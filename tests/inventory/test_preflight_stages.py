"""The preflight's model of the playbooks (module_utils/common/preflight.py STAGES) against the playbooks themselves.

The preflight checks a role's variables only on a host where the role runs, as its stage's playbook runs it. Each
STAGES entry (role, entry point, "runs on a host when") is held here against every place its playbook runs that role
and entry point (a play's ``roles:`` or an ``include_role`` / ``import_role`` task, its ``when:``): on the variables
of every host of every shipped inventory, and on every combination of the values each variable the ``when:`` names
may take, the playbook's own condition, evaluated by Ansible's templar, and the preflight's must agree. A ``when:``
that needs what the run itself records (a registered result) cannot be known before the run and is left out; every
STAGES entry must have at least one place its playbook runs it.

Run alone: python -m pytest tests/inventory/test_preflight_stages.py
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import re
import subprocess
import sys

import pytest

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

for _entry in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep):
    if os.path.isdir(os.path.join(_entry, "ansible_collections", "roce", "fabric")):
        sys.path.insert(0, _entry)
        break
from ansible_collections.roce.fabric.plugins.module_utils.common import preflight  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOKS = os.path.join(REPO, "playbooks")
INVENTORIES = [os.path.join(REPO, "inventories", "lab")] + sorted(
    p.rstrip("/") for p in glob.glob(os.path.join(REPO, "inventories", "examples", "*/")))
NAME_RE = re.compile(r"\b([a-z][a-z0-9_]*)\b")
# The values a variable a when: names is tried with (unset is tried too): empty and not of a dict, a list, a string.
TRIED = [{}, {"MT_0000000436": {"version": "22.43.1014"}}, [], ["nvme0n1"], "", "present", "absent", True, False]
LOADER = DataLoader()


def load(path):
    try:
        return LOADER.load_from_file(path, trusted_as_template=True)
    except TypeError:  # ansible-core before 2.19: every template is rendered
        return LOADER.load_from_file(path)


def tasks_of(items):
    """Every task of a task list, those in blocks too (with the block's when: joined to theirs)."""
    for task in items or []:
        if not isinstance(task, dict):
            continue
        if "block" in task:
            for section in ("block", "rescue", "always"):
                for inner, when in tasks_of(task.get(section)):
                    yield inner, conditions(task.get("when")) + when
            continue
        yield task, []


def conditions(when):
    if when is None:
        return []
    return list(when) if isinstance(when, list) else [when]


def occurrences(playbook, seen=None):
    """[(role, entry point, [when, ...])] of every place ``playbook`` (and what it imports) runs a role."""
    seen = set() if seen is None else seen
    path = os.path.join(PLAYBOOKS, playbook + ".yml")
    if path in seen:
        return []
    seen.add(path)
    found = []
    for play in load(path) or []:
        imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if imported:
            found += occurrences(os.path.splitext(imported)[0], seen)
            continue
        for role in play.get("roles") or []:
            if isinstance(role, dict):
                found.append((role.get("role") or role.get("name"), "main", conditions(role.get("when"))))
            else:
                found.append((role, "main", []))
        for section in ("pre_tasks", "tasks", "post_tasks"):
            for task, when in tasks_of(play.get(section)):
                for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
                    if key in task:
                        args = task[key]
                        found.append((args.get("name"), args.get("tasks_from") or "main", when + conditions(task.get("when"))))
    return [(str(role).replace("roce.fabric.", ""), entry, when) for role, entry, when in found]


def stage_playbooks():
    """{stage: [playbook names that run it]} (roce.yml runs them through the playbooks it imports)."""
    out = {}
    for playbook, stages in preflight.PLAYBOOK_STAGES.items():
        if playbook == "roce":
            continue
        for stage in stages:
            out.setdefault(stage, []).append(playbook)
    return out


def inventory_hostvars(inventory):
    proc = subprocess.run(["ansible-inventory", "-i", inventory, "--list"], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["_meta"]["hostvars"]


@pytest.fixture(scope="module")
def hostvars():
    found = []
    for inventory in INVENTORIES:
        for host, variables in sorted(inventory_hostvars(inventory).items()):
            found.append(("%s/%s" % (os.path.basename(inventory), host), variables))
    return found


def evaluate(whens, variables):
    """True or False: every condition of ``whens`` holds; None where one needs what only the run knows."""
    templar = Templar(loader=LOADER, variables=variables)
    for when in whens:
        try:
            if not templar.evaluate_conditional(when):
                return False
        except AnsibleError:
            return None
    return True


IGNORED = set(["default", "length", "bool", "not", "and", "or", "in", "is", "none", "true", "false", "defined",
               "undefined", "int", "string", "lower", "select", "list", "ansible_check_mode"])


def named(whens):
    """The variables the conditions name (three at most: the playbooks' conditions name one or two)."""
    names = sorted(set(name for when in whens for name in NAME_RE.findall(str(when))) - IGNORED)
    return [name for name in names if not name.startswith("__")][:3]


def scenarios(names, hostvars):
    """Each combination of the values ``names`` take on every shipped host, or are tried with (unset among them): a
    condition reads only the variables it names."""
    seen = [dict((name, variables[name]) for name in names if name in variables) for _where, variables in hostvars]
    for values in itertools.product([None] + TRIED, repeat=len(names)):
        seen.append(dict((name, value) for name, value in zip(names, values) if value is not None))
    unique = []
    for variables in seen:
        if variables not in unique:
            unique.append(variables)
    return unique


CASES = [(stage, role, entry) for stage, (_hosts, _group, roles) in sorted(preflight.STAGES.items())
         for role, entry, _runs in roles]


@pytest.mark.parametrize("stage, role, entry", CASES, ids=["%s-%s-%s" % case for case in CASES])
def test_the_preflight_runs_a_role_where_its_playbook_runs_it(stage, role, entry, hostvars):
    """nic_firmware ran in playbooks/host.yml with nic_firmware_settings or nic_firmware_versions set, the preflight
    checked it only with the first: a host that pins firmware versions alone was not checked."""
    predicate = dict((r, fn) for r, e, fn in preflight.STAGES[stage][2] if e == entry)[role]
    switch, default = preflight.STAGE_SWITCHES.get(stage, (None, True))

    def runs(variables):
        """The preflight's word: the stage is on for the host (STAGE_SWITCHES) and the role's condition holds."""
        on = preflight._true(variables.get(switch), default) if switch else True  # pylint: disable=protected-access
        return on and predicate(variables)
    places = [(when, playbook) for playbook in stage_playbooks().get(stage, [])
              for found_role, found_entry, when in occurrences(playbook) if (found_role, found_entry) == (role, entry)]
    assert places, "%s runs %s (%s) in no playbook of it: the preflight's model names a role it does not run" % (
        stage, role, entry)
    names = named([w for when, _pb in places for w in when] + ([switch] if switch else []))
    compared = 0
    for variables in scenarios(names, hostvars):
        verdicts = [evaluate(when, dict(variables, ansible_check_mode=False)) for when, _pb in places]
        if None in verdicts:
            continue  # a condition on what the run records: not knowable before it
        assert runs(variables) is any(verdicts), (
            "the playbook %s %s %s where the preflight says %s (%s), with %s" % (
                "runs" if any(verdicts) else "does not run", role, entry, runs(variables),
                " | ".join(" and ".join(map(str, when)) or "always" for when, _pb in places), variables))
        compared += 1
    assert compared, "%s %s: no condition of its playbook could be evaluated before the run" % (role, entry)
