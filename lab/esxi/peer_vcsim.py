"""Lab peer kind ``vcsim``: a vCenter (vSphere SOAP API) from govmomi's simulator with the lab's additions.

The simulator library comes from Debian (``golang-github-vmware-govmomi-dev``, built with Debian's
``golang-go``; nothing is downloaded). ``lab/esxi/vcsim/main.go`` is the command and
``lab/esxi/vcsim/overlay/`` adds files to the simulator package with ``go build -overlay``:
kernel boot settings with Configured and Runtime values, reboots that refuse outside maintenance
mode, PCI passthrough devices with NUMA nodes, extraConfig that replaces and removes keys, a vSAN system
per host. Two changes to library files are generated at build time from Debian's own files (see
``LIBRARY_FIXES``), so no library code is kept in the repository.

The binary is cached under ``$ROCE_FABRIC_CACHE/vcsim/<hash of the recipe>/`` (built under a lock,
in a temporary directory renamed into place). ``python lab/esxi/peer_vcsim.py build`` builds it.

Inventory variables of a ``roce_lab_peer: vcsim`` host: ``roce_lab_vcsim_port`` (on 127.0.0.1),
``roce_lab_vcsim_hosts`` / ``roce_lab_vcsim_vms`` (counts), ``roce_lab_vcsim_topology`` (hosts with
their PCI devices, VMs with their passthrough devices), ``vcenter_username`` / ``vcenter_password`` (handed to the
simulator in a file only its owner reads, never on its command line).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from peer import ProcessPeer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "vcsim")
GOVMOMI = "/usr/share/gocode/src/github.com/vmware/govmomi"
CACHE = os.environ.get("ROCE_FABRIC_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "roce-fabric")

# Changes to Debian's library files, generated at build time from Debian's own files: {file: (old, new)}.
# - property_collector.go: PropertyCollector.Fetch indexes an empty MissingSet when a client fetches an optional
#   property that is unset (pyVmomi does so lazily, e.g. vm.snapshot) and the request dies; answer an unset value.
# - virtual_machine.go: applyExtraConfig appends every extraConfig entry; vCenter replaces the value of a key that is
#   there and removes a key set to "" (overlay/roce_lab.go: RoceApplyExtraConfigEntry).
LIBRARY_FIXES = {
    "property_collector.go": (
        "\tif len(obj.PropSet) == 0 {\n\t\tfault := obj.MissingSet[0].Fault\n",
        "\tif len(obj.PropSet) == 0 {\n\t\tif len(obj.MissingSet) == 0 {\n"
        "\t\t\tbody.Res = &internal.FetchResponse{}\n\t\t\treturn body\n\t\t}\n\t\tfault := obj.MissingSet[0].Fault\n",
    ),
    "virtual_machine.go": (
        "\t\tif key == val.Key {\n\t\t\tvm.Config.ExtraConfig = append(vm.Config.ExtraConfig, c)\n\t\t\tcontinue\n",
        "\t\tif key == val.Key {\n\t\t\tvm.Config.ExtraConfig = RoceApplyExtraConfigEntry(vm.Config.ExtraConfig, c)\n"
        "\t\t\tcontinue\n",
    ),
}


def _recipe_files():
    files = [os.path.join(SOURCE, "main.go")]
    overlay = os.path.join(SOURCE, "overlay")
    files += [os.path.join(overlay, f) for f in sorted(os.listdir(overlay)) if f.endswith(".go")]
    return files


def recipe_hash():
    digest = hashlib.sha256()
    for path in _recipe_files():
        digest.update(os.path.basename(path).encode())
        with open(path, "rb") as handle:
            digest.update(handle.read())
    digest.update(repr(sorted(LIBRARY_FIXES.items())).encode())
    for pkg in ("golang-go", "golang-github-vmware-govmomi-dev"):
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=False).stdout
        digest.update(("%s=%s" % (pkg, version)).encode())
    return digest.hexdigest()[:16]


def binary_path():
    return os.path.join(CACHE, "vcsim", recipe_hash(), "vcsim-roce")


def build():
    """Build the simulator into the cache unless that recipe's binary is there; return its path."""
    target = binary_path()
    if os.path.exists(target):
        return target
    root = os.path.join(CACHE, "vcsim")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(target):
            return target
        if not os.path.isdir(os.path.join(GOVMOMI, "simulator")):
            raise SystemExit("vcsim: %s missing; install golang-go golang-github-vmware-govmomi-dev" % GOVMOMI)
        started = time.time()
        # What the wait is for: the first setup builds this while nothing else says anything.
        sys.stderr.write("vcsim: building the vSphere API simulator from Debian's govmomi into %s (once per recipe; "
                         "about 30 s on 2 cores)\n" % os.path.dirname(target))
        sys.stderr.flush()
        tmp = tempfile.mkdtemp(prefix="build-", dir=root)
        try:
            sim = os.path.join(GOVMOMI, "simulator")
            replace = {}
            for name, (old, new) in sorted(LIBRARY_FIXES.items()):
                with open(os.path.join(sim, name)) as handle:
                    text = handle.read()
                if text.count(old) != 1:
                    raise SystemExit("vcsim: %s does not have the expected code once; update LIBRARY_FIXES" % name)
                fixed = os.path.join(tmp, name)
                with open(fixed, "w") as handle:
                    handle.write(text.replace(old, new, 1))
                replace[os.path.join(sim, name)] = fixed
            for path in _recipe_files()[1:]:
                replace[os.path.join(sim, os.path.basename(path))] = path
            with open(os.path.join(tmp, "overlay.json"), "w") as handle:
                json.dump({"Replace": replace}, handle)
            src = os.path.join(tmp, "src")
            os.makedirs(src)
            shutil.copy(os.path.join(SOURCE, "main.go"), src)
            env = dict(os.environ, GO111MODULE="off", GOPATH=os.path.join(tmp, "gopath") + ":/usr/share/gocode",
                       GOPROXY="off", GOFLAGS="", GOCACHE=os.path.join(CACHE, "go-build"), CGO_ENABLED="0")
            subprocess.run(["nice", "-n", "10", "go", "build", "-overlay", os.path.join(tmp, "overlay.json"),
                            "-o", os.path.join(tmp, "out", "vcsim-roce"), "."], cwd=src, env=env, check=True)
            final = os.path.dirname(target)
            os.rename(os.path.join(tmp, "out"), final)
            sys.stderr.write("vcsim: built in %.0f s\n" % (time.time() - started))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


class Vcsim(ProcessPeer):
    kind = "vcsim"
    needs_bridge = False

    def __init__(self, lab, name, host_vars, index):
        super(Vcsim, self).__init__(lab, name, host_vars, index)
        self.address = host_vars.get("ansible_host", "127.0.0.1")
        if self.address != "127.0.0.1":
            raise SystemExit("lab: vcsim %s must listen on 127.0.0.1" % name)
        self.port = int(host_vars.get("roce_lab_vcsim_port", 8989))
        if not 8989 <= self.port <= 8999:
            raise SystemExit("lab: vcsim %s: port %d outside 8989-8999" % (name, self.port))

    def describe(self):
        return "https://127.0.0.1:%d/sdk, %s hosts, %s VMs" % (
            self.port, self.vars.get("roce_lab_vcsim_hosts", 3), self.vars.get("roce_lab_vcsim_vms", 2))

    def running(self):
        return self.pid() is not None and self.state() is not None

    def state(self):
        """Hosts, VMs and SOAP call counts from the simulator's state endpoint, or None if it does not answer."""
        return state(self.port)

    def calls(self):
        return (self.state() or {}).get("calls")

    def reset_calls(self):
        reset_calls(self.port)

    def fault(self, **faults):
        """``reboot_hang=<ESXi host>``: that host never comes back from a reboot (``reboot_hang_off`` undoes it).
        ``reboot_required_stuck=<ESXi host>``: its summary.rebootRequired stays set whatever its boot options say and
        across reboots, as a staged update that waits for a reboot of its own holds it."""
        if "reboot_hang" in faults:
            set_reboot_hang(self.port, faults["reboot_hang"], True)
        if "reboot_hang_off" in faults:
            set_reboot_hang(self.port, faults["reboot_hang_off"], False)
        if "reboot_required_stuck" in faults:
            _http(self.port, "/roce/reboot_required?host=%s&on=1" % urllib.request.quote(faults["reboot_required_stuck"]),
                  method="POST")

    def start(self, keep_state=False):
        binary = build()
        os.makedirs(self.dir, exist_ok=True)
        argv = [binary, "-l", "127.0.0.1:%d" % self.port,
                "-host", str(self.vars.get("roce_lab_vcsim_hosts", 3)), "-vm", str(self.vars.get("roce_lab_vcsim_vms", 2)),
                "-username", str(self.vars.get("vcenter_username", "user")),
                "-password-file", self.secret_file("password", str(self.vars.get("vcenter_password", "pass"))),
                "-reboot-seconds", str(self.vars.get("roce_lab_vcsim_reboot_seconds", 2))]
        topology = self.vars.get("roce_lab_vcsim_topology")
        if topology:
            path = os.path.join(self.dir, "topology.json")
            with open(path, "w") as handle:
                json.dump(topology, handle)
            argv += ["-topology", path]
        self.spawn(argv, "vcsim.log", lambda: self.state() is not None, "vcsim %s" % self.name)

    def exec_argv(self, command):
        raise SystemExit("lab: %s is a vCenter simulator; read its state at http://127.0.0.1:%d/roce/state" % (self.name, self.port))


def _http(port, path, method="GET"):
    request = urllib.request.Request("https://127.0.0.1:%d%s" % (port, path), method=method)
    import ssl
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(request, timeout=5, context=context) as response:
        return response.read()


def state(port):
    """The simulator's state (hosts, VMs, SOAP call counts) read from outside, or None if it does not answer."""
    try:
        return json.loads(_http(port, "/roce/state"))
    except (OSError, ValueError):
        return None


def reset_calls(port):
    _http(port, "/roce/calls/reset", method="POST")


def set_reboot_hang(port, host, on=True):
    _http(port, "/roce/hang?host=%s&on=%d" % (urllib.request.quote(host), 1 if on else 0), method="POST")


if __name__ == "__main__":
    if sys.argv[1:] == ["build"]:
        print(build())
    elif sys.argv[1:] == ["path"]:
        print(binary_path())
    else:
        raise SystemExit("usage: peer_vcsim.py build|path")
