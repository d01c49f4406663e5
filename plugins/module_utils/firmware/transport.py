# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ConnectX firmware: the host's ``mlxconfig`` (NVIDIA MFT) or ``mstconfig`` (mstflint), and its devices.

PRIVATE to the roce.fabric collection: may change without notice.

``FirmwareTool`` finds the tool, resolves what the inventory names (PCI addresses, interface
names, ``/dev/mst`` paths, ``all``) to adapters through sysfs, and runs ``query`` and ``set`` /
``reset`` as argv lists. Every argv is built once, by ``argv``.
"""

from __future__ import annotations

import os
import re

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import (
    MELLANOX_VENDOR_ID,
    adapter_address,
    list_mellanox_nics,
    looks_like_pci_address,
    netdev_pci_address,
    normalize_pci_address,
    pci_device_info,
)
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError
from ansible_collections.roce.fabric.plugins.module_utils.firmware.parsers import (
    MlxconfigParseError,
    classify_error,
    error_lines,
    parse_query,
    parse_tool_output,
    reboot_kind,
)


class FirmwareError(FabricError):
    """A firmware failure; ``category`` (and the tool's output, where there is one) go into the result."""


class FirmwareTool(object):
    """One host's firmware tool and the adapters it can address."""

    # Where sysfs is mounted; only unit tests point it elsewhere.
    SYSFS_ROOT = "/"
    # The tools, NVIDIA MFT's first, and the name of mstflint's (which a tool_path's file name tells apart).
    CANDIDATES = ("mlxconfig", "mstconfig")
    MSTFLINT = "mstconfig"

    def __init__(self, module, tool="auto", tool_path=None):
        self.module = module
        self.runner = CommandRunner(module)
        self.sysfs_root = self.SYSFS_ROOT
        self.kind, self.path = self.find_tool(tool, tool_path)

    def find_tool(self, tool, path):
        if path:
            if not os.path.isfile(path) or not os.access(path, os.X_OK):
                raise FirmwareError("tool_path %s is not an executable file" % path)
            if tool == "auto":
                tool = self.MSTFLINT if self.MSTFLINT in os.path.basename(path) else self.CANDIDATES[0]
            return tool, path
        candidates = list(self.CANDIDATES) if tool == "auto" else [tool]
        for name in candidates:
            found = self.module.get_bin_path(name)
            if found:
                return name, found
        raise FirmwareError(
            "Cannot find %s on the host. Install mstflint (Debian/Ubuntu/RHEL package 'mstflint') or NVIDIA MFT, "
            "or point tool_path at the executable." % " or ".join(candidates),
            category="tool_missing",
        )

    def resolve_devices(self, items):
        """Return an ordered list of (key, tool_device, selectors)."""
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
            # An MFT device name (mt4123_pciconf0, mt4129_pciconf0.1, mt4125_pciconf0_cable_0): no other directory.
            if not re.match(r"^/dev/mst/[A-Za-z0-9_.]{1,64}$", item):
                raise FirmwareError("%s is not an MFT device path (/dev/mst/<name>)" % item, category="invalid_device")
            if self.kind in ("mstconfig", "mstflint"):
                raise FirmwareError(
                    "%s is an NVIDIA MFT device path; %s takes PCI addresses or interface names" % (item, self.kind)
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

    def firmware_version(self, tool_device):
        """The running firmware's version as the RDMA driver reports it (``fw_ver`` of the adapter's RDMA device in
        sysfs, ``16.27.2008``), or None (an MFT device path, no RDMA driver loaded)."""
        if tool_device.startswith("/"):
            return None
        path = os.path.join(self.sysfs_root, "sys", "bus", "pci", "devices", tool_device, "infiniband")
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return None
        for name in names:
            try:
                with open(os.path.join(path, name, "fw_ver")) as handle:
                    version = handle.read().strip()
            except (IOError, OSError):
                continue
            if version:
                return version
        return None

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

    def argv(self, tool_device, command, assignments=None):
        """The one argv of a ``set`` or ``reset``: what runs and what the ``commands`` record shows."""
        return [self.path, "-d", tool_device, "-y", command] + list(assignments or [])

    def apply(self, argv):
        """Run a ``set``/``reset`` argv from ``argv``; return the reboot it needs (``reboot`` or ``power_cycle``)."""
        tool_device, command = argv[2], argv[4]
        rc, out, err = self.runner.run(argv, mutating=True)
        parsed = parse_tool_output(out)
        errors = error_lines(out) + error_lines(err)
        applied = any(d["applied"] for d in parsed)
        if rc != 0 or errors or not applied:
            message = "; ".join(errors) or (err or out).strip() or "exit code %d" % rc
            # The state layer words the message: only it knows whether other devices were already written.
            raise FirmwareError(
                "%s %s on %s was refused" % (self.kind, command, tool_device),
                category=classify_error(message), rc=rc, stdout=out, stderr=err, failed_command=self.runner.render(argv),
                reason=message,
            )
        # A successful set or reset always needs at least a reboot, even if the tool printed no closing line.
        return reboot_kind([out]) or "reboot"
