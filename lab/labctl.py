"""The lab: real protocol peers on this machine, defined by an Ansible inventory.

    python lab/labctl.py --inventory inventories/lab/hosts.yml up [--keep-state] [HOST ...]
    python lab/labctl.py --inventory inventories/lab/hosts.yml down
    python lab/labctl.py --inventory inventories/lab/hosts.yml status
    python lab/labctl.py --inventory inventories/lab/hosts.yml exec HOST -- COMMAND ...

The inventory is the lab's definition: every host with a ``roce_lab_peer`` variable is started
as that kind of peer, with the host's own variables as its parameters, and Ansible then reaches
it like the real device. Each peer kind lives in its family's folder (``lab/<family>/peer_*.py``),
subclasses ``lab/common/peer.py``'s ``Peer`` and registers in ``PEERS``. State (keys, per-host
directories, logs) lives in ``$ROCE_LAB_DIR`` (default ``.lab`` in the repository). Tests reach the
lab through ``lab/door.py``, never through a peer's files.

| kind | family | peer |
|---|---|---|
| ``netns_host`` | firmware | ``firmware/peer_host.py``: a server with ConnectX adapters and the firmware simulator |
| ``onyx_switch`` | onyx | ``onyx/peer_onyx.py``: the Onyx CLI simulator behind SSH |
| ``nvue_switch`` | nvue | ``nvue/peer_nvue.py``: the NVUE REST API simulator (Cumulus Linux) over HTTPS |
| ``vcsim`` | esxi | ``esxi/peer_vcsim.py``: vCenter (govmomi's vcsim with the lab's additions) |
| ``esxi_shell`` | esxi | ``esxi/peer_esxi.py``: an ESXi shell with the esxcli stand-in |
| ``qemu_vm`` | rdma | ``rdma/peer_qemu.py``: a Debian VM with Soft-RoCE |
| ``kube_apiserver`` | k8s | ``k8s/peer_kube.py``: kube-apiserver with etcd, TLS, tokens and RBAC |
| ``prometheus`` | telemetry | ``telemetry/peer_prometheus.py``: a Prometheus server scraping the VMs' RDMA exporters |
| ``slurm_cluster`` | slurm | ``slurm/peer_slurm.py``: Debian's slurmctld and munged, a slurmd in each GPU node's namespaces |
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import subprocess
import sys
import time

import yaml

# One folder per device family: its simulator and its peer; shared helpers in common/.
HERE = os.path.dirname(os.path.abspath(__file__))
for _family in ("common", "firmware", "onyx", "nvue", "esxi", "rdma", "k8s", "telemetry", "slurm"):
    sys.path.insert(0, os.path.join(HERE, _family))

# pylint: disable=wrong-import-position
import leaf  # noqa: E402
from labutil import quiet, run  # noqa: E402
from peer_esxi import EsxiShell  # noqa: E402
from peer_host import NetnsHost  # noqa: E402
from peer_kube import KubeApiserver  # noqa: E402
from peer_nvue import NvueSwitch  # noqa: E402
from peer_onyx import OnyxSwitch  # noqa: E402
from peer_prometheus import Prometheus  # noqa: E402
from peer_qemu import QemuVm  # noqa: E402
from peer_slurm import SlurmCluster  # noqa: E402
from peer_vcsim import Vcsim  # noqa: E402

REPO = os.path.dirname(HERE)


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
            # Tiers may start peers at the same time: one key, made under a lock.
            with open(key + ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not os.path.exists(key):
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

    def close_control_sockets(self, peers=None):
        """End the SSH connection masters that Ansible keeps in the lab's cp/ folder: every one, or those that reach
        one of ``peers`` (other tiers may be using the others at the same time)."""
        cp_dir = os.path.join(self.dir, "cp")
        if not os.path.isdir(cp_dir):
            return
        targets = None if peers is None else set(
            (str(p.vars["ansible_host"]), int(p.vars.get("ansible_port", 22))) for p in peers if p.vars.get("ansible_host"))
        for entry in os.listdir(cp_dir):
            path = os.path.join(cp_dir, entry)
            if targets is not None:
                target = master_target(path)
                if target is not None and target not in targets:
                    continue
            quiet(["ssh", "-o", "ControlPath=%s" % path, "-O", "exit", "lab"])
            # The master removes its socket as it exits, possibly only now: either way it is gone after this.
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

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
        self.close_control_sockets(self.select(names) if names else None)
        for peer in self.select(names):
            peer.stop()
            print("lab: %-10s stopped" % peer.name)
        # The VMs' leaf switches once no VM is plugged into them (rdma/leaf.py).
        leaf.remove_unused(self.dir)
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


def master_target(path):
    """(address, port) that the SSH connection master behind control socket ``path`` is connected to, from the TCP
    sockets the master holds (ssh renames its master process, so its command line says nothing); None when no
    master answers (a stale socket, closed like any other) or none of its sockets is a TCP connection."""
    try:
        check = subprocess.run(["ssh", "-o", "ControlPath=%s" % path, "-O", "check", "lab"], capture_output=True,
                               text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return None  # a master that does not answer serves nobody: closed like a stale socket
    found = re.search(r"pid=(\d+)", check.stderr + check.stdout)
    if not found:
        return None
    fd_dir = "/proc/%s/fd" % found.group(1)
    try:
        inodes = set()
        for fd in os.listdir(fd_dir):
            link = os.readlink(os.path.join(fd_dir, fd))
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        with open("/proc/%s/net/tcp" % found.group(1)) as handle:
            table = handle.read()
    except OSError:
        return None
    for connection in tcp_connections(table):
        if connection["inode"] in inodes:
            return connection["remote"]
    return None


def tcp_connections(table):
    """The rows of a /proc/net/tcp table as dicts: local and remote (address, port), state (hex), inode."""
    rows = []
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue

        def endpoint(text):
            address, port = text.split(":")
            octets = bytes.fromhex(address)[::-1]
            return ".".join(str(b) for b in octets), int(port, 16)
        rows.append(dict(local=endpoint(fields[1]), remote=endpoint(fields[2]), state=fields[3], inode=fields[9]))
    return rows


# Every peer kind, each from its family's folder and each a subclass of peer.Peer.
PEERS = dict((cls.kind, cls) for cls in (NetnsHost, OnyxSwitch, NvueSwitch, Vcsim, EsxiShell, QemuVm, KubeApiserver,
                                         Prometheus, SlurmCluster))


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
