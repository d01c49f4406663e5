"""roce.fabric.nvme_scratch and the nvme_scratch role against a lab VM with four emulated NVMe drives (QEMU's NVMe
controller, Debian's kernel, real mdadm, XFS and ext4): check mode, apply, idempotence, every refusal with the drives'
contents unchanged, assembly of a stopped array, the boot unit making the array again on blank drives, and a quick
measured sequential write and read. Every state is read from the VM over SSH, outside the module. The array's return
after a real reboot is molecule/rdma's (the host play reboots the VMs)."""

import json
import os
import re
import subprocess
import tempfile

import pytest

from conftest import INVENTORY, LAB, REPO, run_module

VM = "node1"
ARGS = {"drives": [{"model": "QEMU NVMe Ctrl"}], "count": 4, "path": "/mnt/scratch", "mode": "1777"}
DRIVES = ["/dev/nvme%dn1" % i for i in range(4)]
# The plays and variables the tests write (not the lab's folder: ROCE_LAB_DIR may put that elsewhere).
WORK = tempfile.mkdtemp(prefix="roce-nvme-test.")


def vm(command, check=True):
    """Run a shell command in the VM (ssh), return its stdout."""
    proc = LAB.exec(VM, [command])
    if check and proc.returncode != 0:
        raise AssertionError("%s: rc=%d %s %s" % (command, proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout


def module(args, check=False, diff=False):
    return run_module(INVENTORY, VM, "roce.fabric.nvme_scratch", args, check=check, diff=diff)


def node_state():
    """What the VM's block layer and files say, read without the module (one SSH session): signatures of every
    drive, partitions, arrays, mounts, fstab and mdadm.conf."""
    return vm("for d in %s; do echo $d $(blkid --probe --output export $d | grep -E '^(TYPE|UUID)=' | tr '\\n' ' '); done; "
              "echo; lsblk --noheadings --output NAME,TYPE %s | grep part; echo; grep ^md /proc/mdstat; echo; "
              "grep -E ' /mnt/' /proc/self/mounts; echo; cat /etc/fstab /etc/mdadm/mdadm.conf" % (" ".join(DRIVES), " ".join(DRIVES)),
              check=False)


def clean():
    vm("umount /mnt/scratch /mnt/data 2>/dev/null; systemctl disable --now roce-fabric-scratch-scratch.service 2>/dev/null; "
       "for md in $(ls /dev/md?* 2>/dev/null); do mdadm --stop $md; done; "
       # Blank as a new drive: every block zero (Write Zeroes, quick on QEMU's qcow2), not only the signatures, which
       # would leave an earlier array's data that the module's content probe refuses.
       "for d in %s; do wipefs --all --quiet $d; blkdiscard --zeroout $d; done; "
       "sed -i '\\# /mnt/scratch #d' /etc/fstab; sed -i '/^ARRAY /d' /etc/mdadm/mdadm.conf; "
       "rm -f /etc/systemd/system/roce-fabric-scratch-*.service /etc/roce-fabric/scratch/*.json; "
       "systemctl daemon-reload" % " ".join(DRIVES), check=False)


@pytest.fixture(scope="module")
def node(vms):
    clean()
    yield VM
    clean()


def test_check_apply_idempotent(node):
    before = node_state()
    assert "TYPE" not in before and "md127" not in before
    result = module(ARGS, check=True, diff=True)
    assert result["changed"] and not result.get("failed"), result
    assert [d["serial"] for d in result["drives"]] == ["RFN1D0", "RFN1D1", "RFN1D2", "RFN1D3"]
    assert result["commands"][0].startswith("/sbin/mdadm --create /dev/md/scratch")
    assert result["diff"]["before"]["array"] is None and result["diff"]["after"]["array"]["members"] == DRIVES
    assert node_state() == before, "check mode changed the VM"

    result = module(ARGS, diff=True)
    assert result["changed"] and not result.get("failed"), result
    assert result["array"]["level"] == "raid0" and result["array"]["members"] == DRIVES
    fs_uuid = result["filesystem"]["uuid"]
    assert vm("findmnt --noheadings --output FSTYPE,SOURCE /mnt/scratch").split()[0] == "xfs"
    assert vm("stat -c %a /mnt/scratch").strip() == "1777"
    assert "UUID=%s /mnt/scratch xfs defaults,noatime,nofail 0 0" % fs_uuid in vm("cat /etc/fstab")
    assert "ARRAY /dev/md/scratch metadata=1.2 UUID=%s name=scratch" % result["array"]["uuid"] in vm("cat /etc/mdadm/mdadm.conf")
    # No host name in the superblock: a renamed node assembles the same /dev/md/scratch.
    assert "MD_NAME=scratch\n" in vm("mdadm --detail --export /dev/md/scratch")

    settled = node_state()
    again = module(ARGS, check=True)
    assert not again["changed"] and again["commands"] == []
    again = module(ARGS)
    assert not again["changed"] and again["commands"] == []
    assert node_state() == settled


def refused_in_one_play(cases):
    """Run the module once per case in one play (one Ansible start, one SSH connection): each case's result."""
    tasks = [{"name": "case %d" % i, "roce.fabric.nvme_scratch": args, "ignore_errors": True, "register": "case%d" % i}
             for i, (args, _words) in enumerate(cases)]
    tasks.append({"name": "results", "ansible.builtin.debug": {
        "msg": "{{ [%s] | to_json }}" % ", ".join("case%d" % i for i in range(len(cases)))}})
    path = os.path.join(WORK, "nvme_scratch_refusals.yml")
    with open(path, "w") as handle:
        json.dump([{"hosts": VM, "gather_facts": False, "tasks": tasks}], handle)
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, path], capture_output=True, text=True, cwd=REPO, env=env,
                          check=False)
    try:
        message = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"][VM]["msg"]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("no result (rc=%d)\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-2000:]))
    return json.loads(message) if isinstance(message, str) else message


def test_bad_input_is_refused_and_changes_nothing(node):
    # Issue 37, 4: under a directory anyone can write, a local user made the mount point a link to /etc; the array
    # was mounted over /etc and its root made 1777.
    vm("mkdir -p /srv/shared && chmod 1777 /srv/shared && ln -sfn /etc /srv/shared/scratch")
    etc = vm("stat -c '%a %U %i' /etc; findmnt --noheadings /etc || true")
    before = node_state()
    cases = [
        (dict(ARGS, path="/srv/shared/scratch"), "/srv/shared/scratch is a symbolic link"),
        (dict(ARGS, path="/srv/shared/new"), "/srv/shared can be written by any user"),
        (dict(ARGS, path="/./var"), "path /var is a system directory"),
        (dict(ARGS, path="/mnt/scratch\n"), "absolute path"),
        (dict(ARGS, name="scratch;reboot"), "name"),
        (dict(ARGS, path="/var"), "system directory"),
        (dict(ARGS, path="/mnt/x y"), "absolute path"),
        (dict(ARGS, mount_options="defaults,x-systemd.requires=$(reboot)"), "mount_options"),
        (dict(ARGS, count=8), "count asks for 8"),
        (dict(ARGS, drives=[{"model": "Microsoft NVMe Direct Disk"}]), "no local NVMe namespace matches"),
        (dict(ARGS, drives=[{"model": "("}]), "regular expression"),
        (dict(ARGS, owner="nosuchuser"), "does not exist"),
        # The active array has four members: three are not an array to rebuild it into.
        (dict(ARGS, drives=[{"serial": "RFN1D[012]"}], count=3), "not rebuilt over its data"),
        # Another file system over the array's XFS needs force.
        (dict(ARGS, fstype="ext4"), "holds xfs"),
    ]
    results = refused_in_one_play(cases)
    for (args, words), result in zip(cases, results):
        assert result.get("failed") and words in result["msg"], (args, result)
        assert result.get("commands", []) == [], (args, result["commands"])
    assert node_state() == before, "a refused run changed the VM"
    assert vm("stat -c '%a %U %i' /etc; findmnt --noheadings /etc || true") == etc
    vm("rm -rf /srv/shared")


def test_a_stopped_array_is_assembled_not_made_again(node):
    vm("echo kept > /mnt/scratch/marker")
    fs_uuid = vm("blkid --probe --output value --match-tag UUID /dev/md/scratch").strip()
    down = module({"state": "absent", "path": "/mnt/scratch"}, diff=True)
    assert down["changed"] and vm("grep ^md /proc/mdstat || true") == ""
    assert "/mnt/scratch" not in vm("cat /etc/fstab") and "ARRAY" not in vm("cat /etc/mdadm/mdadm.conf")
    assert not module({"state": "absent", "path": "/mnt/scratch"})["changed"]
    up = module(ARGS)
    assert up["changed"] and any(c.startswith("/sbin/mdadm --assemble /dev/md/scratch") for c in up["commands"])
    assert not any("--create" in c or "mkfs" in c for c in up["commands"]), up["commands"]
    assert up["filesystem"]["uuid"] == fs_uuid and vm("cat /mnt/scratch/marker").strip() == "kept"


def test_drives_in_use_are_refused_with_their_data_unchanged(node):
    module({"state": "absent", "path": "/mnt/scratch"})
    vm("wipefs --all --quiet %s" % " ".join(DRIVES))
    # nvme2n1 holds an ext4 file system with data; nvme3n1 a partition table.
    vm("mkfs.ext4 -q -L data /dev/nvme2n1 && mkdir -p /mnt/data && mount /dev/nvme2n1 /mnt/data && "
       "head -c 1048576 /dev/urandom > /mnt/data/blob && sha256sum /mnt/data/blob > /root/blob.sha256 && umount /mnt/data")
    vm("printf 'label: gpt\\n,,L\\n' | sfdisk --quiet /dev/nvme3n1")
    before = node_state()
    result = module(ARGS)
    assert result.get("failed") and result["kind"] == "refused", result
    assert "/dev/nvme2n1: holds ext4" in result["msg"] and "/dev/nvme3n1: has partition nvme3n1p1" in result["msg"]
    # Issue 37, 3: the array's data is still on the other two, without a signature since wipefs: read, and refused.
    assert "/dev/nvme0n1: holds data without a signature" in result["msg"], result["msg"]
    assert result["commands"] == [] and node_state() == before
    vm("mount /dev/nvme2n1 /mnt/data && cd /mnt/data && sha256sum --check --quiet /root/blob.sha256")
    # Mounted: refused even with force, and still mounted.
    result = module(dict(ARGS, force=True))
    assert result.get("failed") and "mounted at /mnt/data (never used)" in result["msg"], result
    assert result["commands"] == [] and " /mnt/data " in vm("cat /proc/self/mounts")
    vm("cd /mnt/data && sha256sum --check --quiet /root/blob.sha256 && cd / && umount /mnt/data")
    # Not mounted, with force: wiped and made into the array.
    result = module(dict(ARGS, force=True))
    assert result["changed"] and not result.get("failed"), result
    assert [c.split()[-1] for c in result["commands"] if " --all " in c] == DRIVES
    assert vm("findmnt --noheadings --output FSTYPE /mnt/scratch").strip() == "xfs"


NQN = "nqn.2026-11.org.roce-fabric:lab-target"
TARGET = "/sys/kernel/config/nvmet"


def connect_fabric_namespace():
    """An NVMe over Fabrics namespace in the VM: the kernel's own target (nvmet-tcp) serving a file on 127.0.0.1:4420,
    connected with nvme-tcp as nvme connect -t tcp would (the fabrics device takes the same options string). Returns
    its name."""
    before = set(vm("ls /sys/block").split())
    vm("modprobe nvmet-tcp && modprobe nvme-tcp && truncate -s 256M /var/tmp/roce-nvmet.img && "
       "mkdir -p {t}/subsystems/{n}/namespaces/1 {t}/ports/1 && echo 1 > {t}/subsystems/{n}/attr_allow_any_host && "
       "echo -n /var/tmp/roce-nvmet.img > {t}/subsystems/{n}/namespaces/1/device_path && "
       "echo 1 > {t}/subsystems/{n}/namespaces/1/enable && echo tcp > {t}/ports/1/addr_trtype && "
       "echo ipv4 > {t}/ports/1/addr_adrfam && echo 127.0.0.1 > {t}/ports/1/addr_traddr && "
       "echo 4420 > {t}/ports/1/addr_trsvcid && ln -sf {t}/subsystems/{n} {t}/ports/1/subsystems/{n} && "
       "echo transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn={n} > /dev/nvme-fabrics && udevadm settle"
       .format(t=TARGET, n=NQN))
    (name,) = [n for n in set(vm("ls /sys/block").split()) - before if re.match(r"^nvme\d+n\d+$", n)]
    return name


def disconnect_fabric_namespace():
    vm("for c in /sys/class/nvme/nvme*; do grep -qx tcp $c/transport 2>/dev/null && echo 1 > $c/delete_controller; done; "
       "rm -f {t}/ports/1/subsystems/{n}; echo 0 > {t}/subsystems/{n}/namespaces/1/enable; "
       "rmdir {t}/subsystems/{n}/namespaces/1 {t}/subsystems/{n} {t}/ports/1; rm -f /var/tmp/roce-nvmet.img; "
       "udevadm settle".format(t=TARGET, n=NQN), check=False)


def test_a_fabric_namespace_is_left_alone(node):
    """Issue 37, 1: "every local NVMe namespace" took NVMe over Fabrics namespaces too (another host's storage). With
    one connected (the kernel's target over TCP on loopback), every selector of the module and the role's "all"
    leave it alone and name it."""
    name = connect_fabric_namespace()
    try:
        before = vm("sha256sum /var/tmp/roce-nvmet.img; blkid --probe /dev/%s; echo rc=$?" % name, check=False)
        result = module(dict(ARGS, drives=[{}]))
        assert not result.get("failed"), result
        assert [d["name"] for d in result["drives"]] == ["nvme%dn1" % i for i in range(4)]
        assert len(result["left_out"]) == 1 and result["left_out"][0].startswith(name + ": ")
        assert " over tcp (%s" % NQN in result["left_out"][0], result["left_out"]
        alone = module(dict(ARGS, drives=[{"name": name}], count=None))
        assert alone.get("failed") and "left out as not local (transports pcie)" in alone["msg"], alone
        assert alone["commands"] == []
        assert vm("sha256sum /var/tmp/roce-nvmet.img; blkid --probe /dev/%s; echo rc=$?" % name, check=False) == before
    finally:
        disconnect_fabric_namespace()


def playbook(extra, check=False):
    path = os.path.join(WORK, "nvme_scratch_vars.json")
    with open(path, "w") as handle:
        json.dump(extra, handle)
    argv = ["ansible-playbook", "-i", INVENTORY, "--limit", VM, os.path.join(REPO, "playbooks", "nvme_scratch.yml"),
            "-e", "roce_gpu_hosts=lab_vms", "-e", "@" + path] + (["--check"] if check else [])
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def test_the_boot_unit_makes_the_array_again_on_blank_drives(node):
    """As an ephemeral NVMe instance after a stop: the drives come back blank; the role's boot unit makes the array
    and file system again with the same UUIDs, so the fstab entry mounts it, with the root's mode."""
    out = playbook({"nvme_scratch_recreate_on_boot": True})
    assert re.search(r"%s\s*:\s*ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0" % VM, out), out[-2000:]
    spec = json.loads(vm("cat /etc/roce-fabric/scratch/scratch.json"))
    assert spec["members"] == ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_RFN1D%d" % i for i in range(4)]
    md_uuid, fs_uuid = spec["uuid"], spec["fs_uuid"]
    assert vm("systemctl is-enabled roce-fabric-scratch-scratch.service").strip() == "enabled"
    # The drives "come back blank": array stopped, every signature gone.
    vm("umount /mnt/scratch && mdadm --stop /dev/md/scratch && wipefs --all --quiet %s && udevadm settle" % " ".join(DRIVES))
    assert vm("blkid --probe %s; echo rc=$?" % DRIVES[0]).strip() == "rc=2"
    vm("systemctl restart roce-fabric-scratch-scratch.service")
    journal = vm("journalctl --unit roce-fabric-scratch-scratch.service --no-pager --output cat | tail -n 3")
    assert "made again on blank drives" in journal, journal
    assert vm("mdadm --detail --export /dev/md/scratch | grep ^MD_UUID=").strip() == "MD_UUID=" + md_uuid
    assert vm("blkid --probe --output value --match-tag UUID /dev/md/scratch").strip() == fs_uuid
    vm("mount /mnt/scratch")
    assert vm("stat -c %a /mnt/scratch").strip() == "1777"
    # Drives that hold something else are left alone by the unit, which says why.
    vm("umount /mnt/scratch && mdadm --stop /dev/md/scratch && wipefs --all --quiet %s && mkfs.ext4 -q /dev/nvme1n1 && "
       "udevadm settle" % " ".join(DRIVES))
    assert vm("systemctl restart roce-fabric-scratch-scratch.service; echo rc=$?", check=False).strip().endswith("rc=1")
    assert "hold other data" in vm("journalctl --unit roce-fabric-scratch-scratch.service --no-pager --output cat | tail -n 8")
    assert vm("grep ^md /proc/mdstat || true") == ""
    # Back to a working array for the measurement.
    assert module(dict(ARGS, force=True))["changed"]
    playbook({"nvme_scratch_recreate_on_boot": False})
    assert vm("ls /etc/systemd/system/roce-fabric-scratch-scratch.service 2>/dev/null || echo gone").strip() == "gone"


def test_sequential_write_and_read_of_the_mount(node):
    """A quick measure of the array's mount: 256 MiB written and read back with direct I/O. The drives are emulated
    under TCG: the figures prove the path, not NVMe speed (a real NDv4 node reaches about 8 GB/s)."""
    if "/mnt/scratch" not in vm("cat /proc/self/mounts"):
        module(dict(ARGS, force=True))
    write = vm("dd if=/dev/zero of=/mnt/scratch/seq bs=4M count=64 oflag=direct 2>&1 | tail -n 1")
    read = vm("dd if=/mnt/scratch/seq of=/dev/null bs=4M iflag=direct 2>&1 | tail -n 1")
    vm("rm -f /mnt/scratch/seq")
    for line in (write, read):
        assert re.search(r"268435456 bytes .* copied, [\d.]+ s, [\d.]+ [kMG]?B/s", line), line
    print("\nnvme scratch (4 emulated drives, RAID 0, XFS): write %s; read %s" % (write.split(", ")[-1].strip(),
                                                                                  read.split(", ")[-1].strip()))
