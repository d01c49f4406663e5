"""The lab's leaf switches: one network namespace per leaf (``rlf-<leaf>``), a Linux bridge in it, the VMs' fabric
NICs plugged into it as ports (QEMU's tap devices, moved into the namespace and named as the inventory says:
``swp1``...), and a real ``lldpd`` per leaf that answers LLDP on every port as a Cumulus Linux switch does (its
system name the leaf's, the port ID the port's name).

A VM's NIC with ``leaf`` and ``leaf_port`` in ``roce_lab_vm_nics`` is wired this way; one without keeps QEMU's UDP
socket link to its peer. ``recable`` moves a plugged cable to another leaf port (the lab's miswire); the bridge
does not forward LLDP (802.1D link-local), so each port hears its own leaf only, as on a real switch.
"""

import os
import re
import signal
import subprocess
import time

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,9}$")
PORT_RE = re.compile(r"^[a-z][a-z0-9]{0,14}$")
# Frames as large as a switch port takes: the VMs' fabric MTUs (4200) pass.
PORT_MTU = 9216
# LLDP every 5 s, each held 15 s: a re-cabled port shows its new neighbour within one validation's traffic.
LLDPD_CONF = """configure system hostname %(leaf)s
configure system description "roce.fabric lab leaf %(leaf)s (Linux bridge, lldpd)"
configure lldp portidsubtype ifname
configure lldp tx-interval 5
configure lldp tx-hold 3
"""


def check_names(leaf, port):
    if not NAME_RE.match(str(leaf)) or not PORT_RE.match(str(port)):
        raise SystemExit("lab: leaf %r port %r: a leaf is 1-10 of [a-z0-9-], a port 1-15 of [a-z0-9], both starting with "
                         "a letter" % (leaf, port))


def namespace(leaf):
    return "rlf-%s" % leaf


def tap_name(port_number):
    """The host-side name QEMU gives a fabric NIC's tap (unique: the NIC's lab port number is)."""
    return "rlt%d" % int(port_number)


def _ip(*argv, check=True):
    proc = subprocess.run(["ip"] + list(argv), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise SystemExit("lab: ip %s: %s" % (" ".join(argv), proc.stderr.strip()))
    return proc


def _pid_file(lab_dir, leaf):
    return os.path.join(lab_dir, "leaves", "%s.lldpd.pid" % leaf)


def _lldpd_pid(lab_dir, leaf):
    try:
        with open(_pid_file(lab_dir, leaf)) as handle:
            pid = int(handle.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return pid if b"lldpd" in handle.read() else None
    except (OSError, ValueError):
        return None


def socket_path(lab_dir, leaf):
    """The leaf lldpd's control socket (``lldpcli -u <it> show neighbors``: what the leaf hears on its ports)."""
    return os.path.join(lab_dir, "leaves", "%s.lldpd.socket" % leaf)


def ensure(lab_dir, leaf):
    """The leaf's namespace, bridge and lldpd, made once."""
    check_names(leaf, "swp1")
    ns = namespace(leaf)
    if _ip("netns", "pids", ns, check=False).returncode != 0:
        _ip("netns", "add", ns)
    if _ip("-n", ns, "link", "show", "br0", check=False).returncode != 0:
        _ip("-n", ns, "link", "add", "br0", "type", "bridge")
    _ip("-n", ns, "link", "set", "br0", "up")
    _ip("-n", ns, "link", "set", "lo", "up")
    if _lldpd_pid(lab_dir, leaf):
        return
    os.makedirs(os.path.join(lab_dir, "leaves"), exist_ok=True)
    conf = os.path.join(lab_dir, "leaves", "%s.lldpd.conf" % leaf)
    with open(conf, "w") as handle:
        handle.write(LLDPD_CONF % dict(leaf=leaf))
    sock = socket_path(lab_dir, leaf)
    if os.path.exists(sock):
        os.unlink(sock)
    log = open(os.path.join(lab_dir, "leaves", "%s.lldpd.log" % leaf), "w")
    # In the foreground (-d) under the lab's own session: no pid file of its own, one per leaf by its socket.
    proc = subprocess.Popen(["ip", "netns", "exec", ns, "lldpd", "-d", "-u", sock, "-O", conf, "-I", "swp*", "-k"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    with open(_pid_file(lab_dir, leaf), "w") as handle:
        handle.write("%d\n" % proc.pid)


def plug(lab_dir, tap, leaf, port):
    """QEMU's ``tap`` (in this namespace) into ``leaf`` as ``port``."""
    check_names(leaf, port)
    ensure(lab_dir, leaf)
    ns = namespace(leaf)
    _ip("link", "set", tap, "netns", ns)
    _ip("-n", ns, "link", "set", tap, "name", port)
    _ip("-n", ns, "link", "set", port, "mtu", str(PORT_MTU))
    _ip("-n", ns, "link", "set", port, "master", "br0", "up")


def recable(leaf, port, to_leaf, to_port):
    """The cable in ``leaf`` ``port`` moved to ``to_leaf`` ``to_port`` (a free port)."""
    check_names(leaf, port)
    check_names(to_leaf, to_port)
    ns, to_ns = namespace(leaf), namespace(to_leaf)
    _ip("-n", ns, "link", "set", port, "nomaster")
    # Under a temporary name: the port name may be taken in the other namespace until its own cable moves.
    temporary = "mv%d" % (abs(hash((leaf, port))) % 10 ** 8)
    _ip("-n", ns, "link", "set", port, "down", "name", temporary)
    _ip("-n", ns, "link", "set", temporary, "netns", to_ns)
    _ip("-n", to_ns, "link", "set", temporary, "name", to_port)
    _ip("-n", to_ns, "link", "set", to_port, "mtu", str(PORT_MTU))
    _ip("-n", to_ns, "link", "set", to_port, "master", "br0", "up")


def remove_unused(lab_dir):
    """Every leaf of the lab that no cable is plugged into any more (its VMs stopped): its lldpd stopped, its
    namespace removed."""
    folder = os.path.join(lab_dir, "leaves")
    leaves = sorted(name.split(".", 1)[0] for name in os.listdir(folder) if name.endswith(".lldpd.pid")) \
        if os.path.isdir(folder) else []
    for leaf in leaves:
        ports = _ip("-n", namespace(leaf), "-o", "link", "show", "master", "br0", check=False)
        if ports.returncode == 0 and ports.stdout.strip():
            continue
        pid = _lldpd_pid(lab_dir, leaf)
        if pid:
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.time() + 5
            while _lldpd_pid(lab_dir, leaf) and time.time() < deadline:
                time.sleep(0.1)
        os.unlink(_pid_file(lab_dir, leaf))
        _ip("netns", "del", namespace(leaf), check=False)
