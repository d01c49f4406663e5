# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ConnectX firmware images: what each adapter holds and runs, and what the site's pinned versions ask of it. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

Read from NVIDIA's firmware manager (``mlxfwmanager --query``, ``mlxfwmanager -d <dev>``; ``mlxup --query`` prints
the same report) and from ``flint -d <dev> query`` (MFT; mstflint's ``mstflint -d <dev> q`` alike). The manager
prints one block per adapter: ``Key:   value`` lines and a ``Versions: Current Available`` table, where a burnt
image that does not run yet adds a ``FW (Running)`` row (mstflint's mlxfwmanager prints it only when the running
version differs from the burnt one). ``flint query`` prints the burnt image's ``FW Version`` and ``PSID``.

The plan (``image_plan``) compares versions part by part, never as text: a site's ``versions`` maps a PSID (or a
part number) to the version it wants; an adapter without an entry is reported, never given a guessed image.
"""

from __future__ import annotations

import re

VERSION_RE = re.compile(r"^(\d+)[._](\d+)[._](\d+)$")
DEVICE_RE = re.compile(r"^Device #(\d+):\s*$")
KEY_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/_-]*?):\s+(.*?)\s*$")
PART_SUFFIX_RE = re.compile(r"(_A[x0-9](_B[x0-9])?)$")

ACTIONS = ("none", "activate", "burn", "refuse", "unknown")


class FirmwareImageError(ValueError):
    """Output that is not the tool's, or a wanted version that is not one."""


def fw_version(text):
    """``(major, minor, subminor)`` of ``22.45.3608`` (or ``22_45_3608`` as image file names spell it); None for
    ``N/A`` or nothing."""
    value = (text or "").strip()
    if not value or value.upper() == "N/A":
        return None
    match = VERSION_RE.match(value)
    if not match:
        raise FirmwareImageError("%r is not a firmware version (like 22.45.3608)" % value)
    return tuple(int(part) for part in match.groups())


def version_text(version):
    return None if version is None else "%d.%d.%04d" % version


def _na(text):
    value = (text or "").strip()
    return None if not value or value.upper() == "N/A" else value


def _base_mac(text):
    """The ``Base MAC`` value (flint prints the MAC, then how many the card has: ``e41d2de70f8e   4``); None for N/A
    or nothing."""
    value = _na(text)
    return value.split()[0].lower() if value else None


def parse_fwmanager(text):
    """Each adapter of a firmware manager report: ``device_type``, ``part_number``, ``description``, ``psid``,
    ``pci``, ``base_mac`` (None where N/A), ``fw`` (burnt), ``running`` (what runs: the ``FW (Running)`` row, else
    the burnt one), ``available`` (the manager's image for it, None for N/A), ``status`` and ``roms`` ({PXE:
    version, UEFI: ...})."""
    devices, current, in_versions = [], None, False
    for line in (text or "").splitlines():
        if DEVICE_RE.match(line.strip()):
            current = dict(index=int(DEVICE_RE.match(line.strip()).group(1)), versions={})
            devices.append(current)
            in_versions = False
            continue
        if current is None or not line.strip() or set(line.strip()) == {"-"}:
            continue
        if in_versions and line.startswith("     ") and ":" not in line:
            words = line.split()
            if len(words) >= 3:
                current["versions"][" ".join(words[:-2])] = (_na(words[-2]), _na(words[-1]))
                continue
        match = KEY_RE.match(line)
        if not match:
            continue
        key, value = match.group(1).strip(), match.group(2)
        in_versions = key == "Versions"
        current[key] = value
    out = []
    for device in devices:
        versions = device["versions"]
        burnt, available = versions.get("FW", (None, None))
        if burnt is None and "FW" not in versions:
            raise FirmwareImageError("device #%d of the report has no FW row" % device["index"])
        running = (versions.get("FW (Running)") or (burnt, None))[0]
        out.append(dict(device_type=device.get("Device Type"), part_number=_na(device.get("Part Number")),
                        description=device.get("Description"), psid=_na(device.get("PSID")),
                        pci=_na(device.get("PCI Device Name")), base_mac=_base_mac(device.get("Base MAC")), fw=burnt,
                        running=running, available=available, status=device.get("Status"),
                        roms=dict((name, value[0]) for name, value in versions.items()
                                  if name not in ("FW", "FW (Running)"))))
    return out


def parse_flint_query(text):
    """``flint -d <dev> query`` (or ``flint -i <image> query``): ``image_type``, ``fw`` (the burnt image's version),
    ``running`` (the ``FW Version(Running)`` line, printed while another version runs than the burnt one; else
    ``fw``), ``product_version``, ``release_date``, ``psid``, ``base_mac`` (None where not printed or N/A) and ``roms``
    (the Rom Info lines)."""
    fields, roms, last = {}, [], None
    for line in (text or "").splitlines():
        if last == "Rom Info" and line.startswith(" ") and "=" in line:
            roms.append(line.strip())
            continue
        match = KEY_RE.match(line)
        if not match:
            continue
        last = match.group(1).strip()
        fields[last] = match.group(2)
        if last == "Rom Info":
            roms.append(match.group(2).strip())
    if "FW Version" not in fields or "PSID" not in fields:
        raise FirmwareImageError("not a flint query (no FW Version and PSID lines)")
    fw = fields["FW Version"].strip()
    return dict(image_type=fields.get("Image type"), fw=fw,
                running=(fields.get("FW Version(Running)") or fw).strip(),
                product_version=_na(fields.get("Product Version")), release_date=_na(fields.get("FW Release Date")),
                psid=fields["PSID"].strip(), base_mac=_base_mac(fields.get("Base MAC")), roms=roms)


def parse_burn(text):
    """``flint -d <dev> -i <image> -y burn`` (mstflint alike): ``current`` and ``new`` (the versions it printed
    before burning), ``errors`` (its ``-E-`` lines, without the marker) and ``done`` (a burn step ended ``- OK``:
    ``Restoring signature - OK`` on FS2/FS3 images, ``Writing Boot image component - OK`` on FS4)."""
    current = new = None
    errors, done = [], False
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("Current FW version on flash:"):
            current = stripped.split(":", 1)[1].strip() or None
        elif stripped.startswith("New FW version:"):
            new = stripped.split(":", 1)[1].strip() or None
        elif stripped.startswith("-E-"):
            errors.append(stripped[3:].strip())  # as parsers.error_lines reads them
        elif re.search(r"\s-\s+OK\s*$", stripped):
            done = True
    return dict(current=current, new=new, errors=errors, done=done)


def _entry_for(device, versions):
    """The site's entry for an adapter: by PSID, else by part number (with or without the ``_Ax`` suffix the
    manager prints)."""
    if device.get("psid") in versions:
        return device["psid"], versions[device["psid"]]
    part = device.get("part_number") or ""
    for key in (part, PART_SUFFIX_RE.sub("", part)):
        if key and key in versions:
            return key, versions[key]
    return None, None


def image_plan(devices, versions, policy="exact", allow_downgrade=False):
    """What each adapter needs: ``{pci, psid, part_number, burnt, running, wanted, key, action, reason}``, with
    ``action`` one of ACTIONS:

    - ``unknown``: no entry for its PSID or part number (reported, never guessed);
    - ``none``: the burnt image is wanted (``exact``: the same version; ``minimum``: that version or newer) and runs;
    - ``activate``: the burnt image is wanted but another runs (a reset or reboot loads it; nothing to burn);
    - ``burn``: the wanted image goes on (an older burnt one, or a newer one with ``exact`` and ``allow_downgrade``);
    - ``refuse``: ``exact`` asks for an older version than the burnt one and ``allow_downgrade`` is false.

    ``versions``: ``{psid or part number: wanted version text}``."""
    if policy not in ("exact", "minimum"):
        raise FirmwareImageError("policy must be exact or minimum, not %r" % (policy,))
    wanted_of = dict((key, fw_version(value)) for key, value in (versions or {}).items())
    plans = []
    for device in devices:
        burnt, running = fw_version(device.get("fw")), fw_version(device.get("running"))
        key, wanted = _entry_for(device, wanted_of)
        plan = dict(pci=device.get("pci"), psid=device.get("psid"), part_number=device.get("part_number"),
                    base_mac=device.get("base_mac"),
                    burnt=version_text(burnt), running=version_text(running), wanted=version_text(wanted), key=key)
        name = "%s (%s, %s)" % (device.get("pci") or "?", device.get("part_number") or "?", device.get("psid") or "?")
        if key is None:
            unread = "" if device.get("part_number") else (
                "; its part number was not read (flint's query prints none: the firmware manager's report does)")
            plan.update(action="unknown", reason="%s: no pinned version for its PSID or part number; left as it is "
                                                 "(%s)%s" % (name, version_text(burnt), unread))
        elif burnt == wanted or (policy == "minimum" and burnt is not None and burnt > wanted):
            if running is not None and running != burnt:
                plan.update(action="activate", reason="%s: %s is burnt but %s runs; a reset or reboot loads it"
                                                      % (name, version_text(burnt), version_text(running)))
            else:
                plan.update(action="none", reason="%s: runs %s (%s %s)" % (name, version_text(burnt), policy,
                                                                           version_text(wanted)))
        elif burnt is not None and burnt > wanted and not allow_downgrade:
            reason = "%s: %s would replace the newer %s, a downgrade: allow it (allow_downgrade) or pin %s" % (
                name, version_text(wanted), version_text(burnt), version_text(burnt))
            plan.update(action="refuse", reason=reason)
        else:
            plan.update(action="burn", reason="%s: %s to burn over %s" % (name, version_text(wanted), version_text(burnt)))
        plans.append(plan)
    return plans


RESET_LEVEL_RE = re.compile(r"^(\d+):\s*(.*?)\s*-(Supported|Not [Ss]upported)\s*(\(default\))?\s*$")
# mlxfwreset's level that loads new firmware with a driver restart and a PCI reset, the host kept up.
LIVE_RESET_LEVEL = 3


def parse_reset_levels(text):
    """The ``Reset-levels:`` section of ``mlxfwreset -d <dev> query`` (``mstfwreset`` alike): ``{level: {description,
    supported, default}}``; the reset types and syncs that follow are not levels."""
    levels, inside = {}, False
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("Reset-"):
            inside = stripped.startswith("Reset-levels")
            continue
        match = RESET_LEVEL_RE.match(stripped) if inside else None
        if match:
            levels[int(match.group(1))] = dict(description=match.group(2), supported=match.group(3) == "Supported",
                                               default=bool(match.group(4)))
    if not levels:
        raise FirmwareImageError("not an mlxfwreset query (no Reset-levels)")
    return levels
