"""Slurm family: a Slurm cluster as a lab peer (``roce_lab_peer: slurm_cluster``).

Debian's own Slurm (slurmctld, slurmd, slurm-client) and munge, nothing simulated: munged and slurmctld run on the
lab machine, on the lab bridge's address, and one slurmd per node runs inside that node's network-namespace host
(``roce_lab_slurm_nodes``, lab hosts of kind ``netns_host``), each with its own address, so Slurm sees the lab's GPU
nodes as its compute nodes. Everything (configuration, munge key and socket, state, spool, logs) lives in the peer's
folder; ``SLURM_CONF`` names its ``slurm.conf`` for the clients (``exec`` sets it). The controller's state is thrown
away at every start: a fresh cluster, every node idle.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess

from labutil import live_pid, stop_process, wait_for
from peer import LabError, Peer

PROGRAMS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/scontrol")


class SlurmCluster(Peer):
    kind = "slurm_cluster"
    state_dir = "slurm"
    needs_bridge = True
    artifacts = {"slurm.conf": "slurm.conf", "slurmctld.log": "slurmctld.log"}

    def __init__(self, lab, name, host_vars, index):
        super(SlurmCluster, self).__init__(lab, name, host_vars, index)
        self.nodes = list(host_vars.get("roce_lab_slurm_nodes") or [])
        self.port = int(host_vars.get("roce_lab_slurmctld_port", 6817))
        self.address = lab.bridge_address.split("/")[0]

    def describe(self):
        return "slurmctld %s:%d (Slurm from Debian's packages), slurmd on %s, SLURM_CONF %s" % (
            self.address, self.port, ", ".join(self.nodes), self.path("slurm.conf"))

    def env(self):
        return dict(os.environ, SLURM_CONF=self.path("slurm.conf"), LC_ALL="C")

    def node_peers(self):
        peers = dict((peer.name, peer) for peer in self.lab.peers)
        missing = [name for name in self.nodes if peers.get(name) is None or peers[name].kind != "netns_host"]
        if missing:
            raise LabError("%s: roce_lab_slurm_nodes names hosts that are not netns_host peers: %s"
                           % (self.name, ", ".join(missing)))
        return [peers[name] for name in self.nodes]

    # --- configuration --------------------------------------------------------------------------------

    def config(self, hostname):
        lines = [
            "# The lab's Slurm cluster (lab/slurm/peer_slurm.py): written at every start.",
            "ClusterName=roce-lab",
            "SlurmctldHost=%s(%s)" % (hostname, self.address),
            "SlurmctldPort=%d" % self.port,
            "SlurmdPort=%d" % (self.port + 1),
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.path("munge.socket"),
            "SlurmUser=root",
            "SlurmdUser=root",
            "StateSaveLocation=%s" % self.path("state"),
            "SlurmdSpoolDir=%s" % self.path("spool", "%n"),
            "SlurmctldPidFile=%s" % self.path("slurmctld.pid"),
            "SlurmdPidFile=%s" % self.path("slurmd-%n.pid"),
            "SlurmctldLogFile=%s" % self.path("slurmctld.log"),
            "SlurmdLogFile=%s" % self.path("slurmd-%n.log"),
            # No cgroups, accounting or MPI: the lab's jobs are processes in a node's namespaces.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SelectType=select/linear",
            "SchedulerType=sched/builtin",
            "MpiDefault=none",
            "ReturnToService=2",
            "InactiveLimit=0",
            "KillWait=5",
            "MinJobAge=30",
        ]
        for peer in self.node_peers():
            lines.append("NodeName=%s NodeAddr=%s CPUs=1 State=UNKNOWN" % (peer.name, peer.address))
        lines.append("PartitionName=gpu Nodes=%s Default=YES MaxTime=INFINITE State=UP" % ",".join(self.nodes))
        return "\n".join(lines) + "\n"

    # --- lifecycle ------------------------------------------------------------------------------------

    def _daemon(self, argv, env):
        with open(self.path("daemons.out"), "a") as out:
            subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.dir, env=env,
                           check=True, timeout=60)

    def _wait(self, what, predicate, timeout=60):
        wait_for(predicate, timeout, "%s of %s (see %s)" % (what, self.name, self.dir))

    def scontrol(self, *args):
        return subprocess.run(["scontrol"] + list(args), env=self.env(), capture_output=True, text=True, check=False,
                              timeout=30)

    def start(self, keep_state=False):
        missing = [program for program in PROGRAMS if not os.access(program, os.X_OK)]
        if missing:
            raise SystemExit("lab: %s: %s missing; run tests/run setup first (Debian packages munge, slurmctld, slurmd, "
                             "slurm-client)" % (self.name, ", ".join(missing)))
        self.stop()
        for peer in self.node_peers():
            if not peer.running():
                peer.start()
        shutil.rmtree(self.dir, ignore_errors=True)
        for sub in ("state", "spool"):
            os.makedirs(self.path(sub))
        os.chmod(self.dir, 0o711)  # munged wants the socket's folder reachable by all
        with open(self.path("munge.key"), "wb") as handle:
            handle.write(os.urandom(1024))
        os.chmod(self.path("munge.key"), 0o400)
        hostname = socket.gethostname().split(".")[0]
        with open(self.path("slurm.conf"), "w") as handle:
            handle.write(self.config(hostname))
        env = self.env()
        # Each daemon forks away and writes its pid file.
        self._daemon(["/usr/sbin/munged", "--force", "--key-file", self.path("munge.key"),
                      "--socket", self.path("munge.socket"), "--pid-file", self.path("munged.pid"),
                      "--seed-file", self.path("munged.seed"), "--log-file", self.path("munged.log")], env)
        self._wait("munged", lambda: os.path.exists(self.path("munge.socket")))
        self._daemon(["/usr/sbin/slurmctld", "-i"], env)
        self._wait("slurmctld", lambda: self.scontrol("ping").stdout.find("is UP") >= 0)
        for peer in self.node_peers():
            # slurmd in the node's network, mount and UTS namespaces, as that node; it starts again at the host's
            # reboots (the host's boot.d, as a server's init starts it).
            # slurmd's cgroup plugin wants the cgroup file systems at /sys/fs/cgroup (a v1 layout: its systemd
            # hierarchy), which the host's own /sys (its namespace's) lacks: mounted there as a server's init does at
            # boot (proctrack/linuxproc and task/none put nothing in them).
            slurmd = ["/bin/sh", "-c", "mountpoint -q /sys/fs/cgroup || { mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup"
                      " && mkdir /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd; }"
                      ' && exec env SLURM_CONF="$1" /usr/sbin/slurmd -N "$2"', "slurmd", self.path("slurm.conf"), peer.name]
            os.makedirs(peer.path("boot.d"), exist_ok=True)
            with open(peer.path("boot.d", "slurmd.json"), "w") as handle:
                json.dump(slurmd, handle)
            self._daemon(peer.exec_argv(slurmd), env)
        self._wait("every node idle", self.all_idle)

    def all_idle(self):
        proc = self.scontrol("--oneliner", "show", "node")
        states = [word.split("=", 1)[1] for word in proc.stdout.split() if word.startswith("State=")]
        return len(states) == len(self.nodes) and all(state == "IDLE" for state in states)

    def reset(self):
        """Every job cancelled and every node idle again, the cluster kept running."""
        subprocess.run(["scancel", "--full", "--quiet", "--partition", "gpu"], env=self.env(), check=False, timeout=30)
        for name in self.nodes:
            self.scontrol("update", "NodeName=%s" % name, "State=RESUME")
        self._wait("every node idle", self.all_idle)

    def stop(self):
        for peer in self.node_peers():
            if os.path.exists(peer.path("boot.d", "slurmd.json")):
                os.unlink(peer.path("boot.d", "slurmd.json"))
            stop_process(lambda name=peer.name: live_pid(self.path("slurmd-%s.pid" % name)))
        stop_process(lambda: live_pid(self.path("slurmctld.pid")))
        stop_process(lambda: live_pid(self.path("munged.pid")))

    def running(self):
        return bool(live_pid(self.path("slurmctld.pid")) and live_pid(self.path("munged.pid"))
                    and all(live_pid(self.path("slurmd-%s.pid" % name)) for name in self.nodes))

    def state(self):
        """Each node's Slurm state and reason, and the jobs (id, node, state, name): what a drain changes."""
        nodes = {}
        for line in self.scontrol("--oneliner", "show", "node").stdout.splitlines():
            head, _sep, reason = line.partition(" Reason=")
            words = dict(word.split("=", 1) for word in head.split() if "=" in word)
            if "NodeName" in words:
                nodes[words["NodeName"]] = dict(state=words.get("State"), reason=reason or None)
        queue = subprocess.run(["squeue", "--noheader", "--format", "%i|%N|%T|%j"], env=self.env(), capture_output=True,
                               text=True, check=False, timeout=30).stdout
        return dict(nodes=nodes, jobs=sorted(line for line in queue.splitlines() if line.strip()))

    def exec_argv(self, command):
        """A Slurm client (sbatch, squeue, scontrol) against this cluster."""
        return ["env", "SLURM_CONF=%s" % self.path("slurm.conf")] + command
