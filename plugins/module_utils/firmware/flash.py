# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ConnectX firmware images on one host: read what each adapter holds and runs, check the site's image, burn it.

PRIVATE to the roce.fabric collection: may change without notice.

The transport is the host's ``flint`` (NVIDIA MFT) or ``mstflint`` (Debian's mstflint; the same commands and output):
``-d <dev> query`` for an adapter, ``-i <image> query`` for an image file, ``-d <dev> -i <image> -y burn``. Where the
firmware manager is installed (MFT's ``mlxfwmanager``, mstflint's ``mstfwmanager``) an adapter is read with
``<manager> -d <dev> --query`` instead: its report carries the adapter's part number besides its PSID and versions,
so a site may pin firmware by part number. What to
do is decided by ``image.image_plan`` and ``image_checks`` below from one comparison; roce.fabric.nic_firmware_image's
``converge`` runs it: every adapter read and every image checked (its SHA-256, the PSID and version it carries)
before the first burn, then one adapter at a time, each read again after its burn.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.roce.fabric.plugins.module_utils.common.netpath import (
    NetPathError,
    address_interfaces,
    controller_path,
    ip_address,
    parse_ssh_connection,
    resolved_addresses,
    route_device,
    session_ssh_connection,
)
from ansible_collections.roce.fabric.plugins.module_utils.common.pci import (
    MELLANOX_VENDOR_ID,
    adapter_address,
    netdev_pci_address,
    pci_device_info,
)
from ansible_collections.roce.fabric.plugins.module_utils.common.private import PrivateDirError, private_dir
from ansible_collections.roce.fabric.plugins.module_utils.common.run import CommandRunner
from ansible_collections.roce.fabric.plugins.module_utils.firmware.image import (
    FirmwareImageError,
    LIVE_RESET_LEVEL,
    fw_version,
    parse_burn,
    parse_fwmanager,
    parse_flint_query,
    parse_reset_levels,
    version_text,
)
from ansible_collections.roce.fabric.plugins.module_utils.firmware.parsers import error_lines
from ansible_collections.roce.fabric.plugins.module_utils.firmware.transport import FirmwareError, FirmwareTool

SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
PSID_RE = re.compile(r"^[A-Za-z0-9_]{1,16}$")
# NVIDIA's ordering part numbers: MCX623106AN-CDA, MCX755106AS-HEA_Ax, MNV303212A-ADL_Ax.
PART_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{2,39}$")
# A burn writes the whole flash: minutes on older adapters.
DEFAULT_BURN_TIMEOUT = 900


class FlashTool(FirmwareTool):
    """The host's flint or mstflint, and the adapters it can address (resolved as FirmwareTool resolves them)."""

    CANDIDATES = ("flint", "mstflint")
    MSTFLINT = "mstflint"

    def __init__(self, module, tool="auto", tool_path=None, burn_timeout=DEFAULT_BURN_TIMEOUT):
        super(FlashTool, self).__init__(module, tool, tool_path)
        self.burner = CommandRunner(module, timeout=burn_timeout)

    def _query(self, argv, what):
        rc, out, err = self.runner.run(argv)
        errors = error_lines(out) + error_lines(err)
        if rc != 0 or errors:
            cause = "; ".join(errors) or (err or out).strip() or "exit code %d" % rc
            raise FirmwareError("%s query of %s failed: %s" % (self.kind, what, cause), category="query_failed", rc=rc,
                                stdout=out, stderr=err)
        try:
            return parse_flint_query(out)
        except FirmwareImageError as exc:
            raise FirmwareError("Cannot read %s's query of %s: %s" % (self.kind, what, exc), category="parse_error",
                                stdout=out)

    def query_device(self, device):
        return self._query([self.path, "-d", device, "query"], device)

    def manager(self, reader="auto"):
        """The firmware manager that reads the adapters (``reader``: ``auto`` takes it where installed, ``flint``
        never; ``manager`` requires it); None to read with the burning tool's query."""
        if reader == "flint":
            return None
        names = ["mstfwmanager", "mlxfwmanager"] if self.kind == "mstflint" else ["mlxfwmanager", "mstfwmanager"]
        for name in names:
            found = self.module.get_bin_path(name)
            if found:
                return found
        if reader == "manager":
            raise FirmwareError("reader=manager: neither mlxfwmanager (NVIDIA MFT) nor mstfwmanager (mstflint) is "
                                "installed", category="tool_missing")
        return None

    def query_adapter(self, device, manager=None):
        """An adapter's ``psid``, ``fw`` (burnt), ``running``, ``base_mac`` (None where not reported) and
        ``part_number`` (None where flint's query is the reader: it does not print one), read by the firmware manager
        when one is given, else by the tool's query."""
        if not manager:
            return dict(self.query_device(device), part_number=None)
        rc, out, err = self.runner.run([manager, "-d", device, "--query"])
        errors = error_lines(out) + error_lines(err)
        if rc != 0 or errors:
            cause = "; ".join(errors) or (err or out).strip() or "exit code %d" % rc
            raise FirmwareError("%s query of %s failed: %s" % (os.path.basename(manager), device, cause),
                                category="query_failed", rc=rc, stdout=out, stderr=err)
        try:
            found = parse_fwmanager(out)
        except FirmwareImageError as exc:
            raise FirmwareError("Cannot read %s's report of %s: %s" % (os.path.basename(manager), device, exc),
                                category="parse_error", stdout=out)
        if len(found) != 1 or not found[0]["psid"]:
            raise FirmwareError("%s's report of %s names %d adapters, not one with a PSID" % (
                os.path.basename(manager), device, len(found)), category="parse_error", stdout=out)
        adapter = found[0]
        return dict(psid=adapter["psid"], fw=adapter["fw"], running=adapter["running"] or adapter["fw"],
                    part_number=adapter["part_number"], device_type=adapter["device_type"], base_mac=adapter["base_mac"])

    def query_image(self, image):
        return self._query([self.path, "-i", image, "query"], image)

    def burn_argv(self, device, image):
        return [self.path, "-d", device, "-i", image, "-y", "burn"]

    def reset_tool(self):
        """MFT's mlxfwreset or mstflint's mstfwreset (the one of the burning tool's family first); None without."""
        names = ["mstfwreset", "mlxfwreset"] if self.kind == "mstflint" else ["mlxfwreset", "mstfwreset"]
        for name in names:
            found = self.module.get_bin_path(name)
            if found:
                return found
        return None

    def reset_levels(self, tool, device):
        rc, out, err = self.runner.run([tool, "-d", device, "query"])
        try:
            if rc == 0:
                return parse_reset_levels(out)
        except FirmwareImageError:
            pass
        cause = (err or out).strip() or "exit code %d" % rc
        raise FirmwareError("%s query of %s failed: %s" % (os.path.basename(tool), device, cause), category="query_failed")

    @staticmethod
    def reset_argv(tool, device):
        return [tool, "-d", device, "--level", str(LIVE_RESET_LEVEL), "-y", "reset"]

    def reset(self, argv):
        """A live firmware reset; FirmwareError with the tool's words when it did not load the firmware."""
        rc, out, err = self.burner.run(argv, mutating=True)
        if rc != 0 or "FW was loaded successfully" not in out:
            errors = error_lines(out) + error_lines(err)
            cause = "; ".join(errors) or (err or out).strip() or "exit code %d" % rc
            raise FirmwareError("%s reset of %s failed: %s" % (os.path.basename(argv[0]), argv[2], cause),
                                category="reset_failed", rc=rc, stdout=out, stderr=err,
                                failed_command=CommandRunner.render(argv))

    def boot_id(self):
        """This boot's id (``/proc/sys/kernel/random/boot_id``), None where it cannot be read."""
        try:
            with open(os.path.join(self.sysfs_root, "proc", "sys", "kernel", "random", "boot_id")) as handle:
                return handle.read().strip() or None
        except (IOError, OSError):
            return None

    def controller_path(self, host_address=None):
        """Which interfaces carry the controller's session (``netpath.controller_path``): from SSH_CONNECTION, the
        module's own or, under ``become``, its login session's, and from ``host_address`` (the inventory's address of
        this host) resolved here. ``unknown`` says why none was found: then no live reset may run."""
        ip = self.module.get_bin_path("ip")
        if not ip:
            return dict(interfaces=[], unknown="the host has no ip command (iproute2) to read its routes and addresses")
        value, source = session_ssh_connection(proc_root=os.path.join(self.sysfs_root, "proc"))
        ssh = parse_ssh_connection(value)
        client_route = None
        if ssh and not ssh["client"].is_loopback:
            rc, out, _err = self.runner.run([ip, "-j", "route", "get", str(ssh["client"])])
            try:
                client_route = route_device(out) if rc == 0 else None
            except NetPathError:
                client_route = None
        rc, out, _err = self.runner.run([ip, "-j", "address", "show"])
        try:
            addresses = address_interfaces(out) if rc == 0 else {}
        except NetPathError:
            addresses = {}
        return controller_path(ssh, source, client_route, addresses, self.resolve(host_address))

    def resolve(self, host_address):
        """The addresses ``host_address`` names on this host: itself where it is an address, else ``getent ahosts``
        (the host's resolver, under the command timeout); [] where it names none."""
        if not host_address:
            return []
        literal = ip_address(host_address)
        if literal is not None:
            return [literal]
        getent = self.module.get_bin_path("getent")
        if not getent:
            return []
        rc, out, _err = self.runner.run([getent, "ahosts", host_address])
        return resolved_addresses(out) if rc == 0 else []

    def adapter_of(self, name):
        """The adapter (its first physical function's PCI address) behind interface ``name``: a virtual function's is
        its physical function's; None where no PCI device is behind it (a veth, a dummy, a bridge of its own)."""
        try:
            address = netdev_pci_address(name, self.sysfs_root)
        except ValueError:
            return None
        info = pci_device_info(address, self.sysfs_root) or {}
        if info.get("physfn"):
            address = info["physfn"]
        return adapter_address(address, self.sysfs_root)

    def protected_adapters(self, keep_netdevs, controller_interfaces=()):
        """{adapter: why} of the adapters no live reset may touch: those that carry the controller's session
        (``controller_interfaces``, from ``controller_path``) and those of ``keep_netdevs`` (a management network,
        a storage path), also below a bond, bridge or VLAN and through a virtual function."""
        reasons = {}
        named = [(name, "it carries %s (keep_netdevs)" % name) for name in keep_netdevs or []]
        named += [(name, "it carries the controller's session (%s: %s)" % (name, why)) for name, why in controller_interfaces]
        for name, why in named:
            for port in self.ports_under(name):
                adapter = self.adapter_of(port)
                if adapter:
                    reasons.setdefault(adapter, why)
        return reasons

    def is_connectx(self, adapter):
        return ((pci_device_info(adapter, self.sysfs_root) or {}).get("vendor") or "").lower() == MELLANOX_VENDOR_ID

    def ports_under(self, name, depth=0):
        """``name`` and the interfaces below it (a VLAN's parent, a bond's or a bridge's members: sysfs
        ``lower_<name>`` links), so a management network on a bond of ConnectX ports protects their adapters."""
        found = [name]
        try:
            entries = os.listdir(os.path.join(self.sysfs_root, "sys", "class", "net", name))
        except OSError:
            return found
        for entry in sorted(entries):
            if entry.startswith("lower_") and depth < 4:
                found += self.ports_under(entry[len("lower_"):], depth + 1)
        return found

    def burn(self, argv):
        """Run a burn argv; FirmwareError with the tool's own words when it refused or failed."""
        rc, out, err = self.burner.run(argv, mutating=True)
        parsed = parse_burn(out + "\n" + (err or ""))
        if rc != 0 or parsed["errors"] or not parsed["done"]:
            raise FirmwareError("%s burn of %s failed: %s" % (
                self.kind, argv[2], "; ".join(parsed["errors"]) or (err or out).strip() or "exit code %d" % rc),
                category="burn_failed", rc=rc, stdout=out, stderr=err, failed_command=CommandRunner.render(argv))
        return parsed


def reset_blocker(adapter, protected, base_macs, connectx):
    """Why a live reset of ``adapter`` would touch a protected one, or None when it would not.

    ``protected``: {adapter: why} (``FlashTool.protected_adapters``); ``base_macs``: {adapter: the Base MAC its query
    printed, None where it printed none}; ``connectx``: the protected adapters that are ConnectX. A live reset takes
    every PCI function of the card down: the functions of its slot (its ports, their virtual functions) and, on a
    Socket Direct card (one card on two PCIe slots, often of two CPU sockets), the functions of its other slot,
    which mlxfwreset finds by the Base MAC the two share (mstflint's mlxfwresetlib get_socket_direct_pci_devices).
    Where a Base MAC is not reported, whether two ConnectX devices are one card cannot be told: no reset."""
    if adapter in protected:
        return protected[adapter]
    mine = base_macs.get(adapter)
    for other in sorted(protected):
        if other not in connectx:
            continue  # not a ConnectX device (the management network's own NIC): no card of ours
        theirs = base_macs.get(other)
        if mine is None or theirs is None:
            return ("its Base MAC or that of %s is not reported, so whether they are one card (Socket Direct) cannot be "
                    "told, and %s: %s" % (other, other, protected[other]))
        if mine.lower() == theirs.lower():
            return "it is one card with %s (Socket Direct, Base MAC %s), and %s: %s" % (other, mine, other, protected[other])
    return None


def image_path_problem(path, allow_shared=False, uid=None):
    """Why the image file ``path`` may not be read for a burn, or None: every component is read with lstat, from
    ``/`` down; a symbolic link anywhere is refused (it may lead somewhere another user chooses), and so, unless
    ``allow_shared``, is a directory or the file itself that another user owns or that group or others may write
    (they could replace the image after it was checked), but for a sticky folder such as /tmp, where no one
    replaces what is not theirs."""
    uid = os.geteuid() if uid is None else uid
    path = os.path.normpath(path)
    parts = [part for part in path.split(os.sep) if part]
    current = os.sep
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except OSError as exc:
            return "%s: %s" % (current, exc.strerror)
        last = index == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            return "%s is a symbolic link (to %s): a link anywhere in the image's path is refused" % (
                current, os.readlink(current))
        if last and not stat.S_ISREG(info.st_mode):
            return "%s is not a regular file" % current
        if not last and not stat.S_ISDIR(info.st_mode):
            return "%s is not a directory" % current
        if allow_shared:
            continue
        if info.st_uid not in (0, uid):
            return "%s is owned by uid %d, who could replace the image after its check (allow_shared_image_path)" % (
                current, info.st_uid)
        # A folder others may write to with the sticky bit (/tmp): they cannot replace what is not theirs, and the
        # next part, which must be root's or the caller's, is checked in turn.
        shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and (last or not info.st_mode & stat.S_ISVTX):
            return ("%s may be written by group or others (mode %04o), who could replace the image after its check "
                    "(allow_shared_image_path)" % (current, stat.S_IMODE(info.st_mode)))
    return None


def private_copy(source, dest):
    """Copy ``source`` to ``dest`` (created with O_EXCL and O_NOFOLLOW, mode 0600, in a private folder) through one
    open file each, hashing the bytes as they are written: the SHA-256 of the copy. The source is opened without
    following a link and must be a regular file when open."""
    flags = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    digest = hashlib.sha256()
    src = os.open(source, os.O_RDONLY | flags)
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            raise OSError(0, "not a regular file")
        if os.path.lexists(dest):
            os.unlink(dest)  # a copy an interrupted run left: the new file is ours (O_EXCL)
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, 0o600)
        try:
            while True:
                block = os.read(src, 1 << 20)
                if not block:
                    break
                digest.update(block)
                view = memoryview(block)
                while view:
                    view = view[os.write(out, view):]
            os.fsync(out)
        finally:
            os.close(out)
    finally:
        os.close(src)
    return digest.hexdigest()


def sha256_of(path):
    """The SHA-256 of a file read without following a link (check mode checks the source itself)."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_versions(versions):
    """Problems of the site's ``versions`` (PSID or part number -> {version, image, sha256}): [] when every entry is
    usable."""
    problems = []
    for key, entry in sorted((versions or {}).items()):
        if not (PSID_RE.match(key or "") or PART_RE.match(key or "")):
            problems.append("%r is neither a PSID (letters, digits and _, at most 16) nor a part number (letters, digits, "
                            "- and _, at most 40)" % key)
            continue
        if not isinstance(entry, dict) or not entry.get("version"):
            problems.append("versions.%s needs a version" % key)
            continue
        try:
            if fw_version(str(entry["version"])) is None:
                problems.append("versions.%s.version is empty" % key)
        except FirmwareImageError as exc:
            problems.append("versions.%s.version: %s" % (key, exc))
        if entry.get("sha256") is not None and not SHA256_RE.match(str(entry["sha256"])):
            problems.append("versions.%s.sha256 must be 64 hexadecimal digits" % key)
        image = entry.get("image")
        if image is not None and (not os.path.isabs(str(image)) or any(ord(c) < 32 for c in str(image))):
            problems.append("versions.%s.image must be an absolute path on the host" % key)
    return problems


def image_checks(plan, entry, image_info, digest):
    """Why the site's image may not go on the adapter of ``plan`` (a burn of ``image_plan``): [] when it may.
    ``entry``: the site's entry; ``image_info``: the image's own query; ``digest``: its SHA-256."""
    problems = []
    name = plan["pci"]
    if digest.lower() != str(entry.get("sha256") or "").lower():
        problems.append("%s: the image %s has SHA-256 %s, not the %s given (versions.%s.sha256)" % (
            name, entry.get("image"), digest, entry.get("sha256"), plan["key"]))
    if image_info["psid"] != plan["psid"]:
        problems.append("%s: the image %s is for PSID %s, the adapter's is %s" % (
            name, entry.get("image"), image_info["psid"], plan["psid"]))
    if version_text(fw_version(image_info["fw"])) != plan["wanted"]:
        problems.append("%s: the image %s holds %s, not the pinned %s" % (
            name, entry.get("image"), image_info["fw"], plan["wanted"]))
    return problems


class ImageCopies(object):
    """The images to burn, each copied once into a private work folder (root's, 0700) before anything is checked:
    the SHA-256, the image's own query and the burn all read that copy, which no other user can change, so the bytes
    burnt are the bytes checked, however long the burns before it take. In check mode the source itself is read
    (nothing is written). ``remove`` takes the copies away."""

    def __init__(self, work_dir, check_mode=False, allow_shared=False):
        self.work_dir = work_dir
        self.check_mode = check_mode
        self.allow_shared = allow_shared
        self.copies = {}

    def target(self, image, digest_wanted):
        """Where the copy of ``image`` lies: named by the pinned SHA-256, so a run's commands read the same."""
        name = "%s-%s" % (str(digest_wanted).lower()[:16], os.path.basename(image))
        return os.path.join(self.work_dir, name)

    def get(self, tool, entry, key):
        """(query of the image, its SHA-256, the file to burn) for the site's ``entry`` (``versions[key]``)."""
        image = entry.get("image")
        if not image or not entry.get("sha256"):
            raise FirmwareError("versions.%s needs image and sha256 for a burn (the image file on the host and its "
                                "SHA-256); nothing was burnt" % key, category="bad_input")
        if image in self.copies:
            return self.copies[image]
        problem = image_path_problem(image, self.allow_shared)
        if problem:
            raise FirmwareError("versions.%s.image %s: %s; nothing was burnt" % (key, image, problem), category="bad_input")
        dest = self.target(image, entry["sha256"])
        try:
            if self.check_mode:
                digest, burnt_from = sha256_of(image), image
            else:
                private_dir(self.work_dir)
                digest, burnt_from = private_copy(image, dest), dest
        except (OSError, PrivateDirError) as exc:
            raise FirmwareError("versions.%s.image %s: %s; nothing was burnt" % (
                key, image, getattr(exc, "strerror", None) or exc), category="bad_input")
        self.copies[image] = (tool.query_image(burnt_from), digest, dest)
        return self.copies[image]

    def remove(self):
        if self.check_mode:
            return
        for _query, _digest, dest in self.copies.values():
            try:
                os.unlink(dest)
            except OSError:
                pass


IMAGE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}$")
URL_RE = re.compile(r"^https?://[^\s/?#]+/\S*$")


def image_files(versions, image_dir, download_dir=None):
    """The site's pinned versions (``nic_firmware_versions``: PSID -> {version, and an image as ``src``, a file on the
    controller the role copies to ``image_dir``, ``url``, which the controller downloads to ``download_dir`` (checked
    against its SHA-256 before it is kept) and then copies, or ``image``, a file already on the host; with its
    ``sha256``}) as the module takes them: ``{"versions": {PSID: {version, image, sha256}}, "copies": [{psid, src,
    dest}], "downloads": [{psid, url, dest, sha256}], "problems": [...]}``."""
    out, copies, downloads, problems = {}, [], [], []
    for psid, entry in sorted((versions or {}).items()):
        if not isinstance(entry, dict):
            problems.append("%s: expected a dictionary with version (and src, url or image, and sha256)" % psid)
            continue
        unknown = sorted(set(entry) - set(["version", "src", "url", "image", "sha256"]))
        if unknown:
            problems.append("%s: unknown keys %s (version, src, url, image, sha256)" % (psid, ", ".join(unknown)))
        given = [key for key in ("src", "url", "image") if entry.get(key)]
        if len(given) > 1:
            problems.append("%s: give one of src (a file on the controller), url (downloaded by the controller) or "
                            "image (a file on the host), not %s" % (psid, " and ".join(given)))
            continue
        wanted = dict((key, entry[key]) for key in ("version", "image", "sha256") if entry.get(key) is not None)
        source = entry.get("src") or entry.get("url")
        if source:
            name = os.path.basename(urlsplit(str(source)).path if entry.get("url") else str(source))
            if entry.get("url") and not URL_RE.match(str(source)):
                problems.append("%s: url %r is not an http or https address" % (psid, source))
                continue
            if not IMAGE_NAME_RE.match(name):
                problems.append("%s: %r is not an image file name" % (psid, name))
                continue
            if not SHA256_RE.match(str(entry.get("sha256") or "")):
                problems.append("%s: %s needs its sha256 (64 hex digits; checked before anything is burnt)"
                                % (psid, "url" if entry.get("url") else "src"))
            src = str(source)
            if entry.get("url"):
                if not download_dir:
                    problems.append("%s: url needs a download directory on the controller" % psid)
                    continue
                src = os.path.join(download_dir, name)
                downloads.append(dict(psid=psid, url=str(source), dest=src, sha256=str(entry.get("sha256") or "").lower()))
            dest = os.path.join(image_dir, name)
            copies.append(dict(psid=psid, src=src, dest=dest, downloaded=bool(entry.get("url"))))
            wanted["image"] = dest
        out[psid] = wanted
    problems += check_versions(out)
    return dict(versions=out, copies=copies, downloads=downloads, problems=problems)
