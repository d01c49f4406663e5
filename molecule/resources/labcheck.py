"""Shared by the molecule verifiers: the scenario's lab hosts, the lab's door (peer state read from outside),
and reading firmware tables."""

import os
import sys

import testinfra.utils.ansible_runner

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(PROJECT, "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab()


def scenario_hosts(group):
    """Hosts of ``group`` in the scenario's inventory directory (the linked lab inventory); never empty."""
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    hosts = testinfra.utils.ansible_runner.AnsibleRunner(inventory).get_hosts(group)
    if not hosts:
        raise RuntimeError("no %s in %s: nothing would be verified" % (group, inventory))
    return hosts


def peer(host):
    """The lab peer name of a testinfra host."""
    return host.backend.get_hostname()


def firmware_tool(host):
    return "mlxconfig" if host.exists("mlxconfig") else "mstconfig"


def query(host, pci, names):
    """NAME -> [default, current, next boot] as the host's firmware tool prints them."""
    out = host.check_output(" ".join(["%s"] * (5 + len(names))), firmware_tool(host), "-d", pci, "-e", "query", *sorted(names))
    rows = {}
    for line in out.splitlines():
        tokens = line.split()
        while tokens and tokens[0] in ("*", "RO", "*RO"):
            tokens.pop(0)
        if len(tokens) == 4 and tokens[0] in names:
            rows[tokens[0]] = tokens[1:]
    assert sorted(rows) == sorted(names), out
    return rows
