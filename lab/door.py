"""The lab's one door: how tests, molecule verifiers and benchmarks drive and read the lab's peers.

    import sys; sys.path.insert(0, "<repository>/lab")
    from door import Lab
    lab = Lab()                       # inventories/lab/hosts.yml, $ROCE_LAB_DIR (default .lab)
    lab.up("sw1", "sw2"); lab.reset("sw1")
    lab.state("sw1")                  # the peer's state, read from outside the peer
    lab.fault("sw1", reject="mtu")    # arm a fault (switches)
    lab.admin("gpu1", "flag", ...)    # the firmware simulator's administration commands (lab hosts)
    lab.calls("gpu1")                 # the calls a simulator recorded
    lab.artifact("node1", "console")  # a file the peer writes (serial console, audit log, kubeconfig)
    with lab.switch_behind("gpu1", "onyx", 22299) as sw:   # a switch reachable only through gpu1's sshd
        sw.known_hosts_entry, sw.state()

Nothing outside ``lab/`` knows where a simulator keeps its state or how it is started: the
inventory says which kind of peer a host is, and each peer kind (``lab/common/peer.py``) says how
its state is read and its faults armed.
Starting, stopping and resetting go through ``labctl.py`` (the command line); ``exec`` runs the command line that
``labctl.py exec`` would run, built by the peer in this process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LABCTL = os.path.join(HERE, "labctl.py")
# The firmware simulator, also usable as a local mlxconfig/mstconfig stand-in outside any lab host.
FWSIM = os.path.join(HERE, "firmware", "fwsim.py")
DEFAULT_INVENTORY = os.path.join(REPO, "inventories", "lab", "hosts.yml")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "common"))
# LabError is raised for what a peer cannot do; callers import it from here.
from peer import LabError  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

# What OpenSSH's connection sharing prints when it cannot use the kept connection before any session started (its
# master ending as the command comes, ControlPersist having run out): ssh then runs the command over a connection of
# its own, and its exit status is the command's. These lines are ssh's, never the command's output.
MUX_FALLBACK = re.compile(r"^(?:muxclient: master hello exchange failed"
                          r"|mux_client_request_session: master alive request failed"
                          r"|Control socket connect\(.*\): .*)\r?(?:\n|\Z)", re.M)


def _leaves():
    """The lab's leaf switches (rdma/leaf.py)."""
    sys.path.insert(0, os.path.join(HERE, "rdma"))
    import leaf  # noqa: E402  pylint: disable=import-outside-toplevel,import-error
    return leaf


def without_mux_fallback(stderr):
    """``stderr`` of an exec without OpenSSH's notices that it fell back from the shared connection."""
    return MUX_FALLBACK.sub("", stderr) if isinstance(stderr, str) else stderr


class Lab(object):
    """The lab of one inventory; every method takes inventory host names."""

    def __init__(self, inventory=None, lab_dir=None):
        inventory = inventory or DEFAULT_INVENTORY
        self.inventory = inventory if inventory.endswith((".yml", ".yaml")) else os.path.join(inventory, "hosts.yml")
        self.dir = lab_dir or os.environ.get("ROCE_LAB_DIR") or os.path.join(REPO, ".lab")
        self._lab = None

    # --- lifecycle (labctl) -------------------------------------------------------------------------

    def labctl(self, *args, **kwargs):
        argv = [sys.executable, LABCTL, "--inventory", self.inventory, "--lab-dir", self.dir] + list(args)
        check = kwargs.pop("check", True)
        kwargs.setdefault("stdout", subprocess.DEVNULL)
        return subprocess.run(argv, check=check, **kwargs)

    def up(self, *hosts, **options):
        self.labctl("up", *((["--keep-state"] if options.get("keep_state") else []) + list(hosts)))

    def down(self, *hosts):
        self.labctl("down", *hosts)

    def reset(self, *hosts):
        self.labctl("reset", *hosts)

    def exec(self, host, argv, **kwargs):
        """Run ``argv`` inside a lab host; a CompletedProcess (text, output captured unless told otherwise).

        Bounded (``timeout``, default ``ROCE_LAB_EXEC_TIMEOUT`` or 600 s): a command the guest never finishes (an
        ``rdma link delete`` waiting on a queue pair a failed test left open) fails the test with TimeoutExpired
        instead of holding the suite until CI's limit."""
        kwargs.setdefault("timeout", int(os.environ.get("ROCE_LAB_EXEC_TIMEOUT", "600")))
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        check = kwargs.pop("check", False)
        # The peer's own command line (what ``labctl.py exec`` runs), built here: a Python start of labctl per
        # command cost the machine about 0.2 CPU-s, and tests run thousands.
        try:
            command = self.peer(host).exec_argv(list(argv))
        except SystemExit as exc:
            raise LabError(str(exc)) from None
        proc = subprocess.run(command, check=check, **kwargs)
        proc.stderr = without_mux_fallback(proc.stderr)
        return proc

    def switch_behind(self, jump, kind, port):
        """A switch simulator reachable only from inside lab host ``jump``, through its sshd (a context manager:
        ``SwitchBehind``, started on enter, stopped and removed on exit)."""
        return SwitchBehind(self, jump, kind, port)

    # --- reading and arming peers (each peer kind implements these; see lab/common/peer.py) -------------

    def peer(self, host):
        """The peer object of ``host`` (a ``peer.Peer``); raises LabError for a host that is no lab peer."""
        if self._lab is None:
            from labctl import Lab as LabControl  # pylint: disable=import-outside-toplevel
            self._lab = LabControl(self.inventory, self.dir)
        for peer in self._lab.peers:
            if peer.name == host:
                return peer
        raise LabError("%s is not a lab peer of %s" % (host, self.inventory))

    def peer_names(self):
        """Every peer of the inventory, in inventory order."""
        if self._lab is None:
            from labctl import Lab as LabControl  # pylint: disable=import-outside-toplevel
            self._lab = LabControl(self.inventory, self.dir)
        return [peer.name for peer in self._lab.peers]

    def kind(self, host):
        return self.peer(host).kind

    def state(self, host):
        """The peer's state as the simulator holds it.

        Onyx switch: running and saved config, the commands received, logins. Lab host: the firmware of
        every adapter (``firmware``) and its reboot count (``reboots``). ESXi shell: its settings. vCenter
        (vcsim): hosts, VMs and SOAP calls, or None when it does not answer.
        """
        return self.peer(host).state()

    def calls(self, host):
        """What the peer's simulator recorded, one dict per call (firmware tool runs, esxcli runs, SOAP calls)."""
        return self.peer(host).calls()

    def reboots(self, host):
        """How often a lab host rebooted since it started or was reset."""
        return self.peer(host).reboots()

    def artifact(self, host, name):
        """The path of a file the peer writes (``console``, ``audit``, ``kubeconfig``, ``boot_id``...)."""
        return self.peer(host).artifact(name)

    def query(self, host, expr, at=None):
        """An instant PromQL query on a Prometheus peer: ``[{"metric": {labels}, "value": [time, "text"]}]``."""
        return self.peer(host).query(expr, at)

    def query_range(self, host, expr, start, end, step="1s"):
        """A PromQL range query on a Prometheus peer: ``[{"metric": {labels}, "values": [[time, "text"], ...]}]``."""
        return self.peer(host).query_range(expr, start, end, step)

    def command_line(self, host):
        """The argv of a simulator process (vcsim, Onyx, NVUE) as ``ps`` shows it to any local user."""
        return self.peer(host).command_line()

    def ssh_key(self):
        """The private key every lab peer accepts."""
        return os.path.join(self.dir, "ssh", "id_ed25519")

    def fault(self, host, **faults):
        """Arm faults on a simulator: Onyx switches take ``drop_after``, ``reject`` and ``delay``;
        vcsim takes ``reboot_hang=<ESXi host name>`` (or ``reboot_hang_off=...``)."""
        self.peer(host).fault(**faults)

    def monitor(self, host, command):
        """A QEMU monitor command on a lab VM (``set_link fab0 off``, ``pcie_aer_inject_error rp1 RCVR``: the fabric
        NIC ``i`` is netdev ``fab<i>`` behind root port ``rp<i+1>``); the monitor's answer."""
        return self.peer(host).qmp("human-monitor-command", **{"command-line": command})

    def recable(self, moves):
        """Move cables between the lab's leaf switches (``rdma/leaf.py``): ``moves`` is a list of ``((leaf, port),
        (to_leaf, to_port))``, done in order (a cable may go to a port another move frees first: each moves through
        a temporary name)."""
        for (from_leaf, from_port), (to_leaf, to_port) in moves:
            _leaves().recable(from_leaf, from_port, to_leaf, to_port)

    def leaf_neighbours(self, leaf_name):
        """What a leaf switch hears over LLDP on its ports (``lldpcli -f json0 show neighbors``, its text)."""
        return subprocess.run(["lldpcli", "-u", _leaves().socket_path(self.dir, leaf_name), "-f", "json0", "show",
                               "neighbors"], capture_output=True, text=True, check=True, timeout=30).stdout

    def reset_calls(self, host):
        """Forget the calls a simulator recorded (vcsim)."""
        self.peer(host).reset_calls()

    def admin(self, host, *args):
        """The firmware simulator's administration commands on a lab host (``fwsim.py admin --help``)."""
        return self.peer(host).admin(*args)

    def flint_admin(self, host, *args):
        """The burning tool simulator's administration on a lab host (``flintsim.py admin image --help``)."""
        return self.peer(host).flint_admin(*args)

    def management_on(self, host, pci=None):
        """A lab host's management interface (eth0, which the controller's SSH session reaches) shown as the port of
        the card function ``pci`` (None: the virtual interface it is, as a reset leaves it)."""
        self.peer(host).management_on(pci)

    def login_user(self, host):
        """The lab host's login user with sudo (ansible_user with become), as an inventory of a site has one."""
        return self.peer(host).login_user

    @staticmethod
    def base_image():
        """A Debian base image made on this machine with podman (lab/image/base.py), for image builds that can reach
        no registry; made once, its reference returned."""
        sys.path.insert(0, os.path.join(HERE, "image"))
        import base  # noqa: E402  pylint: disable=import-outside-toplevel,import-error
        return base.make()


ONYXSIM = os.path.join(HERE, "onyx", "onyxsim.py")
NVUESIM = os.path.join(HERE, "nvue", "nvuesim.py")


class SwitchBehind(object):
    """A switch simulator that listens only on the loopback of a lab host's network namespace: from the controller
    it is reachable only through that host's sshd, as a switch on a management network behind a bastion. ``kind``:
    ``onyx`` (Onyx CLI over SSH) or ``nvue`` (Cumulus Linux, nv over SSH). Credentials: admin/admin (Onyx),
    cumulus/cumulus-Lab-secret (NVUE)."""

    def __init__(self, lab, jump, kind, port):
        if kind not in ("onyx", "nvue"):
            raise LabError("switch_behind takes onyx or nvue, not %s" % kind)
        self.lab, self.jump, self.kind, self.port = lab, jump, kind, port
        self.username, self.password = ("admin", "admin") if kind == "onyx" else ("cumulus", "cumulus-Lab-secret")
        self.dir = tempfile.mkdtemp(prefix="behind-%s-" % jump, dir=os.path.join(lab.dir))
        self.state_file = os.path.join(self.dir, "state.json")
        self.proc = None
        self.known_hosts_entry = None

    def _argv(self):
        password = os.path.join(self.dir, "password")
        with open(password, "w") as handle:
            handle.write(self.password)
        key = os.path.join(self.dir, "host_key")
        if self.kind == "onyx":
            return [sys.executable, ONYXSIM, "--listen", "127.0.0.1", "--port", str(self.port), "--username",
                    self.username, "--password-file", password, "--state-file", self.state_file, "--hostname",
                    "sw-behind", "--version", "3.10.4006", "--ports", "8", "--host-key", key]
        cert, tls_key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-subj", "/CN=leaf-behind", "-days", "1", "-keyout", tls_key, "-out", cert],
                       check=True, capture_output=True)
        return [sys.executable, NVUESIM, "--listen", "127.0.0.1", "--port", str(self.port + 1000), "--username",
                self.username, "--password-file", password, "--state-file", self.state_file, "--version", "5.4.0",
                "--ports", "8", "--breakouts", "", "--cert", cert, "--key", tls_key, "--no-rest", "--ssh-port",
                str(self.port), "--host-key", key]

    def _listening(self):
        probe = "import socket; socket.create_connection(('127.0.0.1', %d), 1).close()" % self.port
        argv = self.lab.peer(self.jump).net_exec_argv([sys.executable, "-c", probe])
        return subprocess.run(argv, capture_output=True, check=False).returncode == 0

    def __enter__(self):
        peer = self.lab.peer(self.jump)
        if not hasattr(peer, "net_exec_argv"):
            raise LabError("%s (%s) has no network namespace to put a switch behind" % (self.jump, peer.kind))
        log = open(os.path.join(self.dir, "sim.log"), "a")
        self.proc = subprocess.Popen(peer.net_exec_argv(self._argv()), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 30
        while not self._listening():
            if self.proc.poll() is not None or time.time() > deadline:
                self.__exit__(None, None, None)
                raise LabError("the switch behind %s did not start (see %s)" % (self.jump, log.name))
            time.sleep(0.3)
        public = subprocess.run(["ssh-keygen", "-y", "-f", os.path.join(self.dir, "host_key")], capture_output=True,
                                text=True, check=True)
        self.known_hosts_entry = "[127.0.0.1]:%d %s" % (self.port, " ".join(public.stdout.split()[:2]))
        return self

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)

    def state(self):
        """The simulator's state (Onyx: running config, commands, logins; NVUE: applied config, requests)."""
        with open(self.state_file) as handle:
            return json.load(handle)
