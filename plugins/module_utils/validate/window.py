# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The traffic window's reads and background jobs (roce.fabric.traffic_window): each port's counters and AER files,
its LLDP neighbour, and the scripts that run beside the traffic (the DSCP capture, the PCIe sampler) with their files
in the private work dir.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import binascii
import inspect
import os
import re
import signal
import time

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, open_private, private_dir
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError
from ansible_collections.roce.fabric.plugins.module_utils.qos import dscp_capture
from ansible_collections.roce.fabric.plugins.module_utils.qos.port_counters import read_port
from ansible_collections.roce.fabric.plugins.module_utils.validate import lldp as lldp_parser
from ansible_collections.roce.fabric.plugins.module_utils.validate import pcie as pcie_parser
from ansible_collections.roce.fabric.plugins.module_utils.validate import pcie_sampler


def snapshots(module, ports):
    """Each port's counters (``read_port``: ethtool -S, the RDMA hw_counters) and the AER files of its PCI function
    and the port above it; a port that cannot be read is ``{item, msg}``."""
    out = []
    for port in ports:
        item = dict(netdev=port["netdev"], device=port.get("device"), port=port["port"])
        try:
            out.append(dict(read_port(module, module.params["root"], port["netdev"], port.get("device"), port["port"]),
                            item=item, aer=pcie_sampler.read_aer(module.params["root"], port["netdev"])))
        except FabricError as exc:
            out.append(dict(item=item, msg=str(exc)))
    return out


def lldp_neighbours(module, ports):
    """Each port's LLDP neighbour as the host's lldpd hears it, ``{netdev: {switch, port, chassis_id}}`` (``switch``
    None for a neighbour that sends no system name): none without lldpcli, when lldpd does not answer, or for a port
    that hears nothing."""
    tool = module.get_bin_path("lldpcli") if module.params["lldp"] else None
    if not tool:
        return {}
    rc, out, _err = CommandRunner(module).run([tool, "-f", "json0", "show", "neighbors", "details"])
    if rc != 0:
        return {}
    try:
        heard = lldp_parser.parse_neighbors(out)
    except lldp_parser.LldpError:
        return {}
    found = {}
    for port in ports:
        neighbour = heard.get(port["netdev"]) or {}
        # A neighbour that sends no system name (a NIC's firmware agent, a media converter) is kept: its port ID
        # and chassis ID are what the cabling check compares.
        if neighbour.get("switch") or neighbour.get("port") or neighbour.get("chassis_id"):
            found[port["netdev"]] = dict(switch=neighbour.get("switch"), port=neighbour.get("port"),
                                         chassis_id=neighbour.get("chassis_id"))
    return found


KERNEL_LINE = "available PCIe bandwidth"


def kernel_pcie_links(module, ports):
    """What the kernel said of each port's PCIe link when its driver probed it (``kernel_limits`` of this boot's
    kernel log: ``journalctl -k -b --grep``, else ``dmesg``), ``{netdev: {available_gbps, capable_gbps, speed, width,
    max_speed, max_width, limited_at}}``; nothing for a port whose driver prints no such line, or without either
    tool."""
    runner = CommandRunner(module)
    text = None
    journal = module.get_bin_path("journalctl")
    if journal:
        rc, out, _err = runner.run([journal, "-k", "-b", "--no-pager", "-o", "cat", "--grep", KERNEL_LINE])
        # 1: no line matched (or no journal of this boot); anything else is the journal's trouble: try dmesg.
        text = out if rc in (0, 1) else None
    if text is None:
        dmesg = module.get_bin_path("dmesg")
        if not dmesg:
            return {}
        rc, out, _err = runner.run([dmesg])
        text = out if rc == 0 else ""
    limits = pcie_parser.kernel_limits(text)
    found = {}
    for port in ports:
        function, _upstream = pcie_sampler.pci_dirs(module.params["root"], port["netdev"])
        pci = os.path.basename(function).lower() if function else None
        if pci in limits:
            found[port["netdev"]] = dict(limits[pci], pci=pci)
    return found


# The capture script's name on the host (dscp_capture.replace_earlier finds an earlier capture by it), and the PCIe
# sampler's.
CAPTURE_SCRIPT = "roce_dscp_capture.py"
SAMPLER_SCRIPT = "roce_pcie_sampler.py"


def write_capture_script(work_dir, name=CAPTURE_SCRIPT, source=dscp_capture):
    """A script (module_utils/qos/dscp_capture.py or validate/pcie_sampler.py, its own source) in the private
    ``work_dir``, made if missing; its path. PrivateDirError when ``work_dir`` is not private (nothing is written)."""
    private_dir(work_dir)
    path = os.path.join(work_dir, name)
    with open_private(path, "w") as handle:
        handle.write(inspect.getsource(source))
    return path


def new_window_id():
    """A window's own id: its background jobs' files carry it, so that no run reads another's."""
    return binascii.hexlify(os.urandom(8)).decode("ascii")


WINDOW_ID_RE = re.compile(r"^[0-9a-f]{16}$")


def window_files(params, job, window_id):
    """The result and stop files of one of the window's background jobs in the work dir: ``capture-<netdev>`` (a
    port's DSCP capture) or ``pcie-sample`` (the PCIe sampler, named apart from every netdev's), each of this window
    (``window_id``) only. The job writes its pid beside the result (``<result>.pid``)."""
    base = os.path.join(params["work_dir"], "%s.%s" % (job, window_id))
    return base + ".json", base + ".stop"


def capture_job(netdev):
    return "capture-%s" % netdev


PCIE_JOB = "pcie-sample"
JOB_PREFIXES = ("capture-", PCIE_JOB + ".")


def _cmdline(pid, proc_root="/proc"):
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as handle:
            return handle.read().split(b"\0")
    except (IOError, OSError):
        return []


def _alive(pid, proc_root="/proc"):
    """Whether ``pid`` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        with open(os.path.join(proc_root, str(pid), "stat")) as handle:
            stat = handle.read()
    except (IOError, OSError):
        return False
    return stat[stat.rfind(")") + 2:].split()[:1] != ["Z"]


def stop_earlier(work_dir, wait=5.0, proc_root="/proc"):
    """Stop the background jobs an earlier window left running in ``work_dir`` (a run that failed before its close:
    a capture or a sampler goes on for capture_seconds), then remove every earlier window's files. A job is known by
    the pid file it wrote and its command line, which must run one of the window's scripts in this work dir (a pid
    reused by another process since is left alone). Returns the pids stopped."""
    scripts = [os.path.join(work_dir, name).encode() for name in (CAPTURE_SCRIPT, SAMPLER_SCRIPT)]
    try:
        names = sorted(os.listdir(work_dir))
    except OSError:
        return []
    stopped = []
    for name in names:
        if not name.startswith(JOB_PREFIXES) or not name.endswith(".pid"):
            continue
        try:
            with open_private(os.path.join(work_dir, name)) as handle:
                pid = int(handle.read().strip())
        except (IOError, OSError, ValueError, PrivateDirError):
            continue
        if pid <= 1 or pid == os.getpid() or not [arg for arg in _cmdline(pid, proc_root) if arg in scripts]:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue
        deadline = time.monotonic() + wait
        while _alive(pid, proc_root) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid, proc_root):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        stopped.append(pid)
    for name in names:
        if name.startswith(JOB_PREFIXES):
            try:
                os.unlink(os.path.join(work_dir, name))
            except OSError:
                pass
    return stopped


def detach(argv):
    """Start ``argv`` in a session of its own, its standard streams on /dev/null (a double fork, as Ansible's async
    wrapper does): it outlives this module and the SSH session that started it. The capture ends by itself at
    capture_seconds when nothing stops it."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's code runs in the forked process
        try:
            os.setsid()
            if os.fork():
                os._exit(0)
            null = os.open(os.devnull, os.O_RDWR)
            for stream in (0, 1, 2):
                os.dup2(null, stream)
            os.closerange(3, 65536)
            os.execve(argv[0], argv, dict(os.environ, LC_ALL="C"))
        finally:
            os._exit(127)
    os.waitpid(pid, 0)
