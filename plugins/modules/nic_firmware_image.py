#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_firmware_image
short_description: Pinned ConnectX firmware versions, burnt from the site's images
version_added: 1.0.0
description:
  - Reads the firmware image of each NVIDIA (Mellanox) ConnectX adapter with C(flint -d <dev> query) (NVIDIA MFT)
    or C(mstflint -d <dev> query) (mstflint) - its PSID, the burnt version and, while a burnt image waits for a
    reset or reboot, the running one (C(FW Version(Running))) - and compares it with the version the site pins for
    that PSID in O(versions).
  - An adapter whose PSID has no entry is reported in RV(unknown) and left as it is; no image is guessed for it.
  - With O(policy=exact) the burnt version must be the pinned one; with V(minimum), that one or newer. A pinned
    version older than the burnt one is a downgrade, refused (the task fails, nothing is burnt) unless
    O(allow_downgrade=true).
  - Before anything is burnt, every image to burn is copied once into O(work_dir) (a private folder, root's, mode
    0700; the copy made without following a link), and that copy is checked - its SHA-256, computed from the bytes
    as they are written, equal to the entry's, and its own query (C(flint -i <copy> query)) showing the adapter's
    PSID and the pinned version - and burnt; the bytes burnt are the bytes checked, however long the burns before
    it take. The image's path is refused when any part of it is a symbolic link, or, unless
    O(allow_shared_image_path=true), when a directory above it or the file is another user's or may be written by
    group or others. A mismatch fails the task and burns nothing. The tool's own PSID check applies too. In check
    mode the image itself is read and checked, nothing is copied.
  - Burns with C(flint -d <dev> -i <copy> -y burn), one adapter at a time, and reads each adapter again after its
    burn; the copies are removed at the end. A second run with the image burnt burns nothing.
  - A burnt image runs after a firmware reset or a reboot. With O(activate=live_reset) each adapter whose burnt
    image does not run yet is reset live (C(mlxfwreset -d <dev> --level 3 -y reset), driver restart and PCI reset,
    the host kept up) where its C(mlxfwreset query) offers level 3, and read again - never an adapter that carries
    the controller's session or one of O(keep_netdevs), also below a bond, bridge or VLAN or through a virtual
    function, and never another PCI function of the same card (its other ports, the other slot of a Socket Direct
    card, which shares its Base MAC).
  - The interfaces that carry the controller's session are the host's route to the client address of
    C(SSH_CONNECTION) and the interface holding its server address - read from the module's own environment, or,
    where C(become) reset it (sudo's C(env_reset)), from the login session's processes above the module - and the
    interface holding O(host_address). Where none of them can be found (no SSH session, a loopback address, no
    C(ip)), no adapter is reset live (fail closed) - RV(controller_path) says why - and the burnt images wait for
    the reboot.
  - What is left waits for a reboot - RV(pending), RV(reboot_required), each adapter's C(activation) saying why.
    The module never reboots.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  check_mode:
    support: full
    details: Adapters and images are read and checked as in a real run; nothing is burnt.
  diff_mode:
    support: full
    details: The burnt version of each adapter (keyed by PCI address) before and after.
  platform:
    description: Runs on the host that carries the adapters.
    support: full
    platforms: posix
options:
  devices:
    description:
      - The adapters, as M(roce.fabric.mlxconfig) names them - PCI addresses, MFT device paths (with O(tool=flint))
        or interface names; V(all) is every NVIDIA/Mellanox network adapter of the host (virtual functions skipped).
    type: list
    elements: str
    default: [all]
  versions:
    description:
      - The pinned firmware per PSID (C(PSID) in the query, such as V(MT_0000000575)) or per part number (such as
        V(MCX623106AN-CDA), with or without the C(_Ax) suffix the firmware manager prints). An entry for the PSID
        wins over one for the part number. Part numbers are read by the firmware manager only (see O(reader)).
      - Each value is a dictionary - C(version), the wanted version as the tools print it (V(26.43.1014)), required;
        C(image), the path of the unpacked image file (C(.bin)) on the host, and C(sha256), that file's SHA-256,
        both needed when an adapter must be burnt.
    type: dict
    required: true
  policy:
    description: V(exact) - the pinned version; V(minimum) - that version or newer.
    type: str
    choices: [exact, minimum]
    default: exact
  allow_downgrade:
    description: Burn a pinned version older than the burnt one (O(policy=exact) only).
    type: bool
    default: false
  tool:
    description: V(auto) takes C(flint) where it exists, else C(mstflint).
    type: str
    choices: [auto, flint, mstflint]
    default: auto
  tool_path:
    description: Path of the tool when it is not on the PATH.
    type: path
  reader:
    description:
      - How each adapter is read. V(auto) - with the firmware manager (C(mlxfwmanager -d <dev> --query) of NVIDIA
        MFT, or mstflint's C(mstfwmanager)) where it is installed, else with the burning tool's C(query);
        V(manager) - the firmware manager, failing without one; V(flint) - the burning tool's C(query), which
        prints no part number (entries keyed by part number then match no adapter).
    type: str
    choices: [auto, manager, flint]
    default: auto
  activate:
    description:
      - V(none) leaves activation to a reboot; V(live_reset) resets the adapters live where they and the host allow
        it (see above).
    type: str
    choices: [none, live_reset]
    default: none
  keep_netdevs:
    description:
      - Interfaces whose adapters no live reset may touch besides the controller's (a management network, a storage
        path); a bond, bridge or VLAN protects the adapters of its members.
    type: list
    elements: str
    default: []
  host_address:
    description:
      - The address the controller connects to this host at (the roles pass C(ansible_host)), resolved on the host
        (C(getent ahosts) where it is a name); the interface holding it is not reset live. A host name, an IPv4 or an
        IPv6 address.
    type: str
  work_dir:
    description:
      - The private folder (made with mode 0700, or taken when it is root's and no one else may write to it or the
        folders above it) where each image is copied before it is checked and burnt.
    type: path
    default: /var/lib/roce-fabric/firmware-burn
  allow_shared_image_path:
    description:
      - Take an image whose folder (or a folder above it) or file another user owns or group or others may write,
        as a site's shared image store. The copy is still checked against the pinned SHA-256; links stay refused.
    type: bool
    default: false
  burn_timeout:
    description: Seconds one burn (or one live reset) may take before it is stopped (60 to 3600).
    type: int
    default: 900
  reset_record:
    description:
      - Where the module keeps each adapter whose live reset did not load its burnt image, with the version and the
        host's boot id (a JSON file, mode 0600, in a folder only root may write). A later run in the same boot does
        not reset that adapter again for that version - the reboot is next. V("") keeps no record.
    type: path
    default: /var/lib/roce-fabric/nic_firmware_live_reset.json
notes:
  - A reboot for what is left pending is the calling role's (one rolling reboot per host).
seealso:
  - module: roce.fabric.mlxconfig
"""

EXAMPLES = r"""
- name: Pin the ConnectX-6 Dx firmware
  roce.fabric.nic_firmware_image:
    versions:
      MT_0000000436:
        version: 22.43.1014
        image: /var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_43_1014-MCX623106AN-CDA_Ax.bin
        sha256: "{{ cx6dx_image_sha256 }}"
  register: nic_firmware_image

- name: Report what runs, without burning anything
  roce.fabric.nic_firmware_image:
    versions: "{{ roce_fabric_firmware_versions }}"
    policy: minimum
  check_mode: true
"""

RETURN = r"""
adapters:
  description: Per adapter, what was read and what was (or, in check mode, would be) done.
  returned: always
  type: list
  elements: dict
  sample:
    - pci: "0000:3b:00.0"
      device: "0000:3b:00.0"
      psid: MT_0000000436
      base_mac: 1c34da73458a
      burnt: 22.43.1014
      running: 22.39.2048
      wanted: 22.43.1014
      key: MT_0000000436
      action: burn
      activation: live reset
      image: /var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_43_1014-MCX623106AN-CDA_Ax.bin
      burnt_from: /var/lib/roce-fabric/firmware-burn/1f0e8c3a9b2d4e5f-fw-ConnectX6Dx-rel-22_43_1014-MCX623106AN-CDA_Ax.bin
      reason: "0000:3b:00.0 (?, MT_0000000436): 22.43.1014 to burn over 22.39.2048"
activated:
  description: The adapters (PCI addresses) a live reset made run their burnt image (or, in check mode, would).
  returned: always
  type: list
  elements: str
pending:
  description: The adapters (PCI addresses) whose burnt image does not run yet; a reboot loads it.
  returned: always
  type: list
  elements: str
controller_path:
  description:
    - With O(activate=live_reset) and an adapter waiting - the interfaces found to carry the controller's session
      (C(interfaces), each with C(name) and C(why)), or why none was found (C(unknown); then nothing is reset live).
  returned: when a live reset was considered
  type: dict
  sample:
    interfaces:
      - name: eno1
        why: "the route to the controller's address 192.0.2.10 (SSH_CONNECTION, the login session's environment (process 4120))"
    unknown: null
reboot_required:
  description: True when RV(pending) is not empty.
  returned: always
  type: bool
reboot_reason:
  description:
    - The same words for the same waiting images on every run (empty when none waits), for roce.fabric.host_reboot,
      which reboots once for it and not again for what a reboot did not load.
  returned: always
  type: str
  sample: "ConnectX firmware 22.45.3608 burnt on 0000:3b:00.0, 22.43.1020 runs"
unknown:
  description: The adapters whose PSID and part number have no entry in O(versions), left as they are.
  returned: always
  type: list
  elements: str
tool:
  description:
    - The tool that was used - C(path) and C(kind) (V(flint) or V(mstflint)), and C(reader), the program that read
      the adapters (the firmware manager's path, or the tool's own).
  returned: when the tool was found
  type: dict
  sample: {"path": "/usr/bin/mstflint", "kind": "mstflint", "reader": "/usr/bin/mstfwmanager"}
commands:
  description: The burns run, or that would run in check mode; queries are not listed.
  returned: always
  type: list
  elements: str
  sample: ["/usr/bin/mstflint -d 0000:3b:00.0 -i /var/lib/roce-fabric/firmware-burn/1f0e8c3a9b2d4e5f-fw.bin -y burn"]
"""

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.firmware.flash import (
    FlashTool,
    check_versions,
    ImageCopies,
    image_checks,
    reset_blocker,
)
from ansible_collections.roce.fabric.plugins.module_utils.firmware.image import LIVE_RESET_LEVEL, fw_version, image_plan, version_text
from ansible_collections.roce.fabric.plugins.module_utils.firmware.power_cycle import DeviceRecord, live_reset_tried
from ansible_collections.roce.fabric.plugins.module_utils.firmware.transport import FirmwareError

NETDEV_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,14}$")
# A DNS name (RFC 1123 labels), an IPv4 address or an IPv6 address (with a zone index): what ansible_host holds.
HOST_ADDRESS_RE = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?"
                             r"|[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9_.-]{1,15})?)$")


def converge(run, tool, params, copies):
    """Read, plan, check and burn, then activate where asked; the result: ``adapters`` (the plan per adapter, updated
    after burns and resets), ``activated``, ``pending``, ``reboot_required`` and ``unknown``. ``copies``: the
    private copies of the images (``ImageCopies``), checked and burnt."""
    versions = params["versions"]
    found = []
    manager = tool.manager(params["reader"])
    run.update(tool=dict(path=tool.path, kind=tool.kind, reader=manager or tool.path))
    for key, tool_device, _selectors in tool.resolve_devices(params["devices"]):
        found.append(dict(tool.query_adapter(tool_device, manager), pci=key, device=tool_device))
    wanted = dict((key, str(entry["version"])) for key, entry in versions.items())
    plans = image_plan(found, wanted, policy=params["policy"], allow_downgrade=params["allow_downgrade"])
    for plan, device in zip(plans, found):
        plan["device"] = device["device"]
    refused = [p["reason"] for p in plans if p["action"] == "refuse"]
    if refused:
        raise FirmwareError("; ".join(refused) + "; nothing was burnt", category="downgrade", adapters=plans)
    burns = [p for p in plans if p["action"] == "burn"]
    problems = []
    for plan in burns:
        entry = versions[plan["key"]]
        image_info, digest, burnt_from = copies.get(tool, entry, plan["key"])
        problems += image_checks(plan, entry, image_info, digest)
        plan.update(image=entry["image"], burnt_from=burnt_from)
    if problems:
        raise FirmwareError("; ".join(problems) + "; nothing was burnt", category="image_mismatch", adapters=plans)
    run.set_diff(dict((p["pci"], p["burnt"]) for p in plans),
                 dict((p["pci"], p["wanted"] if p["action"] == "burn" else p["burnt"]) for p in plans))
    for plan in burns:
        argv = tool.burn_argv(plan["device"], plan["burnt_from"])
        run.mutate(CommandRunner.render(argv), lambda argv=argv: tool.burn(argv))
        if run.check_mode:
            plan.update(burnt=plan["wanted"])
            continue
        again = tool.query_adapter(plan["device"], manager)
        plan.update(burnt=version_text(fw_version(again["fw"])), running=version_text(fw_version(again["running"])))
        if plan["burnt"] != plan["wanted"]:
            raise FirmwareError("%s: burnt, but its query shows %s, not %s" % (plan["pci"], plan["burnt"], plan["wanted"]),
                                category="burn_failed", adapters=plans)
    waiting = [p for p in plans if p["burnt"] and p["running"] and p["burnt"] != p["running"]]
    for plan in waiting:
        plan["activation"] = "reboot"
    if params["activate"] == "live_reset" and waiting:
        live_reset(run, tool, waiting, params, manager, found)
    waits = [p for p in waiting if p["activation"] != "live reset"]
    run.update(adapters=plans, activated=[p["pci"] for p in waiting if p["activation"] == "live reset"],
               pending=[p["pci"] for p in waits], unknown=[p["pci"] for p in plans if p["action"] == "unknown"],
               reboot_required=bool(waits), reboot_reason="; ".join(
                   "ConnectX firmware %s burnt on %s, %s runs" % (p["burnt"], p["pci"], p["running"]) for p in waits))


def live_reset(run, tool, waiting, params, manager, found):
    """Reset each waiting adapter live where nothing forbids it; ``activation`` says what happened or why not. A reset
    that did not load its image is recorded (``reset_record``): no run resets that adapter again for it in this boot.
    Fails closed: where the interfaces that carry the controller's session cannot be found, no adapter is reset."""
    reset_tool = tool.reset_tool()
    path = tool.controller_path(params["host_address"])
    run.update(controller_path=dict(interfaces=[dict(name=name, why=why) for name, why in path["interfaces"]],
                                    unknown=path["unknown"]))
    protected = tool.protected_adapters(params["keep_netdevs"], path["interfaces"])
    connectx = set(adapter for adapter in protected if tool.is_connectx(adapter))
    base_macs = dict((device["pci"], device.get("base_mac")) for device in found)
    for adapter in sorted(connectx - set(base_macs)):
        # A protected ConnectX that is not among the adapters read (devices names others): its Base MAC tells its
        # Socket Direct partners; not read, none of them can be told apart from it (reset_blocker).
        try:
            base_macs[adapter] = tool.query_adapter(adapter, manager).get("base_mac")
        except FirmwareError:
            base_macs[adapter] = None
    record = DeviceRecord(params["reset_record"], "live reset record").load()
    boot_id = tool.boot_id()
    for plan in waiting:
        if path["unknown"]:
            plan["activation"] = ("reboot: no live reset, the interfaces that carry the controller's session could not "
                                  "be found (%s)" % path["unknown"])
            continue
        blocked = reset_blocker(plan["pci"], protected, base_macs, connectx)
        if blocked:
            plan["activation"] = "reboot: no live reset, %s" % blocked
            continue
        if not reset_tool:
            plan["activation"] = "reboot: no live reset, neither mlxfwreset nor mstfwreset is installed"
            continue
        levels = tool.reset_levels(reset_tool, plan["device"])
        if not (levels.get(LIVE_RESET_LEVEL) or {}).get("supported"):
            plan["activation"] = "reboot: no live reset, the adapter does not offer level %d (%s)" % (
                LIVE_RESET_LEVEL, ", ".join("%d" % n for n, level in sorted(levels.items()) if level["supported"]) or "none")
            continue
        if live_reset_tried(record.get(plan["pci"]), plan["burnt"], boot_id):
            plan["activation"] = "reboot: a live reset in this boot already failed to load %s (%s); no second one" % (
                plan["burnt"], record.path)
            continue
        argv = tool.reset_argv(reset_tool, plan["device"])
        run.mutate(CommandRunner.render(argv), lambda argv=argv: tool.reset(argv))
        if not run.check_mode:
            again = tool.query_adapter(plan["device"], manager)
            plan["running"] = version_text(fw_version(again["running"]))
            if plan["running"] != plan["burnt"]:
                # Never a second reset for what one did not load, in this run or a later one of this boot: the reboot
                # is the next and last step.
                plan["activation"] = "reboot: the live reset did not load %s (%s runs)" % (plan["burnt"], plan["running"])
                record.set(plan["pci"], dict(version=plan["burnt"], boot_id=boot_id))
                continue
            record.set(plan["pci"], {})
        plan["activation"] = "live reset"
    if not run.check_mode:
        record.save()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="str", default=["all"]),
            versions=dict(type="dict", required=True),
            policy=dict(type="str", choices=["exact", "minimum"], default="exact"),
            allow_downgrade=dict(type="bool", default=False),
            tool=dict(type="str", choices=["auto", "flint", "mstflint"], default="auto"),
            tool_path=dict(type="path"),
            reader=dict(type="str", choices=["auto", "manager", "flint"], default="auto"),
            activate=dict(type="str", choices=["none", "live_reset"], default="none"),
            keep_netdevs=dict(type="list", elements="str", default=[]),
            host_address=dict(type="str"),
            work_dir=dict(type="path", default="/var/lib/roce-fabric/firmware-burn"),
            allow_shared_image_path=dict(type="bool", default=False),
            burn_timeout=dict(type="int", default=900),
            reset_record=dict(type="path", default="/var/lib/roce-fabric/nic_firmware_live_reset.json"),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    params = module.params
    run = ModuleRun(module, adapters=[], activated=[], pending=[], reboot_required=False, reboot_reason="", unknown=[])
    problems = check_versions(params["versions"])
    problems += ["keep_netdevs: %r is not an interface name" % name for name in params["keep_netdevs"]
                 if not NETDEV_RE.match(name or "")]
    if params["host_address"] is not None and not (len(params["host_address"]) <= 253
                                                   and HOST_ADDRESS_RE.match(params["host_address"])):
        problems.append("host_address: %r is neither a host name nor an address" % params["host_address"])
    if not 60 <= params["burn_timeout"] <= 3600:
        problems.append("burn_timeout must be 60 to 3600 seconds")
    if problems:
        run.fail("Invalid input: %s; nothing was read or burnt" % "; ".join(problems))

    def body(run):
        tool = FlashTool(module, params["tool"], params["tool_path"], burn_timeout=params["burn_timeout"])
        copies = ImageCopies(params["work_dir"], module.check_mode, params["allow_shared_image_path"])
        try:
            converge(run, tool, params, copies)
        finally:
            copies.remove()

    run.execute(body)


if __name__ == "__main__":
    main()
