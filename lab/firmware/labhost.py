"""Runs inside a lab host (a network + mount + UTS namespace with its own sshd).

Only the standard library: lab hosts run it with the system python3.

    python3 labhost.py reboot HOST_DIR

is what the host's ``shutdown -r`` / ``reboot`` stand-ins start, detached. It behaves like a
reboot as seen over SSH: after a short delay every process of the host is killed (sshd and
all sessions included, so connections drop), the firmware simulator loads its pending
(Next Boot) values, the NIC QoS simulator forgets what was set (driver defaults), the boot id
changes, and sshd starts again.
"""

import json
import os
import signal
import subprocess
import sys
import time


def _netns_inode(pid):
    try:
        return os.stat("/proc/%s/ns/net" % pid).st_ino
    except OSError:
        return None


def host_pids():
    """PIDs in this lab host's network namespace, except this process."""
    mine = _netns_inode("self")
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid() and _netns_inode(entry) == mine:
            pids.append(int(entry))
    return pids


def kill_all(timeout=5.0):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in host_pids():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + timeout
        while host_pids() and time.time() < deadline:
            time.sleep(0.1)


def write_in_place(path, text):
    # The file is bind-mounted over /proc/sys/kernel/random/boot_id: keep its inode.
    with open(path, "r+") as handle:
        handle.seek(0)
        handle.write(text)
        handle.truncate()


def reboot(host_dir):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with open(os.path.join(host_dir, "host.json")) as handle:
        config = json.load(handle)
    time.sleep(config.get("reboot_delay", 1.0))
    kill_all()
    fwsim = config.get("fwsim")
    if fwsim:
        subprocess.call([sys.executable, fwsim, "admin", "--state-dir", os.path.join(host_dir, "fw"), "reboot"])
    qossim = config.get("qossim")
    if qossim:
        # The NIC driver comes back with its QoS defaults: what mlnx_qos or dcb set is gone, and mlx5's
        # ECN files read their defaults again (ECN on for every priority, CNPs on DSCP 48 / priority 6).
        subprocess.call([sys.executable, qossim, "admin", "--state-dir", os.path.join(host_dir, "qos"), "reset"])
        net = os.path.join(host_dir, "sys", "net")
        for netdev in sorted(os.listdir(net)) if os.path.isdir(net) else []:
            ecn = os.path.join(net, netdev, "ecn")
            if not os.path.isdir(ecn):
                continue
            for point in ("roce_np", "roce_rp"):
                for prio in range(8):
                    write_in_place(os.path.join(ecn, point, "enable", str(prio)), "1\n")
            write_in_place(os.path.join(ecn, "roce_np", "cnp_dscp"), "48\n")
            write_in_place(os.path.join(ecn, "roce_np", "cnp_802p_prio"), "6\n")
    with open("/proc/sys/kernel/random/uuid") as handle:
        write_in_place(os.path.join(host_dir, "boot_id"), handle.read().strip() + "\n")
    counter = os.path.join(host_dir, "reboots")
    count = 0
    if os.path.exists(counter):
        with open(counter) as handle:
            count = int(handle.read().strip() or 0)
    with open(counter, "w") as handle:
        handle.write("%d\n" % (count + 1))
    time.sleep(config.get("boot_delay", 1.0))
    rc = subprocess.call(["/usr/sbin/sshd", "-f", os.path.join(host_dir, "sshd_config"), "-E", os.path.join(host_dir, "sshd.log")])
    # The host's services, as its init starts them at boot: each boot.d entry is the argv of a daemon (the Slurm
    # peer's slurmd), put there by the peer that runs it on this host.
    boot = os.path.join(host_dir, "boot.d")
    for entry in sorted(os.listdir(boot)) if os.path.isdir(boot) else []:
        with open(os.path.join(boot, entry)) as handle:
            subprocess.call(json.load(handle))
    return rc


def main(argv):
    if len(argv) != 3 or argv[1] != "reboot":
        sys.stderr.write("usage: labhost.py reboot HOST_DIR\n")
        return 2
    return reboot(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
