"""Onyx family: an NVIDIA Onyx switch as a lab peer (``roce_lab_peer: onyx_switch``).

The stateful CLI simulator ``onyxsim.py`` behind real SSH on a loopback port; its state file holds the
running and saved configuration, the commands it received and the faults armed for the next session.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from labutil import host_key_entry, host_key_pinned, pin_host_key, ssh_banner  # noqa: E402  pylint: disable=wrong-import-position
from peer import ProcessPeer  # noqa: E402  pylint: disable=wrong-import-position

ONYXSIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onyxsim.py")


class OnyxSwitch(ProcessPeer):
    """An NVIDIA Onyx switch: the stateful CLI simulator lab/onyx/onyxsim.py behind real SSH on loopback."""

    kind = "onyx_switch"
    state_dir = "switches"

    def __init__(self, lab, name, host_vars, index):
        super(OnyxSwitch, self).__init__(lab, name, host_vars, index)
        self.address = host_vars.get("ansible_host", "127.0.0.1")
        if not self.address.startswith("127."):
            raise SystemExit("lab: switch %s must listen on loopback (127.0.0.0/8), not %s" % (name, self.address))
        self.port = int(host_vars["ansible_port"])
        self.version = str(host_vars.get("roce_lab_onyx_version", "3.10.4006"))
        self.ports = int(host_vars.get("roce_lab_onyx_ports", 32))
        self.state_file = os.path.join(self.dir, "state.json")

    def describe(self):
        return "%s:%d, Onyx %s, %d ports" % (self.address, self.port, self.release(), self.ports)

    def running(self):
        return self.pid() is not None and ssh_banner(self.address, self.port)

    # --- host keys: the lab pins each switch's key, as an operator pins a real switch's ----------------------

    def known_hosts(self):
        """The lab's known_hosts of its switches (inventories/lab: onyx_known_hosts_file)."""
        return os.path.join(self.lab.dir, self.state_dir, "known_hosts")

    def host_entry(self):
        """This switch's known_hosts line for its current key: ``[address]:port <type> <base64>``."""
        return host_key_entry(self.address, self.port, self.path("host_key"))

    def pin(self):
        """Put this switch's current key into the lab's known_hosts, replacing an earlier one."""
        pin_host_key(self.known_hosts(), self.host_entry())

    def pinned(self):
        return host_key_pinned(self.known_hosts(), self.host_entry())

    def release(self):
        """The Onyx release this switch runs: its inventory's, unless ``admin release`` set another one."""
        if os.path.exists(self.path("release")):
            with open(self.path("release")) as handle:
                return handle.read().strip()
        return self.version

    def stop(self):
        """Stop the simulator; the next start is on the inventory's release again."""
        super(OnyxSwitch, self).stop()
        if os.path.exists(self.path("release")):
            os.unlink(self.path("release"))

    def admin(self, *args):
        """``rekey``: restart with a new host key and leave known_hosts as it was (a switch impersonated, or
        replaced); ``pin``: trust the current key again; ``release X.Y.Z``: restart in factory state on another
        Onyx release (same host key) until it is stopped or reset."""
        if len(args) == 2 and args[0] == "release":
            self.stop()
            with open(self.path("release"), "w") as handle:
                handle.write(args[1])
            self.start()
            return self.release()
        if args == ("rekey",):
            self.stop()
            os.unlink(self.path("host_key"))
            self.start(keep_state=True, pin=False)
            return self.host_entry()
        if args == ("pin",):
            self.pin()
            return self.host_entry()
        raise SystemExit("lab: %s: admin takes rekey, pin or release X.Y.Z, not %s" % (self.name, " ".join(args)))

    def start(self, keep_state=False, pin=True):
        os.makedirs(self.dir, exist_ok=True)
        if not keep_state and os.path.exists(self.state_file):
            os.unlink(self.state_file)
        argv = [sys.executable, ONYXSIM, "--listen", self.address, "--port", str(self.port),
                "--username", self.vars.get("ansible_user", "admin"),
                "--password-file", self.secret_file("password", self.vars.get("ansible_password", "admin")),
                "--state-file", self.state_file, "--hostname", self.name, "--version", self.release(), "--ports", str(self.ports),
                "--host-key", os.path.join(self.dir, "host_key")]
        self.spawn(argv, "onyxsim.log", lambda: ssh_banner(self.address, self.port), "the switch simulator %s" % self.name)
        if pin and not self.pinned():
            self.pin()

    # --- what the door reads and arms -----------------------------------------------------------------

    def state(self):
        """Running and saved configuration, every command received, logins and armed faults."""
        with open(self.state_file) as handle:
            return json.load(handle)

    def fault(self, **faults):
        """``drop_after`` (drop the session after N commands), ``reject`` (refuse lines matching it), ``delay`` (s),
        ``counters`` (``{port: {"Rx"|"Tx": {label: value}}}``, what ``show interfaces ethernet`` prints)."""
        state = self.state()
        state["faults"] = dict(dict(drop_after=None, reject=None, delay=0), **faults)
        tmp = self.state_file + ".door"
        with open(tmp, "w") as handle:
            json.dump(state, handle)
        os.replace(tmp, self.state_file)

    def exec_argv(self, command):
        raise SystemExit("lab: %s is a switch; use ssh -p %d admin@%s" % (self.name, self.port, self.address))
