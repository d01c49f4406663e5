"""Firmware family: a Linux server with ConnectX adapters, as a lab peer (``roce_lab_peer: netns_host``).

Its own network namespace (a veth on the lab bridge, address ``ansible_host``), UTS namespace
(hostname) and mount namespace, in which ``/sys/bus/pci/devices`` and ``/sys/class/net`` show the
adapters of ``roce_lab_nics``, ``/usr/sbin`` carries ``mlxconfig``/``mstconfig`` (the firmware
simulator ``fwsim.py``), ``flint``/``mstflint`` where ``roce_lab_firmware_tools`` names them (``flintsim.py``, the
image of each adapter's ``image``) and ``shutdown``/``reboot`` stand-ins, and ``/proc/sys/kernel/random/boot_id``
is the host's own. sshd runs inside; a reboot (``labhost.py``) kills every process of the host, loads
pending firmware values, changes the boot id and starts sshd again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from labutil import add_netns, netns_pids, quiet, remove_netns, run, ssh_banner, wait_for  # noqa: E402  pylint: disable=wrong-import-position
from peer import Peer, read_jsonl  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
FWSIM = os.path.join(HERE, "fwsim.py")
FLINTSIM = os.path.join(HERE, "flintsim.py")
QOSSIM = os.path.join(os.path.dirname(HERE), "qos", "qossim.py")
LABHOST = os.path.join(HERE, "labhost.py")
VAR_LIB = "/var/lib/roce-fabric"
# A site's login user with sudo, as an inventory with ansible_user and become reaches a server (the host's own
# /etc/passwd, group and shadow carry it; the lab's key logs it in). sudo keeps Debian's defaults: env_reset.
LOGIN_USER = "roce-ops"
LOGIN_UID = 2950


class NetnsHost(Peer):
    kind = "netns_host"

    state_dir = "hosts"
    artifacts = {"boot_id": "boot_id", "qos_calls": "qos/calls.jsonl", "reboot_record": "var-lib/host_reboot.json"}

    def __init__(self, lab, name, host_vars, index):
        super(NetnsHost, self).__init__(lab, name, host_vars, index)
        self.netns = "rfab-%s" % name
        self.address = host_vars["ansible_host"]
        prefix = lab.bridge_address.split("/")[1]
        self.cidr = "%s/%s" % (self.address, prefix)
        self.veth_host = ("rf%s" % name)[:13] + "h"
        self.veth_ns = ("rf%s" % name)[:13] + "n"
        tools = host_vars.get("roce_lab_firmware_tools", ["mlxconfig"])
        self.tools = [tools] if isinstance(tools, str) else list(tools)
        self.nics = host_vars.get("roce_lab_nics", [])
        # The NIC QoS tools the host has: mlnx_qos (MLNX_OFED / DOCA, with mlx5's ECN files in sysfs) and/or
        # iproute2's dcb, both answered by lab/qos/qossim.py for the host's ConnectX ports.
        self.qos_tools = list(host_vars.get("roce_lab_qos_tools", []))

    def describe(self):
        return "%s, %d adapter(s), %s" % (self.address, len(self.nics), "+".join(self.tools))

    def running(self):
        return quiet(["ip", "netns", "pids", self.netns]) == 0 and ssh_banner(self.address)

    def pids(self):
        return netns_pids(self.netns)

    def stop(self):
        # Deleting the namespace takes its end of the veth pair, and the kernel removes this end
        # soon after; remove_netns removes it now if it is still there.
        remove_netns(self.netns, [self.veth_host])

    # --- building the host's view of the machine ---------------------------------------------------

    def fwsim_admin(self, *args):
        return run([sys.executable, FWSIM, "admin", "--state-dir", os.path.join(self.dir, "fw")] + list(args),
                   capture_output=True, text=True)

    def build_firmware(self):
        fw = os.path.join(self.dir, "fw")
        shutil.rmtree(fw, ignore_errors=True)
        os.makedirs(fw)
        for nic in self.nics:
            args = ["init", "--model", nic["model"], "--pci", nic["pci"], "--functions", str(nic.get("functions", 1))]
            if nic.get("mst"):
                args += ["--mst", nic["mst"]]
            # The adapter's part number and description where its image's PSID is another board's than the model's
            # mlxconfig sample (the Name: and Description: rows of mlxconfig, the firmware manager's report).
            for key in ("part_number", "description"):
                if nic.get(key):
                    args += ["--name" if key == "part_number" else "--description", nic[key]]
            for key, value in sorted((nic.get("firmware") or {}).items()):
                args += ["--set", "%s=%s" % (key, value)]
            for key, value in sorted((nic.get("flags") or {}).items()):
                args += ["--flag", "%s=%s" % (key, json.dumps(value) if not isinstance(value, str) else value)]
            self.fwsim_admin(*args)
            image = nic.get("image")
            if image:
                run([sys.executable, FLINTSIM, "admin", "--state-dir", fw, "image", "--pci", nic["pci"], "--psid",
                     image["psid"], "--fw", str(image["fw"]), "--base-mac", self.base_mac(nic["pci"])]
                    + ([] if image.get("live_reset", True) else ["--no-live-reset"]),
                    capture_output=True, text=True, check=True)

    def netdevs(self):
        return [name for nic in self.nics for name in nic.get("netdevs", [])]

    def mac(self, pci):
        """The MAC of the port at ``pci``: the NVIDIA prefix, this host's index, the bus and the function."""
        base, function = pci.rsplit(".", 1)
        return "0c:42:a1:%02x:%02x:%02x" % (self.index & 0xFF, int(base.split(":")[1], 16), int(function))

    def base_mac(self, pci):
        """The card's Base MAC, as flint prints it: its first port's MAC, without colons."""
        return self.mac(pci.rsplit(".", 1)[0] + ".0").replace(":", "")

    def build_qos(self):
        """The QoS simulator's state: every ConnectX port with the driver's defaults."""
        if self.qos_tools:
            run([sys.executable, QOSSIM, "admin", "--state-dir", os.path.join(self.dir, "qos"), "init"] + self.netdevs(),
                capture_output=True, text=True)

    def model_device_ids(self):
        models = json.loads(self.fwsim_admin("models").stdout)
        ids = {}
        for name, model in models.items():
            ids[name] = model.get("device_id") or model.get("pci_device_id")
        return ids

    def build_sysfs(self):
        """Fake /sys/bus/pci/devices and /sys/class/net shaped like a host with the lab's adapters."""
        pci = os.path.join(self.dir, "sys", "pci")
        net = os.path.join(self.dir, "sys", "net")
        shutil.rmtree(os.path.join(self.dir, "sys"), ignore_errors=True)
        os.makedirs(pci)
        os.makedirs(net)
        # Interfaces the namespace really has keep pointing at the real sysfs entries.
        for real in ("lo", "eth0"):
            os.symlink("/sys/devices/virtual/net/%s" % real, os.path.join(net, real))
        device_ids = self.model_device_ids()
        for nic in self.nics:
            base = nic["pci"].rsplit(".", 1)[0]
            functions = int(nic.get("functions", 1))
            netdevs = list(nic.get("netdevs", []))
            for function in range(functions):
                address = "%s.%d" % (base, function)
                path = os.path.join(pci, address)
                os.makedirs(os.path.join(path, "net"))
                files = {
                    "vendor": "0x15b3",
                    "device": device_ids.get(nic["model"]) or "0x101d",
                    "class": "0x020000",
                    "numa_node": str(nic.get("numa_node", -1)),
                    "subsystem_vendor": "0x15b3",
                    "sriov_totalvfs": str(nic.get("total_vfs", 0)),
                }
                for fname, text in files.items():
                    with open(os.path.join(path, fname), "w") as handle:
                        handle.write(text + "\n")
                if function < len(netdevs):
                    ifname = netdevs[function]
                    os.makedirs(os.path.join(path, "net", ifname))
                    ifdir = os.path.join(net, ifname)
                    os.makedirs(ifdir)
                    os.symlink("/sys/bus/pci/devices/%s" % address, os.path.join(ifdir, "device"))
                    mac = self.mac(address)
                    for fname, text in (("address", mac), ("mtu", "1500"), ("operstate", "down"), ("type", "1"),
                                        ("carrier", "0"), ("ifindex", str(100 + function))):
                        with open(os.path.join(ifdir, fname), "w") as handle:
                            handle.write(text + "\n")
                    if "mlnx_qos" in self.qos_tools:
                        self.build_ecn(ifdir)

    @staticmethod
    def build_ecn(ifdir):
        """MLNX_OFED mlx5's DCQCN files with the driver's defaults: ECN reaction and notification point on for
        every priority, CNPs on DSCP 48 / priority 6 (file names and values as published, corpus qos/)."""
        for point in ("roce_np", "roce_rp"):
            os.makedirs(os.path.join(ifdir, "ecn", point, "enable"), exist_ok=True)
            for prio in range(8):
                with open(os.path.join(ifdir, "ecn", point, "enable", str(prio)), "w") as handle:
                    handle.write("1\n")
        for fname, text in (("cnp_dscp", "48"), ("cnp_802p_prio", "6")):
            with open(os.path.join(ifdir, "ecn", "roce_np", fname), "w") as handle:
                handle.write(text + "\n")

    def build_sbin(self):
        sbin = os.path.join(self.dir, "sbin")
        shutil.rmtree(sbin, ignore_errors=True)
        os.makedirs(sbin)
        flavors = {"mlxconfig": "mft", "mstconfig": "mstflint"}
        scripts = {}
        for tool in self.tools:
            if tool in ("flint", "mstflint", "mlxfwreset", "mstfwreset", "mlxfwmanager", "mstfwmanager"):
                scripts[tool] = (
                    "#!/bin/sh\n# Lab host: the ConnectX firmware burning tool's simulator answers as %s.\n"
                    "FWSIM_STATE_DIR=%s exec /usr/bin/python3 %s --as %s \"$@\"\n"
                    % (tool, os.path.join(self.dir, "fw"), FLINTSIM, tool))
                continue
            scripts[tool] = (
                "#!/bin/sh\n# Lab host: the ConnectX firmware simulator answers as %s.\n"
                "FWSIM_STATE_DIR=%s exec /usr/bin/python3 %s --flavor %s \"$@\"\n"
                % (tool, os.path.join(self.dir, "fw"), FWSIM, flavors[tool])
            )
        standin = (
            "#!/bin/sh\n# Lab host: rebooting this host restarts its processes and loads pending firmware values.\n"
            "case \"$0 $*\" in\n  *reboot*|*-r*) ;;\n  *) echo \"lab host: only reboot is supported\" >&2; exit 1;;\nesac\n"
            # Detached and deaf to the hang-up of the SSH session's terminal that started it.
            "nohup setsid -f /usr/bin/python3 %s reboot %s </dev/null >>%s 2>&1\n"
            "echo \"Reboot scheduled.\"\n" % (LABHOST, self.dir, os.path.join(self.dir, "reboot.log"))
        )
        for tool in self.qos_tools:
            scripts[tool] = (
                "#!/bin/sh\n# Lab host: the NIC QoS simulator answers as %s.\n"
                "QOSSIM_STATE_DIR=%s exec /usr/bin/python3 %s --as %s \"$@\"\n"
                % (tool, os.path.join(self.dir, "qos"), QOSSIM, tool)
            )
        scripts["shutdown"] = standin
        scripts["reboot"] = standin
        for name, text in scripts.items():
            path = os.path.join(sbin, name)
            with open(path, "w") as handle:
                handle.write(text)
            os.chmod(path, 0o755)

    def build_home(self):
        """root's home on the host: a server's own, empty but for the shell's start files of the distribution, not
        the lab machine's (whose shell start-up may run tools of its own at every SSH command, such as pyenv's
        init and rehash, which 64 hosts logging in at once wait on)."""
        home = os.path.join(self.dir, "root-home")
        shutil.rmtree(home, ignore_errors=True)
        os.makedirs(home, mode=0o700)
        for name in (".bashrc", ".profile"):
            if os.path.exists(os.path.join("/etc/skel", name)):
                shutil.copyfile(os.path.join("/etc/skel", name), os.path.join(home, name))

    login_user = LOGIN_USER

    def build_login_user(self):
        """The host's /etc/passwd, group, shadow and hosts (the machine's, with LOGIN_USER and this host's name added),
        LOGIN_USER's home, and a sudoers.d of the host's own that lets it become root without a password."""
        etc = os.path.join(self.dir, "etc")
        shutil.rmtree(etc, ignore_errors=True)
        os.makedirs(os.path.join(etc, "sudoers.d"))
        home = os.path.join(self.dir, "login-home")
        shutil.rmtree(home, ignore_errors=True)
        os.makedirs(home, mode=0o700)
        os.chown(home, LOGIN_UID, LOGIN_UID)
        added = {
            "passwd": "%s:x:%d:%d:site login user:%s:/bin/sh\n" % (LOGIN_USER, LOGIN_UID, LOGIN_UID, home),
            "group": "%s:x:%d:\n" % (LOGIN_USER, LOGIN_UID),
            # Not locked ("!"): sshd without PAM refuses a locked account even with a key.
            "shadow": "%s:*:19700:0:99999:7:::\n" % LOGIN_USER,
            "hosts": "127.0.1.1\t%s\n" % self.name,
        }
        for name, line in added.items():
            with open(os.path.join("/etc", name)) as handle:
                text = handle.read()
            path = os.path.join(etc, name)
            with open(path, "w") as handle:
                handle.write(text + ("" if text.endswith("\n") else "\n") + line)
            os.chmod(path, 0o640 if name == "shadow" else 0o644)
        rule = os.path.join(etc, "sudoers.d", LOGIN_USER)
        with open(rule, "w") as handle:
            handle.write("%s ALL=(ALL:ALL) NOPASSWD: ALL\n" % LOGIN_USER)
        os.chmod(rule, 0o440)

    def login_mounts(self):
        """The bind mounts that give the host its login user (none where the machine has no sudo)."""
        if not os.path.isdir("/etc/sudoers.d"):
            return []
        etc = os.path.join(self.dir, "etc")
        return ["mount --bind %s/%s /etc/%s" % (etc, name, name) for name in ("passwd", "group", "shadow", "hosts", "sudoers.d")]

    def management_on(self, pci=None):
        """The host's management interface (eth0, where the controller's SSH session arrives) shown in sysfs as the
        port of the card function ``pci``, as on a server whose management network runs on a ConnectX port; None:
        back to the virtual interface it is."""
        entry = os.path.join(self.dir, "sys", "net", "eth0")
        if os.path.islink(entry):
            os.unlink(entry)
        elif os.path.isdir(entry):
            shutil.rmtree(entry)
        if pci is None:
            os.symlink("/sys/devices/virtual/net/eth0", entry)
            return
        os.makedirs(entry)
        os.symlink("/sys/bus/pci/devices/%s" % pci, os.path.join(entry, "device"))

    def build_ssh(self):
        key = self.lab.ssh_key()
        host_key = os.path.join(self.dir, "ssh_host_ed25519_key")
        if not os.path.exists(host_key):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", host_key])
        auth = os.path.join(self.dir, "authorized_keys")
        shutil.copyfile(key + ".pub", auth)
        config = "\n".join([
            "# Lab host %s" % self.name,
            "ListenAddress %s" % self.address,
            "Port 22",
            "HostKey %s" % host_key,
            "PidFile %s" % os.path.join(self.dir, "sshd.pid"),
            "AuthorizedKeysFile %s" % auth,
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "AcceptEnv LANG LC_*",
            "Subsystem sftp /usr/lib/openssh/sftp-server",
            "",
        ])
        with open(os.path.join(self.dir, "sshd_config"), "w") as handle:
            handle.write(config)

    def reset(self):
        self.management_on(None)
        self.build_firmware()
        self.build_qos()
        if "mlnx_qos" in self.qos_tools:
            for netdev in self.netdevs():
                self.build_ecn(os.path.join(self.dir, "sys", "net", netdev))
        for stale in ("reboots", "reboot.log"):
            if os.path.exists(os.path.join(self.dir, stale)):
                os.unlink(os.path.join(self.dir, stale))
        self.build_var_lib(clean=True)

    def build_var_lib(self, clean=False):
        """The host's own /var/lib/roce-fabric (what the collection keeps on a host, such as its reboot record)."""
        path = os.path.join(self.dir, "var-lib")
        if clean:
            for entry in os.listdir(path) if os.path.isdir(path) else []:
                full = os.path.join(path, entry)
                shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)
        os.makedirs(path, exist_ok=True)
        # The mount point on the machine; each lab host binds its own folder over it.
        os.makedirs(VAR_LIB, exist_ok=True)

    def start(self, keep_state=False):
        os.makedirs(self.dir, exist_ok=True)
        if not keep_state or not os.path.isdir(os.path.join(self.dir, "fw")):
            self.build_firmware()
            self.build_qos()
            for stale in ("reboots", "reboot.log"):
                if os.path.exists(os.path.join(self.dir, stale)):
                    os.unlink(os.path.join(self.dir, stale))
        self.build_var_lib(clean=not keep_state)
        self.build_sysfs()
        self.build_sbin()
        self.build_ssh()
        self.build_home()
        self.build_login_user()
        shutil.rmtree(os.path.join(self.dir, "work"), ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "work"))
        # The services a peer runs on this host start again at its reboots (labhost.py); a fresh host has none.
        shutil.rmtree(os.path.join(self.dir, "boot.d"), ignore_errors=True)
        with open("/proc/sys/kernel/random/uuid") as handle:
            boot_id = handle.read()
        with open(os.path.join(self.dir, "boot_id"), "w") as handle:
            handle.write(boot_id)
        with open(os.path.join(self.dir, "host.json"), "w") as handle:
            json.dump(dict(name=self.name, fwsim=FWSIM, qossim=QOSSIM if self.qos_tools else None,
                           reboot_delay=1.0, boot_delay=1.0), handle)

        add_netns(self.netns, [self.veth_host])
        run(["ip", "link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_ns])
        run(["ip", "link", "set", self.veth_host, "master", self.lab.bridge, "up"])
        run(["ip", "link", "set", self.veth_ns, "netns", self.netns])
        ns = ["ip", "netns", "exec", self.netns]
        run(ns + ["ip", "link", "set", self.veth_ns, "name", "eth0"])
        # A stable MAC per host: a restarted host must not be shadowed by a stale neighbour entry.
        run(ns + ["ip", "link", "set", "eth0", "address", "02:72:66:00:%02x:%02x" % (self.index // 256, self.index % 256)])
        quiet(["ip", "neigh", "flush", "dev", self.lab.bridge, "to", self.address])
        run(ns + ["ip", "addr", "add", self.cidr, "dev", "eth0"])
        run(ns + ["ip", "link", "set", "eth0", "up"])
        run(ns + ["ip", "link", "set", "lo", "up"])
        os.makedirs("/run/sshd", exist_ok=True)
        d = self.dir
        script = " && ".join([
            "hostname %s" % self.name,
            "mount --bind %s/sys/pci /sys/bus/pci/devices" % d,
            "mount --bind %s/sys/net /sys/class/net" % d,
            "mount --bind %s/boot_id /proc/sys/kernel/random/boot_id" % d,
            "mount --bind %s/var-lib %s" % (d, VAR_LIB),
            "mount -t overlay overlay -o lowerdir=/usr/sbin,upperdir=%s/sbin,workdir=%s/work /usr/sbin" % (d, d),
            "mount --bind %s/root-home %s" % (d, os.path.expanduser("~root")),
        ] + self.login_mounts() + [
            "exec /usr/sbin/sshd -f %s/sshd_config -E %s/sshd.log" % (d, d),
        ])
        run(ns + ["unshare", "--uts", "/bin/sh", "-c", script])
        wait_for(lambda: ssh_banner(self.address), 20, "sshd of %s" % self.name)

    # --- what the door reads ------------------------------------------------------------------------

    def reboots(self):
        if not os.path.exists(self.path("reboots")):
            return 0
        with open(self.path("reboots")) as handle:
            return int(handle.read().strip() or 0)

    def state(self):
        """Every adapter's firmware as the simulator holds it, and the reboots the host went through."""
        devices = self.path("fw", "devices")
        firmware = {}
        for entry in sorted(os.listdir(devices)):
            with open(os.path.join(devices, entry)) as handle:
                firmware[entry[:-len(".json")]] = json.load(handle)
        qos = {}
        if self.qos_tools:
            qos = json.loads(run([sys.executable, QOSSIM, "admin", "--state-dir", self.path("qos"), "show"],
                                 capture_output=True, text=True).stdout)
        ecn = {}
        for netdev in self.netdevs():
            base = os.path.join(self.dir, "sys", "net", netdev, "ecn")
            for root, _dirs, files in os.walk(base):
                for fname in files:
                    with open(os.path.join(root, fname)) as handle:
                        ecn[os.path.relpath(os.path.join(root, fname), os.path.dirname(os.path.dirname(base)))] = handle.read().strip()
        return dict(firmware=firmware, reboots=self.reboots(), qos=qos, ecn=ecn)

    def calls(self):
        return read_jsonl(self.path("fw", "calls.jsonl"))

    def admin(self, *args):
        return self.fwsim_admin(*args).stdout

    def flint_admin(self, *args):
        """The burning tool simulator's administration (``flintsim.py admin``): an adapter's image, its Base MAC."""
        return run([sys.executable, FLINTSIM, "admin", "--state-dir", os.path.join(self.dir, "fw")] + list(args),
                   capture_output=True, text=True, check=True).stdout

    def exec_argv(self, command):
        pidfile = os.path.join(self.dir, "sshd.pid")
        with open(pidfile) as handle:
            pid = handle.read().strip()
        return ["nsenter", "-t", pid, "-n", "-m", "-u"] + command

    def net_exec_argv(self, command):
        """``command`` in this host's network namespace only, with the lab machine's files (a program of the lab
        that listens where only this host reaches it)."""
        with open(os.path.join(self.dir, "sshd.pid")) as handle:
            pid = handle.read().strip()
        return ["nsenter", "-t", pid, "-n"] + command
