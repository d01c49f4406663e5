"""Shared by the molecule verifiers: the scenario's lab hosts, the lab's door (peer state read from outside),
and reading firmware tables."""

import atexit
import os
import shutil
import sys
import tempfile

import testinfra
import testinfra.utils.ansible_runner

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(PROJECT, "lab"))
from door import Lab  # noqa: E402  pylint: disable=wrong-import-position

LAB = Lab()


def _runner():
    return testinfra.utils.ansible_runner.AnsibleRunner(os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"]))


def scenario_hosts(group):
    """Hosts of ``group`` in the scenario's inventory directory (the linked lab inventory), never empty, as native
    SSH hosts (``ssh://NAME`` with an ssh_config of the lab's addresses and key): testinfra then runs each command
    over one multiplexed SSH connection instead of an Ansible module run per command, which in the lab's emulated
    VMs cost seconds a check. ``ansible_host(host)`` gives the same host through Ansible where a test needs it."""
    runner = _runner()
    hosts = runner.get_hosts(group)
    if not hosts:
        raise RuntimeError("no %s in the scenario's inventory: nothing would be verified" % group)
    folder = tempfile.mkdtemp(prefix="roce-tinfra-")
    atexit.register(shutil.rmtree, folder, True)
    lines = []
    for name in hosts:
        hostvars = runner.get_variables(name)
        lines += ["Host %s" % name,
                  "  HostName %s" % hostvars.get("ansible_host", name),
                  "  Port %s" % hostvars.get("ansible_port", 22),
                  "  User %s" % hostvars.get("ansible_user", "root"),
                  "  IdentityFile %s" % LAB.ssh_key(),
                  "  IdentitiesOnly yes",
                  # The lab's peers make new host keys at every start, as the inventory's SSH arguments allow.
                  "  StrictHostKeyChecking no",
                  "  UserKnownHostsFile /dev/null",
                  "  LogLevel ERROR",
                  "  ControlPath %s/%%C" % folder]
    config = os.path.join(folder, "ssh_config")
    with open(config, "w", encoding="ascii") as handle:
        handle.write("\n".join(lines) + "\n")
    return ["ssh://%s?ssh_config=%s&timeout=30" % (name, config) for name in hosts]


def ansible_host(host):
    """The same lab host through the Ansible backend (for ``host.ansible`` modules and variables)."""
    return testinfra.get_host("ansible://%s?ansible_inventory=%s&force_ansible=True"
                              % (peer(host), os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])))


def variables(host):
    """The host's inventory variables, as Ansible's inventory holds them (not templated)."""
    return _runner().get_variables(peer(host))


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
