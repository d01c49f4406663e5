# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading and changing a host NIC's QoS: ``mlnx_qos`` / ``dcb`` through argv lists, sysfs and configfs files.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import os

from ansible_collections.roce.fabric.plugins.module_utils.common.pci import read_sysfs as _read
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner, FabricError
from ansible_collections.roce.fabric.plugins.module_utils.qos import parsers
from ansible_collections.roce.fabric.plugins.module_utils.qos.state import CONFIGFS_RDMA_CM, ecn_path


class QosHost(object):
    """One netdev's QoS on this host."""

    def __init__(self, module, netdev, port=1, backend="auto", rdma_device=None):
        self.module = module
        self.netdev = netdev
        self.port = port
        self.runner = CommandRunner(module)
        if not os.path.isdir("/sys/class/net/%s" % netdev):
            raise FabricError("No network interface %s on this host; nothing was changed" % netdev, kind="no_device")
        self.rdma_device = rdma_device or self.find_rdma_device()
        self.backend, self.tool = self.pick_backend(backend)

    # --- discovery ---------------------------------------------------------------------------------

    def find_rdma_device(self):
        """The RDMA device whose port carries this netdev (mlx5_0, rxe0, ...), or None."""
        base = "/sys/class/infiniband"
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return None
        for name in names:
            if _read(os.path.join(base, name, "parent")) == self.netdev:
                return name
            ndevs = os.path.join(base, name, "ports", str(self.port), "gid_attrs", "ndevs")
            try:
                entries = os.listdir(ndevs)
            except OSError:
                entries = []
            if any(_read(os.path.join(ndevs, entry)) == self.netdev for entry in entries):
                return name
            if os.path.isdir(os.path.join(base, name, "device", "net", self.netdev)):
                return name
        return None

    def pick_backend(self, backend):
        found = dict((name, self.module.get_bin_path(name)) for name in ("mlnx_qos", "dcb"))
        if backend == "auto":
            for name in ("mlnx_qos", "dcb"):
                if found[name]:
                    return name, found[name]
            return None, None
        if backend == "none":
            return None, None
        if not found[backend]:
            raise FabricError("%s is not installed on this host (%s); nothing was changed" % (
                backend, "MLNX_OFED / DOCA mlnx-tools" if backend == "mlnx_qos" else "iproute2's dcb"), kind="tool_missing")
        return backend, found[backend]

    # --- reading -----------------------------------------------------------------------------------

    def _tool(self, argv):
        rc, out, err = self.runner.run(argv)
        return rc, out, err

    def read_dcb(self, need_trust):
        """trust, pfc, dscp2prio through the backend; FabricError when the netdev has no DCB support."""
        if self.backend == "mlnx_qos":
            rc, out, err = self._tool([self.tool, "-i", self.netdev])
            try:
                parsed = parsers.parse_mlnx_qos(out)
            except parsers.QosParseError:
                raise FabricError("%s has no DCB support that mlnx_qos can read (rc=%d): %s; nothing was changed" % (
                    self.netdev, rc, (err or out).strip()[-400:]), kind="no_dcb")
            return dict(trust=parsed["trust"] if parsed["trust"] in ("dscp", "pcp") else None,
                        pfc=[p for p, on in enumerate(parsed["pfc"]) if on],
                        dscp2prio=parsed["dscp2prio"], dcbx=parsed["dcbx"])
        rc, out, err = self._tool([self.tool, "pfc", "show", "dev", self.netdev, "prio-pfc"])
        if rc != 0:
            kind = parsers.dcb_error_kind(err or out) or "dcb_failed"
            raise FabricError("%s: %s (dcb pfc show: %s); nothing was changed" % (
                self.netdev, "the driver has no DCB support" if kind == "no_dcb" else "dcb could not read it",
                (err or out).strip()), kind=kind)
        pfc = [p for p, on in enumerate(parsers.parse_dcb_pfc(out)) if on]
        rc, out, err = self._tool([self.tool, "app", "show", "dev", self.netdev, "dscp-prio"])
        table = parsers.parse_dcb_app_dscp(out) if rc == 0 else {}
        dscp2prio = dict((d, p[-1]) for d, p in table.items() if len(p) == 1)
        trust = None
        rc, out, err = self._tool([self.tool, "apptrust", "show", "dev", self.netdev, "order"])
        if rc == 0:
            trust = parsers.dcb_trust(parsers.parse_dcb_apptrust(out))
        elif need_trust:
            kind = parsers.dcb_error_kind(err or out)
            raise FabricError("%s: cannot read the trust mode with dcb apptrust (%s)%s; nothing was changed" % (
                self.netdev, (err or out).strip(),
                ": iproute2 6.2 or later is needed (Debian 12: bookworm-backports)" if kind == "old_iproute2" else ""),
                kind=kind or "dcb_failed")
        return dict(trust=trust, pfc=pfc, dscp2prio=dscp2prio)

    def ecn_dir(self):
        return "/sys/class/net/%s/ecn" % self.netdev

    def read_ecn(self):
        """{prio: {np, rp}}, or None when the driver has no ECN sysfs."""
        if not os.path.isdir(self.ecn_dir()):
            return None
        ecn = {}
        for prio in range(8):
            ecn[prio] = dict((point[-2:], parsers.parse_int(_read(ecn_path(self.netdev, point, "enable/%d" % prio))))
                             for point in ("roce_np", "roce_rp"))
        return ecn

    def read_cnp(self):
        return (parsers.parse_int(_read(ecn_path(self.netdev, "roce_np", "cnp_dscp"))),
                parsers.parse_int(_read(ecn_path(self.netdev, "roce_np", "cnp_802p_prio"))))

    def configfs_present(self):
        return os.path.isdir(CONFIGFS_RDMA_CM)

    def tos_device_dir(self):
        return "%s/%s" % (CONFIGFS_RDMA_CM, self.rdma_device)

    def read_roce_tos(self):
        """(value, device dir present): RDMA-CM's default ToS; 0 (the kernel's default) until the dir exists."""
        directory = self.tos_device_dir()
        if not os.path.isdir(directory):
            return 0, False
        return parsers.parse_int(_read("%s/ports/%d/default_roce_tos" % (directory, self.port))), True

    def traffic_class_path(self):
        return "/sys/class/infiniband/%s/tc/%d/traffic_class" % (self.rdma_device, self.port)

    def read_traffic_class(self):
        text = _read(self.traffic_class_path())
        return None if text is None else parsers.parse_traffic_class(text)

    # --- changing ----------------------------------------------------------------------------------

    def apply(self, action):
        if "run" in action:
            rc, out, err = self.runner.run(action["run"], mutating=True)
            if rc != 0 or "failed" in (out or "").lower() or "Invalid" in (out or ""):
                raise FabricError("%s failed (rc=%d): %s" % (" ".join(action["run"]), rc, (err or out).strip()[-400:]),
                                  kind="command_failed")
            return
        if "mkdir" in action:
            try:
                os.mkdir(action["mkdir"])
            except OSError as exc:
                if not os.path.isdir(action["mkdir"]):
                    raise FabricError("mkdir %s: %s" % (action["mkdir"], exc), kind="write_failed")
            return
        try:
            with open(action["write"], "w") as handle:
                handle.write(action["value"])
        except (IOError, OSError) as exc:
            raise FabricError("write %s: %s: %s" % (action["write"], action["value"], exc), kind="write_failed")
