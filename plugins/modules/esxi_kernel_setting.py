#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: esxi_kernel_setting
short_description: Declarative VMware ESXi kernel (boot) settings such as atsSupport
version_added: 1.0.0
description:
  - Sets ESXi kernel settings, the values that C(esxcli system settings kernel set) changes, for example
    C(atsSupport) (PCIe Address Translation Services, needed for GPUDirect RDMA between passed-through devices).
  - A kernel setting has a Configured value (used at the next boot) and a Runtime value (the running kernel's).
    The module changes the Configured value; the host must reboot for it to become the Runtime value. The module
    never reboots; it reports O(ignore:reboot_required) per host so a role can reboot each host once, in
    maintenance mode.
  - "Two transports. V(vsphere) (default) talks to vCenter or the host's own API with pyVmomi: kernel settings are
    host advanced options C(VMkernel.Boot.<name>); hosts are chosen by name, by cluster, or all hosts of the vCenter.
    The API shows the Configured value and whether the host needs a reboot (C(summary.rebootRequired)), not the
    Runtime value itself."
  - V(ssh) runs C(esxcli) on the ESXi host the task targets (the ESXi Shell over SSH), which also reads the Runtime
    value of every setting.
  - Values are checked against the type the host reports for the setting (boolean, integer, text) before anything is
    changed; unknown settings fail. An error on any host changes nothing on any host.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  platform:
    description: V(vsphere) runs on the controller; V(ssh) runs on the ESXi host (its Python is C(/bin/python)).
    support: full
    platforms: [vmware, posix]
options:
  settings:
    description:
      - Kernel settings and their wanted values, by their esxcli name (V(atsSupport)); the advanced option form
        V(VMkernel.Boot.atsSupport) is accepted too.
      - Booleans may be given as V(true)/V(false) (also V(TRUE), V(yes), V(1)); integers as numbers or text.
    type: dict
    required: true
  transport:
    description: How to reach the setting. See the description.
    type: str
    choices: [vsphere, ssh]
    default: vsphere
  hostname:
    description:
      - vCenter or ESXi host name or address (V(vsphere)). Falls back to the E(VMWARE_HOST) environment variable.
    type: str
  port:
    description: API port (V(vsphere)). Falls back to E(VMWARE_PORT).
    type: int
    default: 443
  username:
    description: API user (V(vsphere)). Falls back to E(VMWARE_USER).
    type: str
    aliases: [user]
  password:
    description: API password (V(vsphere)). Falls back to E(VMWARE_PASSWORD).
    type: str
    aliases: [pass, pwd]
  validate_certs:
    description:
      - Verify the server's TLS certificate (V(vsphere)). Falls back to E(VMWARE_VALIDATE_CERTS).
        Turn it off only for test systems.
    type: bool
    default: true
  timeout:
    description:
      - Seconds, 1 to 3600, that connecting and each API request may take (V(vsphere)). A vCenter or host that
        accepts the connection and then never answers fails the task after this time instead of hanging the play.
      - O(command_timeout) bounds C(esxcli) (V(ssh)).
    type: int
    default: 60
  esxi_hostname:
    description:
      - The ESXi host to configure, by its name in vCenter (V(vsphere)). V(vsphere) needs it or O(cluster_name); an
        empty or missing name is refused rather than taken as every host of the vCenter.
    type: str
  cluster_name:
    description: Configure every host of this cluster (V(vsphere)).
    type: str
  esxcli_path:
    description: The C(esxcli) command on the host (V(ssh)).
    type: str
    default: esxcli
notes:
  - Connected hosts only; a host that is not connected (rebooting, not responding) fails the task, so a role can
    retry the module to wait for a host to come back.
seealso:
  - name: ESXi kernel settings with esxcli
    description: The esxcli system settings kernel namespace.
    link: https://developer.broadcom.com/xapis/esxcli-command-reference/latest/namespace/esxcli_system.html
  - module: roce.fabric.vmx_passthru
"""

EXAMPLES = r"""
- name: PCIe ATS on every host of a cluster (takes effect after each host's reboot)
  roce.fabric.esxi_kernel_setting:
    hostname: vcenter.example.com
    username: administrator@vsphere.local
    password: "{{ vcenter_password }}"
    cluster_name: gpu-cluster
    settings:
      atsSupport: true
  delegate_to: localhost
  register: ats

- name: Hosts that need a reboot
  ansible.builtin.debug:
    msg: "{{ ats.hosts | dict2items | selectattr('value.reboot_required') | map(attribute='key') | list }}"

- name: The same on one host through its ESXi Shell (esxcli), which also reads the Runtime value
  roce.fabric.esxi_kernel_setting:
    transport: ssh
    settings:
      atsSupport: true
"""

RETURN = r"""
changed:
  description: Whether a Configured value was (or, in check mode, would be) changed on any host.
  returned: always
  type: bool
reboot_required:
  description: True when any host must reboot for its Runtime values to match (a change was just made or one is pending).
  returned: always
  type: bool
hosts:
  description: Per host (by name), the settings found and what was done.
  returned: always
  type: dict
  sample:
    esx01.example.com:
      changed: true
      reboot_required: true
      settings:
        atsSupport:
          type: bool
          before: "false"
          after: "true"
          runtime: null
commands:
  description: The mutating esxcli commands run, or that would run in check mode (V(ssh) only; empty for V(vsphere)).
  returned: always
  type: list
  elements: str
  sample: ["esxcli system settings kernel set -s atsSupport -v TRUE"]
diff:
  description: Configured values before and after, per host.
  returned: when diff mode is on
  type: dict
"""

import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.esxi import kernel
from ansible_collections.roce.fabric.plugins.module_utils.esxi.parsers import parse_kernel_settings
from ansible_collections.roce.fabric.plugins.module_utils.esxi.vsphere import Vsphere, vim, vmodl, vsphere_argument_spec


def converge_vsphere(run, module, wanted):
    """Every host of the cluster (or the one named) is read and planned before any is changed."""
    params = module.params
    conn = Vsphere(module)
    try:
        hosts = conn.hosts(params["esxi_hostname"], params["cluster_name"],
                           props=["configManager.advancedOption", "summary.rebootRequired"])
        plans = []
        for host, props in hosts:
            name = props["name"]
            state = props["runtime.connectionState"]
            if state != "connected":
                raise FabricError("ESXi host %s is not connected (connection state: %s)" % (name, state), host=name,
                                  connection_state=state)
            manager = props["configManager.advancedOption"]
            try:
                options = dict((o.key, o.value) for o in manager.QueryOptions(name=kernel.PREFIX))
            except vim.fault.InvalidName:
                options = {}
            except vmodl.MethodFault as exc:
                raise FabricError("reading the kernel settings of %s failed: %s" % (name, exc.msg))
            entry, updates = kernel.plan_vsphere(name, options, wanted, props.get("summary.rebootRequired"))
            plans.append((name, manager, entry, updates))
        run.update(reboot_required=False, hosts={})
        for name, manager, entry, updates in plans:
            if updates:
                values = [vim.option.OptionValue(key=key, value=value) for key, value in updates]
                run.mutate("UpdateOptions %s: %s" % (name, ", ".join("%s=%s" % (key, entry["settings"][kernel.short_name(key)]["after"])
                                                                     for key, _v in updates)),
                           lambda manager=manager, values=values, name=name: _update(manager, values, name))
            _record(run, name, entry)
    finally:
        conn.close()


def _update(manager, values, name):
    try:
        manager.UpdateOptions(changedValue=values)
    except vmodl.MethodFault as exc:
        raise FabricError("setting kernel settings on %s failed: %s" % (name, exc.msg), host=name)


def _record(run, name, entry):
    run.result["hosts"][name] = entry
    run.update(reboot_required=run.result["reboot_required"] or entry["reboot_required"])
    before, after = kernel.diff_of(entry)
    run.before[name], run.after[name] = before, after


def converge_ssh(run, module, wanted):
    """This ESXi host, through esxcli in its shell."""
    runner = CommandRunner(module)
    esxcli = module.params["esxcli_path"]
    rc, out, err = runner.run([esxcli, "system", "settings", "kernel", "list"])
    if rc != 0:
        raise FabricError("esxcli system settings kernel list failed: %s" % (out + err).strip(), rc=rc, stdout=out, stderr=err)
    try:
        current = parse_kernel_settings(out)
    except ValueError as exc:
        raise FabricError("cannot read esxcli output: %s" % exc, stdout=out)
    entry, sets = kernel.plan_esxcli(current, wanted)
    run.update(reboot_required=False, hosts={})
    for setting, text in sets:
        argv = [esxcli, "system", "settings", "kernel", "set", "-s", setting, "-v", text]
        run.mutate(CommandRunner.render(argv), lambda argv=argv: _esxcli_set(runner, argv, run))
    _record(run, platform.node(), entry)


def _esxcli_set(runner, argv, run):
    rc, out, err = runner.run(argv, mutating=True)
    if rc != 0:
        raise FabricError("%s failed: %s" % (CommandRunner.render(argv), (out + err).strip()), rc=rc, stdout=out, stderr=err,
                          commands=run.result["commands"] + [CommandRunner.render(argv)])


def main():
    argument_spec = vsphere_argument_spec()
    argument_spec.update(command_timeout_spec())
    argument_spec.update(
        settings=dict(type="dict", required=True),
        transport=dict(type="str", choices=["vsphere", "ssh"], default="vsphere"),
        esxi_hostname=dict(type="str"),
        cluster_name=dict(type="str"),
        esxcli_path=dict(type="str", default="esxcli"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           mutually_exclusive=[["esxi_hostname", "cluster_name"]])

    def body(run):
        wanted = kernel.wanted_settings(module.params["settings"])
        if module.params["transport"] == "vsphere" and not (module.params["esxi_hostname"] or module.params["cluster_name"]):
            # An empty name used to select every host of the vCenter: a typo in inventory must not do that.
            raise FabricError("Name the ESXi host (esxi_hostname) or its cluster (cluster_name); an empty name would "
                              "select every host of the vCenter. Nothing was changed.", kind="bad_input")
        if module.params["transport"] == "ssh":
            converge_ssh(run, module, wanted)
        else:
            converge_vsphere(run, module, wanted)

    ModuleRun(module).execute(body)


if __name__ == "__main__":
    main()
