#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mlxconfig
short_description: Declarative NVIDIA ConnectX firmware (NVconfig) settings
version_added: 1.0.0
description:
  - Sets persistent firmware configuration parameters of NVIDIA (Mellanox) ConnectX and BlueField adapters,
    such as C(ATS_ENABLED) for GPUDirect RDMA in virtual machines, C(SRIOV_EN) and C(NUM_OF_VFS) for SR-IOV,
    C(LINK_TYPE_P1) or C(ROCE_CONTROL), with NVIDIA MFT C(mlxconfig) or the open-source C(mstconfig) (mstflint).
  - Reads every device with C(-e query) (Default, Current and Next Boot columns). A parameter is changed when the
    wanted value differs from its Next Boot value; all changes of a device go into one C(set) call.
  - Firmware settings take effect only after a reboot (or a power cycle). The module never reboots; it returns
    O(ignore:reboot_required) when any wanted value differs from the running (Current) value, including changes made
    earlier that are still pending. Roles use it to coalesce one reboot per host.
  - Values are compared by meaning, not by text, against what the tool prints, so V(true), V(True), V(1) and
    C(True(1)) are equal, and enum names match case-insensitively (V(roce_enable) equals C(ROCE_ENABLE(2))).
  - Invalid input fails before any change is made; the tools validate a whole C(set) before applying it,
    so a refused change leaves the firmware untouched.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs on the host that carries the adapters.
    support: full
    platforms: posix
options:
  devices:
    description:
      - The adapters to configure. Each item is a PCI address (V(0000:3b:00.0) or V(3b:00.0)),
        an MFT device path (V(/dev/mst/mt4123_pciconf0), needs O(tool=mlxconfig) and C(mst start)),
        or a network interface name (V(ens1f0np0)), resolved to its PCI function through sysfs.
      - The single item V(all) selects every NVIDIA/Mellanox network adapter on the host (one physical
        function per adapter; virtual functions are skipped).
      - Two selectors that resolve to the same PCI function are handled once.
    type: list
    elements: str
    required: true
  params:
    description:
      - Firmware parameters and their wanted values, as named by C(mlxconfig query), for example
        C(ATS_ENABLED), C(SRIOV_EN), C(NUM_OF_VFS), C(LINK_TYPE_P1) or an array element such as
        C(PCI_DOWNSTREAM_PORT_OWNER[3]).
      - Values may be booleans, integers (decimal or V(0x) hex strings) or enum names
        (V(ROCE_ENABLE), V(ETH), V(per_mkey)); they are normalised against what the device prints.
      - With O(state=reset) only the names matter (values are ignored); the listed parameters are
        set back to their Default value.
      - Required when O(state=present).
    type: dict
  state:
    description:
      - V(present) sets O(params) to the given values.
      - V(reset) restores defaults. Without O(params) it runs the tool's C(reset) command (every parameter);
        with O(params) it sets only those parameters to their Default value.
    type: str
    choices: [present, reset]
    default: present
  tool:
    description:
      - Which tool to use. V(auto) prefers C(mlxconfig) (NVIDIA MFT) and falls back to C(mstconfig) (mstflint).
    type: str
    choices: [auto, mlxconfig, mstconfig]
    default: auto
  tool_path:
    description:
      - Path to the C(mlxconfig) or C(mstconfig) executable, when it is not on the PATH.
      - With O(tool=auto) the tool kind is taken from the file name (a name containing C(mstconfig) means mstflint).
    type: path
notes:
  - "Requires C(mstconfig) (Debian/Ubuntu package C(mstflint), RHEL C(mstflint)) or NVIDIA MFT C(mlxconfig) on the host."
  - "When the firmware cannot read default values (older firmware prints C(N/A)), O(state=reset) without O(params) always
    reports a change, because the module cannot tell whether the device is already at its defaults."
  - "O(ignore:reboot_type) is only known when this run applied a change; pending changes found from an earlier run are
    reported as V(reboot)."
seealso:
  - name: NVIDIA mlxconfig documentation
    description: The parameters and their meaning.
    link: https://docs.nvidia.com/networking/display/mftv4270/using+mlxconfig
"""

EXAMPLES = r"""
- name: Enable PCIe ATS on every ConnectX adapter (GPUDirect RDMA inside VMs)
  roce.fabric.mlxconfig:
    devices: all
    params:
      ATS_ENABLED: true
  register: fw

- name: Reboot when the firmware change needs it
  ansible.builtin.reboot:
  when: fw.reboot_required

- name: SR-IOV with 8 virtual functions on the adapter behind ens1f0np0
  roce.fabric.mlxconfig:
    devices:
      - ens1f0np0
    params:
      SRIOV_EN: true
      NUM_OF_VFS: 8

- name: Ethernet link type on both ports of a VPI adapter, with mstflint
  roce.fabric.mlxconfig:
    devices:
      - "0000:3b:00.0"
    tool: mstconfig
    params:
      LINK_TYPE_P1: ETH
      LINK_TYPE_P2: ETH

- name: One element of an array parameter, through an MFT device path
  roce.fabric.mlxconfig:
    devices:
      - /dev/mst/mt4129_pciconf0
    tool: mlxconfig
    params:
      PCI_DOWNSTREAM_PORT_OWNER[4]: HOST_1

- name: Put NUM_OF_VFS back to its default
  roce.fabric.mlxconfig:
    devices: all
    state: reset
    params:
      NUM_OF_VFS:

- name: Reset every parameter of one adapter to its default
  roce.fabric.mlxconfig:
    devices:
      - "3b:00.0"
    state: reset
"""

RETURN = r"""
changed:
  description: Whether a set or reset was (or, in check mode, would be) made on any device.
  returned: always
  type: bool
reboot_required:
  description:
    - True when any wanted value differs from the running (Current) value on any device,
      including pending changes made before this run. A reboot (or power cycle) loads them.
  returned: always
  type: bool
reboot_type:
  description:
    - V(none), V(reboot), or V(power_cycle) when the tool said a warm reboot cannot load the new
      configuration (C(Please power cycle machine to load new configurations)).
  returned: always
  type: str
  sample: reboot
tool:
  description: The tool that was used.
  returned: always
  type: dict
  contains:
    path:
      description: Path of the executable.
      type: str
      sample: /usr/bin/mstconfig
    kind:
      description: V(mlxconfig) (NVIDIA MFT) or V(mstconfig) (mstflint).
      type: str
      sample: mstconfig
commands:
  description:
    - The mutating commands run, or that would run in check mode; queries are not listed.
  returned: always
  type: list
  elements: str
  sample: ["mstconfig -d 0000:3b:00.0 -y set ATS_ENABLED=True NUM_OF_VFS=8"]
devices:
  description: Per device (keyed by PCI address, or by MFT path), what was found and done.
  returned: always
  type: dict
  sample:
    "0000:3b:00.0":
      selectors: [ens1f0np0]
      device_type: ConnectX6DX
      part_number: MCX623106AN-CDA_Ax
      description: ConnectX-6 Dx EN adapter card
      changed: true
      reboot_required: true
      reboot_type: reboot
      changes:
        NUM_OF_VFS:
          before: "0"
          after: "8"
      params:
        NUM_OF_VFS:
          default: "8"
          current: "0"
          next_boot: "8"
          read_only: false
  contains:
    selectors:
      description: The O(devices) items that resolved to this device.
      type: list
      elements: str
    device_type:
      description: Device type as printed by the tool.
      type: str
    part_number:
      description: Part number (the tool's C(Name) field).
      type: str
    description:
      description: Adapter description as printed by the tool.
      type: str
    changed:
      description: Whether this device was (or would be) changed.
      type: bool
    reboot_required:
      description: Whether this device needs a reboot to run the wanted values.
      type: bool
    reboot_type:
      description: V(none), V(reboot) or V(power_cycle) for this device.
      type: str
    changes:
      description: Parameter name to C(before) (Next Boot before the run) and C(after) (the new Next Boot value).
      type: dict
    params:
      description:
        - Each managed parameter with its C(default), C(current) and C(next_boot) values as the tool
          prints them (after the change; in check mode, as predicted), and C(read_only).
      type: dict
diff:
  description: Per device and parameter, the Next Boot values before and after (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils._command import CommandRunner
from ansible_collections.roce.fabric.plugins.module_utils._mlxconfig import (
    MlxconfigParseError,
    classify_error,
    default_token,
    error_lines,
    parse_query,
    parse_tool_output,
    parse_value,
    reboot_kind,
    same_value,
    split_param_name,
    wanted_value,
)
from ansible_collections.roce.fabric.plugins.module_utils._pci import (
    adapter_address,
    list_mellanox_nics,
    looks_like_pci_address,
    netdev_pci_address,
    normalize_pci_address,
    pci_device_info,
    MELLANOX_VENDOR_ID,
)


class FirmwareError(Exception):
    """An error to report with fail_json; ``details`` go into the result."""

    def __init__(self, msg, **details):
        super(FirmwareError, self).__init__(msg)
        self.details = details


class Mlxconfig(object):

    # Where sysfs is mounted; only unit tests point it elsewhere.
    SYSFS_ROOT = "/"

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.runner = CommandRunner(module)
        self.kind, self.path = self.find_tool()
        self.sysfs_root = self.SYSFS_ROOT

    # --- tool and device discovery -------------------------------------------------------------

    def find_tool(self):
        tool = self.params["tool"]
        path = self.params["tool_path"]
        if path:
            if not os.path.isfile(path) or not os.access(path, os.X_OK):
                raise FirmwareError("tool_path %s is not an executable file" % path)
            if tool == "auto":
                tool = "mstconfig" if "mstconfig" in os.path.basename(path) else "mlxconfig"
            return tool, path
        candidates = ["mlxconfig", "mstconfig"] if tool == "auto" else [tool]
        for name in candidates:
            found = self.module.get_bin_path(name)
            if found:
                return name, found
        raise FirmwareError(
            "Cannot find %s on the host. Install mstflint (Debian/Ubuntu/RHEL package 'mstflint') or NVIDIA MFT, "
            "or point tool_path at the executable." % " or ".join(candidates),
            category="tool_missing",
        )

    def resolve_devices(self):
        """Return an ordered dict-like list of (key, tool_device, selectors)."""
        items = self.params["devices"]
        if not items:
            raise FirmwareError("devices must name at least one device (or 'all')", category="invalid_device")
        if "all" in items:
            if len(items) > 1:
                raise FirmwareError("'all' cannot be combined with other devices", category="invalid_device")
            found = list_mellanox_nics(self.sysfs_root)
            if not found:
                raise FirmwareError("No NVIDIA/Mellanox network adapter found on this host (devices: all)", category="device_not_found")
            return [(address, address, ["all"]) for address in found]

        resolved = []
        index = {}
        problems = []
        for item in items:
            try:
                key, tool_device = self.resolve_one(item)
            except FirmwareError as exc:
                problems.append(str(exc))
                continue
            if key in index:
                resolved[index[key]][2].append(item)
            else:
                index[key] = len(resolved)
                resolved.append((key, tool_device, [item]))
        if problems:
            raise FirmwareError("; ".join(problems), category="invalid_device")
        return resolved

    def resolve_one(self, item):
        item = (item or "").strip()
        if item.startswith("/dev/mst/"):
            if self.kind != "mlxconfig":
                raise FirmwareError(
                    "%s is an NVIDIA MFT device path; mstconfig takes PCI addresses or interface names" % item
                )
            return item, item
        if item.startswith("/"):
            raise FirmwareError("%s is not a device: use a PCI address, a /dev/mst/ path or an interface name" % item)
        if looks_like_pci_address(item):
            try:
                address = normalize_pci_address(item)
            except ValueError as exc:
                raise FirmwareError(str(exc))
        else:
            try:
                address = netdev_pci_address(item, self.sysfs_root)
            except ValueError as exc:
                raise FirmwareError(str(exc))
        info = pci_device_info(address, self.sysfs_root)
        if info is None:
            raise FirmwareError("PCI device %s does not exist on this host" % address)
        if (info["vendor"] or "").lower() != MELLANOX_VENDOR_ID:
            raise FirmwareError(
                "%s (%s) is not an NVIDIA/Mellanox adapter (PCI vendor %s)" % (item, address, info["vendor"])
            )
        if info["physfn"]:
            raise FirmwareError(
                "%s (%s) is a virtual function; firmware settings belong to its physical function %s"
                % (item, address, info["physfn"])
            )
        # The ports of a multi-port adapter are functions of one device with one configuration:
        # address it by its first physical function present on this host.
        adapter = adapter_address(address, self.sysfs_root)
        return adapter, adapter

    # --- tool calls --------------------------------------------------------------------------------

    def query(self, tool_device, names=None):
        argv = [self.path, "-d", tool_device, "-e", "query"] + list(names or [])
        rc, out, err = self.runner.run(argv)
        errors = error_lines(out) + error_lines(err)
        if rc != 0 or errors:
            message = "; ".join(errors) or (err or out).strip() or "exit code %d" % rc
            raise FirmwareError(
                "Querying %s with %s failed: %s" % (tool_device, self.kind, message),
                category=classify_error(message), rc=rc, stdout=out, stderr=err,
            )
        try:
            devices = parse_query(out)
        except MlxconfigParseError as exc:
            raise FirmwareError("Cannot read the output of %s: %s" % (self.kind, exc), category="parse_error", stdout=out)
        devices = [d for d in devices if d["params"] or d["device_type"]]
        if len(devices) != 1:
            raise FirmwareError(
                "Expected one device in the query output of %s, found %d" % (tool_device, len(devices)),
                category="parse_error", stdout=out,
            )
        return devices[0]

    def apply(self, tool_device, command, assignments=None):
        argv = [self.path, "-d", tool_device, "-y", command] + list(assignments or [])
        rc, out, err = self.runner.run(argv, mutating=True)
        parsed = parse_tool_output(out)
        errors = error_lines(out) + error_lines(err)
        applied = any(d["applied"] for d in parsed)
        if rc != 0 or errors or not applied:
            message = "; ".join(errors) or (err or out).strip() or "exit code %d" % rc
            raise FirmwareError(
                "%s %s on %s was refused, nothing was changed: %s" % (self.kind, command, tool_device, message),
                category=classify_error(message), rc=rc, stdout=out, stderr=err, command=self.runner.render(argv),
            )
        # A successful set or reset always needs at least a reboot, even if the tool printed no closing line.
        return reboot_kind([out]) or "reboot"

    # --- planning ---------------------------------------------------------------------------------

    def wanted_rows(self, tool_device, device, names):
        """Rows for every wanted name, querying array elements and diagnosing missing names."""
        rows = {}
        array_names = []
        missing = []
        for name in names:
            try:
                base, index = split_param_name(name)
            except ValueError as exc:
                raise FirmwareError(str(exc), category="invalid_parameter")
            if index is None:
                row = device["params"].get(base)
                if row is None:
                    missing.append(base)
                elif parse_value(row.get("next_boot")).get("array") is not None:
                    raise FirmwareError(
                        "%s is an array parameter (%s): name one element, e.g. %s[0]" % (base, row.get("next_boot"), base),
                        category="invalid_parameter",
                    )
                else:
                    rows[name] = row
            else:
                row = device["params"].get(base)
                if row is None:
                    missing.append(base)
                    continue
                bounds = parse_value(row.get("next_boot")).get("array")
                if bounds is None:
                    raise FirmwareError("%s is not an array parameter; use it without an index" % base, category="invalid_parameter")
                if not bounds[0] <= index <= bounds[1]:
                    raise FirmwareError(
                        "Index %d of %s is out of range (the device has %s[%d..%d])" % (index, base, base, bounds[0], bounds[1]),
                        category="invalid_parameter",
                    )
                array_names.append(name)
        if missing:
            # Ask the tool about each missing name: it tells unknown names from unsupported ones.
            reasons = []
            for base in sorted(set(missing)):
                try:
                    self.query(tool_device, [base])
                    reasons.append("%s is not listed by the device" % base)
                except FirmwareError as exc:
                    reasons.append(str(exc).split(": ", 1)[-1])
            raise FirmwareError(
                "Parameters not available on %s: %s" % (tool_device, "; ".join(reasons)),
                category="unknown_parameter",
            )
        if array_names:
            elements = self.query(tool_device, array_names)
            for name in array_names:
                if name not in elements["params"]:
                    raise FirmwareError("%s was not returned by the device" % name, category="unknown_parameter")
                rows[name] = elements["params"][name]
        return rows

    def plan_present(self, tool_device, device):
        wanted = self.params["params"] or {}
        rows = self.wanted_rows(tool_device, device, list(wanted))
        changes = {}
        assignments = []
        pending = False
        problems = []
        for name in wanted:
            row = rows[name]
            try:
                value = wanted_value(wanted[name], row)
            except ValueError as exc:
                problems.append("%s: %s" % (name, exc))
                continue
            if row.get("read_only"):
                problems.append("%s is read-only on this device and cannot be set" % name)
                continue
            next_same = same_value(value, row.get("next_boot"), row)
            if not next_same:
                changes[name] = dict(before=row.get("next_boot"), after=value["display"])
                assignments.append("%s=%s" % (name, value["token"]))
            current_same = same_value(value, row.get("current"), row)
            if current_same is False or (current_same is None and not next_same):
                pending = True
        if problems:
            raise FirmwareError("Invalid parameters for %s: %s" % (tool_device, "; ".join(problems)), category="invalid_value")
        return rows, changes, assignments, pending or bool(changes)

    def plan_reset(self, tool_device, device):
        names = list(self.params["params"] or {})
        if names:
            rows = self.wanted_rows(tool_device, device, names)
        else:
            rows = dict((name, row) for name, row in device["params"].items()
                        if not row.get("read_only") and parse_value(row.get("next_boot")).get("array") is None)
        changes = {}
        assignments = []
        pending = False
        unknown_default = []
        for name, row in rows.items():
            if row.get("read_only"):
                if names:
                    raise FirmwareError("%s is read-only on this device and cannot be reset" % name, category="read_only")
                continue
            token = default_token(row)
            if token is None:
                unknown_default.append(name)
                continue
            value = wanted_value(token, row)
            if not same_value(value, row.get("next_boot"), row):
                changes[name] = dict(before=row.get("next_boot"), after=row.get("default"))
                assignments.append("%s=%s" % (name, value["token"]))
            if same_value(value, row.get("current"), row) is False:
                pending = True
        if unknown_default:
            if names:
                raise FirmwareError(
                    "The firmware of %s cannot report the default value of %s" % (tool_device, ", ".join(unknown_default)),
                    category="no_defaults",
                )
            # Without readable defaults the module cannot prove the device is already reset.
            self.module.warn("%s cannot report default values; resetting it anyway" % tool_device)
            changes["*"] = dict(before="unknown", after="defaults")
        return rows, changes, assignments, pending or bool(changes)

    # --- main -------------------------------------------------------------------------------------

    def run(self):
        state = self.params["state"]
        if state == "present" and not self.params["params"]:
            raise FirmwareError("params must name at least one parameter when state=present", category="invalid_parameter")
        targets = self.resolve_devices()

        # Read and plan every device before changing any, so bad input changes nothing anywhere.
        plans = []
        for key, tool_device, selectors in targets:
            device = self.query(tool_device)
            if state == "present":
                rows, changes, assignments, pending = self.plan_present(tool_device, device)
            else:
                rows, changes, assignments, pending = self.plan_reset(tool_device, device)
            plans.append(dict(key=key, tool_device=tool_device, selectors=selectors, device=device, rows=rows,
                              changes=changes, assignments=assignments, pending=pending))

        result = dict(changed=False, reboot_required=False, reboot_type="none", devices={}, commands=[],
                      tool=dict(path=self.path, kind=self.kind))
        diff_before = {}
        diff_after = {}
        for plan in plans:
            tool_device = plan["tool_device"]
            changes = plan["changes"]
            reboot_type = "reboot" if plan["pending"] else "none"
            rows = plan["rows"]
            if changes:
                if state == "reset" and not self.params["params"]:
                    command, assignments = "reset", []
                else:
                    command, assignments = "set", plan["assignments"]
                argv = [self.path, "-d", tool_device, "-y", command] + assignments
                if self.module.check_mode:
                    result["commands"].append(self.runner.render(argv))
                    rows = self.predicted_rows(rows, changes)
                else:
                    reboot_type = self.apply(tool_device, command, assignments)
                    result["commands"].append(self.runner.render(argv))
                    # Read back so the result shows what the firmware really holds now.
                    after = self.query(tool_device, list(rows) if self.params["params"] else None)
                    rows = dict((name, after["params"].get(name, row)) for name, row in rows.items())
                diff_before[plan["key"]] = dict((name, change["before"]) for name, change in changes.items())
                diff_after[plan["key"]] = dict((name, change["after"]) for name, change in changes.items())
            result["devices"][plan["key"]] = dict(
                selectors=plan["selectors"],
                device_type=plan["device"]["device_type"],
                part_number=plan["device"]["name"],
                description=plan["device"]["description"],
                changed=bool(changes),
                reboot_required=plan["pending"],
                reboot_type=reboot_type,
                changes=changes,
                params=dict((name, dict(default=row.get("default"), current=row.get("current"),
                                        next_boot=row.get("next_boot"), read_only=bool(row.get("read_only"))))
                            for name, row in rows.items()),
            )
            result["changed"] = result["changed"] or bool(changes)
            result["reboot_required"] = result["reboot_required"] or plan["pending"]
            if reboot_type == "power_cycle" or (reboot_type == "reboot" and result["reboot_type"] == "none"):
                result["reboot_type"] = reboot_type
        if self.module._diff:
            result["diff"] = dict(before=diff_before, after=diff_after)
        return result

    @staticmethod
    def predicted_rows(rows, changes):
        predicted = {}
        for name, row in rows.items():
            row = dict(row)
            if name in changes:
                row["next_boot"] = changes[name]["after"]
            predicted[name] = row
        return predicted


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="str", required=True),
            params=dict(type="dict"),
            state=dict(type="str", default="present", choices=["present", "reset"]),
            tool=dict(type="str", default="auto", choices=["auto", "mlxconfig", "mstconfig"]),
            tool_path=dict(type="path"),
        ),
        required_if=[("state", "present", ["params"])],
        supports_check_mode=True,
    )
    runner = None
    try:
        runner = Mlxconfig(module)
        result = runner.run()
    except FirmwareError as exc:
        details = dict(exc.details)
        if runner is not None:
            details.setdefault("commands", runner.runner.mutating)
        module.fail_json(msg=str(exc), **details)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
