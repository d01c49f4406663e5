#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: traffic_window
short_description: Read RoCE ports' counters around a test's traffic and judge the share on the contract's class
version_added: 1.0.0
description:
  - O(state=open) reads each port's counters (C(ethtool -S) of the netdev, the RDMA port's C(hw_counters), as
    M(roce.fabric.rdma_counters) does) and, on the ports of O(capture), starts a wire capture in the background
    (C(roce_dscp_capture.py), which counts RoCE v2 packets by their DSCP; the module writes it into O(work_dir), made
    a private directory first, and runs it with O(python)). It ends by itself after O(capture_seconds).
  - O(state=close) stops the captures, waits up to O(capture_wait) seconds for their counts, reads the counters
    again and returns one C(traffic <netdev>) check record per port for the validation report - the share of the
    port's RDMA traffic that rode the contract's RoCE class (module_utils/qos/counters.py C(traffic_check)).
  - Software RDMA (Soft-RoCE, siw) sends through the netdev, where the capture sees it; a hardware RoCE NIC's
    packets bypass the kernel and its per-priority counters are the evidence.
  - Each window's background jobs write files of its own (named by RV(window_id), which O(state=close) takes back);
    before it starts its own, O(state=open) stops the capture or sampler an earlier window left running in
    O(work_dir) (a run that failed before its close) and removes every earlier window's files (RV(stopped_earlier)).
    One window at a time per O(work_dir) - the validate role holds its host lock around it.
  - Neither state changes the host's configuration; the captures' files are the run's own scratch files in
    O(work_dir). The module reports no change. In check mode it only reads counters (no capture).
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  check_mode:
    support: full
    details: In check mode the counters are read and judged as in a real run, but no capture is started, stopped or
      read (its files are left as they are); the validate role opens the window only outside check mode.
  diff_mode:
    support: none
options:
  state:
    description: V(open) before the traffic, V(close) after it.
    type: str
    choices: [open, close]
    required: true
  ports:
    description: The RoCE ports to watch (the C(watch) list of the C(roce.fabric.validate_traffic_ports) filter).
    type: list
    elements: dict
    required: true
    suboptions:
      netdev:
        description: "The network interface: letters, digits and C(_ . : -), at most 15."
        type: str
        required: true
      device:
        description: The RDMA device on it.
        type: str
      port:
        description: The RDMA device's port.
        type: int
        default: 1
  capture:
    description: The netdevs of O(ports) whose packets a capture can see (the filter's C(capture) list).
    type: list
    elements: str
    default: []
  capture_seconds:
    description: Longest a capture runs when nothing stops it.
    type: int
    default: 900
  capture_wait:
    description: Seconds O(state=close) waits for a capture's counts.
    type: int
    default: 30
  work_dir:
    description:
      - The directory of the capture script and the captures' files; needed with O(capture).
      - Made (mode 0700) when missing, as M(roce.fabric.private_dir) makes it; a directory another user owns or
        could swap, or a link, is refused and nothing is written.
    type: path
  python:
    description: Interpreter that runs the capture script on the host.
    type: str
    default: python3
  root:
    description: Where sysfs is read from (C(/) on a host).
    type: path
    default: /
  before:
    description: RV(counters) of the O(state=open) run, for O(state=close).
    type: list
    elements: dict
    default: []
  contract:
    description: The RoCE QoS contract (C(roce_fabric_qos)) the share is judged against, for O(state=close).
    type: dict
    default: {}
  min_share:
    description: The least share of the RDMA traffic on the contract's class for a check to pass.
    type: float
    default: 0.95
  min_bytes:
    description: Below this many RDMA bytes a port is skipped (too little traffic to judge).
    type: int
    default: 1000000
  pcie:
    description:
      - Sample each port's PCIe link (its PCI function and the port above it) every half second while the window is
        open (C(roce_pcie_sampler.py) in O(work_dir), run with O(python); reads sysfs only), and read their AER
        counters at both ends of the window. Each check of O(state=close) then carries C(pcie) - the link at the
        busiest moment of the port's traffic (an idle link trains down, which is not a fault), how many samples with
        traffic ran below the link's capability, and the AER errors of the window.
      - At O(state=close), the kernel's own word on each port's link is read too (the line its driver's probe
        printed, C(... Gb/s available PCIe bandwidth, limited by ... link at <BDF> ...), from C(journalctl -k -b)
        or C(dmesg)). C(pcie) then carries C(kernel) - the link's C(speed) and C(width), the device's C(max_speed)
        and C(max_width), and C(limited_at), the upstream device of the link that limits it.
      - Needs O(work_dir); nothing is sampled in check mode.
    type: bool
    default: true
  window_id:
    description: RV(window_id) of the O(state=open) run, for O(state=close) with a capture or the PCIe sampler.
    type: str
  lldp:
    description:
      - At O(state=close), read each port's LLDP neighbour where lldpd runs (C(lldpcli -f json0 show neighbors
        details); a host without C(lldpcli) is read without it). Each check then carries C(lldp), the switch and
        port the port is plugged into, which the report's fault location compares with the cabling plan or, without
        one, with the rail's other ports.
      - Read only, in check mode too.
    type: bool
    default: true
notes:
  - The validate role opens the window before NCCL across hosts and the pair tests and closes it after them.
seealso:
  - module: roce.fabric.rdma_counters
  - module: roce.fabric.validation_report
"""

EXAMPLES = r"""
- name: Open the window
  roce.fabric.traffic_window:
    state: open
    ports: [{netdev: ens1f0np0, device: mlx5_0}]
  register: window

- name: Close it; one traffic check per port
  roce.fabric.traffic_window:
    state: close
    ports: [{netdev: ens1f0np0, device: mlx5_0}]
    window_id: "{{ window.window_id }}"
    before: "{{ window.counters }}"
    contract: "{{ roce_fabric_qos }}"
  register: closed
"""

RETURN = r"""
counters:
  description: Each port's snapshot (as M(roce.fabric.rdma_counters) returns it, with C(item), the port, and C(aer), the
    AER counter files of its PCI function and of the port above it), or C(item) and C(msg) where it could not be read.
  returned: always
  type: list
  elements: dict
window_id:
  description: This window's id (O(state=open)), which its jobs' files carry; give it to O(state=close).
  returned: when state is open
  type: str
  sample: 3f9a1c0d7e2b4a55
stopped_earlier:
  description: The pids of an earlier window's capture or sampler that O(state=open) stopped.
  returned: when state is open
  type: list
  elements: int
captures:
  description: The captures started (O(state=open)) or read (O(state=close)) - C(netdev), and C(counts) once read.
  returned: always
  type: list
  elements: dict
checks:
  description: One C(traffic <netdev>) record per port (C(name), C(status), C(msg), C(command); C(nic), the counters
    that moved, with C(carrier_changes), the carrier's changes of the window; C(rdma), the RDMA port's
    C(hw_counters) that moved; C(mtu), the interface's MTU; C(speed_mbps), the link's rate where the driver
    knows it; C(mac), its Ethernet address, as a switch's LLDP table names it; C(window_s), the seconds between the two
    reads; C(pcie), see O(pcie); C(lldp), see O(lldp)),
    O(state=close).
  returned: when state is close
  type: list
  elements: dict
  sample: [{name: traffic enp1s0, status: passed, msg: "enp1s0: 100 % of 2.1 GB on DSCP 26", command: "..."}]
commands:
  description: Always empty - nothing of the host's configuration changes.
  returned: always
  type: list
  elements: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, check_private_dir, open_private
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.qos.contract import ContractError, derive
from ansible_collections.roce.fabric.plugins.module_utils.qos.counters import traffic_checks
from ansible_collections.roce.fabric.plugins.module_utils.qos.state import QosInputError, check_names
from ansible_collections.roce.fabric.plugins.module_utils.validate import pcie_sampler
from ansible_collections.roce.fabric.plugins.module_utils.validate.pcie import window_reading
from ansible_collections.roce.fabric.plugins.module_utils.validate.window import (PCIE_JOB, SAMPLER_SCRIPT, WINDOW_ID_RE,
                                                                                  capture_job, detach, new_window_id,
                                                                                  stop_earlier,
                                                                                  kernel_pcie_links, lldp_neighbours, snapshots,
                                                                                  window_files, write_capture_script)


def sampling(run, params):
    """The netdevs whose PCIe link the sampler watches (none in check mode, with pcie off, or without work_dir)."""
    if run.check_mode or not params["pcie"] or not params["work_dir"]:
        return []
    return [port["netdev"] for port in params["ports"]]


def open_window(run, module):
    params = module.params
    started = []
    # Check mode reads the counters only: a capture is a process on the host, and its files are written.
    capturing = [] if run.check_mode else params["capture"]
    sampled = sampling(run, params)
    script = sampler = None
    if capturing or sampled:
        python = module.get_bin_path(params["python"], required=True)
        try:
            script = write_capture_script(params["work_dir"])
            sampler = write_capture_script(params["work_dir"], SAMPLER_SCRIPT, pcie_sampler) if sampled else None
        except PrivateDirError as exc:
            run.fail("%s; nothing was changed" % exc)
    window_id = new_window_id()
    stopped = []
    if capturing or sampled:
        # An earlier run that failed before its close left its capture or sampler running (up to capture_seconds)
        # and its files: stopped and removed before this window starts its own, named by its id.
        stopped = stop_earlier(params["work_dir"])
    counters = snapshots(module, params["ports"])
    for netdev in capturing:
        result, stop = window_files(params, capture_job(netdev), window_id)
        detach([python, script, netdev, str(params["capture_seconds"]), result, stop])
        started.append(dict(netdev=netdev))
    if sampled:
        result, stop = window_files(params, PCIE_JOB, window_id)
        detach([python, sampler, str(params["capture_seconds"]), result, stop] + sampled)
    run.update(counters=counters, captures=started, window_id=window_id, stopped_earlier=stopped)


def close_window(run, module):
    params = module.params
    try:
        qos = derive(params["contract"])
    except ContractError as exc:
        raise FabricError("contract: %s" % exc, kind="bad_input")
    capturing = [] if run.check_mode else params["capture"]
    jobs = [(netdev, capture_job(netdev)) for netdev in capturing] + ([(None, PCIE_JOB)] if sampling(run, params) else [])
    window_id = params["window_id"]
    if jobs and not WINDOW_ID_RE.match(window_id or ""):
        raise FabricError("window_id must be the window_id its open returned (16 hexadecimal digits), not %r; nothing "
                          "was read" % (window_id,), kind="bad_input")
    try:
        if jobs:
            check_private_dir(params["work_dir"])
        for _netdev, job in jobs:
            with open_private(window_files(params, job, window_id)[1], "w"):
                pass
    except PrivateDirError as exc:
        run.fail("%s; nothing was changed" % exc)
    deadline = time.monotonic() + params["capture_wait"]
    counts, read, links = {}, [], {}
    for netdev, job in jobs:
        result = window_files(params, job, window_id)[0]
        while not os.path.exists(result) and time.monotonic() < deadline:
            time.sleep(0.2)
        try:
            with open(result) as handle:
                found = json.load(handle)
        except (OSError, ValueError):
            found = None  # no counts: the port is judged on its counters alone (no links: no PCIe reading)
        if netdev is None:
            links = found or {}
            continue
        if found is not None:
            counts[netdev] = found
        read.append(dict(netdev=netdev, counts=found))
    after = snapshots(module, params["ports"])
    before = dict((b.get("item", {}).get("netdev"), b) for b in params["before"])
    missing = dict(msg="no snapshot from the window's opening")
    paired = [(dict(before.get(a["item"]["netdev"]) or dict(missing, item=a["item"])), a) for a in after]
    checks = traffic_checks([b for b, _a in paired], [a for _b, a in paired], qos["roce_priority"], qos["roce_dscp"],
                            captures=counts, min_share=params["min_share"], min_bytes=params["min_bytes"])
    # Each port's PCIe link while its traffic flowed and the AER errors of the window, for the fault location.
    neighbours = lldp_neighbours(module, params["ports"])
    kernel = kernel_pcie_links(module, params["ports"]) if params["pcie"] else {}
    for check, (old, new) in zip(checks, paired):
        reading = window_reading(links.get(new["item"]["netdev"]), old.get("aer"), new.get("aer"))
        # What the kernel said of the link when the NIC's driver probed it (a link trained narrower names the
        # upstream device where it is limited).
        if new["item"]["netdev"] in kernel:
            reading = dict(reading or {}, kernel=kernel[new["item"]["netdev"]])
        if reading:
            check["pcie"] = reading
        # The switch port the port is plugged into, as LLDP says, for the cabling checks of the fault location.
        if new["item"]["netdev"] in neighbours:
            check["lldp"] = neighbours[new["item"]["netdev"]]
    run.update(counters=after, captures=read, checks=checks)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["open", "close"], required=True),
            ports=dict(type="list", elements="dict", required=True, options=dict(
                netdev=dict(type="str", required=True),
                device=dict(type="str"),
                port=dict(type="int", default=1),
            )),
            capture=dict(type="list", elements="str", default=[]),
            capture_seconds=dict(type="int", default=900),
            capture_wait=dict(type="int", default=30),
            work_dir=dict(type="path"),
            python=dict(type="str", default="python3"),
            root=dict(type="path", default="/"),
            before=dict(type="list", elements="dict", default=[]),
            contract=dict(type="dict", default={}),
            min_share=dict(type="float", default=0.95),
            min_bytes=dict(type="int", default=1000000),
            pcie=dict(type="bool", default=True),
            lldp=dict(type="bool", default=True),
            window_id=dict(type="str"),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    params = module.params
    run = ModuleRun(module, counters=[], captures=[])
    watched = [port["netdev"] for port in params["ports"]]
    try:
        for port in params["ports"]:
            check_names(port["netdev"], port.get("device"))
        for netdev in params["capture"]:
            check_names(netdev, None)
    except QosInputError as exc:
        run.fail("Invalid input: %s; nothing was read" % exc)
    stray = [netdev for netdev in params["capture"] if netdev not in watched]
    if stray:
        run.fail("Invalid input: capture names %s, not among ports; nothing was read" % ", ".join(stray))
    if params["capture"] and not params["work_dir"]:
        run.fail("Invalid input: a capture needs work_dir; nothing was read")
    if not 1 <= params["capture_seconds"] <= 86400 or not 0 <= params["capture_wait"] <= 3600:
        run.fail("Invalid input: capture_seconds must be 1-86400 and capture_wait 0-3600; nothing was read")
    run.execute(lambda run: open_window(run, module) if params["state"] == "open" else close_window(run, module))


if __name__ == "__main__":
    main()
