"""The lab: real protocol peers on this machine, defined by an Ansible inventory.

    python lab/labctl.py --inventory inventories/lab/hosts.yml up [--keep-state] [HOST ...]
    python lab/labctl.py --inventory inventories/lab/hosts.yml down
    python lab/labctl.py --inventory inventories/lab/hosts.yml status
    python lab/labctl.py --inventory inventories/lab/hosts.yml exec HOST -- COMMAND ...

The inventory is the lab's definition: every host with a ``roce_lab_peer`` variable is started
as that kind of peer, with the host's own variables as its parameters, and Ansible then reaches
it like the real device. Peer kinds register in ``PEERS``; each one implements ``start``,
``stop``, ``running`` and ``describe``. State (keys, per-host directories, logs) lives in
``$ROCE_LAB_DIR`` (default ``.lab`` in the repository).

Peer kinds:

``netns_host``
    A Linux server with ConnectX adapters: its own network namespace (a veth on the lab bridge,
    address ``ansible_host``), UTS namespace (hostname) and mount namespace, in which
    ``/sys/bus/pci/devices`` and ``/sys/class/net`` show the adapters of ``roce_lab_nics``,
    ``/usr/sbin`` carries ``mlxconfig``/``mstconfig`` (the firmware simulator) and
    ``shutdown``/``reboot`` stand-ins, and ``/proc/sys/kernel/random/boot_id`` is the host's
    own. sshd runs inside; a reboot kills every process of the host, loads pending firmware
    values, changes the boot id and starts sshd again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import yaml

# One folder per device family: its simulator and its peer; shared helpers in common/.
HERE = os.path.dirname(os.path.abspath(__file__))
for _family in ("common", "firmware", "onyx", "esxi", "rdma", "k8s"):
    sys.path.insert(0, os.path.join(HERE, _family))

# pylint: disable=wrong-import-position
import peer_esxi  # noqa: E402
from labutil import kill_netns_processes, live_pid, netns_pids, quiet, run, ssh_banner, stop_process, wait_for  # noqa: E402
import peer_vcsim  # noqa: E402
from peer_qemu import QemuVm  # noqa: E402
from peer_kube import KubeApiserver  # noqa: E402

REPO = os.path.dirname(HERE)
FWSIM = os.path.join(HERE, "firmware", "fwsim.py")
LABHOST = os.path.join(HERE, "firmware", "labhost.py")


class Inventory(object):
    """Hosts and their variables from a YAML inventory (host vars over group vars, parents first)."""

    def __init__(self, path):
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        self.path = path
        self.hosts = {}
        self.groups = {}
        self._walk("all", data.get("all", {}), {}, [])

    def _walk(self, name, group, inherited, parents):
        merged = dict(inherited)
        merged.update(group.get("vars") or {})
        self.groups.setdefault(name, [])
        for host, host_vars in (group.get("hosts") or {}).items():
            entry = self.hosts.setdefault(host, {"vars": {}, "groups": []})
            combined = dict(merged)
            combined.update(entry["vars"])
            combined.update(host_vars or {})
            entry["vars"] = combined
            for grp in parents + [name]:
                if grp not in entry["groups"]:
                    entry["groups"].append(grp)
                if host not in self.groups.setdefault(grp, []):
                    self.groups[grp].append(host)
        for child, child_group in (group.get("children") or {}).items():
            self._walk(child, child_group or {}, merged, parents + [name])


class Lab(object):

    def __init__(self, inventory_path, lab_dir):
        self.inventory = Inventory(inventory_path)
        self.dir = os.path.abspath(lab_dir)
        with open(inventory_path) as handle:
            top = (yaml.safe_load(handle) or {}).get("all", {}).get("vars") or {}
        self.bridge = top.get("roce_lab_bridge", "rfab0")
        self.bridge_address = top.get("roce_lab_bridge_address", "10.77.0.1/24")
        self.peers = []
        for index, (name, entry) in enumerate(sorted(self.inventory.hosts.items())):
            kind = entry["vars"].get("roce_lab_peer")
            if not kind:
                continue
            if kind not in PEERS:
                raise SystemExit("lab: host %s asks for unknown peer kind '%s' (known: %s)" % (name, kind, ", ".join(sorted(PEERS))))
            self.peers.append(PEERS[kind](self, name, entry["vars"], index))

    # --- shared resources -------------------------------------------------------------------------

    def ssh_key(self):
        key = os.path.join(self.dir, "ssh", "id_ed25519")
        if not os.path.exists(key):
            os.makedirs(os.path.dirname(key), exist_ok=True)
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "roce-fabric-lab", "-f", key])
        return key

    def ensure_network(self):
        if quiet(["ip", "link", "show", self.bridge]) != 0:
            run(["ip", "link", "add", self.bridge, "type", "bridge"])
            run(["ip", "addr", "add", self.bridge_address, "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])

    def remove_network(self):
        if quiet(["ip", "link", "show", self.bridge]) == 0:
            run(["ip", "link", "del", self.bridge])

    def close_control_sockets(self):
        cp_dir = os.path.join(self.dir, "cp")
        if not os.path.isdir(cp_dir):
            return
        for entry in os.listdir(cp_dir):
            path = os.path.join(cp_dir, entry)
            quiet(["ssh", "-o", "ControlPath=%s" % path, "-O", "exit", "lab"])
            if os.path.exists(path):
                os.unlink(path)

    def select(self, names):
        if not names:
            return self.peers
        known = dict((p.name, p) for p in self.peers)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit("lab: not lab hosts: %s" % ", ".join(unknown))
        return [known[n] for n in names]

    # --- commands ---------------------------------------------------------------------------------

    def up(self, names, keep_state):
        os.makedirs(self.dir, exist_ok=True)
        self.ssh_key()
        selected = self.select(names)
        if any(getattr(peer, "needs_bridge", True) for peer in selected):
            self.ensure_network()
        booting = []
        for peer in selected:
            started = time.time()
            if peer.running():
                if keep_state:
                    print("lab: %-10s already running (%s)" % (peer.name, peer.describe()))
                    continue
                peer.stop()
            peer.start(keep_state=keep_state)
            if hasattr(peer, "wait_started"):
                booting.append(peer)  # VMs boot in parallel
                continue
            print("lab: %-10s up in %.1fs (%s)" % (peer.name, time.time() - started, peer.describe()))
        for peer in booting:
            print("lab: %-10s up in %.1fs (%s)" % (peer.name, peer.wait_started(), peer.describe()))

    def down(self, names):
        self.close_control_sockets()
        for peer in self.select(names):
            peer.stop()
            print("lab: %-10s stopped" % peer.name)
        if not names:
            self.remove_network()

    def status(self):
        rc = 0
        for peer in self.peers:
            state = "running" if peer.running() else "stopped"
            if state != "running":
                rc = 1
            print("%-10s %-11s %-8s %s" % (peer.name, peer.kind, state, peer.describe()))
        return rc


class Peer(object):
    kind = None

    def __init__(self, lab, name, host_vars, index):
        self.lab = lab
        self.name = name
        self.vars = host_vars
        self.index = index

    def start(self, keep_state=False):
        raise NotImplementedError

    def reset(self):
        """Back to the initial state, keeping the peer running."""
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def running(self):
        raise NotImplementedError

    def describe(self):
        return ""


class NetnsHost(Peer):
    kind = "netns_host"

    def __init__(self, lab, name, host_vars, index):
        super(NetnsHost, self).__init__(lab, name, host_vars, index)
        self.netns = "rfab-%s" % name
        self.dir = os.path.join(lab.dir, "hosts", name)
        self.address = host_vars["ansible_host"]
        prefix = lab.bridge_address.split("/")[1]
        self.cidr = "%s/%s" % (self.address, prefix)
        self.veth_host = ("rf%s" % name)[:13] + "h"
        self.veth_ns = ("rf%s" % name)[:13] + "n"
        tools = host_vars.get("roce_lab_firmware_tools", ["mlxconfig"])
        self.tools = [tools] if isinstance(tools, str) else list(tools)
        self.nics = host_vars.get("roce_lab_nics", [])

    def describe(self):
        return "%s, %d adapter(s), %s" % (self.address, len(self.nics), "+".join(self.tools))

    def running(self):
        return quiet(["ip", "netns", "pids", self.netns]) == 0 and ssh_banner(self.address)

    def pids(self):
        return netns_pids(self.netns)

    def stop(self):
        kill_netns_processes(self.netns)
        if quiet(["ip", "netns", "pids", self.netns]) == 0:
            run(["ip", "netns", "del", self.netns])
        # Deleting the namespace takes its end of the veth pair, and the kernel removes this end
        # soon after; remove it now if it is still there.
        quiet(["ip", "link", "del", self.veth_host])

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
            for key, value in sorted((nic.get("firmware") or {}).items()):
                args += ["--set", "%s=%s" % (key, value)]
            for key, value in sorted((nic.get("flags") or {}).items()):
                args += ["--flag", "%s=%s" % (key, json.dumps(value) if not isinstance(value, str) else value)]
            self.fwsim_admin(*args)

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
                    mac = "0c:42:a1:%02x:%02x:%02x" % (self.index & 0xFF, int(base.split(":")[1], 16), function)
                    for fname, text in (("address", mac), ("mtu", "1500"), ("operstate", "down"), ("type", "1"),
                                        ("carrier", "0"), ("ifindex", str(100 + function))):
                        with open(os.path.join(ifdir, fname), "w") as handle:
                            handle.write(text + "\n")

    def build_sbin(self):
        sbin = os.path.join(self.dir, "sbin")
        shutil.rmtree(sbin, ignore_errors=True)
        os.makedirs(sbin)
        flavors = {"mlxconfig": "mft", "mstconfig": "mstflint"}
        scripts = {}
        for tool in self.tools:
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
        scripts["shutdown"] = standin
        scripts["reboot"] = standin
        for name, text in scripts.items():
            path = os.path.join(sbin, name)
            with open(path, "w") as handle:
                handle.write(text)
            os.chmod(path, 0o755)

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
        self.build_firmware()
        for stale in ("reboots", "reboot.log"):
            if os.path.exists(os.path.join(self.dir, stale)):
                os.unlink(os.path.join(self.dir, stale))

    def start(self, keep_state=False):
        os.makedirs(self.dir, exist_ok=True)
        if not keep_state or not os.path.isdir(os.path.join(self.dir, "fw")):
            self.build_firmware()
            for stale in ("reboots", "reboot.log"):
                if os.path.exists(os.path.join(self.dir, stale)):
                    os.unlink(os.path.join(self.dir, stale))
        self.build_sysfs()
        self.build_sbin()
        self.build_ssh()
        shutil.rmtree(os.path.join(self.dir, "work"), ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "work"))
        with open("/proc/sys/kernel/random/uuid") as handle:
            boot_id = handle.read()
        with open(os.path.join(self.dir, "boot_id"), "w") as handle:
            handle.write(boot_id)
        with open(os.path.join(self.dir, "host.json"), "w") as handle:
            json.dump(dict(name=self.name, fwsim=FWSIM, reboot_delay=1.0, boot_delay=1.0), handle)

        run(["ip", "netns", "add", self.netns])
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
            "mount -t overlay overlay -o lowerdir=/usr/sbin,upperdir=%s/sbin,workdir=%s/work /usr/sbin" % (d, d),
            "exec /usr/sbin/sshd -f %s/sshd_config -E %s/sshd.log" % (d, d),
        ])
        run(ns + ["unshare", "--uts", "/bin/sh", "-c", script])
        wait_for(lambda: ssh_banner(self.address), 20, "sshd of %s" % self.name)

    def exec_argv(self, command):
        pidfile = os.path.join(self.dir, "sshd.pid")
        with open(pidfile) as handle:
            pid = handle.read().strip()
        return ["nsenter", "-t", pid, "-n", "-m", "-u"] + command


class OnyxSwitch(Peer):
    """An NVIDIA Onyx switch: the stateful CLI simulator lab/onyx/onyxsim.py behind real SSH on loopback."""

    kind = "onyx_switch"

    def __init__(self, lab, name, host_vars, index):
        super(OnyxSwitch, self).__init__(lab, name, host_vars, index)
        self.dir = os.path.join(lab.dir, "switches", name)
        self.address = host_vars.get("ansible_host", "127.0.0.1")
        if not self.address.startswith("127."):
            raise SystemExit("lab: switch %s must listen on loopback (127.0.0.0/8), not %s" % (name, self.address))
        self.port = int(host_vars["ansible_port"])
        self.version = str(host_vars.get("roce_lab_onyx_version", "3.10.4006"))
        self.ports = int(host_vars.get("roce_lab_onyx_ports", 32))
        self.state_file = os.path.join(self.dir, "state.json")

    def describe(self):
        return "%s:%d, Onyx %s, %d ports" % (self.address, self.port, self.version, self.ports)

    def pid(self):
        return live_pid(os.path.join(self.dir, "pid"))

    def running(self):
        return self.pid() is not None and ssh_banner(self.address, self.port)

    def stop(self):
        stop_process(self.pid)

    def reset(self):
        self.stop()
        self.start()

    def start(self, keep_state=False):
        os.makedirs(self.dir, exist_ok=True)
        if not keep_state and os.path.exists(self.state_file):
            os.unlink(self.state_file)
        argv = [sys.executable, os.path.join(HERE, "onyx", "onyxsim.py"), "--listen", self.address, "--port", str(self.port),
                "--username", self.vars.get("ansible_user", "admin"), "--password", self.vars.get("ansible_password", "admin"),
                "--state-file", self.state_file, "--hostname", self.name, "--version", self.version, "--ports", str(self.ports),
                "--host-key", os.path.join(self.dir, "host_key")]
        log = open(os.path.join(self.dir, "onyxsim.log"), "a")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        with open(os.path.join(self.dir, "pid"), "w") as handle:
            handle.write("%d\n" % proc.pid)
        wait_for(lambda: proc.poll() is not None or ssh_banner(self.address, self.port), 20, "the switch simulator %s" % self.name)
        if proc.poll() is not None:
            raise SystemExit("lab: switch %s did not start, see %s" % (self.name, os.path.join(self.dir, "onyxsim.log")))

    def exec_argv(self, command):
        raise SystemExit("lab: %s is a switch; use ssh -p %d admin@%s" % (self.name, self.port, self.address))


Vcsim = peer_vcsim.lab_peer_class(Peer, wait_for)
EsxiShell = peer_esxi.lab_peer_class(Peer, wait_for, ssh_banner)

PEERS = {
    NetnsHost.kind: NetnsHost,
    OnyxSwitch.kind: OnyxSwitch,
    Vcsim.kind: Vcsim,
    EsxiShell.kind: EsxiShell,
    QemuVm.kind: QemuVm,
    KubeApiserver.kind: KubeApiserver,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Start and stop the roce.fabric lab of real protocol peers.")
    parser.add_argument("--inventory", default=os.path.join(REPO, "inventories", "lab", "hosts.yml"))
    parser.add_argument("--lab-dir", default=os.environ.get("ROCE_LAB_DIR", os.path.join(REPO, ".lab")))
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start peers (fresh state unless --keep-state)")
    up.add_argument("--keep-state", action="store_true", help="keep running peers and their state")
    up.add_argument("hosts", nargs="*")
    down = sub.add_parser("down", help="stop peers and remove the lab network")
    down.add_argument("hosts", nargs="*")
    sub.add_parser("status", help="list peers and whether they run")
    reset = sub.add_parser("reset", help="give running peers their initial state again without restarting them")
    reset.add_argument("hosts", nargs="*")
    ex = sub.add_parser("exec", help="run a command inside a lab host")
    ex.add_argument("host")
    ex.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if os.geteuid() != 0 and args.command != "status":
        raise SystemExit("lab: needs root (network and mount namespaces)")
    lab = Lab(args.inventory, args.lab_dir)
    if args.command == "up":
        lab.up(args.hosts, args.keep_state)
    elif args.command == "down":
        lab.down(args.hosts)
    elif args.command == "status":
        return lab.status()
    elif args.command == "reset":
        for peer in lab.select(args.hosts):
            peer.reset()
    elif args.command == "exec":
        peer = lab.select([args.host])[0]
        command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        return subprocess.call(peer.exec_argv(command or ["/bin/bash"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
