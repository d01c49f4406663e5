"""The third-party client tier: clients written against the real devices, run against the project's simulators.

Run through `tests/run clients`, which builds the clients' own virtual environment first (ROCE_CLIENTS_VENV).
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INVENTORY = os.path.join(HERE, "inventory.yml")
sys.path.insert(0, os.path.join(REPO, "lab"))
import door  # noqa: E402  pylint: disable=wrong-import-position

# The peer tier's way of running one of our modules through the ansible CLI (tests/peer/conftest.py).
_SPEC = importlib.util.spec_from_file_location("peer_conftest", os.path.join(REPO, "tests", "peer", "conftest.py"))
_PEER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_PEER)
run_module = _PEER.run_module

LAB = door.Lab(INVENTORY)
SWITCHES = ("onyx36", "onyx39", "onyx310")


def clients_venv():
    venv = os.environ.get("ROCE_CLIENTS_VENV")
    if not venv or not os.path.exists(os.path.join(venv, "bin", "ansible-playbook")):
        pytest.fail("ROCE_CLIENTS_VENV must name the clients' virtual environment (tests/run clients builds it)")
    return venv


def client_playbook(playbook, limit, check=False, extra=None):
    """Run a playbook with the clients' own Ansible (the 'ansible' 7 package and its bundled collections).

    Returns ``{host: {task name: result}}`` from the json callback.
    """
    venv = clients_venv()
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "VIRTUAL_ENV")))
    env.update(ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_HOST_KEY_CHECKING="false", ANSIBLE_RETRY_FILES_ENABLED="false",
               ANSIBLE_PERSISTENT_COMMAND_TIMEOUT="60", PATH=os.path.join(venv, "bin") + os.pathsep + env.get("PATH", ""))
    argv = [os.path.join(venv, "bin", "ansible-playbook"), "-i", INVENTORY, "--limit", limit, os.path.join(HERE, playbook)]
    if check:
        argv.append("--check")
    argv += extra or []
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=HERE, timeout=600, check=False)
    try:
        output = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from ansible-playbook (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    results = {}
    for play in output["plays"]:
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                results.setdefault(host, {})[task["task"]["name"]] = result
    return results


class Switch(object):
    def __init__(self, name):
        self.name = name

    def state(self):
        return LAB.state(self.name)

    def reset(self):
        LAB.reset(self.name)

    def module(self, name, args, check=False):
        return run_module(INVENTORY, self.name, name, args, check=check, connection="local")


@pytest.fixture(scope="session")
def switches():
    LAB.up(*SWITCHES)
    yield dict((name, Switch(name)) for name in SWITCHES)
    LAB.down(*SWITCHES)


@pytest.fixture
def switch(switches, request):
    sw = switches[request.param]
    sw.reset()
    return sw
