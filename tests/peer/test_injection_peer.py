"""Hardening against a lab VM (QEMU, Debian's kernel): names from inventory that would run commands as root are
refused before anything is written, and the boot units the roles write run no shell. Every state is read from the
VM over SSH, outside Ansible."""

import json
import subprocess

import pytest

from conftest import INVENTORY, LAB, REPO

VM = "node1"
PWNED = "/tmp/roce-fabric-pwned"


def vm(command):
    proc = LAB.exec(VM, [command])
    return proc.returncode, proc.stdout


def role(tmp_path, name, variables, tasks_from="main"):
    play = tmp_path / "play.yml"
    play.write_text("- hosts: %s\n  gather_facts: false\n  tasks:\n    - ansible.builtin.include_role:\n"
                    "        name: roce.fabric.%s\n        tasks_from: %s\n" % (VM, name, tasks_from))
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, str(play), "-e", "@%s" % extra],
                          capture_output=True, text=True, cwd=REPO, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def units():
    return vm("ls /etc/systemd/system/ | grep '^roce-fabric-' || true")[1].split()


@pytest.fixture
def node(vms):
    vm("rm -f %s" % PWNED)
    yield VM
    vm("rm -f %s" % PWNED)


@pytest.mark.parametrize("netdev", ["enp1s0;touch %s" % PWNED, "enp1s0' ; touch %s ; '" % PWNED, "enp1s0\nExecStartPost=/bin/touch " + PWNED])
def test_softroce_netdev_injection_is_refused(node, tmp_path, netdev):
    """A Soft-RoCE netdev from inventory used to land inside `sh -c '...'` in a root unit run at every boot."""
    before = units()
    rc, out = role(tmp_path, "rdma_host", dict(rdma_host_softroce_links=[dict(name="rxe9", netdev=netdev)]))
    assert rc != 0 and "each netdev an interface name" in out and "nothing was changed" in out, out[-2000:]
    assert units() == before and vm("test -e %s" % PWNED)[0] != 0


@pytest.mark.parametrize("device, message", [
    (dict(netdev="enp2s0;touch %s" % PWNED, num_vfs=1), "must be an interface name"),
    (dict(netdev="enp2s0", num_vfs=1, vfs=[dict(index=0, mac="02:00:00:00:00:01\nExecStart=/bin/touch %s" % PWNED)]),
     "must be an interface name"),
    # Integers are the argument spec's: it refuses them before any task.
    (dict(netdev="enp2s0", num_vfs=1, vfs=[dict(index=0, vlan="10 ; touch %s" % PWNED)]), "unable to convert to int"),
    (dict(netdev="enp2s0", num_vfs="1 ; touch %s" % PWNED), "unable to convert to int"),
])
def test_sriov_names_macs_and_vlans_injection_is_refused(node, tmp_path, device, message):
    """An SR-IOV netdev, VF MAC or VLAN from inventory used to reach a `sh -c` line or add unit lines."""
    before = (units(), vm("cat /sys/class/net/enp2s0/device/sriov_numvfs")[1])
    rc, out = role(tmp_path, "sriov", dict(sriov_devices=[device]))
    assert rc != 0 and message in out, out[-2000:]
    assert (units(), vm("cat /sys/class/net/enp2s0/device/sriov_numvfs")[1]) == before
    assert vm("test -e %s" % PWNED)[0] != 0
