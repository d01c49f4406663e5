# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.rdma_netns through main(): a fake host answers rdma/ip/crictl/docker with captured output
(fixtures/rdma) and keeps the kernel's state (mode, which namespace holds each device)."""

from __future__ import annotations

import json
import os
import platform

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.module_utils.rdma import host as rdma_host
from ansible_collections.roce.fabric.plugins.modules import rdma_netns
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "rdma")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return corpus.split(handle.read())[1]


class FakeHost(object):
    """The kernel and tools as the module sees them through run_command."""

    def __init__(self, tmp, mode="shared", devices=None, netns=(), soft=(), version="version_6.1.txt",
                 system_variant="6.1", tools=("rdma", "ip", "nsenter", "crictl", "docker", "update-initramfs", "lsinitramfs"),
                 initramfs="lsinitramfs_no_ib_core.txt"):
        self.tmp = tmp
        self.mode = mode
        self.where = dict(devices or {"mlx5_0": "host", "irdma0": "host"})
        self.named = {}  # name -> inode key
        self.soft = set(soft)
        self.version = fixture(version)
        self.system_variant = system_variant
        self.tools = set(tools)
        self.initramfs = fixture(initramfs)
        self.calls = []
        self.mutating = []
        self.proc = os.path.join(str(tmp), "proc")
        self.run_netns = os.path.join(str(tmp), "run", "netns")
        os.makedirs(self.run_netns)
        self.process(1)
        for name in netns:
            self.add_netns(name)

    # namespaces are files; a name is a hard link to a process's ns file (same inode, as a bind mount)
    def process(self, pid):
        path = os.path.join(self.proc, str(pid), "ns")
        os.makedirs(path)
        with open(os.path.join(path, "net"), "w") as handle:
            handle.write("net:%d" % pid)
        return os.path.join(path, "net")

    def add_netns(self, name, pid=None):
        target = os.path.join(self.run_netns, name)
        if pid is None:
            with open(target, "w") as handle:
                handle.write("netns:%s" % name)
        else:
            os.link(os.path.join(self.proc, str(pid), "ns", "net"), target)

    def ns_key(self, path):
        return os.stat(path).st_ino

    def name_of(self, path):
        """Namespace name used in self.where for a path (host, or the first name with that inode)."""
        inode = self.ns_key(path)
        if inode == self.ns_key(os.path.join(self.proc, "1", "ns", "net")):
            return "host"
        for name in sorted(os.listdir(self.run_netns)):
            if self.ns_key(os.path.join(self.run_netns, name)) == inode:
                return "ns:%d" % inode
        return "ns:%d" % inode

    def key(self, name):
        if name == "host":
            return "host"
        return self.name_of(os.path.join(self.run_netns, name))

    def devices(self, key):
        return [d for d, where in sorted(self.where.items()) if self.normal(where) == key]

    def normal(self, where):
        if where == "host" or where.startswith("ns:"):
            return where
        return self.key(where)

    def system_text(self):
        if self.system_variant == "old":
            return fixture("system_unknown_object.txt"), 255
        if self.system_variant == "5.4":
            return "netns %s\n" % self.mode, 0
        return "netns %s copy-on-fork on\n" % self.mode, 0

    def others(self):
        return [n for n in os.listdir(self.run_netns) if self.key(n) != "host"]

    def dev_json(self, key):
        return json.dumps([{"ifindex": i, "ifname": d, "node_type": "ca"} for i, d in enumerate(self.devices(key))])

    def __call__(self, argv, **kwargs):
        assert isinstance(argv, list)
        assert kwargs["environ_update"]["LC_ALL"] == "C"
        assert kwargs["expand_user_and_vars"] is False
        self.calls.append(argv)
        tool = os.path.basename(argv[0])
        args = argv[1:]
        ns_key = "host"
        if tool == "ip" and args[:2] == ["netns", "exec"]:
            ns_key = self.key(args[2])
            tool, args = os.path.basename(args[3]), args[4:]
        elif tool == "nsenter":
            ns_key = self.name_of(args[0].split("=", 1)[1])
            tool, args = os.path.basename(args[1]), args[2:]
        if tool == "rdma":
            if args == ["-V"]:
                return 0, self.version, ""
            if args == ["system", "show"]:
                out, rc = self.system_text()
                return rc, out if rc == 0 else "", out if rc else ""
            if args[:3] == ["system", "set", "netns"]:
                self.mutating.append(argv)
                if self.others():
                    return 1, "", fixture("err_mode_busy.txt")
                self.mode = args[3]
                return 0, "", ""
            if args == ["-j", "dev", "show"]:
                return 0, self.dev_json(ns_key), ""
            if args[:2] == ["dev", "set"] and args[3] == "netns":
                self.mutating.append(argv)
                dev, dest = args[2], args[4]
                if dev not in self.where or self.normal(self.where[dev]) != ns_key:
                    return 1, "", "Wrong device name - %s\n" % dev
                if dest not in os.listdir(self.run_netns):
                    return 1, "", 'Cannot open network namespace "%s": No such file or directory\n' % dest
                if dev in self.soft:
                    return 1, "", fixture("err_move_rxe.txt")
                self.where[dev] = self.key(dest)
                return 0, "", ""
        if tool == "ip":
            if args == ["netns", "list"]:
                return 0, "\n".join(sorted(os.listdir(self.run_netns), reverse=True)) + "\n", ""
            if args[:2] == ["netns", "attach"]:
                self.mutating.append(argv)
                self.add_netns(args[2], int(args[3]))
                return 0, "", ""
            if args[:2] == ["netns", "delete"]:
                self.mutating.append(argv)
                os.unlink(os.path.join(self.run_netns, args[2]))
                return 0, "", ""
        if tool == "crictl":
            if args[0] == "pods":
                return 0, fixture("crictl_pods.json"), ""
            if args[0] == "inspectp":
                return 0, fixture("crictl_inspectp.json"), ""
            if args[0] == "inspect":
                return 1, "", "no such container"
        if tool == "docker" and args[0] == "inspect":
            if args[1].startswith("3f1a"):
                return 0, fixture("docker_inspect.json"), ""
            return 1, "[]", "Error: No such object: %s\n" % args[1]
        if tool == "lsinitramfs":
            return 0, self.initramfs, ""
        if tool == "update-initramfs":
            self.mutating.append(argv)
            return 0, "update-initramfs: Generating /boot/initrd.img-6.1.0-50-amd64\n", ""
        raise AssertionError("unexpected command %s" % argv)

    def bin_path(self, name, required=False, opt_dirs=None):
        if name in self.tools:
            return "/usr/bin/%s" % name
        return None


@pytest.fixture
def host(tmp_path, monkeypatch):
    def make(**kwargs):
        fake = FakeHost(tmp_path, **kwargs)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: fake.bin_path(name))
        monkeypatch.setattr(rdma_host, "PROC", fake.proc)
        monkeypatch.setattr(rdma_host, "NETNS_RUN_DIRS", (fake.run_netns,))
        monkeypatch.setattr(rdma_host, "IB_CORE_SYSFS", str(tmp_path))
        boot = os.path.join(str(tmp_path), "boot")
        os.makedirs(boot)
        with open(os.path.join(boot, "initrd.img-%s" % platform.release()), "w") as handle:
            handle.write("initramfs")
        monkeypatch.setattr(rdma_host, "BOOT", boot)
        os.makedirs(os.path.join(str(tmp_path), "modprobe.d"))
        return fake
    return make


def args(tmp_path, **kwargs):
    kwargs.setdefault("modprobe_file", os.path.join(str(tmp_path), "modprobe.d", "roce-fabric-ib_core.conf"))
    return kwargs


def run(tmp_path, check=False, diff=False, **kwargs):
    return run_module(rdma_netns.main, args(tmp_path, **kwargs), check_mode=check, diff=diff)


# --- mode -------------------------------------------------------------------------------------------------

def test_runtime_mode_switch_check_then_apply_then_idempotent(host, tmp_path):
    fake = host(mode="shared")
    result = run(tmp_path, check=True, diff=True, mode="exclusive")
    assert result["changed"] and not result["failed"]
    assert fake.mode == "shared" and fake.mutating == []
    assert result["diff"]["before"]["mode"] == "shared" and result["diff"]["after"]["mode"] == "exclusive"
    result = run(tmp_path, mode="exclusive")
    assert result["changed"] and fake.mode == "exclusive"
    assert result["commands"] == ["/usr/bin/rdma system set netns exclusive"]
    # Not persistent (the next boot brings shared back), and not asked to be: no reboot to ask for.
    assert result["reboot_required"] is False
    assert result["mode"] == {"running": "exclusive", "persistent": "shared", "persistent_source": None, "copy_on_fork": True}
    fake.mutating = []
    result = run(tmp_path, mode="exclusive")
    assert not result["changed"] and fake.mutating == []


def test_persistent_writes_the_modprobe_option_and_is_idempotent(host, tmp_path):
    fake = host(mode="shared")
    result = run(tmp_path, mode="exclusive", persistent="present")
    path = os.path.join(str(tmp_path), "modprobe.d", "roce-fabric-ib_core.conf")
    with open(path) as handle:
        assert "options ib_core netns_mode=0\n" in handle.read()
    assert result["changed"] and not result["reboot_required"]
    assert result["mode"]["persistent"] == "exclusive" and result["mode"]["persistent_source"] == path
    # ib_core is not in this initramfs: no update.
    assert not any("update-initramfs" in c[0] for c in fake.mutating)
    fake.mutating = []
    result = run(tmp_path, mode="exclusive", persistent="present")
    assert not result["changed"] and fake.mutating == []


def test_persistent_updates_the_initramfs_that_holds_ib_core(host, tmp_path):
    fake = host(mode="shared", initramfs="lsinitramfs_ib_core.txt")
    result = run(tmp_path, mode="exclusive", persistent="present", runtime=False)
    assert any(os.path.basename(c[0]) == "update-initramfs" and c[1:3] == ["-u", "-k"] for c in fake.mutating)
    # Running shared, shared until the reboot: the reboot is what is left.
    assert result["reboot_required"] is True
    assert fake.mode == "shared"


def test_busy_kernel_with_persistent_records_for_reboot(host, tmp_path):
    fake = host(mode="shared", netns=["cni-1"])
    result = run(tmp_path, mode="exclusive", persistent="present")
    assert not result["failed"]
    assert result["reboot_required"] is True
    assert result["mode"]["running"] == "shared" and result["mode"]["persistent"] == "exclusive"
    assert fake.mode == "shared"
    assert result["changed"]  # the file was written
    assert not any("system set" in c for c in result["commands"])


def test_busy_kernel_without_persistent_fails_and_names_the_namespaces(host, tmp_path):
    fake = host(mode="shared", netns=["cni-1"])
    result = run(tmp_path, mode="exclusive")
    assert result["failed"] and result["kind"] == "busy"
    assert "cni-1" in result["msg"] and "persistent=present" in result["msg"]
    assert fake.mode == "shared" and not result["changed"]


def test_other_modprobe_file_overriding_is_an_error_and_writes_nothing(host, tmp_path):
    host(mode="shared")
    with open(os.path.join(str(tmp_path), "modprobe.d", "zz-local.conf"), "w") as handle:
        handle.write("options ib_core netns_mode=1\n")
    result = run(tmp_path, mode="exclusive", persistent="present")
    assert result["failed"] and "zz-local.conf" in result["msg"]
    assert not os.path.exists(os.path.join(str(tmp_path), "modprobe.d", "roce-fabric-ib_core.conf"))


def test_persistent_absent_removes_the_file(host, tmp_path):
    host(mode="exclusive")
    path = os.path.join(str(tmp_path), "modprobe.d", "roce-fabric-ib_core.conf")
    with open(path, "w") as handle:
        handle.write("options ib_core netns_mode=0\n")
    result = run(tmp_path, check=True, persistent="absent")
    assert result["changed"] and os.path.exists(path)
    result = run(tmp_path, persistent="absent")
    assert result["changed"] and not os.path.exists(path)
    assert result["reboot_required"] is True  # running exclusive, boots shared


@pytest.mark.parametrize("variant, version", [("old", "version_6.1.txt"), ("6.1", "version_ss190107.txt")])
def test_old_iproute2_is_reported(host, tmp_path, variant, version):
    host(system_variant=variant, version=version)
    result = run(tmp_path, mode="exclusive")
    assert result["failed"] and result["kind"] == "too_old"
    assert "5.4" in result["msg"]


def test_oldest_supported_system_output(host, tmp_path):
    fake = host(system_variant="5.4", mode="exclusive")
    result = run(tmp_path, mode="exclusive")
    assert not result["changed"] and result["mode"]["running"] == "exclusive" and "copy_on_fork" not in result["mode"]
    assert fake.mutating == []


# --- devices ----------------------------------------------------------------------------------------------

def test_move_by_name_check_apply_idempotent_and_back(host, tmp_path):
    fake = host(mode="exclusive", netns=["tenant1"])
    result = run(tmp_path, check=True, diff=True, devices=["mlx5_0"], netns="tenant1")
    assert result["changed"] and fake.mutating == []
    assert result["diff"]["before"]["devices"] == {"mlx5_0": "host"}
    assert result["diff"]["after"]["devices"] == {"mlx5_0": "tenant1"}
    result = run(tmp_path, devices=["mlx5_0"], netns="tenant1")
    assert result["changed"] and result["devices"] == {"mlx5_0": "tenant1"}
    assert result["commands"] == ["/usr/bin/rdma dev set mlx5_0 netns tenant1"]
    fake.mutating = []
    assert not run(tmp_path, devices=["mlx5_0"], netns="tenant1")["changed"]
    assert fake.mutating == []
    result = run(tmp_path, devices=["mlx5_0"], state="absent")
    assert result["changed"] and result["devices"] == {"mlx5_0": "host"}
    assert result["commands"] == ["/usr/bin/ip netns attach roce-fabric-host 1",
                                  "/usr/bin/ip netns exec tenant1 /usr/bin/rdma dev set mlx5_0 netns roce-fabric-host",
                                  "/usr/bin/ip netns delete roce-fabric-host"]
    assert "roce-fabric-host" not in os.listdir(fake.run_netns)
    assert fake.where["mlx5_0"] == "host"


def test_move_between_namespaces(host, tmp_path):
    fake = host(mode="exclusive", netns=["a", "b"])
    run(tmp_path, devices=["irdma0"], netns="a")
    result = run(tmp_path, devices=["irdma0"], netns="b")
    assert result["commands"] == ["/usr/bin/ip netns exec a /usr/bin/rdma dev set irdma0 netns b"]
    assert fake.normal(fake.where["irdma0"]) == fake.key("b")


def test_move_by_pid_names_the_namespace_once(host, tmp_path):
    fake = host(mode="exclusive")
    fake.process(4242)
    result = run(tmp_path, devices=["irdma0"], pid=4242)
    assert result["commands"] == ["/usr/bin/ip netns attach pid-4242 4242", "/usr/bin/rdma dev set irdma0 netns pid-4242"]
    assert result["target"] == {"netns": "pid-4242", "pid": 4242}
    fake.mutating = []
    result = run(tmp_path, devices=["irdma0"], pid=4242)
    assert not result["changed"] and fake.mutating == []


def test_pid_namespace_that_already_has_a_name_is_reused(host, tmp_path):
    fake = host(mode="exclusive")
    fake.process(777)
    fake.add_netns("cni-77", pid=777)
    result = run(tmp_path, devices=["mlx5_0"], pid=777)
    assert result["commands"] == ["/usr/bin/rdma dev set mlx5_0 netns cni-77"]


def test_move_by_kubernetes_pod(host, tmp_path):
    fake = host(mode="exclusive")
    fake.process(48213)
    result = run(tmp_path, devices=["irdma0"], pod="rdma-test", pod_namespace="default")
    assert result["commands"] == ["/usr/bin/ip netns attach pod-default-rdma-test 48213",
                                  "/usr/bin/rdma dev set irdma0 netns pod-default-rdma-test"]
    assert ["/usr/bin/crictl", "pods", "--name", "rdma-test", "--namespace", "default", "-o", "json"] in fake.calls


def test_unknown_pod_is_an_error(host, tmp_path):
    fake = host(mode="exclusive")
    result = run(tmp_path, devices=["irdma0"], pod="nope", pod_namespace="default")
    assert result["failed"] and result["kind"] == "no_pod" and fake.mutating == []


def test_move_by_docker_container(host, tmp_path):
    fake = host(mode="exclusive", tools=("rdma", "ip", "nsenter", "docker"))
    fake.process(51877)
    result = run(tmp_path, devices=["mlx5_0"], container="3f1a9c2b7d4e5f60")
    assert result["commands"] == ["/usr/bin/ip netns attach ctr-3f1a9c2b7d4e 51877",
                                  "/usr/bin/rdma dev set mlx5_0 netns ctr-3f1a9c2b7d4e"]
    missing = run(tmp_path, devices=["mlx5_0"], container="deadbeef")
    assert missing["failed"] and missing["kind"] == "no_container"


def test_unknown_device_fails_before_any_change(host, tmp_path):
    fake = host(mode="shared", netns=["tenant1"])
    result = run(tmp_path, mode="exclusive", devices=["mlx9_9"], netns="tenant1")
    # The mode switch comes after the checks: nothing changed.
    assert result["failed"] and result["kind"] == "no_device"
    assert fake.mode == "shared" and fake.mutating == []


def test_unknown_device_is_named(host, tmp_path):
    fake = host(mode="exclusive", netns=["tenant1"])
    result = run(tmp_path, devices=["mlx9_9"], netns="tenant1")
    assert result["failed"] and result["kind"] == "no_device"
    assert "mlx9_9" in result["msg"] and "mlx5_0" in result["msg"]
    assert fake.mutating == []


def test_missing_namespace_fails_before_any_change(host, tmp_path):
    fake = host(mode="shared")
    result = run(tmp_path, mode="exclusive", devices=["mlx5_0"], netns="nope")
    assert result["failed"] and result["kind"] == "no_netns"
    assert fake.mode == "shared" and fake.mutating == []


def test_shared_mode_refuses_moves(host, tmp_path):
    fake = host(mode="shared", netns=["tenant1"])
    result = run(tmp_path, devices=["mlx5_0"], netns="tenant1")
    assert result["failed"] and result["kind"] == "shared"
    assert "exclusive" in result["msg"] and fake.mutating == []


def test_software_device_move_is_explained(host, tmp_path):
    fake = host(mode="exclusive", devices={"rxe0": "host"}, soft=["rxe0"], netns=["pa"])
    result = run(tmp_path, devices=["rxe0"], netns="pa")
    assert result["failed"] and result["kind"] == "not_supported"
    assert "Operation not supported" in result["msg"] and "rdma_rxe" in result["msg"]
    assert fake.where["rxe0"] == "host"


def test_mode_then_move_in_one_task(host, tmp_path):
    fake = host(mode="shared")
    fake.process(4242)
    result = run(tmp_path, mode="exclusive", devices=["irdma0"], pid=4242)
    assert result["commands"][0] == "/usr/bin/rdma system set netns exclusive"
    assert fake.mode == "exclusive" and fake.normal(fake.where["irdma0"]) != "host"


@pytest.mark.parametrize("bad, words", [
    (dict(devices=["mlx5_0"]), "needs one of netns"),
    (dict(devices=["mlx5_0"], state="absent", netns="x"), "do not apply"),
    (dict(devices=[]), "at least one"),
    (dict(devices=["mlx5_0"], netns="host"), "reserved"),
    (dict(persistent="present"), "mode"),
    (dict(devices=["mlx5_0"], netns="a", pid=3), "mutually exclusive"),
])
def test_argument_errors(host, tmp_path, bad, words):
    fake = host(mode="exclusive", netns=["a"])
    result = run(tmp_path, **bad)
    assert result["failed"] and words in result["msg"]
    assert fake.mutating == []
