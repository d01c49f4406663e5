# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vSphere (vCenter or ESXi) connection and lookups shared by the roce.fabric VMware modules.

PRIVATE to the roce.fabric collection: may change without notice.

Reads go through the PropertyCollector (one call for a property set of many objects), so the
number of API calls of a module does not grow with the number of properties it reads.
"""

from __future__ import annotations

import socket
import ssl
import time
import traceback

from ansible.module_utils.basic import env_fallback, missing_required_lib

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import normalize_pci_address
from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError

PYVMOMI_IMPORT_ERROR = None
try:
    from pyVim.connect import Disconnect, SmartConnect
    from pyVmomi import vim, vmodl, VmomiSupport
except ImportError:
    PYVMOMI_IMPORT_ERROR = traceback.format_exc()
    vim = vmodl = VmomiSupport = None


def vsphere_argument_spec():
    """Connection options of every roce.fabric vSphere module, with the usual environment fallbacks."""
    return dict(
        hostname=dict(type="str", fallback=(env_fallback, ["VMWARE_HOST"])),
        port=dict(type="int", default=443, fallback=(env_fallback, ["VMWARE_PORT"])),
        username=dict(type="str", aliases=["user"], fallback=(env_fallback, ["VMWARE_USER"])),
        password=dict(type="str", aliases=["pass", "pwd"], no_log=True, fallback=(env_fallback, ["VMWARE_PASSWORD"])),
        validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["VMWARE_VALIDATE_CERTS"])),
        timeout=dict(type="int", default=60),
    )


class VsphereError(FabricError):
    """A vSphere call failed; the message says what was being done."""


class Vsphere(object):
    """One session to a vCenter or ESXi host."""

    def __init__(self, module):
        self.module = module
        if PYVMOMI_IMPORT_ERROR:
            module.fail_json(msg=missing_required_lib("pyVmomi"), exception=PYVMOMI_IMPORT_ERROR)
        params = module.params
        for key in ("hostname", "username", "password"):
            if not params.get(key):
                module.fail_json(msg="vSphere connection: '%s' is required (or set the VMWARE_%s environment variable)" % (
                    key, {"hostname": "HOST", "username": "USER", "password": "PASSWORD"}[key]))
        self.where = "%s:%s" % (params["hostname"], params["port"])
        if not 1 <= params["timeout"] <= 3600:
            module.fail_json(msg="vSphere connection: timeout must be 1 to 3600 seconds, not %s" % params["timeout"])
        context = ssl.create_default_context()
        if not params["validate_certs"]:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        # SmartConnect's first request (the API version probe) opens its own connection without
        # httpConnectionTimeout, so the process-wide default bounds it; a module is one process per task.
        socket.setdefaulttimeout(params["timeout"])
        try:
            self.si = SmartConnect(host=params["hostname"], port=params["port"], user=params["username"],
                                   pwd=params["password"], sslContext=context, httpConnectionTimeout=params["timeout"])
        except vim.fault.InvalidLogin:
            module.fail_json(msg="vSphere login to %s failed: user name or password is wrong" % self.where)
        except ssl.SSLError as exc:
            if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
                module.fail_json(msg="vSphere at %s: the server certificate could not be verified (%s). Install the vCenter "
                                     "CA certificate on the controller, or set validate_certs=false for a test system."
                                     % (self.where, getattr(exc, "verify_message", None) or exc))
            module.fail_json(msg="vSphere at %s: TLS error: %s" % (self.where, exc))
        except socket.timeout:
            module.fail_json(msg="vSphere at %s did not answer within %d seconds (option timeout)" % (self.where, params["timeout"]),
                             failure="timeout")
        except (OSError, IOError) as exc:
            module.fail_json(msg="vSphere at %s cannot be reached: %s" % (self.where, exc))
        except vmodl.MethodFault as exc:
            module.fail_json(msg="vSphere login to %s failed: %s" % (self.where, exc.msg))
        self.content = self.si.RetrieveContent()

    def close(self):
        try:
            Disconnect(self.si)
        except Exception:  # pylint: disable=broad-except
            pass

    def collect(self, vimtype, props, container=None):
        """[(object, {property: value})] for every object of ``vimtype`` below ``container`` (default: all)."""
        view = self.content.viewManager.CreateContainerView(container or self.content.rootFolder, [vimtype], True)
        try:
            collector = vmodl.query.PropertyCollector
            traversal = collector.TraversalSpec(name="view", path="view", skip=False, type=vim.view.ContainerView)
            spec = collector.FilterSpec(
                objectSet=[collector.ObjectSpec(obj=view, skip=True, selectSet=[traversal])],
                propSet=[collector.PropertySpec(type=vimtype, pathSet=list(props), all=False)])
            result = self.content.propertyCollector.RetrieveContents([spec])
        finally:
            view.DestroyView()
        return [(item.obj, dict((p.name, p.val) for p in item.propSet)) for item in result]

    def hosts(self, esxi_hostname=None, cluster_name=None, props=()):
        """Hosts by name, by cluster, or all; fails clearly when the name or cluster is unknown."""
        wanted = ["name", "runtime.connectionState"] + [p for p in props if p not in ("name", "runtime.connectionState")]
        container = None
        if cluster_name:
            clusters = [obj for obj, p in self.collect(vim.ClusterComputeResource, ["name"]) if p.get("name") == cluster_name]
            if not clusters:
                self.module.fail_json(msg="cluster '%s' not found in vCenter %s" % (cluster_name, self.where))
            container = clusters[0]
        found = self.collect(vim.HostSystem, wanted, container)
        if esxi_hostname:
            found = [(obj, p) for obj, p in found if p.get("name") == esxi_hostname]
            if not found:
                self.module.fail_json(msg="ESXi host '%s' not found in vCenter %s" % (esxi_hostname, self.where))
        if not found:
            where = " in cluster '%s'" % cluster_name if cluster_name else ""
            self.module.fail_json(msg="no ESXi hosts found%s in %s" % (where, self.where))
        return sorted(found, key=lambda item: item[1]["name"])

    def vms(self, props=()):
        wanted = ["name", "config.uuid", "config.instanceUuid"] + list(props)
        return self.collect(vim.VirtualMachine, wanted)

    def wait(self, task, what, timeout=600):
        deadline = time.time() + timeout
        while task.info.state in (vim.TaskInfo.State.queued, vim.TaskInfo.State.running):
            if time.time() > deadline:
                raise VsphereError("%s: the task did not finish in %d s" % (what, timeout))
            time.sleep(0.1)
        if task.info.state == vim.TaskInfo.State.error:
            error = task.info.error
            raise VsphereError("%s failed: %s%s" % (what, type(error).__name__.split(".")[-1],
                                                    (": " + error.msg) if getattr(error, "msg", None) else ""))
        return task.info.result


def typed_option_value(current, wanted):
    """``wanted`` converted to the type of the host's ``current`` option value; ValueError when it does not fit.

    Returns (python value for the API, display text). Booleans accept true/false/yes/no/1/0/on/off;
    integer options accept integers or their decimal/0x text; text options take any scalar as text.
    """
    if isinstance(current, bool):
        if isinstance(wanted, bool):
            return wanted, str(wanted).lower()
        text = str(wanted).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True, "true"
        if text in ("false", "0", "no", "off"):
            return False, "false"
        raise ValueError("%r is not a boolean; the host's option is of type boolean" % (wanted,))
    if isinstance(current, int):
        if isinstance(wanted, bool):
            raise ValueError("%r is not an integer; the host's option is of type integer" % (wanted,))
        try:
            number = wanted if isinstance(wanted, int) else int(str(wanted).strip(), 0)
        except ValueError:
            raise ValueError("%r is not an integer; the host's option is of type integer" % (wanted,))
        return number, str(number)
    if isinstance(wanted, bool):
        wanted = str(wanted).lower()
    return str(wanted), str(wanted)


def api_value(current, value):
    """A value pyVmomi serializes with the same XML type as ``current`` (long vs int)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    for name in ("long", "int"):
        kind = VmomiSupport.vmodlTypes.get(name) if VmomiSupport else None
        if kind is not None and isinstance(current, kind):
            return kind(value)
    return VmomiSupport.vmodlTypes["long"](value) if VmomiSupport else value


def display(value):
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


# --- VMs and their host ----------------------------------------------------------------------------

VM_PROPS = ["config.extraConfig", "config.hardware.device", "runtime.powerState", "runtime.host", "parent"]


def passthrough_devices(devices):
    """[(id, vendor_id)] of the VM's PCI passthrough devices, in order (pciPassthru0, 1, ...)."""
    found = []
    for device in devices or []:
        if isinstance(device, vim.vm.device.VirtualPCIPassthrough):
            backing = device.backing
            address = getattr(backing, "id", None)
            if address:
                try:
                    address = normalize_pci_address(address)
                except ValueError:
                    pass
                found.append((address, getattr(backing, "vendorId", None)))
    return found


def folder_paths(conn):
    folders = dict((f, p) for f, p in conn.collect(vim.Folder, ["name", "parent"]))
    datacenters = dict((d, p) for d, p in conn.collect(vim.Datacenter, ["name", "parent"]))

    root = conn.content.rootFolder

    def path(obj):
        # Inventory paths start below the root folder ("Datacenters"): /DC0/vm/gpu.
        parts = []
        while obj is not None and obj != root:
            props = folders.get(obj) or datacenters.get(obj)
            if props is None:
                break
            parts.append(props["name"])
            obj = props.get("parent")
        return "/" + "/".join(reversed(parts))
    return path


def find_vm(conn, params):
    """The one VM that ``params`` (``name`` with ``folder``, or ``uuid``) names, and its properties."""
    vms = conn.vms(VM_PROPS)
    if params["uuid"]:
        wanted = params["uuid"].lower()
        matches = [(vm, p) for vm, p in vms if wanted in ((p.get("config.uuid") or "").lower(), (p.get("config.instanceUuid") or "").lower())]
        what = "with UUID %s" % params["uuid"]
    else:
        matches = [(vm, p) for vm, p in vms if p.get("name") == params["name"]]
        what = "named '%s'" % params["name"]
        if params["folder"] and matches:
            path = folder_paths(conn)
            want = params["folder"].strip("/")
            matches = [(vm, p) for vm, p in matches
                       if path(p.get("parent")).strip("/") == want or path(p.get("parent")).rsplit("/", 1)[-1] == want]
            what += " in folder '%s'" % params["folder"]
    if not matches:
        raise VsphereError("no VM %s in %s" % (what, conn.where))
    if len(matches) > 1:
        raise VsphereError("%d VMs %s; give folder or uuid to choose one" % (len(matches), what))
    return matches[0]


def host_numa_nodes(conn, host):
    nodes = {}
    name = None
    for obj, props in conn.collect(vim.HostSystem, ["name", "hardware.numaInfo"]):
        if obj != host:
            continue
        name = props.get("name")
        info = props.get("hardware.numaInfo")
        for node in (info.numaNode if info else None) or []:
            for pci_id in node.pciId or []:
                try:
                    nodes[normalize_pci_address(pci_id)] = int(node.typeId)
                except ValueError:
                    continue
    return name, nodes
