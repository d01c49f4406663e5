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

import glob
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils._command import CommandRunner
from ansible_collections.roce.fabric.plugins.module_utils import _rdma

HOST = "host"
HOST_ALIAS = "roce-fabric-host"
NETNS_RUN_DIRS = ("/run/netns", "/var/run/netns")
PROC = "/proc"
IB_CORE_SYSFS = "/sys/module/ib_core"
BOOT = "/boot"


class NetnsError(Exception):
    def __init__(self, msg, **details):
        super(NetnsError, self).__init__(msg)
        self.msg = msg
        self.details = details


class RdmaNetns(object):

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.runner = CommandRunner(module)
        self.check = module.check_mode
        self.rdma = module.get_bin_path("rdma", required=True)
        self.ip = module.get_bin_path("ip", required=True)
        self.changed = False
        self.reboot_required = False
        self.commands = []
        self.warnings = []

    # --- helpers -----------------------------------------------------------------------------------------

    def read(self, argv):
        return self.runner.run(argv)

    def mutate(self, argv, what):
        """Run a mutating command (or only record it in check mode); raise NetnsError with the tool's words."""
        self.commands.append(CommandRunner.render(argv))
        self.changed = True
        if self.check:
            return ""
        rc, out, err = self.runner.run(argv, mutating=True)
        if rc != 0:
            text = (err or out or "").strip()
            raise NetnsError("%s failed: %s" % (what, text or "rc=%d" % rc), kind=_rdma.classify_error(text),
                             command=CommandRunner.render(argv), rc=rc, stderr=err)
        return out

    # --- reading state -----------------------------------------------------------------------------------

    def iproute2_version(self):
        rc, out, err = self.read([self.rdma, "-V"])
        version = _rdma.parse_iproute2_version(out + err)
        if _rdma.iproute2_supports_netns(version) is False:
            raise NetnsError("iproute2 %s is too old: RDMA network namespaces need iproute2 %s or later "
                             "(rdma system, rdma dev set ... netns)" % (version, _rdma.MIN_IPROUTE2), kind="too_old")
        return version

    def running_mode(self):
        """``rdma system show`` parsed, or None when ib_core is not loaded."""
        rc, out, err = self.read([self.rdma, "system", "show"])
        try:
            return _rdma.parse_system(out if rc == 0 else out + err)
        except _rdma.RdmaToolError as exc:
            if exc.kind == "too_old":
                raise NetnsError("this iproute2 has no 'rdma system' (%s): RDMA network namespaces need iproute2 %s or later"
                                 % (exc.text, _rdma.MIN_IPROUTE2), kind="too_old")
            if not os.path.isdir(IB_CORE_SYSFS):
                return None
            raise NetnsError("cannot read the RDMA namespace mode: %s" % exc.text, kind=exc.kind)

    def modprobe_files(self):
        files = []
        directory = os.path.dirname(self.params["modprobe_file"])
        for path in sorted(glob.glob(os.path.join(directory, "*.conf"))):
            with open(path) as handle:
                files.append((path, handle.read()))
        return files

    def netns_names(self):
        rc, out, err = self.read([self.ip, "netns", "list"])
        if rc != 0:
            raise NetnsError("ip netns list failed: %s" % (err or out).strip())
        return [n for n in _rdma.parse_netns_list(out) if n != HOST_ALIAS]

    def devices_in(self, netns):
        if netns == HOST:
            argv = [self.rdma, "-j", "dev", "show"]
        elif netns.startswith("/"):
            nsenter = self.module.get_bin_path("nsenter", required=True)
            argv = [nsenter, "--net=%s" % netns, self.rdma, "-j", "dev", "show"]
        else:
            argv = [self.ip, "netns", "exec", netns, self.rdma, "-j", "dev", "show"]
        rc, out, err = self.read(argv)
        if rc != 0:
            return []
        return [d["name"] for d in _rdma.parse_devices(out)]

    def locate(self, names):
        """Device name -> namespace name (``host`` for the host's) for every device seen."""
        where = dict((dev, HOST) for dev in self.devices_in(HOST))
        for netns in names:
            for dev in self.devices_in(netns):
                where.setdefault(dev, netns)
        return where

    # --- persistent mode ---------------------------------------------------------------------------------

    def persistent(self, mode):
        path = self.params["modprobe_file"]
        wanted = self.params["persistent"]
        files = self.modprobe_files()
        before_mode, before_source = _rdma.effective_persistent_mode(files)
        others = [(n, t) for n, t in files if n != path]
        current = None
        if os.path.exists(path):
            with open(path) as handle:
                current = handle.read()
        if wanted == "present":
            content = _rdma.render_modprobe_file(mode)
            after_files = others + [(path, content)]
        elif wanted == "absent":
            content = None
            after_files = others
        else:
            return before_mode, before_source, False
        after_mode, after_source = _rdma.effective_persistent_mode(after_files)
        if wanted == "present" and after_mode != mode:
            raise NetnsError("%s sets netns_mode for %s mode and overrides %s (modprobe reads /etc/modprobe.d in name order, "
                             "the last one wins); remove it or set modprobe_file to sort after it"
                             % (after_source, after_mode, path), kind="conflict")
        if current == content:
            return after_mode, after_source, False
        self.changed = True
        if content is None:
            self.commands.append("rm %s" % path)
            if not self.check:
                os.unlink(path)
        else:
            self.commands.append("write %s: options ib_core netns_mode=%s" % (path, _rdma.NETNS_MODE_PARAM[mode]))
            if not self.check:
                self.module.atomic_move(self.write_temp(content), path)
                os.chmod(path, 0o644)
        return after_mode, after_source, True

    def write_temp(self, content):
        tmp = os.path.join(self.module.tmpdir, "ib_core.conf")
        with open(tmp, "w") as handle:
            handle.write(content)
        return tmp

    def update_initramfs(self):
        policy = self.params["initramfs"]
        if policy == "never":
            return
        release = platform.release()
        update = self.module.get_bin_path("update-initramfs")
        dracut = self.module.get_bin_path("dracut")
        if policy == "auto":
            image = None
            lister = None
            if update:
                image, lister = os.path.join(BOOT, "initrd.img-%s" % release), self.module.get_bin_path("lsinitramfs")
            elif dracut:
                image, lister = os.path.join(BOOT, "initramfs-%s.img" % release), self.module.get_bin_path("lsinitrd")
            if not image or not lister or not os.path.exists(image):
                return
            rc, out, err = self.read([lister, image])
            if rc != 0 or not _rdma.initramfs_has_module(out):
                return
        if update:
            self.mutate([update, "-u", "-k", release], "updating the initramfs")
        elif dracut:
            self.mutate([dracut, "-f", "--kver", release], "updating the initramfs")
        elif policy == "always":
            raise NetnsError("initramfs=always, but neither update-initramfs nor dracut is installed")

    # --- runtime mode ------------------------------------------------------------------------------------

    def set_running_mode(self, mode, system, persistent_present):
        changed_before = self.changed
        try:
            self.mutate([self.rdma, "system", "set", "netns", mode], "switching the RDMA namespace mode to %s" % mode)
        except NetnsError as exc:
            if exc.details.get("kind") != "busy":
                raise
            self.changed = changed_before
            self.commands.pop()
            names = self.netns_names()
            why = ("the kernel refuses to change the RDMA namespace mode while network namespaces other than the host's exist "
                   "(named: %s; containers and pods have unnamed ones)" % (", ".join(names) or "none"))
            if persistent_present:
                self.warnings.append("%s; %s mode is recorded for the next boot" % (why, mode))
                return system.get("netns")
            raise NetnsError("%s. Stop them, or use persistent=present and reboot" % why, kind="busy", namespaces=names)
        return mode

    # --- device placement --------------------------------------------------------------------------------

    def netns_of_pid(self, pid):
        """Name of the namespace of ``pid`` (``host`` for the host's), or None when it has no name."""
        path = os.path.join(PROC, str(pid), "ns", "net")
        try:
            inode = os.stat(path).st_ino
        except OSError:
            raise NetnsError("process %d does not exist (no %s)" % (pid, path), kind="no_netns")
        if inode == os.stat(os.path.join(PROC, "1", "ns", "net")).st_ino:
            return HOST
        for directory in NETNS_RUN_DIRS:
            for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
                try:
                    if os.stat(os.path.join(directory, name)).st_ino == inode and name != HOST_ALIAS:
                        return name
                except OSError:
                    continue
        return None

    def runtime_tool(self, wanted):
        names = ["crictl", "nerdctl", "docker"] if wanted == "auto" else [wanted]
        for name in names:
            path = self.module.get_bin_path(name)
            if path:
                return name, path
        raise NetnsError("no container runtime client found (looked for %s)" % ", ".join(names), kind="no_runtime")

    def pid_of_container(self, container):
        kind, tool = self.runtime_tool(self.params["container_runtime"])
        argv = [tool, "inspect", "-o", "json", container] if kind == "crictl" else [tool, "inspect", container]
        rc, out, err = self.read(argv)
        if rc != 0:
            raise NetnsError("container %s not found by %s: %s" % (container, kind, (err or out).strip()), kind="no_container")
        try:
            pid = _rdma.parse_inspect_pid(out)
        except (ValueError, AttributeError):
            raise NetnsError("cannot read %s inspect output for %s" % (kind, container))
        if not pid:
            raise NetnsError("container %s is not running (%s reports no process)" % (container, kind), kind="no_container")
        return pid

    def pid_of_pod(self, pod, namespace):
        tool = self.module.get_bin_path("crictl")
        if not tool:
            raise NetnsError("finding pod %s/%s needs crictl, which is not installed" % (namespace, pod), kind="no_runtime")
        rc, out, err = self.read([tool, "pods", "--name", pod, "--namespace", namespace, "-o", "json"])
        if rc != 0:
            raise NetnsError("crictl pods failed: %s" % (err or out).strip())
        ids = _rdma.parse_crictl_pods(out, pod, namespace)
        if not ids:
            raise NetnsError("no ready pod %s in namespace %s on this host" % (pod, namespace), kind="no_pod")
        if len(ids) > 1:
            raise NetnsError("%d ready sandboxes for pod %s/%s: %s" % (len(ids), namespace, pod, ", ".join(ids)))
        rc, out, err = self.read([tool, "inspectp", "-o", "json", ids[0]])
        pid = _rdma.parse_inspect_pid(out) if rc == 0 else None
        if not pid:
            raise NetnsError("pod %s/%s has no sandbox process" % (namespace, pod), kind="no_pod")
        return pid

    def target(self, known):
        """(namespace name, pid, name to give it or None when it has one already). Changes nothing."""
        p = self.params
        if p["state"] == "absent":
            return HOST, None, None
        if p["netns"]:
            if p["netns"] not in known:
                raise NetnsError("network namespace %s does not exist (ip netns list: %s)" % (p["netns"], ", ".join(known) or "none"),
                                 kind="no_netns")
            return p["netns"], None, None
        if p["pid"] is not None:
            pid, default = p["pid"], "pid-%d" % p["pid"]
        elif p["container"]:
            pid, default = self.pid_of_container(p["container"]), "ctr-%s" % p["container"][:12]
        else:
            pid, default = self.pid_of_pod(p["pod"], p["pod_namespace"]), "pod-%s-%s" % (p["pod_namespace"], p["pod"])
        name = self.netns_of_pid(pid)
        if name:
            return name, pid, None
        name = p["netns_name"] or default
        if name in known:
            raise NetnsError("namespace name %s is taken by another namespace; set netns_name" % name, kind="conflict")
        return name, pid, name

    def move(self, device, source, dest):
        dev_set = [self.rdma, "dev", "set", device, "netns"]
        try:
            if dest == HOST:
                self.mutate([self.ip, "netns", "attach", HOST_ALIAS, "1"], "naming the host namespace")
                try:
                    self.mutate([self.ip, "netns", "exec", source] + dev_set + [HOST_ALIAS], "moving %s to the host" % device)
                finally:
                    self.mutate([self.ip, "netns", "delete", HOST_ALIAS], "removing the host namespace name")
            elif source == HOST:
                self.mutate(dev_set + [dest], "moving %s into %s" % (device, dest))
            else:
                self.mutate([self.ip, "netns", "exec", source] + dev_set + [dest], "moving %s into %s" % (device, dest))
        except NetnsError as exc:
            kind = exc.details.get("kind")
            if kind == "not_supported":
                raise NetnsError("RDMA device %s cannot change network namespace: the kernel answers 'Operation not supported' "
                                 "for drivers that cannot detach their users (software devices rdma_rxe and siw never can; "
                                 "mlx5_ib, irdma and other hardware drivers can). Nothing was moved." % device,
                                 kind=kind, device=device, stderr=exc.details.get("stderr"))
            raise

    def place(self, mode_after, result):
        p = self.params
        names = self.netns_names()
        if mode_after != "exclusive":
            raise NetnsError("the RDMA subsystem is in %s mode: every device is visible in every namespace and none can be "
                             "moved; set mode: exclusive first" % (mode_after or "no (ib_core not loaded)"), kind="shared")
        where = self.locate(names)
        dest, pid, new_name = self.target(names)
        if new_name:
            # A device may already be in the target namespace, which has no name yet: look into it.
            for dev in self.devices_in(os.path.join(PROC, str(pid), "ns", "net")):
                where.setdefault(dev, dest)
        unknown = [d for d in p["devices"] if d not in where]
        if unknown:
            raise NetnsError("unknown RDMA device(s): %s (found: %s)" % (", ".join(unknown), ", ".join(sorted(where)) or "none"),
                             kind="no_device")
        result["target"] = {"netns": dest, "pid": pid}
        before = dict((d, where[d]) for d in p["devices"])
        moving = [d for d in p["devices"] if where[d] != dest]
        if moving and new_name:
            self.mutate([self.ip, "netns", "attach", new_name, str(pid)], "naming the namespace of process %d" % pid)
        for device in moving:
            self.move(device, where[device], dest)
        if self.check:
            after = dict((d, dest) for d in p["devices"])
        else:
            now = self.locate(self.netns_names())
            after = dict((d, now.get(d, dest if new_name and not moving else "unknown")) for d in p["devices"])
            wrong = [d for d in p["devices"] if after[d] != dest]
            if wrong:
                raise NetnsError("after the move, %s not in %s: %s" % (", ".join(wrong), dest, after))
        return before, after

    # --- main --------------------------------------------------------------------------------------------

    def run(self):
        p = self.params
        result = {}
        version = self.iproute2_version()
        system = self.running_mode()
        running_before = system.get("netns") if system else None
        persistent_before = _rdma.effective_persistent_mode(self.modprobe_files())[0]
        mode = p["mode"]

        # Everything that can be checked without changing anything, first.
        if p["devices"]:
            names = self.netns_names()
            if p["state"] == "present" and p["netns"] and p["netns"] not in names:
                raise NetnsError("network namespace %s does not exist (ip netns list: %s)" % (p["netns"], ", ".join(names) or "none"),
                                 kind="no_netns")
            if not any(p[k] is not None for k in ("pid", "container", "pod")):
                where = self.locate(names)
                unknown = [d for d in p["devices"] if d not in where]
                if unknown:
                    raise NetnsError("unknown RDMA device(s): %s (found: %s)" % (", ".join(unknown), ", ".join(sorted(where)) or "none"),
                                     kind="no_device")
            will_run = mode if (mode and p["runtime"] and running_before) else running_before
            if will_run != "exclusive":
                raise NetnsError("the RDMA subsystem is in %s mode: every device is visible in every namespace and none can be "
                                 "moved; set mode: exclusive first" % (will_run or "no (ib_core not loaded)"), kind="shared")

        persistent_after, source, file_changed = self.persistent(mode)
        if file_changed:
            self.update_initramfs()

        running_after = running_before
        if mode and p["runtime"] and running_before and running_before != mode:
            running_after = self.set_running_mode(mode, system, p["persistent"] == "present")

        before_devices, after_devices = {}, {}
        if p["devices"]:
            before_devices, after_devices = self.place(running_after, result)

        # Only a managed persistent mode asks for a reboot: otherwise a reboot would undo a runtime-only change.
        self.reboot_required = p["persistent"] is not None and bool(running_after) and running_after != persistent_after
        mode_info = {"running": running_after, "persistent": persistent_after, "persistent_source": source}
        if system and "copy_on_fork" in system:
            mode_info["copy_on_fork"] = system["copy_on_fork"]
        result.update(
            changed=self.changed, reboot_required=self.reboot_required, mode=mode_info, iproute2=version,
            devices=after_devices if p["devices"] else {}, commands=self.commands,
        )
        if self.module._diff:
            result["diff"] = {
                "before": {"mode": running_before, "persistent_mode": persistent_before, "devices": before_devices},
                "after": {"mode": running_after, "persistent_mode": persistent_after, "devices": after_devices},
            }
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
    engine = RdmaNetns(module)
    try:
        result = engine.run()
    except NetnsError as exc:
        module.fail_json(msg=exc.msg, changed=engine.changed, commands=engine.commands, **dict(
            (k, v) for k, v in exc.details.items() if k in ("kind", "device", "namespaces", "stderr", "command")))
    for warning in engine.warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
