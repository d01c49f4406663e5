"""roce.fabric.rdma_netns against a lab VM (QEMU, Debian's kernel, Soft-RoCE): the real kernel's RDMA
namespace mode and the real kernel's refusals. Every state is read from the VM over SSH, outside the module.
The persistent mode across a real reboot (modprobe.d, the initramfs that carries ib_core, the one reboot) is proven
by host.yml's runs that end in the rolling reboot: tests/peer/test_rdma_host_ofed_peer.py (with the module's own
reading after the reboot) and molecule/rdma."""


import pytest

from conftest import INVENTORY, LAB, run_module

VM = "node1"


def vm(*command, check=True):
    """Run a shell command in the VM (ssh), return its stdout."""
    proc = LAB.exec(VM, [" ".join(command)])
    if check and proc.returncode != 0:
        raise AssertionError("%s: rc=%d %s %s" % (command, proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout


def module(args, check=False, diff=False, name="roce.fabric.rdma_netns"):
    return run_module(INVENTORY, VM, name, args, check=check, diff=diff)


def kernel_state():
    """What the VM's kernel and files say, read without the module."""
    return {
        "system": vm("rdma system show").strip(),
        "host_devices": vm("rdma dev show | awk '{print $2}' | tr -d :").split(),
        "netns": vm("ip netns list").split(),
        "modprobe": vm("cat /etc/modprobe.d/roce-fabric-ib_core.conf 2>/dev/null || true"),
    }


@pytest.fixture(scope="module")
def node(vms):
    # A Soft-RoCE device on the fabric NIC and a clean mode to start from.
    vm("modprobe rdma_rxe; rdma link show rxe0 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev enp1s0")
    vm("for n in $(ip netns list | cut -d' ' -f1); do ip netns delete $n; done; rdma system set netns shared")
    yield VM
    vm("for n in $(ip netns list | cut -d' ' -f1); do ip netns delete $n; done; rdma system set netns shared; "
       "rm -f /etc/modprobe.d/roce-fabric-ib_core.conf", check=False)


def test_runtime_mode_check_apply_idempotent(node):
    before = kernel_state()
    assert before["system"].startswith("netns shared")
    result = module({"mode": "exclusive"}, check=True, diff=True)
    assert result["changed"] and result["diff"]["after"]["mode"] == "exclusive"
    assert kernel_state() == before, "check mode changed the VM"
    result = module({"mode": "exclusive"})
    assert result["changed"] and result["mode"]["running"] == "exclusive" and result["iproute2"] == "6.1.0"
    assert kernel_state()["system"] == "netns exclusive copy-on-fork on"
    again = module({"mode": "exclusive"})
    assert not again["changed"] and again["commands"] == []
    assert module({"mode": "shared"})["changed"]
    assert kernel_state()["system"] == "netns shared copy-on-fork on"


def test_bad_input_is_refused_and_changes_nothing(node):
    vm("rdma system set netns exclusive; ip netns add pa")
    try:
        before = kernel_state()
        assert before["host_devices"] == ["rxe0"]
        # rxe cannot change namespace: the kernel says so, and the module explains it.
        result = module({"devices": ["rxe0"], "netns": "pa"})
        assert result["failed"] and result["kind"] == "not_supported"
        assert "Operation not supported" in result["msg"] and "rdma_rxe" in result["msg"]
        assert kernel_state() == before
        assert vm("ip netns exec pa rdma dev show").strip() == ""
        # Unknown device, missing namespace, shared mode asked with a move: refused before any change.
        result = module({"devices": ["mlx5_9"], "netns": "pa"})
        assert result["failed"] and result["kind"] == "no_device" and "rxe0" in result["msg"]
        result = module({"devices": ["rxe0"], "netns": "nope"})
        assert result["failed"] and result["kind"] == "no_netns"
        result = module({"mode": "shared", "devices": ["rxe0"], "netns": "pa"})
        assert result["failed"] and result["kind"] == "shared"
        assert kernel_state() == before
        # The kernel refuses a mode change while another namespace exists.
        result = module({"mode": "shared"})
        assert result["failed"] and result["kind"] == "busy" and "pa" in result["msg"]
        assert kernel_state() == before
    finally:
        vm("ip netns delete pa; rdma system set netns shared", check=False)
