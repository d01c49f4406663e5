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
inventory says which kind of peer a host is, and this module maps each kind to its state.
Starting, stopping, resetting and ``exec`` go through ``labctl.py`` (the command line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LABCTL = os.path.join(HERE, "labctl.py")
# The firmware simulator, also usable as a local mlxconfig/mstconfig stand-in outside any lab host.
FWSIM = os.path.join(HERE, "firmware", "fwsim.py")
DEFAULT_INVENTORY = os.path.join(REPO, "inventories", "lab", "hosts.yml")
for _family in ("common", "esxi"):
    if os.path.join(HERE, _family) not in sys.path:
        sys.path.insert(0, os.path.join(HERE, _family))

# Where each kind of peer keeps its state under the lab directory.
KIND_DIRS = {"netns_host": "hosts", "onyx_switch": "switches", "esxi_shell": "esxi", "qemu_vm": "vms",
             "kube_apiserver": "k8s"}
# Files a peer writes that tests may read, by kind and name.
ARTIFACTS = {
    ("qemu_vm", "console"): ("console.log",),
    ("kube_apiserver", "audit"): ("audit.log",),
    ("kube_apiserver", "kubeconfig"): ("kubeconfig",),
    ("kube_apiserver", "kubeconfig-viewer"): ("kubeconfig-viewer",),
    ("kube_apiserver", "kubeconfig-badtoken"): ("kubeconfig-badtoken",),
    ("netns_host", "boot_id"): ("boot_id",),
}


def _jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _json(path):
    with open(path) as handle:
        return json.load(handle)


class Lab(object):
    """The lab of one inventory; every method takes inventory host names."""

    def __init__(self, inventory=None, lab_dir=None):
        inventory = inventory or DEFAULT_INVENTORY
        self.inventory = inventory if inventory.endswith((".yml", ".yaml")) else os.path.join(inventory, "hosts.yml")
        self.dir = lab_dir or os.environ.get("ROCE_LAB_DIR") or os.path.join(REPO, ".lab")
        self._kinds = None

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

    # --- reading peers --------------------------------------------------------------------------------

    def kind(self, host):
        if self._kinds is None:
            sys.path.insert(0, HERE)
            from labctl import Inventory  # pylint: disable=import-outside-toplevel
            inv = Inventory(self.inventory)
            self._kinds = dict((name, entry["vars"].get("roce_lab_peer")) for name, entry in inv.hosts.items())
        if host not in self._kinds or not self._kinds[host]:
            raise KeyError("%s is not a lab peer of %s" % (host, self.inventory))
        return self._kinds[host]

    def _dir(self, host):
        kind = self.kind(host)
        if kind not in KIND_DIRS:
            raise KeyError("%s (%s) keeps no state in the lab directory" % (host, kind))
        return os.path.join(self.dir, KIND_DIRS[kind], host)

    def state(self, host):
        """The peer's state as the simulator holds it.

        Onyx switch: running and saved config, the commands received, logins. Lab host: the firmware of
        every adapter (``firmware``) and its reboot count (``reboots``). ESXi shell: its settings. vCenter
        (vcsim): hosts, VMs and SOAP calls, or None when it does not answer.
        """
        kind = self.kind(host)
        if kind == "vcsim":
            import peer_vcsim  # pylint: disable=import-outside-toplevel
            return peer_vcsim.state(self._vcsim_port(host))
        if kind == "netns_host":
            devices = os.path.join(self._dir(host), "fw", "devices")
            firmware = dict((entry[:-len(".json")], _json(os.path.join(devices, entry)))
                            for entry in sorted(os.listdir(devices)))
            return dict(firmware=firmware, reboots=self.reboots(host))
        return _json(os.path.join(self._dir(host), "state.json"))

    def calls(self, host):
        """What the peer's simulator recorded, one dict per call (firmware tool runs, esxcli runs, SOAP calls)."""
        kind = self.kind(host)
        if kind == "netns_host":
            return _jsonl(os.path.join(self._dir(host), "fw", "calls.jsonl"))
        if kind == "vcsim":
            return (self.state(host) or {}).get("calls")
        return _jsonl(os.path.join(self._dir(host), "calls.jsonl"))

    def reboots(self, host):
        path = os.path.join(self._dir(host), "reboots")
        if not os.path.exists(path):
            return 0
        with open(path) as handle:
            return int(handle.read().strip() or 0)

    def artifact(self, host, name):
        """The path of a file the peer writes (``console``, ``audit``, ``kubeconfig``, ``boot_id``)."""
        key = (self.kind(host), name)
        if key not in ARTIFACTS:
            raise KeyError("%s (%s) has no artifact '%s'" % (host, key[0], name))
        return os.path.join(self._dir(host), *ARTIFACTS[key])

    def ssh_key(self):
        """The private key every lab peer accepts."""
        return os.path.join(self.dir, "ssh", "id_ed25519")

    # --- acting on peers ------------------------------------------------------------------------------

    def fault(self, host, **faults):
        """Arm faults on a simulator: Onyx switches take ``drop_after``, ``reject`` and ``delay``;
        vcsim takes ``reboot_hang=<ESXi host name>`` (or ``reboot_hang_off=...``)."""
        kind = self.kind(host)
        if kind == "onyx_switch":
            path = os.path.join(self._dir(host), "state.json")
            state = _json(path)
            state["faults"] = dict(dict(drop_after=None, reject=None, delay=0), **faults)
            tmp = path + ".door"
            with open(tmp, "w") as handle:
                json.dump(state, handle)
            os.replace(tmp, path)
        elif kind == "vcsim":
            import peer_vcsim  # pylint: disable=import-outside-toplevel
            if "reboot_hang" in faults:
                peer_vcsim.set_reboot_hang(self._vcsim_port(host), faults["reboot_hang"], True)
            if "reboot_hang_off" in faults:
                peer_vcsim.set_reboot_hang(self._vcsim_port(host), faults["reboot_hang_off"], False)
        else:
            raise KeyError("%s (%s) has no faults to arm" % (host, kind))

    def reset_calls(self, host):
        """Forget the calls a simulator recorded (vcsim)."""
        import peer_vcsim  # pylint: disable=import-outside-toplevel
        if self.kind(host) != "vcsim":
            raise KeyError("%s is not a vcsim peer" % host)
        peer_vcsim.reset_calls(self._vcsim_port(host))

    def admin(self, host, *args):
        """The firmware simulator's administration commands on a lab host (``fwsim.py admin --help``)."""
        if self.kind(host) != "netns_host":
            raise KeyError("%s has no firmware simulator" % host)
        return subprocess.run([sys.executable, FWSIM, "admin", "--state-dir", os.path.join(self._dir(host), "fw")] + list(args),
                              check=True, capture_output=True, text=True).stdout

    def _vcsim_port(self, host):
        sys.path.insert(0, HERE)
        from labctl import Inventory  # pylint: disable=import-outside-toplevel
        return int(Inventory(self.inventory).hosts[host]["vars"].get("roce_lab_vcsim_port", 8989))
