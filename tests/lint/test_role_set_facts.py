"""Jinja renders, Python decides: a role's set_fact passes results on, it does not compute them.

A set_fact value may name variables and their parts, hold literals, collect with ``+``, choose between results on a
test (``x if y is skipped else z``), render (the template and file lookups, from_yaml, a bare ``select`` that drops
empty documents), name a run (``now``, ``random``) and call the collection's own filters, where the judgements live
with their unit tests. Anything else - a list or dict filter (select with a test, map, combine, sort...), a
comparison, ``and``/``or``, a call - is a decision made in YAML, which only the VM tiers could reach.

Run alone: python -m pytest tests/lint (the lint tier runs it).
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml
from jinja2 import Environment, nodes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PASS_FILTERS = {"default", "d", "bool", "int", "float", "string", "list", "trim", "b64decode", "to_nice_json",
                "from_yaml", "from_yaml_all", "ansible.builtin.from_yaml", "ansible.builtin.from_yaml_all", "random"}
PASS_NODES = (nodes.Template, nodes.Output, nodes.TemplateData, nodes.Name, nodes.Getattr, nodes.Getitem, nodes.Const,
              nodes.List, nodes.Tuple, nodes.Dict, nodes.Pair, nodes.Keyword, nodes.Add, nodes.Concat, nodes.CondExpr,
              nodes.Not, nodes.Test)
PASS_CALLS = {"lookup", "query", "now"}
WORDS = {"Compare": "a comparison", "Operand": "a comparison", "And": "and", "Or": "or"}
ENV = Environment()


def problems(text):
    """What in one templated string computes rather than passes on (sorted, each once)."""
    found = set()
    for node in ENV.parse(text).find_all(nodes.Node):
        if isinstance(node, nodes.Filter):
            if node.name == "select" and not node.args:
                continue
            if not (node.name.startswith("roce.fabric.") or node.name in PASS_FILTERS):
                found.add("the filter %s" % node.name)
        elif isinstance(node, nodes.Call):
            if not (isinstance(node.node, nodes.Name) and node.node.name in PASS_CALLS):
                found.add("a call")
        elif not isinstance(node, PASS_NODES):
            found.add(WORDS.get(type(node).__name__, type(node).__name__))
    return sorted(found)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def computing_set_facts(tasks, path):
    """(file, task, variable, problems) of each set_fact in ``tasks`` (blocks included) that computes."""
    out = []
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        for key in ("block", "rescue", "always"):
            out += computing_set_facts(task.get(key), path)
        for name, value in (task.get("ansible.builtin.set_fact") or {}).items():
            if name == "cacheable":
                continue
            found = sorted(set(p for text in strings(value) for p in problems(text)))
            if found:
                out.append((os.path.relpath(path, REPO), task.get("name"), name, found))
    return out


@pytest.mark.parametrize("text, found", [
    ("{{ validate_checks + [x | roce.fabric.discovery_check(true, ansible_check_mode)] }}", []),
    ("{{ __plan.results | default([]) }}", []),
    ("{{ ([] if ansible_loop.first else __units) + [__unit] }}", []),
    ("{{ lookup('ansible.builtin.template', 'objects.yml.j2') | ansible.builtin.from_yaml_all | select | list }}", []),
    ("{{ 'reason' if (result.reboot_required | default(false)) else '' }}", []),
    ("{{ result if not (other is skipped) else other }}", []),
    ("{{ devices | selectattr('value.reboot_type', 'eq', 'reboot') | list | length > 0 }}",
     ["a comparison", "the filter length", "the filter selectattr"]),
    ("{{ a | combine({'k': 1}) }}", ["the filter combine"]),
    ("{{ result.rc == 0 and wanted in result.stdout }}", ["a comparison", "and"]),
    ("{{ names | map('upper') | list }}", ["the filter map"]),
    ("{{ items | select('equalto', 'dhcp') | list }}", ["the filter select"]),
    ("{{ x.keys() }}", ["a call"]),
])
def test_the_rule_tells_passing_on_from_computing(text, found):
    assert problems(text) == found


def test_no_role_set_fact_computes():
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml"))):
        with open(path) as handle:
            out += computing_set_facts(yaml.safe_load(handle), path)
    assert glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")), "no role read"
    assert out == [], "set_facts that compute (move the decision into a filter or module of the collection):\n" + \
        "\n".join("%s: %s: %s: %s" % (path, task, name, ", ".join(found)) for path, task, name, found in out)
