"""The VM peer's snapshot key: one snapshot per configuration the guest can see, shared by checkouts, never by two
configurations (a restored guest with another VM's MACs, ports or kernel command line would be a different machine
than the inventory says)."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))

import peer_qemu  # noqa: E402  pylint: disable=wrong-import-position


class FakeLab(object):
    def __init__(self, path):
        self.dir = str(path)
        self.key = os.path.join(self.dir, "id_ed25519")
        if not os.path.exists(self.key + ".pub"):
            os.makedirs(self.dir, exist_ok=True)
            with open(self.key + ".pub", "w") as handle:
                handle.write("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheSnapshotKeyTest lab\n")

    def ssh_key(self):
        return self.key


NODE1 = {"ansible_host": "127.0.0.1", "ansible_port": 22211,
         "roce_lab_vm_nics": [{"model": "virtio", "port": 22290, "peer_port": 22291, "address": "10.78.0.1/24", "mtu": 4200}]}


def snapshot_of(lab_dir, host_vars, name="node1", image="/cache/vm/abc"):
    vm = peer_qemu.QemuVm(FakeLab(lab_dir), name, host_vars, 0)
    return vm.snapshot_dir(image, vm.argv(image))


@pytest.fixture(autouse=True)
def qemu_version(monkeypatch):
    """QEMU's version is part of the key; this machine may have no QEMU."""
    def fake_run(argv, **kwargs):
        if argv[:2] == ["qemu-system-x86_64", "--version"]:
            return subprocess.CompletedProcess(argv, 0, "QEMU emulator version 10.0.2\n", "")
        raise AssertionError("unexpected command %s" % argv)
    monkeypatch.setattr(peer_qemu.subprocess, "run", fake_run)
    monkeypatch.delenv("ROCE_LAB_VM_SNAPSHOTS", raising=False)


def test_two_checkouts_with_the_same_key_share_the_snapshot(tmp_path):
    first = snapshot_of(tmp_path / "a" / ".lab", NODE1)
    lab_b = tmp_path / "b" / "somewhere" / ".lab"
    os.makedirs(str(lab_b))
    with open(str(lab_b / "id_ed25519.pub"), "w") as handle:
        handle.write(open(str(tmp_path / "a" / ".lab" / "id_ed25519.pub")).read())
    assert snapshot_of(lab_b, NODE1) == first
    assert first.startswith("/cache/vm/abc/snapshots/node1-")


def test_what_the_guest_sees_changes_the_key(tmp_path):
    base = snapshot_of(tmp_path, NODE1)
    other_nic = dict(NODE1, roce_lab_vm_nics=[dict(NODE1["roce_lab_vm_nics"][0], mtu=1500)])
    other_port = dict(NODE1, ansible_port=22299)
    bigger = dict(NODE1, roce_lab_vm_memory=2048)
    keys = {base, snapshot_of(tmp_path, other_nic), snapshot_of(tmp_path, other_port), snapshot_of(tmp_path, bigger),
            snapshot_of(tmp_path, NODE1, image="/cache/vm/def")}
    assert len(keys) == 5


def test_another_lab_key_is_another_snapshot(tmp_path):
    first = snapshot_of(tmp_path / "a", NODE1)
    os.makedirs(str(tmp_path / "b"))
    with open(str(tmp_path / "b" / "id_ed25519.pub"), "w") as handle:
        handle.write("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAnotherKeyAnotherGuest lab\n")
    assert snapshot_of(tmp_path / "b", NODE1) != first


def test_snapshots_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCE_LAB_VM_SNAPSHOTS", "0")
    assert snapshot_of(tmp_path, NODE1) is None


def test_a_nic_cabled_to_a_leaf_is_a_tap_and_bad_leaf_names_are_refused(tmp_path):
    nic = {"model": "virtio", "port": 22290, "leaf": "leaf-r0", "leaf_port": "swp1", "address": "10.78.0.1/24",
           "mtu": 4200}
    cabled = dict(NODE1, roce_lab_vm_nics=[nic])
    vm = peer_qemu.QemuVm(FakeLab(tmp_path), "node1", cabled, 0)
    argv = vm.argv("/cache/vm/abc")
    assert "tap,id=fab0,ifname=rlt22290,script=no,downscript=no" in argv
    assert not any(arg.startswith("socket,id=fab0") for arg in argv)
    assert snapshot_of(tmp_path, cabled) != snapshot_of(tmp_path, NODE1)
    for nic in ({"leaf": "leaf r0", "leaf_port": "swp1"}, {"leaf": "leaf-r0", "leaf_port": "swp1;reboot"},
                {"leaf": "leaf-r0"}):
        bad = dict(NODE1, roce_lab_vm_nics=[dict({"model": "virtio", "port": 22290}, **nic)])
        with pytest.raises(SystemExit, match="a leaf is 1-10 of"):
            peer_qemu.QemuVm(FakeLab(tmp_path), "node1", bad, 0)
