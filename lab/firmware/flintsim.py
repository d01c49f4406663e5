# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stateful simulator of the ConnectX firmware burning tool (NVIDIA MFT ``flint``, mstflint's ``mstflint``).

It shares the firmware simulator's state directory (``fwsim.py``): each adapter record may carry ``image``
({psid, fw, running, release_date, base_guid, base_mac}), the image on its flash and the one it runs. Emulated::

    python3 flintsim.py [--as flint|mstflint] -d DEV q|query [full]
    python3 flintsim.py [--as flint|mstflint] -i IMAGE q|query [full]
    python3 flintsim.py [--as flint|mstflint] -d DEV -i IMAGE [-y] [--allow_psid_change] b|burn
    python3 flintsim.py --as mlxfwreset|mstfwreset -d DEV q|query
    python3 flintsim.py --as mlxfwmanager|mstfwmanager [-d DEV] [--query]
    python3 flintsim.py --as mlxfwreset|mstfwreset -d DEV [--level 3] [-y] r|reset
    python3 flintsim.py make-image FILE --psid PSID --fw VERSION     (lab: an image file this simulator reads)
    python3 flintsim.py admin [--state-dir DIR] image --pci P --psid PSID --fw VERSION [--running VERSION]
                                                      [--base-mac MAC]
    python3 flintsim.py admin [--state-dir DIR] on-burn --write FILE --content TEXT  (a file rewritten mid-burn)

A burn writes the flash (``fw``, and ``sha256``: the SHA-256 of the file it read); the running version (``running``) follows at the simulator's reboot or power
cycle (``fwsim.py admin reboot``), or at a firmware reset. What it prints comes from real transcripts, all in the
corpus (tests/unit/plugins/module_utils/fixtures/fwimage/, each with its source):

- ``query``: the lines of ``flint_query_cx5_fs4.txt`` (read from the corpus) with the image's version, date and
  PSID; ``FW Version(Running):`` right after ``FW Version:`` while the burnt image does not run
  (``flint_query_cx3_fs2_burnt_not_running.txt``);
- ``burn``: the ``Current FW version on flash`` / ``New FW version`` lines as ``burn_cx3_fs2.txt`` prints them,
  then the FS3/FS4 steps and the closing ``-I-`` line of ``burn_cx4lx_fs3.txt`` (read from the corpus); a PSID that
  differs: the ``-E- PSID mismatch ...`` line of ``burn_psid_mismatch.txt`` (exit 1, nothing written);
- ``mlxfwreset query``: the BlueField-3 levels of ``mlxfwreset_query_bf3.txt``, level 3 "Not Supported" on an
  adapter whose image says ``live_reset: false``; ``reset``: the steps of ``mlxfwreset_reset_cx4.txt`` (the burnt
  image then runs), headed "Requested" with ``--level``, as mstflint's small_utils/mstfwreset.py words it;
- ``mlxfwmanager --query`` (MFT's firmware manager; mstflint's ``mstfwmanager``): the report of
  ``mlxfwmanager_cx6dx_running_older.txt`` and ``mlxup_query_cx5_no_image.txt`` (its layout: the heading, a block per
  adapter with the adapter's device type, part number and description as the mlxconfig simulator keeps them, the
  image's PSID, the ``FW`` row and, while the burnt image does not run, the ``FW (Running)`` row; no image to offer,
  so ``Available`` is N/A and the status is the second sample's "No matching image found");
- errors: flint's ``Cannot open Device: %s. %s`` / ``Cannot open Image: %s. %s`` (mstflint's flint/err_msgs.h),
  ``-E-`` on standard output, exit 1.

Known difference: an image file's query prints the device layout (no real FS4 image query is in the corpus).
Image files are the lab's own (JSON naming the PSID and version), not firmware binaries.
"""

import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fwsim  # noqa: E402  pylint: disable=wrong-import-position

EXIT_OK = 0
EXIT_FAILED = 1
LABEL = 23  # "FW Version(Running):   " - the value column of the query
IMAGE_MAGIC = "roce-fabric-lab-firmware-image"
# Their -v lines (mstflint's as the corpus's bug report printed it; MFT's as the NVIDIA forum's did).
VERSION_TOOL = {"flint": "flint, mft 4.22.1-526, built on May 20 2025, 09:45:03. Git SHA Hash: N/A",
                "mstflint": "mstflint, mstflint 4.33.0, Git SHA Hash: d431e08"}
RESET_TOOLS = ("mlxfwreset", "mstfwreset")
MANAGER_TOOLS = ("mlxfwmanager", "mstfwmanager")


class FlintError(Exception):
    pass


def version_tuple(text):
    return tuple(int(part) for part in str(text).split("."))


def read_image(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise FlintError("Cannot open Image: %s. %s" % (path, getattr(exc, "strerror", None) or "Invalid image format"))
    if not isinstance(data, dict) or data.get("format") != IMAGE_MAGIC:
        raise FlintError("Cannot open Image: %s. Invalid image format" % path)
    return data


CORPUS = os.path.join(HERE, "..", "..", "tests", "unit", "plugins", "module_utils", "fixtures", "fwimage")


def corpus_body(name):
    """A corpus sample without its ``%%`` header lines."""
    with open(os.path.join(CORPUS, name)) as handle:
        return [line.rstrip("\n") for line in handle if not line.startswith("%%")]


def query_lines(image, running=None):
    """The query report of an image ({psid, fw, release_date, base_guid, base_mac}), on the real FS4 report of the
    corpus: its lines with this image's version, date, PSID and the card's Base GUID and MAC (each in the sample's
    column, the count after it kept); ``running`` adds the FW Version(Running) line after FW Version."""
    values = {"FW Version:": image["fw"], "Product Version:": image["fw"], "PSID:": image["psid"]}
    if image.get("release_date"):
        values["FW Release Date:"] = image["release_date"]
    ids = {"Base GUID:": image.get("base_guid"), "Base MAC:": image.get("base_mac")}
    lines = []
    for line in corpus_body("flint_query_cx5_fs4.txt"):
        label = line[:LABEL].strip()
        if label in values:
            line = "%-*s%s" % (LABEL, label, values[label])
        elif ids.get(label):
            # The sample's value has the same width (12 or 16 hex digits): what follows it stays in its column.
            sample = line[LABEL:].split()[0]
            line = line[:LABEL] + ids[label] + line[LABEL + len(sample):]
        lines.append(line)
        if label == "FW Version:" and running and running != image["fw"]:
            lines.append("%-*s%s" % (LABEL, "FW Version(Running):", running))
    return lines


def burn_steps():
    """What flint prints once it burns an FS3/FS4 image: the corpus's real transcript after its version lines."""
    body = corpus_body("burn_cx4lx_fs3.txt")
    return [line for line in body[[i for i, line in enumerate(body) if line.startswith("New FW version")][0] + 1:] if line]


class Flint(object):
    def __init__(self, name, state, stdout=None):
        self.name = name
        self.state = state
        self.stdout = stdout or sys.stdout
        self.device_pci = None
        self.mutating = False

    def out(self, text=""):
        self.stdout.write(text + "\n")

    def parse(self, argv):
        opts = dict(dev=None, image=None, yes=False, allow_psid_change=False, cmd=None)
        i = 0
        while i < len(argv):
            arg = argv[i]
            if arg in ("-d", "--device", "-i", "--image"):
                if i + 1 >= len(argv):
                    raise FlintError("Missing argument for %s" % arg)
                opts["dev" if arg in ("-d", "--device") else "image"] = argv[i + 1]
                i += 2
                continue
            if arg in ("-y", "--yes"):
                opts["yes"] = True
            elif arg in ("-allow_psid_change", "--allow_psid_change"):
                opts["allow_psid_change"] = True
            elif arg in ("-v", "--version"):
                opts["cmd"] = "version"
                return opts
            elif arg in ("q", "query"):
                opts["cmd"] = "query"
                return opts
            elif arg in ("b", "burn"):
                opts["cmd"] = "burn"
                return opts
            else:
                raise FlintError("Unknown command or option: %s" % arg)
            i += 1
        raise FlintError("No command found.")

    def device(self, devname):
        record = None
        pci = fwsim.normalize_pci(devname)
        for candidate in self.state.devices():
            if (pci is not None and (pci == candidate["pci"] or pci in (candidate.get("functions") or []))) or \
                    (pci is None and devname == candidate.get("mst")):
                record = candidate
        if record is None or not record.get("image"):
            raise FlintError("Cannot open Device: %s. No such device" % devname)
        self.device_pci = record["pci"]
        return record

    def run(self, argv):
        try:
            opts = self.parse(argv)
            if opts["cmd"] == "version":
                self.out(VERSION_TOOL[self.name])
                return EXIT_OK
            if opts["cmd"] == "query":
                if bool(opts["dev"]) == bool(opts["image"]):
                    raise FlintError("Please specify either Device or Image.")
                if opts["image"]:
                    self.out("\n".join(query_lines(read_image(opts["image"]))))
                else:
                    image = self.device(opts["dev"])["image"]
                    self.out("\n".join(query_lines(image, image.get("running"))))
                return EXIT_OK
            return self.burn(opts)
        except FlintError as exc:
            self.out("-E- %s" % exc)
            return EXIT_FAILED

    def burn(self, opts):
        if not opts["dev"]:
            raise FlintError("Please specify Device.")
        if not opts["image"]:
            raise FlintError("Please specify Image file.")
        new = read_image(opts["image"])
        with self.state.lock():
            record = self.device(opts["dev"])
            flash = record["image"]
            self.out("\n    Current FW version on flash:  %s\n    New FW version:               %s\n" % (flash["fw"], new["fw"]))
            if new["psid"] != flash["psid"] and not opts["allow_psid_change"]:
                self.out("\n-E- PSID mismatch. The PSID on flash (%s) differs from the PSID in the given image (%s)."
                         % (flash["psid"], new["psid"]))
                return EXIT_FAILED
            if version_tuple(new["fw"]) < version_tuple(flash["fw"]):
                self.out("\n    Note: The new FW version is older than the current FW version on flash.\n")
                if not opts["yes"]:
                    self.out("\n Do you want to continue ? (y/n) [n] : ")
                    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                        self.out("-E- Aborted by user.")
                        return EXIT_FAILED
            running = flash.get("running") or flash["fw"]
            # What the flash now holds, byte for byte: the SHA-256 of the file this burn read.
            with open(opts["image"], "rb") as handle:
                burnt = hashlib.sha256(handle.read()).hexdigest()
            record["image"] = dict(flash, psid=new["psid"], fw=new["fw"], running=running, sha256=burnt,
                                   release_date=new.get("release_date") or flash.get("release_date"))
            self.state.save(record)
            self.mutating = True
            self.after_burn()
        self.out("\n".join(burn_steps()))
        return EXIT_OK

    def after_burn(self):
        """The lab's fault ``on-burn`` (admin): while a burn runs, someone rewrites a file (an image another burn of
        the same run will read). Armed once."""
        armed = os.path.join(self.state.root, "on_burn.json")
        if not os.path.exists(armed):
            return
        with open(armed) as handle:
            fault = json.load(handle)
        os.unlink(armed)
        with open(fault["write"], "w") as handle:
            handle.write(fault["content"])


class FwReset(Flint):
    """mlxfwreset / mstfwreset: the reset levels of an adapter, and a live reset that makes its burnt image run."""

    def parse(self, argv):
        opts = dict(dev=None, yes=False, level=None, cmd=None)
        i = 0
        while i < len(argv):
            arg = argv[i]
            if arg in ("-d", "--device", "-l", "--level"):
                if i + 1 >= len(argv):
                    raise FlintError("argument %s: expected one argument" % arg)
                opts["dev" if arg in ("-d", "--device") else "level"] = argv[i + 1]
                i += 2
                continue
            if arg in ("-y", "--yes"):
                opts["yes"] = True
            elif arg in ("q", "query", "r", "reset"):
                opts["cmd"] = "query" if arg.startswith("q") else "reset"
            else:
                raise FlintError("unrecognized arguments: %s" % arg)
            i += 1
        if not opts["cmd"] or not opts["dev"]:
            raise FlintError("the following arguments are required: -d/--device, command")
        return opts

    def levels_text(self, image):
        text = "\n".join(corpus_body("mlxfwreset_query_bf3.txt"))
        if image.get("live_reset") is False:
            text = text.replace("3: Driver restart and PCI reset                                  -Supported",
                                "3: Driver restart and PCI reset                                  -Not Supported")
        return text

    def run(self, argv):
        try:
            opts = self.parse(argv)
            record = self.device(opts["dev"])
            if opts["cmd"] == "query":
                self.out(self.levels_text(record["image"]))
                return EXIT_OK
            if record["image"].get("live_reset") is False or opts["level"] not in (None, "3"):
                raise FlintError("Reset-level %s is not supported for device %s" % (opts["level"] or 3, opts["dev"]))
            self.out("\n%s reset level for device, %s:\n\n3: Driver restart and PCI reset"
                     % ("Requested" if opts["level"] else "Minimal", opts["dev"]))
            if not opts["yes"]:
                self.out("Continue with reset?[y/N] ")
                if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                    raise FlintError("Aborted by user")
            self.out("Continue with reset?[y/N] y")
            with self.state.lock():
                record = self.device(opts["dev"])
                record["image"] = dict(record["image"], running=record["image"]["fw"])
                self.state.save(record)
                self.mutating = True
            self.out("\n".join(line for line in corpus_body("mlxfwreset_reset_cx4.txt") if line.startswith("-I- ")))
            return EXIT_OK
        except FlintError as exc:
            self.out("-E- %s" % exc)
            return EXIT_FAILED


class FwManager(Flint):
    """mlxfwmanager / mstfwmanager: the firmware report of every adapter, or of ``-d DEV``. Updating through it
    (``-u``) is not emulated: the collection burns with flint."""

    def parse(self, argv):
        opts = dict(dev=None, cmd="query")
        i = 0
        while i < len(argv):
            arg = argv[i]
            if arg in ("-d", "--dev"):
                if i + 1 >= len(argv):
                    raise FlintError("Missing argument for %s" % arg)
                opts["dev"] = argv[i + 1]
                i += 2
                continue
            if arg != "--query":
                raise FlintError("%s is not emulated by the lab's firmware manager (query only)" % arg)
            i += 1
        return opts

    @staticmethod
    def pci_name(pci):
        """As the corpus's reports name an adapter: without a domain of 0000 (``03:00.0``), else in full."""
        return pci[5:] if pci.startswith("0000:") else pci

    def block(self, index, record):
        image = record["image"]
        rows = [("FW", image["fw"])]
        if image.get("running") and image["running"] != image["fw"]:
            rows.append(("FW (Running)", image["running"]))
        lines = ["", "Device #%d:" % index, "----------", ""]
        for label, value in (("Device Type", record.get("device_type")), ("Part Number", record.get("name")),
                             ("Description", record.get("description")), ("PSID", image["psid"]),
                             ("PCI Device Name", self.pci_name(record["pci"])), ("Base GUID", image.get("base_guid")),
                             ("Base MAC", image.get("base_mac"))):
            lines.append("  %-18s%s" % (label + ":", value or "N/A"))
        lines.append("  %-18s%-15s%s" % ("Versions:", "Current", "Available"))
        lines += ["     %-15s%-15s%s" % (name, version, "N/A") for name, version in rows]
        lines += ["", "  %-18s%s" % ("Status:", "No matching image found")]
        return lines

    def run(self, argv):
        try:
            opts = self.parse(argv)
            if opts["dev"]:
                records = [self.device(opts["dev"])]
            else:
                records = [r for r in sorted(self.state.devices(), key=lambda r: r["pci"]) if r.get("image")]
            lines = ["Querying Mellanox devices firmware ..."]
            for index, record in enumerate(records, 1):
                lines += self.block(index, record)
            self.out("\n".join(lines))
            return EXIT_OK
        except FlintError as exc:
            self.out("-E- %s" % exc)
            return EXIT_FAILED


def admin(argv, stdout):
    parser = argparse.ArgumentParser(prog="flintsim.py admin")
    parser.add_argument("--state-dir", default=None)
    sub = parser.add_subparsers(dest="action")
    sub.required = True
    image = sub.add_parser("image", help="put an image on an adapter's flash (and what it runs)")
    image.add_argument("--pci", required=True)
    image.add_argument("--psid", required=True)
    image.add_argument("--fw", required=True)
    image.add_argument("--running", default=None)
    image.add_argument("--release-date", default=None)
    image.add_argument("--no-live-reset", action="store_true", help="mlxfwreset offers no level 3 on it")
    image.add_argument("--base-mac", default=None, help="the card's Base MAC (12 hex digits; a Socket Direct card's two "
                                                        "PCI devices share it)")
    on_burn = sub.add_parser("on-burn", help="rewrite a file while the next burn runs (a swapped image)")
    on_burn.add_argument("--write", required=True)
    on_burn.add_argument("--content", required=True)
    args = parser.parse_args(argv)
    state = fwsim.State(args.state_dir or os.environ.get("FWSIM_STATE_DIR") or fwsim.DEFAULT_STATE_DIR)
    if args.action == "on-burn":
        with open(os.path.join(state.root, "on_burn.json"), "w") as handle:
            json.dump(dict(write=args.write, content=args.content), handle)
        stdout.write("armed: the next burn rewrites %s\n" % args.write)
        return 0
    with state.lock():
        record = fwsim._find_record(state, args.pci)  # pylint: disable=protected-access
        record["image"] = dict(psid=args.psid, fw=args.fw, running=args.running or args.fw,
                               release_date=args.release_date, live_reset=not args.no_live_reset)
        if args.base_mac:
            # The Base GUID as ConnectX cards derive it from the MAC (the corpus's: e41d2de70f8e, e41d2d0300e70f8e).
            mac = args.base_mac.lower()
            record["image"].update(base_mac=mac, base_guid=mac[:6] + "0300" + mac[6:])
        state.save(record)
    stdout.write("%s image %s %s (running %s)\n" % (record["pci"], args.psid, args.fw, args.running or args.fw))
    return 0


def make_image(argv, stdout):
    parser = argparse.ArgumentParser(prog="flintsim.py make-image")
    parser.add_argument("path")
    parser.add_argument("--psid", required=True)
    parser.add_argument("--fw", required=True)
    parser.add_argument("--release-date", default=None)
    args = parser.parse_args(argv)
    with open(args.path, "w") as handle:
        json.dump(dict(format=IMAGE_MAGIC, psid=args.psid, fw=args.fw, release_date=args.release_date), handle)
    stdout.write("%s: %s %s\n" % (args.path, args.psid, args.fw))
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    name = "flint"
    if len(argv) > 1 and argv[0] == "--as":
        name, argv = argv[1], argv[2:]
    if argv and argv[0] == "admin":
        return admin(argv[1:], sys.stdout)
    if argv and argv[0] == "make-image":
        return make_image(argv[1:], sys.stdout)
    if name not in VERSION_TOOL and name not in RESET_TOOLS and name not in MANAGER_TOOLS:
        sys.stderr.write("flintsim: unknown tool %r\n" % name)
        return 2
    state = fwsim.State(os.environ.get("FWSIM_STATE_DIR") or fwsim.DEFAULT_STATE_DIR)
    tool = FwReset(name, state) if name in RESET_TOOLS else FwManager(name, state) if name in MANAGER_TOOLS else Flint(name, state)
    rc = tool.run(argv)
    sys.stdout.flush()
    try:
        state.log_call({"argv": argv, "flavor": name, "mutating": tool.mutating, "rc": rc, "device": tool.device_pci})
    except OSError:
        pass
    return rc


if __name__ == "__main__":
    sys.exit(main())
