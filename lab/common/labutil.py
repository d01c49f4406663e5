"""Small helpers shared by the lab controller (labctl.py) and its peer kinds (peer_*.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


def run(argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, **kwargs)


def quiet(argv):
    """Run a command without output; return its exit status."""
    return subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def wait_for(predicate, timeout, what, interval=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise SystemExit("lab: timed out after %ss waiting for %s" % (timeout, what))


def ssh_banner(address, port=22, timeout=1):
    """True when an SSH server answers with its banner at address:port."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as conn:
            conn.settimeout(timeout + 1)
            return conn.recv(64).startswith(b"SSH-")
    except OSError:
        return False


# How much later than its pid file a process may seem to have started and still be the one the file names: the boot
# time the kernel gives is in whole seconds (a start computed from it is up to 1 s early, never late), and a small
# step of the clock is allowed for.
PID_FILE_SLACK = 2.0


def started_at(pid):
    """When process ``pid`` started, in seconds since the epoch (its start in clock ticks after boot, field 22 of
    /proc/<pid>/stat, plus the boot time of /proc/stat), or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
        with open("/proc/stat") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
    except (OSError, ValueError, StopIteration):
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    # fields[0] is the stat file's third field (the state): the start time, the 22nd, is fields[19].
    return boot + int(fields[19]) / float(os.sysconf("SC_CLK_TCK"))


def live_pid(pid_file):
    """The PID written in pid_file when that process still runs, else None. A process that started after the file was
    written is not the one the file names but a newer one given the same PID once ours had ended (a busy machine's
    PIDs wrap around, at 32768 by default): None, so that no stop of a peer signals it."""
    try:
        written = os.stat(pid_file).st_mtime
        with open(pid_file) as handle:
            pid = int(handle.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    started = started_at(pid)
    if started is None or started > written + PID_FILE_SLACK:
        return None
    return None if zombie(pid) else pid


def zombie(pid):
    """Whether ``pid`` has ended and waits to be reaped. A peer's process is re-parented to PID 1 once the labctl
    that started it exits, and a container's PID 1 may reap it only seconds later: it counts as stopped."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
    except (IOError, OSError):
        return False
    fields = stat[stat.rfind(")") + 2:].split()
    return bool(fields) and fields[0] in ("Z", "X")


def netns_pids(netns):
    result = subprocess.run(["ip", "netns", "pids", netns], check=False, capture_output=True, text=True)
    return [int(p) for p in result.stdout.split()] if result.returncode == 0 else []


def kill_netns_processes(netns, grace=5):
    """SIGTERM, then SIGKILL, every process of a network namespace; wait up to grace seconds for each."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in netns_pids(netns):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + grace
        while netns_pids(netns) and time.time() < deadline:
            time.sleep(0.1)


NETNS_DIR = "/run/netns"


def remove_netns(netns, links=()):
    """Remove a lab namespace, whatever is left of it: its processes, its mount, and the plain file that a killed lab
    leaves where /run outlives the mounts (a disk image taken of a running machine); then the host ends of
    ``links`` (veth pairs), which the kernel otherwise removes only some time after the namespace."""
    path = os.path.join(NETNS_DIR, netns)
    if os.path.lexists(path):
        kill_netns_processes(netns)
        quiet(["ip", "netns", "del", netns])
        if os.path.lexists(path):
            os.unlink(path)
    for link in links:
        quiet(["ip", "link", "del", link])


def add_netns(netns, links=()):
    """A new, empty namespace of that name: what an earlier lab left under the name is removed first (a namespace
    without processes, or its bare file), so that a lab killed half-way never blocks the next start."""
    remove_netns(netns, links)
    result = subprocess.run(["ip", "netns", "add", netns], check=False, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit("lab: ip netns add %s failed: %s" % (netns, result.stderr.strip()))


def stop_process(pid_of, grace=5):
    """Stop the process that pid_of() names: SIGTERM, then SIGKILL after grace seconds."""
    pid = pid_of()
    if not pid:
        return
    # It may end on its own between the checks (another checkout's lab down, its own exit): that is done too.
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while pid_of() and time.time() < deadline:
        time.sleep(0.1)
    if pid_of():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def host_key_entry(address, port, key_path):
    """The known_hosts line of the key in ``key_path`` for ``[address]:port``."""
    public = subprocess.run(["ssh-keygen", "-y", "-f", key_path], capture_output=True, text=True, check=True)
    return "[%s]:%d %s" % (address, port, " ".join(public.stdout.split()[:2]))


def pin_host_key(known_hosts, entry):
    """Put ``entry`` into ``known_hosts``, replacing a line for the same ``[address]:port``."""
    prefix = entry.split(" ", 1)[0] + " "
    lines = []
    if os.path.exists(known_hosts):
        with open(known_hosts) as handle:
            lines = [line.rstrip("\n") for line in handle if not line.startswith(prefix)]
    lines.append(entry)
    tmp = known_hosts + ".tmp"
    with open(tmp, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, known_hosts)


def host_key_pinned(known_hosts, entry):
    if not os.path.exists(known_hosts):
        return False
    with open(known_hosts) as handle:
        return entry in (line.strip() for line in handle)
