# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ConnectX firmware: wanted parameters against what the firmware holds, one comparison per device.

PRIVATE to the roce.fabric collection: may change without notice.

Each ``plan_*`` compares the wanted values with Next Boot (what a ``set`` changes) and Current
(what a reboot would change) once; the assignments sent, the ``changes`` reported and the diff
all come from that comparison.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.firmware.parsers import (
    default_token,
    parse_value,
    same_value,
    find_param,
    split_param_name,
    wanted_value,
)
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.firmware.power_cycle import DeviceRecord, needs_power_cycle
from ansible_collections.roce.fabric.plugins.module_utils.firmware.transport import FirmwareError


def wanted_rows(tool, tool_device, device, names):
    """Rows for every wanted name, querying array elements and diagnosing missing names."""
    rows = {}
    array_names = []
    missing = []
    for name in names:
        try:
            base, index = split_param_name(name)
        except ValueError as exc:
            raise FirmwareError(str(exc), category="invalid_parameter")
        key = find_param(device["params"], base)
        row = device["params"].get(key) if key else None
        if index is None:
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
            array_names.append((name, "%s[%d]" % (key, index)))
    if missing:
        # Ask the tool about each missing name: it tells unknown names from unsupported ones.
        reasons, unsupported = [], []
        for base in sorted(set(missing)):
            try:
                tool.query(tool_device, [base])
                reasons.append("%s is not listed by the device" % base)
            except FirmwareError as exc:
                reasons.append(str(exc).split(": ", 1)[-1])
                if "doesn't support" in str(exc).lower():
                    unsupported.append(base)
        message = "Parameters not available on %s: %s" % (tool_device, "; ".join(reasons))
        if unsupported:
            message += "; " + firmware_hint(unsupported, device, tool.firmware_version(tool_device))
        raise FirmwareError(message, category="unknown_parameter")
    if array_names:
        elements = tool.query(tool_device, [device_name for _name, device_name in array_names])
        for name, device_name in array_names:
            key = find_param(elements["params"], device_name)
            if key is None:
                raise FirmwareError("%s was not returned by the device" % name, category="unknown_parameter")
            rows[name] = elements["params"][key]
    return rows


def firmware_hint(names, device, version=None):
    """What to do about parameters the adapter's firmware does not offer (the tool's "doesn't support"): the
    firmware, named by its version and the adapter's part number, predates them; a release that offers them must be
    burnt first (NVIDIA's firmware release notes list when each parameter came)."""
    adapter = (device or {}).get("name") or (device or {}).get("device_type") or "the adapter"
    firmware = "firmware %s" % version if version else "the firmware"
    return ("%s of %s does not offer %s: update the adapter's firmware to a release that does "
            "(roce.fabric.nic_firmware_image pins and burns one), then run again" % (firmware, adapter, ", ".join(names)))


def device_spelling(device, name):
    """``name`` as the device prints it (the tools' names are case-insensitive, the query is the reference)."""
    base, index = split_param_name(name)
    key = find_param(device["params"], base) or base
    return key if index is None else "%s[%d]" % (key, index)


def plan_present(tool, tool_device, device, wanted):
    """Rows, changes (name -> before/after), assignments and whether a reboot is pending."""
    rows = wanted_rows(tool, tool_device, device, list(wanted))
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
            assignments.append("%s=%s" % (device_spelling(device, name), value["token"]))
        current_same = same_value(value, row.get("current"), row)
        if current_same is False or (current_same is None and not next_same):
            pending = True
    if problems:
        raise FirmwareError("Invalid parameters for %s: %s" % (tool_device, "; ".join(problems)), category="invalid_value")
    return rows, changes, assignments, pending or bool(changes)


def plan_reset(tool, tool_device, device, names):
    """As ``plan_present``, towards the firmware defaults of ``names`` (or of every parameter)."""
    if names:
        rows = wanted_rows(tool, tool_device, device, names)
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
            assignments.append("%s=%s" % (device_spelling(device, name), value["token"]))
        if same_value(value, row.get("current"), row) is False:
            pending = True
    if unknown_default:
        if names:
            raise FirmwareError(
                "The firmware of %s cannot report the default value of %s" % (tool_device, ", ".join(unknown_default)),
                category="no_defaults",
            )
        # Without readable defaults the module cannot prove the device is already reset.
        tool.module.warn("%s cannot report default values; resetting it anyway" % tool_device)
        changes["*"] = dict(before="unknown", after="defaults")
    return rows, changes, assignments, pending or bool(changes)


def converge(run, params, tool):
    """Read and plan every device before changing any (bad input changes nothing anywhere), then apply."""
    state = params["state"]
    if state == "present" and not params["params"]:
        raise FirmwareError("params must name at least one parameter when state=present", category="invalid_parameter")
    targets = tool.resolve_devices(params["devices"])

    plans = []
    for key, tool_device, selectors in targets:
        device = tool.query(tool_device)
        if state == "present":
            rows, changes, assignments, pending = plan_present(tool, tool_device, device, params["params"] or {})
        else:
            rows, changes, assignments, pending = plan_reset(tool, tool_device, device, list(params["params"] or {}))
        plans.append(dict(key=key, tool_device=tool_device, selectors=selectors, device=device, rows=rows,
                          changes=changes, assignments=assignments, pending=pending))

    run.update(reboot_required=False, reboot_type="none", devices={}, tool=dict(path=tool.path, kind=tool.kind))
    record = DeviceRecord(params.get("power_cycle_record"), "power cycle record").load()
    try:
        apply_plans(run, params, tool, plans, record)
    finally:
        if not run.check_mode:
            record.save()
    run.result.update(reboot_needs(run.result["devices"]))


def reboot_needs(devices):
    """What the devices wait for, as the roles pass it on: ``warm_reboot_required`` (some device's pending values
    load at a warm reboot), ``reboot_reason`` (those devices and values) and ``power_cycle_devices`` (the devices
    whose pending values only a power cycle loads: no reason for a warm reboot, which would not load them)."""
    reason = reboot_reason(devices)
    cycle = sorted((key for key, device in (devices or {}).items()
                    if device.get("reboot_required") and device.get("reboot_type") == "power_cycle"),
                   key=lambda key: key.lower())
    return dict(reboot_reason=reason, warm_reboot_required=bool(reason), power_cycle_devices=cycle)


def reboot_reason(devices):
    """The words of a warm reboot's reason: each device whose pending values a warm reboot loads, with those values,
    in name order; '' when there is none. The same pending values give the same words on every run, so
    roce.fabric.reboot_record can tell a reboot that did not load them from a new reason."""
    parts = []
    for key, device in sorted((devices or {}).items(), key=lambda item: item[0].lower()):
        if device.get("reboot_required") and device.get("reboot_type", "reboot") == "reboot":
            values = ", ".join("%s=%s" % (name, value) for name, value in
                               sorted((device.get("pending") or {}).items(), key=lambda item: item[0].lower()))
            parts.append("%s (%s)" % (key, values))
    return "ConnectX firmware settings pending on %s" % "; ".join(parts) if parts else ""


def apply_plans(run, params, tool, plans, record):
    """Set or reset each planned device in turn; ``record`` learns which pending values need a power cycle."""
    state = params["state"]
    result = run.result
    for plan in plans:
        tool_device = plan["tool_device"]
        changes = plan["changes"]
        reboot_type = "reboot" if plan["pending"] else "none"
        rows = plan["rows"]
        if changes:
            if state == "reset" and not params["params"]:
                argv = tool.argv(tool_device, "reset")
            else:
                argv = tool.argv(tool_device, "set", plan["assignments"])
            try:
                applied = run.mutate(tool.runner.render(argv), lambda: tool.apply(argv))
            except FabricError as exc:
                raise refused(exc, plan, result)
            if run.check_mode:
                rows = predicted_rows(rows, changes)
            else:
                reboot_type = applied
                # Read back so the result shows what the firmware really holds now.
                names = [device_spelling(plan["device"], name) for name in rows] if params["params"] else None
                after = tool.query(tool_device, names)["params"]
                rows = dict((name, after.get(find_param(after, device_spelling(plan["device"], name)) or name, row))
                            for name, row in rows.items())
            run.diff(plan["key"], dict((name, change["before"]) for name, change in changes.items()),
                     dict((name, change["after"]) for name, change in changes.items()))
        pending = dict((name, row.get("next_boot")) for name, row in sorted(rows.items())
                       if plan["pending"] and row.get("current") != row.get("next_boot"))
        if reboot_type == "power_cycle":
            record.set(plan["key"], pending)
        elif not plan["pending"]:
            record.set(plan["key"], {})
        elif needs_power_cycle(record.get(plan["key"]), pending):
            # Pending since a run whose set asked for a power cycle: a warm reboot still does not load it.
            reboot_type = "power_cycle"
        result["devices"][plan["key"]] = dict(
            selectors=plan["selectors"],
            device_type=plan["device"]["device_type"],
            part_number=plan["device"]["name"],
            description=plan["device"]["description"],
            changed=bool(changes),
            reboot_required=plan["pending"],
            reboot_type=reboot_type,
            changes=changes,
            pending=pending,
            params=dict((name, dict(default=row.get("default"), current=row.get("current"),
                                    next_boot=row.get("next_boot"), read_only=bool(row.get("read_only"))))
                        for name, row in rows.items()),
        )
        result["reboot_required"] = result["reboot_required"] or plan["pending"]
        if reboot_type == "power_cycle" or (reboot_type == "reboot" and result["reboot_type"] == "none"):
            result["reboot_type"] = reboot_type


def refused(exc, plan, result):
    """The error of a ``set``/``reset`` the tool refused, with what earlier devices of this run already hold.

    The devices before it were written: the result says so (``changed``, their entries in ``devices``, the reboot
    they need, ``commands`` with only what succeeded) and the message names them, so a re-run is not the only way to
    learn that a host now has pending firmware values."""
    written = sorted(key for key, entry in result["devices"].items() if entry["changed"])
    pending = "already written: %s, pending until the next %s" % (
        ", ".join(written), "power cycle" if result["reboot_type"] == "power_cycle" else "reboot")
    reason = exc.details.pop("reason", None) or "exit code %s" % exc.details.get("rc")
    if exc.details.get("failure") == "timeout":
        # Stopped half way: the device's state is unknown, and the next run reads it again.
        msg = "%s%s" % (exc, " (%s)" % pending if written else "")
    elif written:
        msg = "%s (that device was not changed; %s): %s" % (exc, pending, reason)
    else:
        msg = "%s, nothing was changed: %s" % (exc, reason)
    result["devices"][plan["key"]] = dict(selectors=plan["selectors"], device_type=plan["device"]["device_type"],
                                          changed=False, failed=True, changes=plan["changes"])
    details = dict(exc.details)
    details.update(changed=bool(written), commands=list(result["commands"]), devices=result["devices"],
                   reboot_required=result["reboot_required"], reboot_type=result["reboot_type"])
    return FirmwareError(msg, **details)


def predicted_rows(rows, changes):
    predicted = {}
    for name, row in rows.items():
        row = dict(row)
        if name in changes:
            row["next_boot"] = changes[name]["after"]
        predicted[name] = row
    return predicted
