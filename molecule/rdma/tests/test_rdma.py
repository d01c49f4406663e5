"""Verify playbooks/host.yml on the lab VMs: Soft-RoCE rxe0 with its RoCE v2 GID in the role's facts module,
exclusive RDMA namespaces loaded by the one reboot, SR-IOV VFs, the RoCE QoS contract's RDMA-CM ToS and the NVMe
scratch array that came back after it, and RDMA traffic between the two VMs. The idempotence step before this proved that a re-run changes nothing."""

import json
import os
import sys
import time

import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "resources"))
from labcheck import LAB, ansible_host, scenario_hosts  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = scenario_hosts("lab_vms")
FABRIC = {"node1": "10.78.0.1", "node2": "10.78.0.2"}


def name(host):
    return host.backend.get_hostname()


def test_facts_list_rxe0_with_its_roce_v2_ipv4_gid(host):
    facts = ansible_host(host).ansible("roce.fabric.rdma_facts", "gpu_topology=false", check=False)["ansible_facts"]["roce_rdma"]
    (rxe,) = [d for d in facts["devices"] if d["name"] == "rxe0"]
    port = rxe["ports"][0]
    assert rxe["driver"] == "rxe" and rxe["software"] and port["netdev"]["name"] == "enp1s0" and port["state"] == "ACTIVE"
    index = port["roce_v2_ipv4_gid_index"]
    assert index is not None
    assert [g["address"] for g in port["gids"] if g["index"] == index] == ["::ffff:%s" % FABRIC[name(host)]]
    assert port["ipv4"] == FABRIC[name(host)]
    assert facts["driver"]["stack"] == "inbox"


def test_exclusive_namespaces_loaded_by_exactly_one_reboot(host):
    assert host.check_output("rdma system show").startswith("netns exclusive")
    assert "options ib_core netns_mode=0" in host.file("/etc/modprobe.d/roce-fabric-ib_core.conf").content_string
    # rdma_host_netns_initramfs=never (the lab's VMs boot the initramfs QEMU hands them): the one in /boot untouched.
    assert "roce-fabric-ib_core.conf" not in host.check_output("lsinitramfs /boot/initrd.img-$(uname -r)")
    # Every boot prints the login banner on the serial console the lab keeps: the first boot and one reboot.
    with open(LAB.artifact(name(host), "console"), errors="replace") as handle:
        assert handle.read().count("%s login:" % name(host)) == 2


def test_sriov_vfs_survived_the_reboot(host):
    assert host.file("/sys/class/net/enp2s0/device/sriov_numvfs").content_string.strip() == "2"
    link = json.loads(host.check_output("ip -j -d link show dev enp2s0"))[0]
    vf0 = [vf for vf in link["vfinfo_list"] if vf["vf"] == 0][0]
    index = sorted(FABRIC).index(name(host)) + 1
    assert vf0["address"] == "02:72:00:00:%02x:01" % index
    assert vf0["trust"] is True and vf0["spoofchk"] is False and vf0["vlan_list"][0]["vlan"] == 10
    assert host.exists("ip") and host.run("ip link show enp2s0v1").rc == 0
    assert host.service("roce-fabric-sriov-enp2s0.service").is_enabled


def test_rdma_cm_default_tos_is_the_contracts_after_the_reboot(host):
    """The contract's ToS (106: DSCP 26, ECT(0)) on rxe0, restored by the boot unit after the one reboot."""
    assert host.file("/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").content_string.strip() == "106"
    assert host.service("roce-fabric-qos-enp1s0.service").is_enabled
    assert host.service("roce-fabric-qos-enp1s0.service").is_running  # oneshot with RemainAfterExit: active
    actions = json.loads(host.file("/etc/roce-fabric/qos/enp1s0.json").content_string)
    assert actions[-1] == {"write": "/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos", "value": "106"}


def test_ib_write_bw_between_the_vms(host):
    if name(host) != "node2":
        return
    (server,) = [spec for spec in testinfra_hosts if spec.startswith("ssh://node1?")]
    testinfra.get_host(server).run("nohup timeout 120 ib_write_bw -R -D 3 --report_gbits < /dev/null > /root/ib_write_bw.server 2>&1 &")
    time.sleep(5)
    client = host.run("timeout 100 ib_write_bw -R -D 3 --report_gbits %s" % FABRIC["node1"])
    assert client.rc == 0, client.stdout + client.stderr
    assert "BW average" in client.stdout and "Link type       : Ethernet" in client.stdout


def test_boot_units_run_no_shell(host):
    """The Soft-RoCE and SR-IOV boot units run their helpers with arguments, never through a shell (hardening)."""
    for unit in ("roce-fabric-softroce-rxe0.service", "roce-fabric-sriov-enp2s0.service"):
        text = host.file("/etc/systemd/system/" + unit).content_string
        assert "/bin/sh" not in text and "sh -c" not in text, text
        assert "ExecStart=/usr/bin/python3 /usr/local/sbin/roce-fabric-" in text, text


def test_nvme_scratch_array_came_back_with_the_reboot(host):
    """The four NVMe drives striped by the host play before its reboot: assembled at boot from mdadm.conf as
    /dev/md/scratch and mounted from fstab (the console above counts one reboot), the root's mode kept."""
    mount = host.mount_point("/mnt/scratch")
    assert mount.exists and mount.filesystem == "xfs"
    detail = host.check_output("mdadm --detail --export /dev/md/scratch")
    assert "MD_LEVEL=raid0" in detail and "MD_DEVICES=4" in detail and "MD_NAME=scratch" in detail
    assert host.check_output("stat -c %a /mnt/scratch") == "1777"
    # Made again at boot only on blank drives: with the array's superblocks there, the unit left it to mdadm.
    assert host.service("roce-fabric-scratch-scratch.service").is_enabled
