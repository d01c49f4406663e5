"""playbooks/host.yml installing an NVIDIA stack from a tarball on a lab VM (QEMU, Debian's kernel): the tarball is
unpacked in a private folder that is removed afterwards, never in a shared path another user made first. What takes
a host's RDMA or VFs away happens in the rolling play, batch by batch: the openibd restart that loads the new stack
(and drops every RDMA connection of the host), not at all on a host that the same run reboots, and a VF count change
on a device that has VFs (the kernel takes them all away first), on the VM's real SR-IOV igb NIC.

The lab has no NVIDIA packages. The tarball is a stand-in with the real one's layout (a top folder named after the
release holding ``mlnxofedinstall``); its installer records how it was run and installs an ``ofed_info`` that prints
the real ``ofed_info -s`` line (MLNX_OFED_LINUX-<version>:, the format of NVIDIA's MLNX_OFED documentation, parsed by
module_utils/rdma/sysfs.py) and an ``/etc/init.d/openibd`` that logs each restart with the boot it happened in.
Every state is read from the VM over SSH, outside Ansible."""

import json
import re
import subprocess

import pytest

from conftest import INVENTORY, LAB, REPO, run_module

VM = "node1"
VERSION = "24.10-1.1.4.0"
RELEASE = "MLNX_OFED_LINUX-%s-debian12.1-x86_64" % VERSION
TARBALL = "/root/%s.tgz" % RELEASE
RECORD = "/root/ofed-standin"
PWNED = "/tmp/roce-fabric-pwned-ofed"
PLANTED = "/var/tmp/%s" % RELEASE
NUMVFS = "/sys/class/net/enp2s0/device/sriov_numvfs"
FIRST = "GPU node host stack, no reboot yet"
ROLLING = "One rolling reboot per host for everything pending, then checks"

INSTALLER = r"""#!/bin/sh
# Stand-in for MLNX_OFED's mlnxofedinstall (lab only): records how it ran, installs ofed_info and openibd.
set -e
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p %(record)s
echo "$here $*" >> %(record)s/installs
stat -c '%%U %%a' "$(dirname "$here")" >> %(record)s/installs
printf '#!/bin/sh\necho MLNX_OFED_LINUX-%(version)s:\n' > /usr/bin/ofed_info
chmod 0755 /usr/bin/ofed_info
printf '#!/bin/sh\necho "$1 $(cat /proc/sys/kernel/random/boot_id)" >> %(record)s/openibd\n' > /etc/init.d/openibd
chmod 0755 /etc/init.d/openibd
""" % dict(record=RECORD, version=VERSION)


def vm(command, stdin=None):
    proc = LAB.exec(VM, [command], input=stdin)
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    return proc.stdout


def host_play(tmp_path, variables):
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, "-l", VM, "playbooks/host.yml", "-e", "@%s" % extra],
                          capture_output=True, text=True, cwd=REPO, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def ran_in(output, task, status="changed|ok"):
    """The first play in which ``task`` ended with ``status`` (a regex; ran, not skipped) on the VM, or None."""
    play = None
    for block in re.split(r"\n(?=PLAY \[|TASK \[)", output):
        if block.startswith("PLAY ["):
            play = block.split("]", 1)[0][6:]
        elif block.startswith("TASK [") and task in block.split("\n", 1)[0] and re.search(r"^(%s): \[%s\]" % (status, VM), block, re.M):
            return play
    return None


@pytest.fixture
def standin(vms):
    clean = ("rm -rf %s %s %s /root/ofed-src /usr/bin/ofed_info /etc/init.d/openibd /var/tmp/roce-fabric-ofed.*"
             " /etc/modprobe.d/roce-fabric-ib_core.conf" % (RECORD, TARBALL, PWNED))
    vm(clean + "; rm -rf %s" % PLANTED)
    vm("mkdir -p /root/ofed-src/%s && cat > /root/ofed-src/%s/mlnxofedinstall && chmod 0755 /root/ofed-src/%s/mlnxofedinstall"
       " && tar czf %s -C /root/ofed-src %s" % (RELEASE, RELEASE, RELEASE, TARBALL, RELEASE), stdin=INSTALLER)
    # What another user could leave where the installer used to be unpacked: the release's folder, theirs and
    # writable, holding an installer of their own.
    vm("mkdir -m 0777 %s && printf '#!/bin/sh\\ntouch %s\\n' > %s/mlnxofedinstall && chmod 0777 %s/mlnxofedinstall"
       " && chown -R nobody %s" % (PLANTED, PWNED, PLANTED, PLANTED, PLANTED))
    yield VM
    vm(clean + "; rm -rf %s; rdma system set netns shared 2>/dev/null || true" % PLANTED)


def test_ofed_unpacked_privately_and_openibd_and_vf_removal_wait_for_the_rolling_play(standin, tmp_path):
    """The installer used to be unpacked into /var/tmp/<release>, which any user could have made first, and was left
    there; openibd restarted in the first play, and a VF count change went through 0 there, on every host at once."""
    planted = vm("stat -c '%%U %%a' %s %s/mlnxofedinstall; md5sum %s/mlnxofedinstall" % (PLANTED, PLANTED, PLANTED))
    # The lab's sriov_devices want 2 VFs on enp2s0; the VM has 1, so the change takes the VF that exists away.
    vm("echo 0 > %s && echo 1 > %s" % (NUMVFS, NUMVFS))
    variables = dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version=VERSION, rdma_host_ofed_installer=TARBALL,
                     rdma_host_netns_mode="", rdma_host_softroce_links=[], nic_qos_interfaces=[],
                     # The scratch array has its own tests (test_nvme_scratch_peer.py): three host plays need not make it.
                     nvme_scratch_drives=[])
    rc, out = host_play(tmp_path, variables)
    assert rc == 0, out[-4000:]
    assert vm("cat %s" % NUMVFS).strip() == "2"
    assert ran_in(out, "Plan the virtual functions (check mode)") == FIRST
    assert ran_in(out, "Virtual functions in the kernel", "changed") == ROLLING, out[-4000:]
    installs = vm("cat %s/installs" % RECORD).splitlines()
    assert len(installs) == 2, installs
    where, args = installs[0].split(" ", 1)
    assert re.match(r"^/var/tmp/roce-fabric-ofed\.[A-Za-z0-9_]+/%s$" % re.escape(RELEASE), where), installs
    assert args == "--force --without-fw-update" and installs[1] == "root 700", installs
    # Nothing left behind, the planted folder untouched and its installer never run.
    assert vm("ls -d /var/tmp/roce-fabric-ofed.* 2>/dev/null || true").strip() == ""
    assert vm("stat -c '%%U %%a' %s %s/mlnxofedinstall; md5sum %s/mlnxofedinstall" % (PLANTED, PLANTED, PLANTED)) == planted
    assert vm("test -e %s && echo yes || echo no" % PWNED).strip() == "no"
    # One openibd restart, by the rolling play; the first play only recorded that the new stack waits for it.
    restarts = vm("cat %s/openibd" % RECORD).splitlines()
    assert [line.split()[0] for line in restarts] == ["restart"], restarts
    assert ran_in(out, "Restart openibd to load the new NVIDIA stack") == ROLLING, out[-4000:]
    assert ran_in(out, "The NVIDIA stack changed and its modules wait for openibd") == FIRST
    assert vm("ofed_info -s").strip() == "MLNX_OFED_LINUX-%s:" % VERSION

    # The stack is there: a second run installs nothing and restarts nothing.
    rc, out = host_play(tmp_path, variables)
    assert rc == 0, out[-4000:]
    assert len(vm("cat %s/installs" % RECORD).splitlines()) == 2 and len(vm("cat %s/openibd" % RECORD).splitlines()) == 1
    assert ran_in(out, "Run mlnxofedinstall") is None and ran_in(out, "Restart openibd to load the new NVIDIA stack") is None
    assert ran_in(out, "Virtual functions in the kernel", "changed") is None and vm("cat %s" % NUMVFS).strip() == "2"

    # A new stack and a change that waits for a reboot in the same run: the one reboot loads the stack, no openibd.
    vm("rm -f /usr/bin/ofed_info /etc/modprobe.d/roce-fabric-ib_core.conf")
    boot = vm("cat /proc/sys/kernel/random/boot_id").strip()
    # The lab's VMs leave their initramfs alone (QEMU boots its own); this run rebuilds it as a disk-booted host's.
    rc, out = host_play(tmp_path, dict(variables, rdma_host_netns_mode="exclusive", rdma_host_netns_runtime=False,
                                       rdma_host_netns_initramfs="auto"))
    assert rc == 0, out[-4000:]
    assert vm("cat /proc/sys/kernel/random/boot_id").strip() != boot, "the host was not rebooted"
    assert len(vm("cat %s/installs" % RECORD).splitlines()) == 4
    assert len(vm("cat %s/openibd" % RECORD).splitlines()) == 1, "openibd restarted on a host that was rebooted"
    assert ran_in(out, "Restart openibd to load the new NVIDIA stack") is None
    assert vm("rdma system show").startswith("netns exclusive")
    # The persistent mode came back with the reboot (ib_core is in the guest's initramfs, which the module rebuilt):
    # the module reads it so, with nothing left to do and no reboot to ask for.
    assert "options ib_core netns_mode=0" in vm("cat /etc/modprobe.d/roce-fabric-ib_core.conf")
    assert "etc/modprobe.d/roce-fabric-ib_core.conf" in vm("lsinitramfs /boot/initrd.img-$(uname -r)").split(), \
        "the initramfs was not rebuilt with the option"
    again = run_module(INVENTORY, VM, "roce.fabric.rdma_netns", {"mode": "exclusive", "persistent": "present"})
    assert not again["changed"] and again["reboot_required"] is False and again["commands"] == [], again
    assert again["mode"]["running"] == again["mode"]["persistent"] == "exclusive", again
    assert vm("ls -d /var/tmp/roce-fabric-ofed.* 2>/dev/null || true").strip() == ""
