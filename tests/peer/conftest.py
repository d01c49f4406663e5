"""Fixtures for tests against real peers: the lab of inventories/lab, driven by tests/lab/labctl.py.

Run through `tests/run peer`, which sets up the environment (venv, collections path) first.
"""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(REPO, "inventories", "lab")
LABCTL = os.path.join(REPO, "tests", "lab", "labctl.py")
FWSIM = os.path.join(REPO, "tests", "lab", "fwsim.py")
LAB_DIR = os.environ.get("ROCE_LAB_DIR", os.path.join(REPO, ".lab"))


def labctl(*args):
    subprocess.run([sys.executable, LABCTL, "--inventory", os.path.join(INVENTORY, "hosts.yml"), "--lab-dir", LAB_DIR] + list(args),
                   check=True, stdout=subprocess.DEVNULL)


class LabPeer(object):
    """A running peer of the lab inventory: run Ansible modules against it, give it its initial state again."""

    def __init__(self, name):
        self.name = name

    def module(self, name, args, check=False, diff=False):
        """Run one module through the ansible CLI (real SSH) and return its result dict."""
        return run_module(INVENTORY, self.name, name, args, check=check, diff=diff)

    def reset(self):
        labctl("reset", self.name)


class LabHost(LabPeer):
    """A lab host; its firmware simulator's state is read from outside."""

    def __init__(self, name):
        super(LabHost, self).__init__(name)
        self.dir = os.path.join(LAB_DIR, "hosts", name)
        self.fw_dir = os.path.join(self.dir, "fw")

    def firmware(self):
        """Every simulated device's state, as the firmware holds it."""
        state = {}
        devices = os.path.join(self.fw_dir, "devices")
        for entry in sorted(os.listdir(devices)):
            with open(os.path.join(devices, entry)) as handle:
                state[entry[:-len(".json")]] = json.load(handle)
        return state

    def calls(self):
        path = os.path.join(self.fw_dir, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def mutating_calls(self):
        return [c for c in self.calls() if c.get("mutating")]

    def reboots(self):
        path = os.path.join(self.dir, "reboots")
        if not os.path.exists(path):
            return 0
        with open(path) as handle:
            return int(handle.read().strip() or 0)

    def fw_admin(self, *args):
        return subprocess.run([sys.executable, FWSIM, "admin", "--state-dir", self.fw_dir] + list(args),
                              check=True, capture_output=True, text=True).stdout


def run_module(inventory, host, name, args, check=False, diff=False, extra_env=None, connection=None):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    env.update(extra_env or {})
    argv = ["ansible", "-i", inventory, host, "-m", name, "-a", json.dumps(args)]
    if connection:
        argv += ["-c", connection]
    if connection == "local":
        # The controller's own interpreter: discovery may find a shim that does not run.
        argv += ["-e", "ansible_python_interpreter=%s" % sys.executable]
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    try:
        output = json.loads(proc.stdout)
        return output["plays"][0]["tasks"][0]["hosts"][host]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("ansible produced no result (rc=%d)\nstdout: %s\nstderr: %s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))


@pytest.fixture(scope="session")
def lab():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    labctl("up", "gpu1", "gpu2")
    yield dict((name, LabHost(name)) for name in ("gpu1", "gpu2"))
    labctl("down")


@pytest.fixture
def gpu1(lab):
    lab["gpu1"].reset()
    return lab["gpu1"]


@pytest.fixture
def gpu2(lab):
    lab["gpu2"].reset()
    return lab["gpu2"]


class LabSwitch(LabPeer):
    """A simulated Onyx switch; its state is read from outside."""

    def __init__(self, name):
        super(LabSwitch, self).__init__(name)
        self.dir = os.path.join(LAB_DIR, "switches", name)
        self.state_file = os.path.join(self.dir, "state.json")

    def state(self):
        with open(self.state_file) as handle:
            return json.load(handle)

    def config_lines(self):
        return [c["line"] for c in self.state()["commands"] if c["mode"].startswith("config") and c["line"] != "exit"]

    def set_faults(self, **faults):
        state = self.state()
        state["faults"] = dict(dict(drop_after=None, reject=None, delay=0), **faults)
        tmp = self.state_file + ".test"
        with open(tmp, "w") as handle:
            json.dump(state, handle)
        os.replace(tmp, self.state_file)


@pytest.fixture(scope="session")
def switches():
    labctl("up", "sw1", "sw2")
    yield dict((name, LabSwitch(name)) for name in ("sw1", "sw2"))
    labctl("down", "sw1", "sw2")


@pytest.fixture
def sw1(switches):
    switches["sw1"].reset()
    return switches["sw1"]


@pytest.fixture
def sw2(switches):
    switches["sw2"].reset()
    return switches["sw2"]


@pytest.fixture(scope="session")
def vms():
    """The lab's QEMU VM node1 (rdma_nodes), booted from a clean overlay once per session."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    labctl("up", "node1")
    yield ("node1",)
    labctl("down", "node1")
