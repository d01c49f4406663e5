"""Lab peer kind ``qemu_vm``: a Linux GPU node as a QEMU virtual machine running Debian's stock kernel.

The guest has a real kernel RDMA stack (Soft-RoCE ``rdma_rxe``, the ``rdma`` tool, perftest), real
reboots and a real SR-IOV capable NIC (QEMU's emulated Intel ``igb``: ``sriov_numvfs`` makes ``igbvf``
virtual functions). Ansible reaches it like a server: sshd on the guest, forwarded from
``ansible_host:ansible_port`` (loopback) by QEMU's user-mode network, which is otherwise isolated
(``restrict=on``: the guest reaches nothing outside).

Host variables (``inventories/lab/hosts.yml``):

``ansible_host`` / ``ansible_port``
    Loopback address and port the guest's sshd is forwarded to.
``roce_lab_vm_nics``
    The fabric NICs, in order, each ``{model: virtio|igb, port: P, peer_port: Q, address: A/N, mtu: M}``.
    A NIC is joined to the NIC of another VM by a QEMU ``-netdev socket`` link over UDP on
    127.0.0.1: it sends to ``peer_port`` and receives on ``port`` (the other VM has them swapped).
    The link has no connection, so either VM restarts alone. NIC ``i`` sits behind its own PCIe
    root port: the guest names it ``enp<i+1>s0``. A NIC with ``leaf: L, leaf_port: P`` is wired to a leaf switch
    instead (``leaf.py``: QEMU's tap moved into leaf ``L``'s namespace as port ``P`` of its bridge, with a real
    ``lldpd`` answering LLDP as the leaf), and ``peer_port`` is not used.
``roce_lab_vm_memory`` (MiB, default 1024), ``roce_lab_vm_cpus`` (default 1).
``roce_lab_vm_nvme``
    Local NVMe drives, each ``{serial: S, size: 1G}``: QEMU's emulated NVMe controller (model ``QEMU NVMe Ctrl``) with
    one namespace on an empty sparse qcow2 file, made new with the VM's overlay. QEMU cannot migrate an NVMe
    controller, so a snapshot cannot hold one: each drive has an empty PCIe root port from the start, and the drives
    are hot-plugged into them, one after the other, once the guest answers (booted or restored); the guest names
    them ``nvme0n1``, ``nvme1n1``, ... in order. They stay through guest reboots.
``roce_lab_vm_forwards``
    More guest TCP ports forwarded to ``ansible_host``, each ``{host_port: H, guest_port: G}`` (a service the lab
    reads from outside, such as the RDMA exporter that the lab's Prometheus scrapes).

The guest image is built once by ``debootstrap`` from the Debian mirror this machine's apt uses
and cached under ``$ROCE_FABRIC_CACHE/vm/<hash of the recipe>/`` (default ``~/.cache/roce-fabric``),
built under a lock in a temporary directory and renamed into place, so checkouts share it. Each VM
boots from its own qcow2 overlay on that image: ``up`` (and ``reset``) create a new overlay, so the
VM starts from the clean image; ``up --keep-state`` keeps the overlay of a stopped VM.
The lab's SSH key, the host name and the fabric addresses reach the guest on the kernel command
line (the VM boots the image's kernel with ``-kernel``; a guest reboot boots it again).
Only TCG is used (``-accel tcg``, CPU model ``qemu64``: see ``guest_cpu``): KVM cannot run a stock kernel on every
CI machine.

A boot under TCG costs about a minute of CPU, so a VM started from a new overlay boots for real only once per
configuration: once it answers, its running state is saved (QEMU's migration stream to a file, with a copy of its
overlay and its serial console) under ``$ROCE_FABRIC_CACHE/vm/<image>/snapshots/<hash of the VM's devices and kernel
command line>/``, and later starts of the same configuration from a clean state restore it (``-incoming``) in a few
seconds, then set the guest's clock. Reboots inside the guest stay real boots. ``ROCE_LAB_VM_SNAPSHOTS=0`` always
boots; a snapshot that fails to restore is removed and the VM boots instead.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from labutil import quiet, run, ssh_banner, wait_for  # noqa: E402  pylint: disable=wrong-import-position
from peer import Peer  # noqa: E402  pylint: disable=wrong-import-position
import leaf  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST_DIR = os.path.join(HERE, "guest")

# The guest image's recipe: everything that decides its content. Its hash names the cache entry.
IMAGE_SUITE = "bookworm"
IMAGE_SIZE = "3G"
IMAGE_PACKAGES = sorted([
    "linux-image-amd64", "initramfs-tools", "systemd-sysv", "udev", "dbus", "kmod", "iproute2", "ethtool",
    "procps", "pciutils", "iputils-ping", "openssh-server", "python3", "python3-apt",
    "rdma-core", "ibverbs-providers", "ibverbs-utils", "rdmacm-utils", "perftest", "infiniband-diags", "mstflint",
    # The validate role's MPI launch: Open MPI, NUMA pinning, and mpi4py for the lab's nccl-tests stand-in.
    "openmpi-bin", "numactl", "python3-mpi4py",
    # The RDMA exporter (roles/rdma_exporter) runs on the distribution's prometheus_client; the VMs reach no mirror.
    "python3-prometheus-client",
    # The NVMe scratch array (roles/nvme_scratch): mdadm, both file systems it makes, sfdisk for its tests.
    "mdadm", "xfsprogs", "e2fsprogs", "fdisk",
    # The job image (roles/rdma_image) run on a VM: the OCI runtime podman uses, for ib_write_bw from a container.
    "runc",
    # LLDP, as a GPU server runs it: the validation reads each fabric port's neighbour (the lab's leaves, leaf.py).
    "lldpd",
])
GUEST_FILES = {
    # path in the guest: file under lab/rdma/guest/, mode
    "/usr/local/sbin/roce-lab-guest": ("roce-lab-guest", 0o755),
    "/etc/systemd/system/roce-lab-guest.service": ("roce-lab-guest.service", 0o644),
    "/etc/ssh/sshd_config.d/roce-lab.conf": ("sshd_config", 0o644),
    "/etc/initramfs-tools/conf.d/roce-lab.conf": ("initramfs.conf", 0o644),
    "/etc/initramfs-tools/modules": ("initramfs-modules", 0o644),
    "/etc/initramfs-tools/hooks/roce-lab-ib-core": ("initramfs-hook", 0o755),
    # Python in the guest keeps the bytecode of Ansible's module payloads (see the file's docstring).
    "/usr/lib/python3/dist-packages/roce_lab_bytecode.py": ("roce_lab_bytecode.py", 0o644),
    "/usr/lib/python3/dist-packages/roce_lab_bytecode.pth": ("roce_lab_bytecode.pth", 0o644),
}
# Timers and jobs that only cost boot time in a test VM.
GUEST_MASKED = ["apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "e2scrub_reap.service",
                "fstrim.timer", "man-db.timer", "dpkg-db-backup.timer", "systemd-timesyncd.service"]
MGMT_GUEST_ADDRESS = "10.0.2.15/24"


def guest_cpu():
    """The CPU model the VMs emulate (``ROCE_LAB_VM_CPU``), part of the snapshot's key. ``qemu64`` by default: the
    guest's Debian is built for the x86-64 baseline, and without the vector units of ``max`` (which glibc and
    Python pick up, and TCG emulates slowly) an Ansible module call in the VM took 17-24 % less time
    (tests/bench/vm_module_bench.py: ping 0.96 s against 1.19 s, rdma_facts 1.05 s against 1.26 s, with the
    guest's bytecode cache; 1.31 s against 1.72 s without). ``Nehalem`` (x86-64-v2) was no faster."""
    return os.environ.get("ROCE_LAB_VM_CPU") or "qemu64"


def cache_root():
    base = os.environ.get("ROCE_FABRIC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "roce-fabric")
    return os.path.join(base, "vm")


def image_recipe():
    files = {}
    for path, (name, mode) in sorted(GUEST_FILES.items()):
        with open(os.path.join(GUEST_DIR, name), "rb") as handle:
            files[path] = [hashlib.sha256(handle.read()).hexdigest(), oct(mode)]
    return {"suite": IMAGE_SUITE, "variant": "minbase", "packages": IMAGE_PACKAGES, "size": IMAGE_SIZE,
            "files": files, "masked": GUEST_MASKED, "format": 2}


def image_key(recipe=None):
    text = json.dumps(recipe or image_recipe(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def debian_mirror(suite):
    """The Debian mirror this machine's apt takes ``suite`` from (never a host name of our own)."""
    out = subprocess.run(["apt-get", "indextargets", "--format", "$(SITE) $(RELEASE)"],
                         check=True, capture_output=True, text=True).stdout
    sites = [line.split()[0] for line in out.splitlines() if len(line.split()) == 2 and line.split()[1] == suite]
    if not sites:
        raise SystemExit("lab: this machine's apt has no '%s' source to build the VM image from "
                         "(run apt-get update, or add the suite)" % suite)
    return sites[0]


@contextlib.contextmanager
def locked(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_image(log=print):
    """Path of the cached guest image directory (disk.img, vmlinuz, initrd.img), building it if needed."""
    recipe = image_recipe()
    root = cache_root()
    final = os.path.join(root, image_key(recipe))
    if os.path.exists(os.path.join(final, "complete")):
        return final
    with locked(os.path.join(root, ".build.lock")):
        if os.path.exists(os.path.join(final, "complete")):
            return final
        started = time.time()
        log("lab: building the VM guest image %s (debootstrap %s, once per recipe; about 2 minutes on 2 cores with the "
            "packages downloaded)" % (os.path.basename(final), IMAGE_SUITE))
        tmp = tempfile.mkdtemp(prefix=".build-", dir=root)
        try:
            build_image(tmp, recipe, progress=lambda step: log("lab: VM guest image: %s (%.0f s)" % (step, time.time() - started)))
            shutil.rmtree(final, ignore_errors=True)
            os.rename(tmp, final)
        except BaseException:
            subprocess.run(["umount", "-R", os.path.join(tmp, "root")], check=False, capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        with open(os.path.join(final, "build-seconds"), "w") as handle:
            handle.write("%.0f\n" % (time.time() - started))
        log("lab: VM guest image built in %.0fs: %s" % (time.time() - started, final))
    return final


def build_image(tmp, recipe, progress=lambda step: None):
    rootfs = os.path.join(tmp, "root")
    log_path = os.path.join(tmp, "build.log")
    with open(log_path, "w") as log:
        def sh(argv, **kwargs):
            log.write("+ %s\n" % " ".join(argv))
            log.flush()
            result = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, check=False, **kwargs)
            if result.returncode != 0:
                raise SystemExit("lab: image build step failed (%s), see %s" % (" ".join(argv[:3]), log_path))

        mirror = debian_mirror(IMAGE_SUITE)
        progress("debootstrap of %d packages from %s" % (len(recipe["packages"]), mirror))
        sh(["nice", "-n", "10", "debootstrap", "--variant=minbase", "--include=" + ",".join(recipe["packages"]),
            IMAGE_SUITE, rootfs, mirror])
        for path, (name, mode) in GUEST_FILES.items():
            dest = rootfs + path
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(GUEST_DIR, name), dest)
            os.chmod(dest, mode)
        with open(os.path.join(rootfs, "etc", "fstab"), "w") as handle:
            handle.write("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
        with open(os.path.join(rootfs, "etc", "hostname"), "w") as handle:
            handle.write("localhost\n")
        with open(os.path.join(rootfs, "etc", "hosts"), "w") as handle:
            handle.write("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n")
        # Host keys are made at the first boot of each overlay: every VM has its own.
        for entry in os.listdir(os.path.join(rootfs, "etc", "ssh")):
            if entry.startswith("ssh_host_"):
                os.unlink(os.path.join(rootfs, "etc", "ssh", entry))
        progress("the lab's guest files, the initramfs")
        sh(["chroot", rootfs, "update-initramfs", "-u", "-k", "all"])
        sh(["chroot", rootfs, "systemctl", "enable", "systemd-networkd.service", "ssh.service", "roce-lab-guest.service"])
        sh(["chroot", rootfs, "systemctl", "mask"] + GUEST_MASKED)
        sh(["chroot", rootfs, "passwd", "--lock", "root"])
        sh(["chroot", rootfs, "apt-get", "clean"])
        boot = os.path.join(rootfs, "boot")
        kernels = sorted(e for e in os.listdir(boot) if e.startswith("vmlinuz-"))
        initrds = sorted(e for e in os.listdir(boot) if e.startswith("initrd.img-"))
        if not kernels or not initrds:
            raise SystemExit("lab: the image has no kernel or initrd in /boot, see %s" % log_path)
        shutil.copyfile(os.path.join(boot, kernels[-1]), os.path.join(tmp, "vmlinuz"))
        shutil.copyfile(os.path.join(boot, initrds[-1]), os.path.join(tmp, "initrd.img"))
        progress("the disk image")
        sh(["mkfs.ext4", "-q", "-L", "roce-lab", "-d", rootfs, os.path.join(tmp, "disk.img"), recipe["size"]])
        shutil.rmtree(rootfs)
    with open(os.path.join(tmp, "recipe.json"), "w") as handle:
        json.dump(dict(recipe, mirror=mirror, kernel=kernels[-1]), handle, indent=1, sort_keys=True)
    with open(os.path.join(tmp, "complete"), "w") as handle:
        handle.write("ok\n")


def _mac(port):
    return "52:54:00:72:%02x:%02x" % (port >> 8 & 0xFF, port & 0xFF)


class QemuVm(Peer):
    """A VM of the lab (see the module docstring)."""

    kind = "qemu_vm"
    state_dir = "vms"
    needs_bridge = False
    # The serial console: every boot prints its login banner there.
    artifacts = {"console": "console.log"}

    def __init__(self, lab, name, host_vars, index):
        super(QemuVm, self).__init__(lab, name, host_vars, index)
        self.address = host_vars.get("ansible_host", "127.0.0.1")
        if not self.address.startswith("127."):
            raise SystemExit("lab: VM %s must be reached on loopback (127.0.0.0/8), not %s" % (name, self.address))
        self.port = int(host_vars["ansible_port"])
        self.nics = list(host_vars.get("roce_lab_vm_nics") or [])
        for nic in self.nics:
            if nic.get("model", "virtio") not in ("virtio", "igb"):
                raise SystemExit("lab: VM %s: NIC model must be virtio or igb, not %s" % (name, nic.get("model")))
            if nic.get("leaf") or nic.get("leaf_port"):
                leaf.check_names(nic.get("leaf"), nic.get("leaf_port"))
        self.forwards = []
        for forward in host_vars.get("roce_lab_vm_forwards") or []:
            host_port, guest_port = int(forward["host_port"]), int(forward["guest_port"])
            if not (1024 < host_port < 65536 and 0 < guest_port < 65536):
                raise SystemExit("lab: VM %s: forward %s is outside the ports the lab may use" % (name, forward))
            self.forwards.append((host_port, guest_port))
        self.nvme = []
        for drive in host_vars.get("roce_lab_vm_nvme") or []:
            serial, size = str(drive.get("serial", "")), str(drive.get("size", "1G"))
            if not (serial.isalnum() and len(serial) <= 20 and size[:-1].isdigit() and size[-1] in "MG"):
                raise SystemExit("lab: VM %s: NVMe drive %s needs an alphanumeric serial (20 at most) and a size like 1G"
                                 % (name, drive))
            self.nvme.append((serial, size))
        self.memory = int(host_vars.get("roce_lab_vm_memory", 1024))
        self.cpus = int(host_vars.get("roce_lab_vm_cpus", 1))
        self.launched = None
        self.snapshot = None
        self.restored = False
        self.boot_argv = None

    # --- state -------------------------------------------------------------------------------

    def describe(self):
        nics = ", ".join("enp%ds0 %s %s" % (i + 1, n.get("model", "virtio"), n.get("address", "-"))
                         for i, n in enumerate(self.nics))
        drives = ", %d NVMe drives" % len(self.nvme) if self.nvme else ""
        return "ssh %s:%d, QEMU TCG, %s%s" % (self.address, self.port, nics, drives)

    def disks(self):
        """The VM's disk files: its overlay on the image, then one per NVMe drive."""
        return ["disk.qcow2"] + ["nvme%d.qcow2" % i for i in range(len(self.nvme))]

    def pid(self):
        try:
            with open(self.path("qemu.pid")) as handle:
                pid = int(handle.read().strip())
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                if b"qemu-system" not in handle.read():
                    return None
            return pid
        except (OSError, ValueError):
            return None

    def running(self):
        return self.pid() is not None and ssh_banner(self.address, self.port, timeout=2)

    def ssh_argv(self, command):
        return ["ssh", "-i", self.lab.ssh_key(), "-p", str(self.port), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                "-o", "ConnectTimeout=10", "root@%s" % self.address] + list(command)

    def exec_argv(self, command):
        """``command`` over one SSH connection per VM, kept for 15 s after its last use (ControlPersist): a new
        connection costs the emulated guest a key exchange and sshd's start (0.34 QEMU CPU-s measured against 0.03
        for a command through the kept one). The VM's start and snapshot use connections of their own (ssh_argv),
        so that no saved guest holds one; a master whose VM stops or reboots sees its connection close and ends."""
        control = os.path.join(self.lab.dir, "cp")
        os.makedirs(control, mode=0o700, exist_ok=True)
        argv = self.ssh_argv(command)
        return argv[:1] + ["-o", "ControlMaster=auto", "-o", "ControlPath=%s" % os.path.join(control, "exec-%C"),
                           "-o", "ControlPersist=15"] + argv[1:]

    # --- lifecycle ---------------------------------------------------------------------------

    def stop(self):
        pid = self.pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
            deadline = time.time() + 10
            while self.pid() and time.time() < deadline:
                time.sleep(0.2)
            if self.pid():
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.5)

    def reset(self):
        """A clean VM again: a new overlay on the image, booted (the lab's reset for VMs)."""
        self.stop()
        self.start()
        self.wait_started()

    def argv(self, image):
        pubkey = open(self.lab.ssh_key() + ".pub").read().strip()
        append = ["root=/dev/vda", "rw", "console=ttyS0", "quiet", "mitigations=off", "systemd.hostname=%s" % self.name,
                  "roce_lab.key=%s" % base64.b64encode(pubkey.encode()).decode(),
                  "roce_lab.mgmt=%s,%s" % (_mac(self.port), MGMT_GUEST_ADDRESS)]
        argv = ["qemu-system-x86_64", "-name", self.name, "-machine", "q35", "-accel", "tcg", "-cpu", guest_cpu(),
                "-smp", str(self.cpus), "-m", str(self.memory), "-nodefaults", "-no-user-config", "-display", "none",
                "-kernel", os.path.join(image, "vmlinuz"), "-initrd", os.path.join(image, "initrd.img"),
                "-drive", "file=%s,if=virtio,format=qcow2,cache=unsafe" % self.path("disk.qcow2"),
                "-netdev", "user,id=mgmt,restrict=on,hostfwd=tcp:%s:%d-:22%s" % (
                    self.address, self.port, "".join(",hostfwd=tcp:%s:%d-:%d" % (self.address, h, g) for h, g in self.forwards)),
                "-device", "virtio-net-pci,netdev=mgmt,addr=0x3,mac=%s,romfile=" % _mac(self.port),
                # The console is appended to: a VM restored from a snapshot starts its log with the saved boot's.
                "-chardev", "file,id=console,path=%s,append=on" % self.path("console.log"), "-serial", "chardev:console",
                "-qmp", "unix:%s,server=on,wait=off" % self.path("qmp.sock"),
                "-pidfile", self.path("qemu.pid"), "-daemonize"]
        for i in range(len(self.nvme)):
            # Empty root ports for the NVMe drives, hot-plugged once the guest runs (attach_nvme).
            argv += ["-device", "pcie-root-port,id=rpn%d,chassis=%d,slot=%d,addr=0x%x" % (i, 16 + i, 16 + i, 0x10 + i)]
        for i, nic in enumerate(self.nics):
            port = int(nic["port"])
            model = "igb" if nic.get("model") == "igb" else "virtio-net-pci"
            if nic.get("leaf"):
                netdev = "tap,id=fab%d,ifname=%s,script=no,downscript=no" % (i, leaf.tap_name(port))
            else:
                netdev = "socket,id=fab%d,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d" % (i, int(nic["peer_port"]), port)
            argv += ["-device", "pcie-root-port,id=rp%d,chassis=%d,slot=%d,addr=0x%x" % (i + 1, i + 1, i + 1, 4 + i),
                     "-netdev", netdev,
                     "-device", "%s,netdev=fab%d,bus=rp%d,mac=%s,romfile=" % (model, i, i + 1, _mac(port))]
            if nic.get("address"):
                append.append("roce_lab.net=%s,%s,%s" % (_mac(port), nic["address"], nic.get("mtu", 1500)))
        return argv + ["-append", " ".join(append)]

    def start(self, keep_state=False):
        image = ensure_image()
        os.makedirs(self.dir, exist_ok=True)
        disk = self.path("disk.qcow2")
        fresh = not keep_state or not all(os.path.exists(self.path(name)) for name in self.disks())
        for stale in ("console.log", "qemu.pid", "qmp.sock"):
            if os.path.exists(self.path(stale)):
                os.unlink(self.path(stale))
        argv = self.boot_argv = self.argv(image)
        self.snapshot = None
        self.restored = False
        if fresh:
            for name in self.disks():
                if os.path.exists(self.path(name)):
                    os.unlink(self.path(name))
            for i, (_serial, size) in enumerate(self.nvme):
                run(["qemu-img", "create", "-q", "-f", "qcow2", self.path("nvme%d.qcow2" % i), size])
            self.snapshot = self.snapshot_dir(image, argv)
            if self.snapshot and os.path.exists(os.path.join(self.snapshot, "complete")):
                if self.launch(argv, restore_from=self.snapshot):
                    return
                print("lab: %s did not restore from its snapshot; booting it and saving a new one" % self.name)
                shutil.rmtree(self.snapshot, ignore_errors=True)
            run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", os.path.join(image, "disk.img"), "-F", "raw", disk])
        if not self.launch(argv):
            raise SystemExit("lab: QEMU for %s did not start, see %s" % (self.name, self.path("qemu.log")))

    def launch(self, argv, restore_from=None):
        """Start QEMU (daemonized): a boot, or a restore of ``restore_from``'s saved state and overlay."""
        if restore_from:
            shutil.copyfile(os.path.join(restore_from, "disk.qcow2"), self.path("disk.qcow2"))
            shutil.copyfile(os.path.join(restore_from, "console.log"), self.path("console.log"))
            argv = argv + ["-incoming", "file:%s" % os.path.join(restore_from, "state")]
        with open(self.path("qemu.argv"), "w") as handle:
            json.dump(argv, handle, indent=1)
        with open(self.path("qemu.log"), "w") as log:
            result = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
        if result.returncode != 0:
            return False
        self.launched = time.time()
        # The fabric NICs wired to a leaf: QEMU made their taps, plugged here before the guest runs.
        try:
            for nic in self.nics:
                if nic.get("leaf"):
                    leaf.plug(self.lab.dir, leaf.tap_name(nic["port"]), nic["leaf"], nic["leaf_port"])
        except SystemExit as exc:
            print("lab: %s: %s" % (self.name, exc))
            self.stop()
            return False
        if restore_from:
            def loaded():
                if self.pid() is None:
                    raise SystemExit("QEMU ended")
                try:
                    status = self.qmp("query-status").get("status")
                    # The state was saved paused, so it loads paused: go on once the whole stream is in.
                    if status in ("paused", "postmigrate") and self.qmp("query-migrate").get("status") == "completed":
                        self.qmp("cont")
                        return False
                    return status == "running"
                except (OSError, ValueError):
                    return False

            try:
                wait_for(loaded, 120, "VM %s to load its snapshot" % self.name, interval=0.2)
            except SystemExit:
                self.stop()
                return False
            self.restored = True
        return True

    # --- snapshots -----------------------------------------------------------------------------

    def snapshot_dir(self, image, argv):
        """Where this VM's configuration keeps its snapshot, or None when snapshots are off or cannot be used."""
        if os.environ.get("ROCE_LAB_VM_SNAPSHOTS", "1") == "0" or len(self.path("qmp.sock")) > 100:
            return None
        version = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True, check=False).stdout
        # What the guest sees decides the key: the devices, the kernel command line, the image, QEMU's version; not
        # where this checkout keeps the VM's files.
        shape = [a.replace(self.dir, "@VM@") for a in argv]
        key = hashlib.sha256(json.dumps([shape, version.splitlines()[:1]]).encode()).hexdigest()[:16]
        return os.path.join(image, "snapshots", "%s-%s" % (self.name, key))

    def qmp(self, command, **arguments):
        """One QMP command on the VM's monitor socket; its "return" (raises OSError or ValueError on failure)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(self.path("qmp.sock"))
            stream = sock.makefile("rw")

            def reply():
                while True:
                    line = stream.readline()
                    if not line:
                        raise OSError("QMP of %s closed" % self.name)
                    message = json.loads(line)
                    if "return" in message:
                        return message["return"]
                    if "error" in message:
                        raise ValueError("QMP %s on %s: %s" % (command, self.name, message["error"].get("desc")))

            json.loads(stream.readline())  # the greeting
            stream.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
            stream.flush()
            reply()
            stream.write(json.dumps({"execute": command, "arguments": arguments}) + "\n")
            stream.flush()
            return reply()

    def save_snapshot(self):
        """Save the booted VM's state, overlay and console into its snapshot, then go on from that snapshot (which
        proves it restores). A VM that cannot be saved boots every time, as before."""
        final = self.snapshot
        parent = os.path.dirname(final)
        os.makedirs(parent, exist_ok=True)
        with locked(os.path.join(parent, ".lock")):
            if os.path.exists(os.path.join(final, "complete")):
                return
            tmp = tempfile.mkdtemp(prefix=".save-", dir=parent)
            try:
                self.qmp("stop")
                self.qmp("migrate", uri="file:%s" % os.path.join(tmp, "state"))

                def done():
                    status = self.qmp("query-migrate").get("status")
                    if status in ("failed", "cancelled"):
                        raise ValueError("migration %s" % status)
                    return status == "completed"

                wait_for(done, 300, "VM %s to save its state" % self.name, interval=0.2)
                shutil.copyfile(self.path("disk.qcow2"), os.path.join(tmp, "disk.qcow2"))
                shutil.copyfile(self.path("console.log"), os.path.join(tmp, "console.log"))
                with open(os.path.join(tmp, "complete"), "w") as handle:
                    handle.write("ok\n")
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
            except (SystemExit, OSError, ValueError) as error:
                shutil.rmtree(tmp, ignore_errors=True)
                print("lab: %s: no snapshot (%s); it boots each time" % (self.name, error))
                try:
                    self.qmp("cont")
                except (OSError, ValueError):
                    pass
                return
        self.stop()
        if not self.launch(self.boot_argv, restore_from=final):
            raise SystemExit("lab: %s did not restore from the snapshot it just saved, see %s" % (self.name, self.path("qemu.log")))

    def attach_nvme(self):
        """Hot-plug the NVMe drives into their root ports, one after the other (the guest numbers them in that order),
        each once the guest shows the one before."""
        for i, (serial, _size) in enumerate(self.nvme):
            self.qmp("blockdev-add", **{"driver": "qcow2", "node-name": "nvme%d" % i,
                                        "cache": {"direct": False, "no-flush": True},
                                        "file": {"driver": "file", "filename": self.path("nvme%d.qcow2" % i)}})
            self.qmp("device_add", driver="nvme", id="nvmedev%d" % i, drive="nvme%d" % i, serial=serial, bus="rpn%d" % i)
            link = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_%s" % serial
            wait_for(lambda link=link: quiet(self.ssh_argv(["test", "-b", link])) == 0, 60,
                     "VM %s to show NVMe drive %s" % (self.name, serial), interval=0.5)

    def wait_started(self, timeout=None):
        """Until the guest's sshd takes the lab key (boots run in parallel; this waits for one). A first boot from a
        clean overlay saves the VM's snapshot; a restored VM gets the machine's time."""
        timeout = timeout or int(os.environ.get("ROCE_LAB_VM_BOOT_TIMEOUT", "600"))
        started = self.launched or time.time()

        def ready():
            if self.pid() is None:
                raise SystemExit("lab: VM %s stopped while booting, see %s" % (self.name, self.path("console.log")))
            if not ssh_banner(self.address, self.port, timeout=2):
                return False
            return quiet(self.ssh_argv(["true"])) == 0

        wait_for(ready, timeout, "VM %s to boot (console: %s)" % (self.name, self.path("console.log")), interval=1)
        how = "restored" if self.restored else "booted"
        if self.snapshot and not self.restored:
            self.save_snapshot()
            wait_for(ready, timeout, "VM %s to answer after its snapshot" % self.name, interval=0.5)
            how = "booted, snapshot saved" if self.restored else "booted"
        if self.restored:
            # The saved guest's clock stands at the time of its save: set it to the machine's.
            run(self.ssh_argv(["date", "-u", "-s", "@%d" % round(time.time())]), capture_output=True)
        self.attach_nvme()
        seconds = time.time() - started
        with open(self.path("boot-seconds"), "w") as handle:
            handle.write("%.1f (%s)\n" % (seconds, how))
        return seconds


if __name__ == "__main__":
    # Build (or find) the cached guest image: python3 lab/rdma/peer_qemu.py image
    if sys.argv[1:] == ["image"]:
        print(ensure_image())
    elif sys.argv[1:] == ["key"]:
        print(os.path.join(cache_root(), image_key()))
    else:
        raise SystemExit("usage: peer_qemu.py image|key")
