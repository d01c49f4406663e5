#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_netns
short_description: RDMA network namespace mode and RDMA device placement in network namespaces
version_added: 1.0.0
description:
  - Sets the Linux RDMA subsystem's network namespace mode, at runtime (C(rdma system set netns))
    and persistently (the C(ib_core) module option C(netns_mode) in C(/etc/modprobe.d), with an initramfs
    update when C(ib_core) is in the initramfs).
  - In V(shared) mode (the kernel default) every RDMA device is visible in every network namespace.
    In V(exclusive) mode a device belongs to one namespace, and a pod or container that owns a NIC
    (an Intel E810 C(irdma0), a ConnectX C(mlx5_0)) gets it with C(rdma dev set DEVICE netns NAME).
  - Moves RDMA devices into a network namespace given by name, by process id, by container id
    (containerd or CRI-O through C(crictl), or C(nerdctl), or Docker) or by Kubernetes pod name and
    namespace (through C(crictl)), and back to the host. Where each device is, is read first, so a device
    already in place is left alone.
  - The kernel refuses to change the mode while any network namespace other than the host's exists. With
    O(persistent=present) the module then records the mode for the next boot and returns
    O(ignore:reboot_required); without it, it fails and names the namespaces.
  - Software RDMA devices (C(rdma_rxe) Soft-RoCE, C(siw)) cannot change namespace; the kernel answers
    C(Operation not supported) and the module fails with that explanation, changing nothing.
  - Input is checked (devices exist, the namespace exists, exclusive mode, iproute2 new enough) before
    anything is changed.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
  - roce.fabric.command_timeout
attributes:
  platform:
    description: Runs on the Linux host that carries the RDMA devices, as root.
    support: full
    platforms: posix
options:
  mode:
    description:
      - The network namespace mode of the RDMA subsystem. V(exclusive) is needed to move devices.
      - Applied at runtime unless O(runtime=false); recorded for boot when O(persistent=present).
    type: str
    choices: [shared, exclusive]
  runtime:
    description:
      - Change the running mode now (C(rdma system set netns)). When false only the persistent setting
        is managed and O(ignore:reboot_required) tells whether a reboot is needed.
    type: bool
    default: true
  persistent:
    description:
      - V(present) writes O(modprobe_file) with C(options ib_core netns_mode=0) (exclusive) or C(=1) (shared),
        so the mode holds after a reboot; requires O(mode).
      - V(absent) removes O(modprobe_file); ib_core then loads with the kernel default (shared) unless another
        file sets it.
      - Not given, the persistent setting is left alone (but still reported).
      - Another C(/etc/modprobe.d) file that would override the wanted mode is an error.
    type: str
    choices: [present, absent]
  modprobe_file:
    description: The modprobe configuration file this module owns.
    type: path
    default: /etc/modprobe.d/roce-fabric-ib_core.conf
  initramfs:
    description:
      - When O(modprobe_file) changes, update the initramfs of the running kernel (C(update-initramfs -u -k)
        on Debian/Ubuntu, C(dracut -f) on RHEL) so ib_core loaded from it gets the option too.
      - V(auto) does it only when ib_core is in that initramfs; V(always) and V(never) as named.
    type: str
    choices: [auto, always, never]
    default: auto
  devices:
    description:
      - RDMA devices (as C(rdma dev) names them, for example V(mlx5_0), V(irdma0)) to place.
      - With O(state=present) they go into the namespace given by O(netns), O(pid), O(container) or O(pod);
        with O(state=absent) they go back to the host's namespace.
    type: list
    elements: str
    aliases: [device]
  state:
    description:
      - V(present) places O(devices) in the given namespace, V(absent) returns them to the host.
    type: str
    choices: [present, absent]
    default: present
  netns:
    description: Name of an existing network namespace (as C(ip netns list) shows it).
    type: str
  pid:
    description:
      - A process whose network namespace is the target. When that namespace has no name yet, it is
        given O(netns_name) (C(ip netns attach)).
    type: int
  container:
    description:
      - A container id (or unique prefix, or a Docker/nerdctl name); its main process's namespace is the target.
    type: str
  pod:
    description:
      - A Kubernetes pod name (in O(pod_namespace)); the namespace of its sandbox, found with C(crictl), is the target.
    type: str
  pod_namespace:
    description: Kubernetes namespace of O(pod).
    type: str
    default: default
  container_runtime:
    description:
      - How O(container) is looked up. V(auto) takes the first of C(crictl), C(nerdctl), C(docker) found.
        O(pod) always uses C(crictl).
    type: str
    choices: [auto, crictl, nerdctl, docker]
    default: auto
  netns_name:
    description:
      - The name given to the target namespace when it has none (O(pid), O(container), O(pod)).
        Defaults to C(pid-PID), C(ctr-ID) (first 12 characters) or C(pod-NAMESPACE-NAME).
    type: str
notes:
  - "Needs iproute2 5.4 or later (C(rdma system)); older versions answer C(Unknown object 'system') and the module
    fails saying so."
  - "A namespace named by O(netns_name) is a bind mount under C(/run/netns); it lives until C(ip netns delete) or a reboot."
  - "Moving a device back to the host temporarily names the host's namespace C(roce-fabric-host) (C(ip netns attach
    roce-fabric-host 1)) and removes that name afterwards."
seealso:
  - name: rdma(8) system and dev commands
    description: The iproute2 commands used.
    link: https://man7.org/linux/man-pages/man8/rdma-system.8.html
"""

EXAMPLES = r"""
- name: Exclusive RDMA namespaces now and after every reboot
  roce.fabric.rdma_netns:
    mode: exclusive
    persistent: present
  register: netns

- name: Reboot when the running mode could not change yet
  ansible.builtin.reboot:
  when: netns.reboot_required

- name: Give the E810's RDMA device to a Kubernetes pod
  roce.fabric.rdma_netns:
    devices: [irdma0]
    pod: rdma-test
    pod_namespace: default

- name: Move a ConnectX RDMA device into a named namespace
  roce.fabric.rdma_netns:
    devices: [mlx5_1]
    netns: tenant1

- name: Into the namespace of a container started by nerdctl
  roce.fabric.rdma_netns:
    devices: [mlx5_2]
    container: 3f1a9c2b7d4e
    container_runtime: nerdctl

- name: Back to the host
  roce.fabric.rdma_netns:
    devices: [mlx5_1, mlx5_2]
    state: absent
"""

RETURN = r"""
changed:
  description: Whether the mode, the modprobe file, the initramfs or a device's namespace was (or would be) changed.
  returned: always
  type: bool
reboot_required:
  description:
    - True when O(persistent) is given and the running mode differs from the one ib_core will get at the next
      boot (a runtime change the kernel refused, O(runtime=false), or a removed file).
  returned: always
  type: bool
mode:
  description: The namespace mode, running and persistent, after the run (predicted in check mode).
  returned: always
  type: dict
  contains:
    running:
      description: V(shared), V(exclusive), or null when ib_core is not loaded.
      type: str
      sample: exclusive
    persistent:
      description: The mode ib_core gets when it loads, from C(/etc/modprobe.d).
      type: str
      sample: exclusive
    persistent_source:
      description: The modprobe file that sets it, or null for the kernel default.
      type: str
      sample: /etc/modprobe.d/roce-fabric-ib_core.conf
    copy_on_fork:
      description: C(copy-on-fork) as C(rdma system) prints it, when it does.
      type: bool
devices:
  description: Where each RDMA device is after the run, by namespace name (V(host) for the host's namespace).
  returned: always
  type: dict
  sample: {"mlx5_0": "host", "irdma0": "pod-default-rdma-test"}
target:
  description: The namespace the devices were placed in, and the process it was found by.
  returned: when devices are given
  type: dict
  sample: {"netns": "pod-default-rdma-test", "pid": 48213}
iproute2:
  description: Version of iproute2 (C(rdma -V)).
  returned: always
  type: str
  sample: 6.1.0
commands:
  description: The mutating commands run, or that would run in check mode.
  returned: always
  type: list
  elements: str
  sample: ["rdma system set netns exclusive", "rdma dev set irdma0 netns pod-default-rdma-test"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.rdma import tools as rdma_tools
from ansible_collections.roce.fabric.plugins.module_utils.rdma.host import HOST, HOST_ALIAS, RdmaHost
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun, command_timeout_spec
from ansible_collections.roce.fabric.plugins.module_utils.rdma.netns_mode import NamespaceMode
from ansible_collections.roce.fabric.plugins.module_utils.rdma.placement import DevicePlacement


def converge(module, host):
    """The namespace mode first (persistent, then running), then device placement; every check before any change."""
    p = module.params
    result = {}
    mode_part = NamespaceMode(host, p)
    placement = DevicePlacement(host, p)
    version = host.iproute2_version()
    system = host.running_mode()
    running_before = system.get("netns") if system else None
    persistent_before = rdma_tools.effective_persistent_mode(mode_part.modprobe_files())[0]
    mode = p["mode"]

    if p["devices"]:
        names = host.netns_names()
        by_name = not any(p[k] is not None for k in ("pid", "container", "pod"))
        will_run = mode if (mode and p["runtime"] and running_before) else running_before
        placement.check(names, host.locate(names) if by_name else None, will_run)

    persistent_after, source, file_changed = mode_part.persistent(mode)
    if file_changed:
        mode_part.update_initramfs()

    running_after = running_before
    if mode and p["runtime"] and running_before and running_before != mode:
        running_after = mode_part.set_running_mode(mode, system, p["persistent"] == "present")

    before_devices, after_devices = {}, {}
    if p["devices"]:
        before_devices, after_devices = placement.place(running_after, result)

    # Only a managed persistent mode asks for a reboot: otherwise a reboot would undo a runtime-only change.
    reboot_required = p["persistent"] is not None and bool(running_after) and running_after != persistent_after
    mode_info = {"running": running_after, "persistent": persistent_after, "persistent_source": source}
    if system and "copy_on_fork" in system:
        mode_info["copy_on_fork"] = system["copy_on_fork"]
    result.update(reboot_required=reboot_required, mode=mode_info, iproute2=version,
                  devices=after_devices if p["devices"] else {})
    host.run.set_diff({"mode": running_before, "persistent_mode": persistent_before, "devices": before_devices},
                      {"mode": running_after, "persistent_mode": persistent_after, "devices": after_devices})
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["shared", "exclusive"]),
            runtime=dict(type="bool", default=True),
            persistent=dict(type="str", choices=["present", "absent"]),
            modprobe_file=dict(type="path", default="/etc/modprobe.d/roce-fabric-ib_core.conf"),
            initramfs=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            devices=dict(type="list", elements="str", aliases=["device"]),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            netns=dict(type="str"),
            pid=dict(type="int"),
            container=dict(type="str"),
            pod=dict(type="str"),
            pod_namespace=dict(type="str", default="default"),
            container_runtime=dict(type="str", choices=["auto", "crictl", "nerdctl", "docker"], default="auto"),
            command_timeout=command_timeout_spec()["command_timeout"],
            netns_name=dict(type="str"),
        ),
        mutually_exclusive=[["netns", "pid", "container", "pod"]],
        required_if=[["persistent", "present", ["mode"]]],
        required_one_of=[["mode", "persistent", "devices"]],
        supports_check_mode=True,
    )
    p = module.params
    if p["devices"] is not None and not p["devices"]:
        module.fail_json(msg="devices must name at least one RDMA device")
    if p["devices"] and p["state"] == "present" and not any(p[k] is not None for k in ("netns", "pid", "container", "pod")):
        module.fail_json(msg="state=present with devices needs one of netns, pid, container, pod (state=absent returns them to the host)")
    if p["state"] == "absent" and any(p[k] is not None for k in ("netns", "pid", "container", "pod")):
        module.fail_json(msg="state=absent returns devices to the host's namespace; netns, pid, container and pod do not apply")
    if p["netns"] in (HOST, HOST_ALIAS):
        module.fail_json(msg="netns %s is reserved; use state=absent to return devices to the host" % p["netns"])
    run = ModuleRun(module)

    def body(run):
        engine = RdmaHost(run)
        try:
            run.update(**converge(module, engine))
        except FabricError as exc:
            run.fail(str(exc), **dict((k, v) for k, v in exc.details.items()
                                      if k in ("kind", "device", "namespaces", "stderr", "command", "failure", "failed_command")))
        finally:
            for warning in engine.warnings:
                module.warn(warning)

    run.execute(body)


if __name__ == "__main__":
    main()
