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

Nothing outside ``lab/`` knows where a simulator keeps its state or how it is started: the
inventory says which kind of peer a host is, and each peer kind (``lab/common/peer.py``) says how
its state is read and its faults armed.
Starting, stopping, resetting and ``exec`` go through ``labctl.py`` (the command line).
"""

from __future__ import annotations

import os
import subprocess
import sys

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
        """Run ``argv`` inside a lab host; a CompletedProcess (text, output captured unless told otherwise)."""
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        check = kwargs.pop("check", False)
        return subprocess.run([sys.executable, LABCTL, "--inventory", self.inventory, "--lab-dir", self.dir,
                               "exec", host, "--"] + list(argv), check=check, **kwargs)

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

    def reset_calls(self, host):
        """Forget the calls a simulator recorded (vcsim)."""
        self.peer(host).reset_calls()

    def admin(self, host, *args):
        """The firmware simulator's administration commands on a lab host (``fwsim.py admin --help``)."""
        return self.peer(host).admin(*args)

    @staticmethod
    def base_image():
        """A Debian base image made on this machine with podman (lab/image/base.py), for image builds that can reach
        no registry; made once, its reference returned."""
        sys.path.insert(0, os.path.join(HERE, "image"))
        import base  # noqa: E402  pylint: disable=import-outside-toplevel,import-error
        return base.make()
