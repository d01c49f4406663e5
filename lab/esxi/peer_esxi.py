"""Lab peer kind ``esxi_shell``: an ESXi host's shell over SSH, with the lab's ``esxcli`` stand-in.

Each host gets its own network namespace ``esxi-<name>`` joined to this machine by its own veth
pair (not the lab bridge): this machine's end is ``<net>.1/24``, the host's ``eth0`` is
``ansible_host`` in the same /24 (a 10.78.0.0/16 address). sshd runs inside with the lab key for
root; ``/usr/local/bin`` carries ``esxcli`` (``lab/esxi/esxcli_sim.py``) and ``reboot``.
State (kernel settings with Configured/Runtime, PCI devices, maintenance mode, reboots) is
``<lab dir>/esxi/<name>/state.json``; ``calls.jsonl`` records every esxcli invocation.

Inventory variables: ``ansible_host`` (10.78.x.y), ``roce_lab_esxi_pci`` (devices: address,
vendor_id, device_id, vendor_name, device_name, class, numa_node, passthru, vmkernel_name,
module_name, physical_slot).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ESXCLI_SIM = os.path.join(HERE, "esxcli_sim.py")
sys.path.insert(0, HERE)
import esxcli_sim  # noqa: E402  (the stand-in's own initial state)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from labutil import add_netns, netns_pids, remove_netns, ssh_banner, wait_for  # noqa: E402
from peer import Peer  # noqa: E402  pylint: disable=wrong-import-position


def _run(argv, check=True):
    return subprocess.run(argv, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class EsxiShell(Peer):
    kind = "esxi_shell"
    state_dir = "esxi"
    needs_bridge = False

    def __init__(self, lab, name, host_vars, index):
        super(EsxiShell, self).__init__(lab, name, host_vars, index)
        self.address = host_vars["ansible_host"]
        if not self.address.startswith("10.78."):
            raise SystemExit("lab: esxi_shell host %s must have an ansible_host in 10.78.0.0/16" % name)
        self.gateway = self.address.rsplit(".", 1)[0] + ".1"
        self.netns = "esxi-%s" % name
        self.veth = ("esxi%s" % name.replace("-", ""))[:14] + "h"

    def describe(self):
        return "%s (netns %s), esxcli stand-in" % (self.address, self.netns)

    def pids(self):
        return netns_pids(self.netns)

    def running(self):
        return bool(self.pids()) and ssh_banner(self.address)

    def stop(self):
        remove_netns(self.netns, [self.veth])

    def write_state(self):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "state.json"), "w") as handle:
            json.dump(esxcli_sim.initial_state(self.vars.get("roce_lab_esxi_pci", [])), handle, indent=1, sort_keys=True)
        if os.path.exists(os.path.join(self.dir, "calls.jsonl")):
            os.unlink(os.path.join(self.dir, "calls.jsonl"))

    def reset(self):
        self.write_state()
        if not self.running():
            self.stop()
            self.start(keep_state=True)

    def build(self):
        bindir = os.path.join(self.dir, "bin")
        shutil.rmtree(bindir, ignore_errors=True)
        os.makedirs(bindir)
        scripts = {
            "esxcli": "#!/bin/sh\nESXCLI_SIM_STATE=%s exec /usr/bin/python3 %s \"$@\"\n" % (self.dir, ESXCLI_SIM),
            # ESXi's reboot: immediate, maintenance mode or not.
            "reboot": "#!/bin/sh\nESXCLI_SIM_STATE=%s exec /usr/bin/python3 %s force-reboot\n" % (self.dir, ESXCLI_SIM),
        }
        for name, text in scripts.items():
            with open(os.path.join(bindir, name), "w") as handle:
                handle.write(text)
            os.chmod(os.path.join(bindir, name), 0o755)
        key = self.lab.ssh_key()
        host_key = os.path.join(self.dir, "ssh_host_ed25519_key")
        if not os.path.exists(host_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", host_key], check=True)
        shutil.copyfile(key + ".pub", os.path.join(self.dir, "authorized_keys"))
        with open(os.path.join(self.dir, "sshd_config"), "w") as handle:
            handle.write("\n".join([
                "# Lab ESXi shell %s" % self.name,
                "ListenAddress %s" % self.address,
                "Port 22",
                "HostKey %s" % host_key,
                "PidFile %s" % os.path.join(self.dir, "sshd.pid"),
                "AuthorizedKeysFile %s" % os.path.join(self.dir, "authorized_keys"),
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "Subsystem sftp /usr/lib/openssh/sftp-server",
                "",
            ]))

    def start(self, keep_state=False):
        os.makedirs(self.dir, exist_ok=True)
        if not keep_state or not os.path.exists(os.path.join(self.dir, "state.json")):
            self.write_state()
        self.build()
        work = os.path.join(self.dir, "work")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        add_netns(self.netns, [self.veth])
        _run(["ip", "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.netns])
        _run(["ip", "addr", "add", self.gateway + "/24", "dev", self.veth])
        _run(["ip", "link", "set", self.veth, "up"])
        ns = ["ip", "netns", "exec", self.netns]
        _run(ns + ["ip", "addr", "add", self.address + "/24", "dev", "eth0"])
        _run(ns + ["ip", "link", "set", "eth0", "up"])
        _run(ns + ["ip", "link", "set", "lo", "up"])
        os.makedirs("/run/sshd", exist_ok=True)
        d = self.dir
        # ESXi's shell is a plain busybox sh: sessions must not run this machine's interactive shell setup.
        with open(os.path.join(d, "bashrc"), "w") as handle:
            handle.write("# ESXi shell of the lab: no shell setup\n")
        script = " && ".join([
            "hostname %s" % self.name,
            "mount --bind %s/bashrc /root/.bashrc" % d,
            "mount -t overlay overlay -o lowerdir=/usr/local/bin,upperdir=%s/bin,workdir=%s/work /usr/local/bin" % (d, d),
            "exec /usr/sbin/sshd -f %s/sshd_config -E %s/sshd.log" % (d, d),
        ])
        _run(ns + ["unshare", "--uts", "/bin/sh", "-c", script])
        wait_for(lambda: ssh_banner(self.address), 20, "sshd of %s" % self.name)

    def state(self):
        """The shell's kernel settings (configured and runtime), maintenance mode and reboots."""
        with open(self.path("state.json")) as handle:
            return json.load(handle)

    def exec_argv(self, command):
        with open(os.path.join(self.dir, "sshd.pid")) as handle:
            pid = handle.read().strip()
        return ["nsenter", "-t", pid, "-n", "-m", "-u"] + command
