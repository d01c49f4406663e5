#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: boot_units
short_description: The helpers, their data and the systemd units that apply a host's settings at every boot, in one call
version_added: 1.0.0
description:
  - Writes the files a host's boot units need (the helper programs they run, the settings they read), the units
    themselves, enables them and, where asked, starts or restarts them, reading everything it compares in one call
    (one C(lstat) and read a file, one C(systemctl show) for every unit) and changing only what differs.
  - What the roles of this collection use for their boot units (Soft-RoCE devices, NIC QoS, SR-IOV VFs, the NVMe
    scratch array, the RDMA exporter) in place of one C(copy), C(template), C(file) and C(systemd_service) task
    each, which cost a module call apiece on the host.
  - Files are regular files owned by root, written atomically (a temporary file in the same directory, its mode
    and owner set, then renamed over the old one); a missing parent directory is made (mode 0755, root) unless
    O(directories) gives its mode. A directory, a symbolic link or a device where a file should be is refused with
    nothing changed; so is a path or unit name outside the characters below, and a mode that lets every user
    write.
  - One C(systemctl daemon-reload) when a unit file was written or removed (or systemd says it needs one), then
    one C(systemctl enable), one C(start) and one C(restart) for the units that need it; units to remove are
    stopped and disabled before their files go.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  directories:
    description:
      - Directories to have, owned by root, with their mode.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description:
          - Absolute, normalised path of letters, digits and C(_@%+=:,.-), not under C(/proc), C(/sys),
            C(/dev) or C(/run/udev).
        type: str
        required: true
      mode:
        description: Octal mode; never writable by every user.
        type: str
        default: "0755"
  files:
    description:
      - Files to have, owned by root, with this content and mode (a helper a unit runs, the settings it reads).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path, as for O(directories[].path).
        type: str
        required: true
      content:
        description: The whole content of the file (UTF-8).
        type: str
        required: true
      mode:
        description: Octal mode; never writable by every user.
        type: str
        default: "0644"
  units:
    description:
      - systemd units to have in O(unit_dir) (mode 0644, root), enabled unless told otherwise.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - Unit name, letters, digits and C(_.:@-) ending in C(.service), C(.timer), C(.socket), C(.path),
            C(.mount) or C(.target).
        type: str
        required: true
      content:
        description: The unit file's whole content.
        type: str
        required: true
      enabled:
        description: Enable the unit (its C([Install]) section) so that it runs at boot.
        type: bool
        default: true
      started:
        description:
          - Start the unit now when it is not active. A C(Type=oneshot) unit needs C(RemainAfterExit=yes) to stay
            active, or it is started again on every run.
        type: bool
        default: false
      restart_on_change:
        description:
          - With O(units[].started), restart the running unit when this call changed any file, directory or unit.
        type: bool
        default: false
  remove_units:
    description:
      - Unit names to take away from O(unit_dir) (stopped and disabled first where they run or are enabled).
    type: list
    elements: str
    default: []
  remove_files:
    description:
      - Paths to take away (files or symbolic links, never a directory), as for O(files[].path).
    type: list
    elements: str
    default: []
  unit_dir:
    description: Where unit files are written.
    type: str
    default: /etc/systemd/system
notes:
  - Needs systemd as the host's init when O(units) or O(remove_units) are given.
  - Contents are compared byte for byte; a template rendered on the controller is compared as it is rendered.
seealso:
  - module: ansible.builtin.systemd_service
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: The SR-IOV helper and one unit per device, enabled (one module call)
  roce.fabric.boot_units:
    files:
      - path: /usr/local/sbin/roce-fabric-sriov-numvfs
        content: "{{ lookup('ansible.builtin.file', 'roce-fabric-sriov-numvfs', rstrip=false) }}"
        mode: "0755"
    units:
      - name: roce-fabric-sriov-ens1f0np0.service
        content: "{{ lookup('ansible.builtin.template', 'sriov.service.j2') }}"

- name: A service that runs now and restarts when its program changes
  roce.fabric.boot_units:
    files:
      - path: /usr/local/libexec/roce-rdma-exporter
        content: "{{ exporter_program }}"
        mode: "0755"
    units:
      - name: roce-rdma-exporter.service
        content: "{{ exporter_unit }}"
        started: true
        restart_on_change: true

- name: Take a unit and its settings away
  roce.fabric.boot_units:
    remove_units: [roce-fabric-scratch-scratch.service]
    remove_files: [/etc/roce-fabric/scratch/scratch.json]
"""

RETURN = r"""
files:
  description: The files, directories and unit files this run wrote, made, changed the mode or owner of, or removed.
  returned: always
  type: list
  elements: str
  sample: [/usr/local/sbin/roce-fabric-sriov-numvfs, /etc/systemd/system/roce-fabric-sriov-ens1f0np0.service]
units:
  description: Each unit of O(units) after the run (in check mode, as it would be).
  returned: always
  type: list
  elements: dict
  sample: [{name: roce-fabric-sriov-ens1f0np0.service, enabled: true, active: true}]
daemon_reload:
  description: Whether systemd was told to read its units again.
  returned: always
  type: bool
started:
  description: The units of O(units) started by this run (in check mode, that would be).
  returned: always
  type: list
  elements: str
restarted:
  description: The running units of O(units) restarted for a change of this run.
  returned: always
  type: list
  elements: str
stopped:
  description: The units of O(remove_units) that were running and were stopped.
  returned: always
  type: list
  elements: str
commands:
  description: The file changes and systemctl commands that changed (in check mode, would change) the host.
  returned: always
  type: list
  elements: str
"""

import posixpath

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.systemd import parsers, state
from ansible_collections.roce.fabric.plugins.module_utils.systemd.transport import Host


def describe(have):
    """A path's kind, mode and owner for the diff (its content goes into a text diff of its own)."""
    if have is None:
        return None
    return dict(kind=have["kind"], mode="%04o" % have["mode"],
                owner="root:root" if (have["uid"], have["gid"]) == (0, 0) else "%d:%d" % (have["uid"], have["gid"]))


def missing_directories(host, paths):
    """Every directory on the way to ``paths`` that is not there, parents first, each once (the caller leaves out
    those it makes with their own mode)."""
    missing = []
    for path in paths:
        chain = []
        while path and path != "/" and host.lstat(path) is None:
            chain.insert(0, path)
            path = posixpath.dirname(path)
        missing += [p for p in chain if p not in missing]
    return sorted(missing, key=lambda p: (p.count("/"), p))


def converge(run, params):
    try:
        want = state.check_input(params)
    except state.BootUnitsInputError as exc:
        raise FabricError("Invalid input, nothing was changed: %s" % exc, kind="invalid")
    host = Host(run.module, run)

    # Everything is read and decided before the first change.
    plans = []
    try:
        for item in sorted(want["directories"], key=lambda d: d["path"].count("/")):
            have = host.lstat(item["path"])
            plans.append(("directory", item, have, state.directory_plan(item, have)))
        for item in want["files"] + want["units"]:
            have = host.lstat(item["path"], content=True)
            plans.append(("file", item, have, state.file_plan(item, have)))
        removals = []
        for path in want["remove_files"] + [item["path"] for item in want["remove_units"]]:
            have = host.lstat(path)
            if have is not None and have["kind"] not in ("file", "symbolic link"):
                raise state.BootUnitsInputError("%s is a %s; only files and links are removed, nothing was changed"
                                                % (path, have["kind"]))
            if have is not None:
                removals.append(path)
    except state.BootUnitsInputError as exc:
        raise FabricError(str(exc), kind="refused")
    names = [item["name"] for item in want["units"] + want["remove_units"]]
    show = host.show(names)
    # Missing directories above what is wanted (a directory of O(directories), or a file's folder that is not one
    # of them) are made first, 0755 root, from the top down.
    wanted_dirs = [d["path"] for d in want["directories"]]
    tops = [posixpath.dirname(d) for d in wanted_dirs]
    for kind, item, have, actions in plans:
        if kind == "file" and "write" in actions and posixpath.dirname(item["path"]) not in wanted_dirs:
            tops.append(posixpath.dirname(item["path"]))
    touched = []
    before, after = {}, {}
    for path in missing_directories(host, tops):
        if path not in wanted_dirs:
            host.mkdir(path, 0o755)
            touched.append(path)
    for kind, item, have, actions in plans:
        if not actions:
            continue
        path = item["path"]
        touched.append(path)
        before[path] = describe(have)
        if kind == "directory":
            after[path] = dict(kind="directory", mode="%04o" % item["mode"], owner="root:root")
            if "mkdir" in actions:
                host.mkdir(path, item["mode"])
        else:
            after[path] = dict(kind="file", mode="%04o" % item["mode"], owner="root:root")
            if "write" in actions:
                run.text_diff(path, state.text((have or {}).get("content")), state.text(item["content"]))
                host.write(path, item["content"], item["mode"])
        if "chmod" in actions:
            host.chmod(path, item["mode"])
        if "chown" in actions:
            host.chown(path)

    written_units = [item["name"] for kind, item, have, actions in plans if "name" in item and "write" in actions]
    plan = state.unit_plan(want["units"], want["remove_units"], show,
                           written_units + [item["name"] for item in want["remove_units"] if item["path"] in removals])
    if plan["stop"]:
        host.change(["stop", "--"] + plan["stop"])
    if plan["disable"]:
        host.change(["disable", "--no-reload", "--"] + plan["disable"])
    for path in removals:
        have = host.lstat(path, content=True)
        if have is None and not run.check_mode:
            # "systemctl disable" took it already (a link in a .wants folder).
            continue
        before[path] = describe(have) if have else dict(kind="symbolic link")
        after[path] = None
        run.text_diff(path, state.text((have or {}).get("content")), None)
        host.remove(path)
        touched.append(path)
    if plan["daemon_reload"]:
        host.change(["daemon-reload"])
    if plan["enable"]:
        host.change(["enable", "--"] + plan["enable"])
    starts = state.start_plan(want["units"], show, bool(touched))
    if starts["start"]:
        host.change(["start", "--"] + starts["start"])
    if starts["restart"]:
        host.change(["restart", "--"] + starts["restart"])

    units = []
    for item in want["units"]:
        props = show.get(item["name"], {})
        name = item["name"]
        now = dict(name=name, enabled=parsers.enabled(props) or name in plan["enable"],
                   active=parsers.active(props) or name in starts["start"])
        units.append(now)
        was = dict(enabled=parsers.enabled(props), active=parsers.active(props))
        if (was["enabled"], was["active"]) != (now["enabled"], now["active"]) or name in starts["restart"]:
            before["unit:%s" % name] = was
            after["unit:%s" % name] = dict(enabled=now["enabled"], active=now["active"],
                                           restarted=name in starts["restart"])
    for item in want["remove_units"]:
        name = item["name"]
        if name in plan["stop"] or name in plan["disable"]:
            before["unit:%s" % name] = dict(enabled=name in plan["disable"], active=name in plan["stop"])
            after["unit:%s" % name] = dict(enabled=False, active=False)
    run.set_diff(before, after)
    run.update(files=touched, units=units, daemon_reload=plan["daemon_reload"], started=starts["start"],
               restarted=starts["restart"], stopped=plan["stop"])


def main():
    path_spec = dict(path=dict(type="str", required=True), mode=dict(type="str", default="0755"))
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[], options=path_spec),
            files=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="str", required=True),
                content=dict(type="str", required=True),
                mode=dict(type="str", default="0644"),
            )),
            units=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                content=dict(type="str", required=True),
                enabled=dict(type="bool", default=True),
                started=dict(type="bool", default=False),
                restart_on_change=dict(type="bool", default=False),
            )),
            remove_units=dict(type="list", elements="str", default=[]),
            remove_files=dict(type="list", elements="str", default=[]),
            unit_dir=dict(type="str", default="/etc/systemd/system"),
            **command_timeout_spec()
        ),
        supports_check_mode=True,
    )
    ModuleRun(module, files=[], units=[], daemon_reload=False, started=[], restarted=[], stopped=[]).execute(lambda run: converge(run, module.params))


if __name__ == "__main__":
    main()
