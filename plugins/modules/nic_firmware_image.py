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
  - Before anything is burnt, every image to burn is checked - a regular file (not a link), its SHA-256 equal to
    the entry's, and its own query (C(flint -i <image> query)) showing the adapter's PSID and the pinned version. A
    mismatch fails the task and burns nothing. The tool's own PSID check applies too.
  - Burns with C(flint -d <dev> -i <image> -y burn), one adapter at a time, and reads each adapter again after its
    burn. The new image runs only after a firmware reset or a reboot; the module never resets or reboots, it
    returns RV(reboot_required) and RV(pending). A second run with the image burnt burns nothing.
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
      - The pinned firmware per PSID (C(PSID) in the query, such as V(MT_0000000575)). Part numbers are not read
        by flint's query; key the entries by PSID.
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
  burn_timeout:
    description: Seconds one burn may take before it is stopped (60 to 3600).
    type: int
    default: 900
notes:
  - Activation (a live firmware reset with C(mlxfwreset) where the host allows it, else one rolling reboot) is the
    calling role's; the module only reports what waits for it.
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
      burnt: 22.43.1014
      running: 22.39.2048
      wanted: 22.43.1014
      key: MT_0000000436
      action: burn
      image: /var/lib/roce-fabric/firmware/fw-ConnectX6Dx-rel-22_43_1014-MCX623106AN-CDA_Ax.bin
      reason: "0000:3b:00.0 (?, MT_0000000436): 22.43.1014 to burn over 22.39.2048"
pending:
  description: The adapters (PCI addresses) whose burnt image does not run yet; a firmware reset or a reboot loads it.
  returned: always
  type: list
  elements: str
reboot_required:
  description: True when RV(pending) is not empty.
  returned: always
  type: bool
unknown:
  description: The adapters whose PSID has no entry in O(versions), left as they are.
  returned: always
  type: list
  elements: str
tool:
  description: The tool that was used - C(path) and C(kind) (V(flint) or V(mstflint)).
  returned: when the tool was found
  type: dict
  sample: {"path": "/usr/bin/mstflint", "kind": "mstflint"}
commands:
  description: The burns run, or that would run in check mode; queries are not listed.
  returned: always
  type: list
  elements: str
  sample: ["/usr/bin/mstflint -d 0000:3b:00.0 -i /var/lib/roce-fabric/firmware/fw.bin -y burn"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.firmware.flash import FlashTool, check_versions, image_checks, read_image
from ansible_collections.roce.fabric.plugins.module_utils.firmware.image import fw_version, image_plan, version_text
from ansible_collections.roce.fabric.plugins.module_utils.firmware.transport import FirmwareError


def converge(run, tool, devices, versions, policy, allow_downgrade):
    """Read, plan, check and burn; the result: ``adapters`` (the plan per adapter, updated after burns),
    ``reboot_required``, ``pending`` (adapters whose burnt image does not run yet) and ``unknown``."""
    resolved = tool.resolve_devices(devices)
    found = []
    for key, tool_device, _selectors in resolved:
        query = tool.query_device(tool_device)
        found.append(dict(query, pci=key, device=tool_device, part_number=None))
    wanted = dict((key, str(entry["version"])) for key, entry in versions.items())
    plans = image_plan(found, wanted, policy=policy, allow_downgrade=allow_downgrade)
    for plan, device in zip(plans, found):
        plan["device"] = device["device"]
    refused = [p["reason"] for p in plans if p["action"] == "refuse"]
    if refused:
        raise FirmwareError("; ".join(refused) + "; nothing was burnt", category="downgrade", adapters=plans)
    burns = [p for p in plans if p["action"] == "burn"]
    problems = []
    for plan in burns:
        entry = versions[plan["key"]]
        image_info, digest = read_image(tool, entry, plan["key"])
        problems += image_checks(plan, entry, image_info, digest)
        plan["image"] = entry["image"]
    if problems:
        raise FirmwareError("; ".join(problems) + "; nothing was burnt", category="image_mismatch", adapters=plans)
    run.set_diff(dict((p["pci"], p["burnt"]) for p in plans),
                 dict((p["pci"], p["wanted"] if p["action"] == "burn" else p["burnt"]) for p in plans))
    for plan in burns:
        argv = tool.burn_argv(plan["device"], plan["image"])
        run.mutate(CommandRunner.render(argv), lambda argv=argv: tool.burn(argv))
        if run.check_mode:
            plan.update(burnt=plan["wanted"])
            continue
        again = tool.query_device(plan["device"])
        plan.update(burnt=version_text(fw_version(again["fw"])), running=version_text(fw_version(again["running"])))
        if plan["burnt"] != plan["wanted"]:
            raise FirmwareError("%s: burnt, but its query shows %s, not %s" % (plan["pci"], plan["burnt"], plan["wanted"]),
                                category="burn_failed", adapters=plans)
    pending = [p["pci"] for p in plans if p["burnt"] and p["running"] and p["burnt"] != p["running"]]
    run.update(adapters=plans, pending=pending, reboot_required=bool(pending),
               unknown=[p["pci"] for p in plans if p["action"] == "unknown"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="str", default=["all"]),
            versions=dict(type="dict", required=True),
            policy=dict(type="str", choices=["exact", "minimum"], default="exact"),
            allow_downgrade=dict(type="bool", default=False),
            tool=dict(type="str", choices=["auto", "flint", "mstflint"], default="auto"),
            tool_path=dict(type="path"),
            burn_timeout=dict(type="int", default=900),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    params = module.params
    run = ModuleRun(module, adapters=[], pending=[], reboot_required=False, unknown=[])
    problems = check_versions(params["versions"])
    if not 60 <= params["burn_timeout"] <= 3600:
        problems.append("burn_timeout must be 60 to 3600 seconds")
    if problems:
        run.fail("Invalid input: %s; nothing was read or burnt" % "; ".join(problems))

    def body(run):
        tool = FlashTool(module, params["tool"], params["tool_path"], burn_timeout=params["burn_timeout"])
        run.update(tool=dict(path=tool.path, kind=tool.kind))
        converge(run, tool, params["devices"], params["versions"], params["policy"], params["allow_downgrade"])

    run.execute(body)


if __name__ == "__main__":
    main()
