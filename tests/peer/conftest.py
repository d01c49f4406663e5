"""Fixtures for tests against real peers: the lab of inventories/lab, reached through the lab's door (lab/door.py).

Run through `tests/run peer`, which sets up the environment (venv, collections path) first.
"""

import json
import os
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(REPO, "inventories", "lab")
sys.path.insert(0, os.path.join(REPO, "lab"))
import door  # noqa: E402  pylint: disable=wrong-import-position

# The firmware simulator, also run as a local mlxconfig/mstconfig stand-in outside any lab host.
FWSIM = door.FWSIM

LAB = door.Lab(INVENTORY)


def labctl(*args):
    LAB.labctl(*args)


class LabPeer(object):
    """A running peer of the lab inventory: run Ansible modules against it, give it its initial state again."""

    def __init__(self, name):
        self.name = name

    def module(self, name, args, check=False, diff=False, options=None):
        """Run one module through the ansible CLI (real SSH) and return its result dict; ``options``: more of the CLI's
        options (``["-u", user, "--become"]``)."""
        return run_module(INVENTORY, self.name, name, args, check=check, diff=diff, options=options)

    def reset(self):
        LAB.reset(self.name)

    def state(self):
        return LAB.state(self.name)

    def calls(self):
        return LAB.calls(self.name)


class LabHost(LabPeer):
    """A lab host; its firmware simulator's state is read from outside."""

    def firmware(self):
        """Every simulated device's state, as the firmware holds it."""
        return LAB.state(self.name)["firmware"]

    def mutating_calls(self):
        return [c for c in self.calls() if c.get("mutating")]

    def reboots(self):
        return LAB.reboots(self.name)

    def fw_admin(self, *args):
        return LAB.admin(self.name, *args)

    def qos_calls(self):
        """Every call the NIC QoS simulator (mlnx_qos / dcb) answered on this host, in order."""
        path = LAB.artifact(self.name, "qos_calls")
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def write_sys(self, relative, value):
        """Write a file of the host's /sys/class/net from inside the host (a driver default changed by hand)."""
        proc = LAB.exec(self.name, ["sh", "-c", "echo %s > /sys/class/net/%s" % (value, relative)])
        assert proc.returncode == 0, proc.stdout + proc.stderr


def run_module(inventory, host, name, args, check=False, diff=False, extra_env=None, connection=None, options=None):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    env.update(extra_env or {})
    argv = ["ansible", "-i", inventory, host, "-m", name, "-a", json.dumps(args)] + list(options or [])
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
    LAB.up("gpu1", "gpu2")
    yield dict((name, LabHost(name)) for name in ("gpu1", "gpu2"))
    # Only the peers it started: the rdma tier's VM runs beside this one ('peer all').
    LAB.down("gpu1", "gpu2")


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

    def config_lines(self):
        return [c["line"] for c in self.state()["commands"] if c["mode"].startswith("config") and c["line"] != "exit"]

    def set_faults(self, **faults):
        LAB.fault(self.name, **faults)


@pytest.fixture(scope="session")
def switches():
    LAB.up("sw1", "sw2")
    yield dict((name, LabSwitch(name)) for name in ("sw1", "sw2"))
    LAB.down("sw1", "sw2")


@pytest.fixture
def sw1(switches):
    switches["sw1"].reset()
    return switches["sw1"]


@pytest.fixture
def sw2(switches):
    switches["sw2"].reset()
    return switches["sw2"]


class LabCumulus(LabPeer):
    """A simulated Cumulus Linux switch (NVUE REST API); its state is read from outside."""

    def applied(self):
        return self.state()["applied"]

    def mutating_requests(self):
        """API requests other than reads, and nv commands other than nv config show, nv config diff and nv show."""
        return [r for r in self.calls() if r["method"] != "GET"
                and not (r["method"] == "SSH" and r["path"].startswith(("nv config show", "nv config diff", "nv show ")))]

    def set_faults(self, **faults):
        LAB.fault(self.name, **faults)


@pytest.fixture(scope="session")
def cumulus():
    LAB.up("leaf1", "leaf2")
    yield dict((name, LabCumulus(name)) for name in ("leaf1", "leaf2"))
    LAB.down("leaf1", "leaf2")


@pytest.fixture
def leaf1(cumulus):
    cumulus["leaf1"].reset()
    return cumulus["leaf1"]


@pytest.fixture
def leaf2(cumulus):
    cumulus["leaf2"].reset()
    return cumulus["leaf2"]


@pytest.fixture(scope="session")
def two_vms():
    """The lab's two QEMU VMs (node1, node2, group lab_vms), started once for every module of a session that uses
    both (the validate tier: validation, then telemetry); VMs already up for this inventory are reused, stopped ones
    start clean."""
    if os.geteuid() != 0:
        pytest.skip("the lab VMs need root")
    lab = door.Lab(os.environ.get("ROCE_LAB_INVENTORY", INVENTORY))
    running = [name for name in ("node1", "node2") if lab.peer(name).running()]
    if running:
        lab.labctl("up", "--keep-state", *running)
    # A stopped VM starts from the clean image (restored from its snapshot, lab/rdma/peer_qemu.py), not from the
    # overlay an earlier tier left behind.
    stopped = [name for name in ("node1", "node2") if name not in running]
    if stopped:
        lab.labctl("up", *stopped)
    yield ("node1", "node2")
    lab.labctl("down", "node1", "node2")


@pytest.fixture(scope="session")
def vms():
    """The lab's QEMU VM node1 (group lab_vms), booted from a clean overlay once per session."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    LAB.up("node1")
    yield ("node1",)
    LAB.down("node1")


# --- Where the VMs' CPU goes: ROCE_QEMU_CPU_LOG=<file> appends, per test, its wall seconds and the CPU seconds the
# lab's QEMU processes used from its setup to its teardown (tests/bench/qemu_per_test.py sums such files).

def _qemu_cpu():
    """{(pid, start time): CPU seconds} of the QEMU processes running now (tests/bench/suite_bench.py reads them)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
    from suite_bench import TICK, proc_stats  # noqa: E402  pylint: disable=import-outside-toplevel
    return dict(((pid, fields[19]), (int(fields[11]) + int(fields[12])) / TICK)
                for pid, name, fields in proc_stats() if name.startswith("qemu-system"))


_QEMU_SEEN = {}


def _qemu_total():
    _QEMU_SEEN.update(_qemu_cpu())
    return sum(_QEMU_SEEN.values())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    log = os.environ.get("ROCE_QEMU_CPU_LOG")
    if not log:
        yield
        return
    started, before = time.monotonic(), _qemu_total()
    yield
    with open(log, "a") as handle:
        handle.write("%s\t%.1f\t%.1f\n" % (item.nodeid, time.monotonic() - started, _qemu_total() - before))
