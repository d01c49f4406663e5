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

import inspect
import os

from ansible_collections.roce.fabric.plugins.module_utils.common.private import open_private, private_dir
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
    """Each port's LLDP neighbour as the host's lldpd hears it, ``{netdev: {switch, port}}``: none without lldpcli,
    when lldpd does not answer, or for a port that hears no switch."""
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
        if neighbour.get("switch"):
            found[port["netdev"]] = dict(switch=neighbour["switch"], port=neighbour.get("port"))
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


def window_files(params, job):
    """The result and stop files of one of the window's background jobs in the work dir: ``capture-<netdev>`` (a
    port's DSCP capture) or ``pcie-sample`` (the PCIe sampler, named apart from every netdev's)."""
    base = os.path.join(params["work_dir"], job)
    return base + ".json", base + ".stop"


def capture_job(netdev):
    return "capture-%s" % netdev


PCIE_JOB = "pcie-sample"


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
