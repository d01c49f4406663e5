"""The lab's ESXi shell: an ``esxcli`` stand-in that keeps state in a JSON file.

Namespaces answered, in the output layout and error texts of ESXi 7/8's esxcli:

    esxcli system settings kernel list [-o|--option NAME]
    esxcli system settings kernel set -s|--setting NAME -v|--value VALUE
    esxcli hardware pci list
    esxcli system maintenanceMode get
    esxcli system maintenanceMode set -e|--enable true|false
    esxcli system shutdown reboot -r|--reason TEXT [-d|--delay SECONDS]

Kernel settings have a Configured value (the next boot's) and a Runtime value (the running
kernel's); a reboot makes Configured the Runtime value. A reboot is refused outside maintenance
mode. Every invocation is appended to ``calls.jsonl`` beside the state (``mutating`` marks the
ones that changed state), so tests can assert that nothing was changed.

State directory: ``$ESXCLI_SIM_STATE`` (``state.json``). ``esxcli_sim.py boot`` is the reboot
itself (run detached by the reboot command): stop sshd, apply Configured, start sshd again.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time

STATE_DIR = os.environ.get("ESXCLI_SIM_STATE", "")

# Settings of a host of the lab (types and defaults as esxcli lists them).
DEFAULT_SETTINGS = [
    ("atsSupport", "Bool", "FALSE", "Enable Support for PCIe ATS"),
    ("disableACSCheck", "Bool", "FALSE", "Disable ACS capability check"),
    ("execInstalledOnly", "Bool", "FALSE", "Allow only installed binaries to execute"),
    ("maxPCPUS", "uint32", "4096", "Number of PCPUs vmkernel should bring up."),
    ("vga", "Bool", "TRUE", "Enable/Disable VGA support."),
    ("vmkacEnable", "uint32", "1", "VMkernel access control (0 off, 1 audit, 2 enforce)"),
]


def initial_state(pci):
    settings = {}
    for name, kind, default, description in DEFAULT_SETTINGS:
        settings[name] = dict(type=kind, configured=default, runtime=default, default=default, description=description)
    return dict(settings=settings, pci=pci, maintenance_mode=False, reboots=0, reboot_hangs=False,
                reboot_delay=1.0)


class State(object):
    def __init__(self, directory):
        self.dir = directory
        self.path = os.path.join(directory, "state.json")
        self.lock = open(os.path.join(directory, ".lock"), "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        with open(self.path) as handle:
            self.data = json.load(handle)

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.data, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def log(self, argv, rc, mutating):
        with open(os.path.join(self.dir, "calls.jsonl"), "a") as handle:
            handle.write(json.dumps(dict(argv=argv, rc=rc, mutating=mutating, time=time.time())) + "\n")


def table(headers, rows):
    """esxcli's default table: columns padded to the widest cell, two spaces apart, dashes below headers.

    The last column is not padded, and its dashes are as long as its header (a real ESXi 8.0 prints
    ``-----------`` under ``Description`` above a longer description).
    """
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    dashes = ["-" * (w if i < len(widths) - 1 else len(headers[i])) for i, w in enumerate(widths)]
    lines = []
    for row in [headers, dashes] + rows:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


class Usage(Exception):
    pass


def options(args, spec):
    """Parse esxcli-style options: spec maps short/long names to a key."""
    found = {}
    i = 0
    while i < len(args):
        arg = args[i]
        value = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        if arg not in spec:
            raise Usage("Invalid option %s" % arg)
        if value is None:
            if i + 1 >= len(args):
                raise Usage("Missing value for option %s" % arg)
            value = args[i + 1]
            i += 1
        found[spec[arg]] = value
        i += 1
    return found


def normalize(kind, value):
    if kind == "Bool":
        lowered = value.lower()
        if lowered in ("true", "1", "yes", "on"):
            return "TRUE"
        if lowered in ("false", "0", "no", "off"):
            return "FALSE"
        return None
    if kind.startswith("uint") or kind.startswith("int"):
        try:
            number = int(value, 0)
        except ValueError:
            return None
        if kind.startswith("uint") and number < 0:
            return None
        return str(number)
    return value


def kernel_list(state, args):
    opts = options(args, {"-o": "option", "--option": "option"})
    settings = state.data["settings"]
    names = sorted(settings, key=str.lower)
    if "option" in opts:
        names = [n for n in names if n == opts["option"]]
    rows = [[n, settings[n]["type"], settings[n]["configured"], settings[n]["runtime"], settings[n]["default"],
             settings[n]["description"]] for n in names]
    return table(["Name", "Type", "Configured", "Runtime", "Default", "Description"], rows), False


def kernel_set(state, args):
    opts = options(args, {"-s": "setting", "--setting": "setting", "-v": "value", "--value": "value"})
    for key, flag in (("setting", "--setting"), ("value", "--value")):
        if key not in opts:
            raise Usage("Missing required parameter %s" % flag)
    setting = state.data["settings"].get(opts["setting"])
    if setting is None:
        raise Failure("Unable to find option %s" % opts["setting"])
    value = normalize(setting["type"], opts["value"])
    if value is None:
        raise Failure("Invalid value %s for option %s of type %s" % (opts["value"], opts["setting"], setting["type"]))
    changed = setting["configured"] != value
    setting["configured"] = value
    return "", changed


PCI_FIELDS = [
    ("Address", "address"), ("Segment", "segment"), ("Bus", "bus"), ("Slot", "slot"), ("Function", "function"),
    ("VMkernel Name", "vmkernel_name"), ("Vendor Name", "vendor_name"), ("Device Name", "device_name"),
    ("Configured Owner", "owner"), ("Current Owner", "owner"), ("Vendor ID", "vendor_id"), ("Device ID", "device_id"),
    ("SubVendor ID", "subvendor_id"), ("SubDevice ID", "subdevice_id"), ("Device Class", "device_class"),
    ("Device Class Name", "class_name"), ("Programming Interface", "prog_if"), ("Revision ID", "revision"),
    ("Interrupt Line", "irq_line"), ("IRQ", "irq"), ("Interrupt Vector", "vector"), ("PCI Pin", "pin"),
    ("Spawned Bus", "spawned_bus"), ("Flags", "flags"), ("Module ID", "module_id"), ("Module Name", "module_name"),
    ("Chassis", "chassis"), ("Physical Slot", "physical_slot"), ("Slot Description", "slot_description"),
    ("Device Layer Bus Address", "bus_address"), ("Passthru Capable", "passthru_capable"),
    ("Parent Device", "parent"), ("Dependent Device", "dependent"), ("Reset Method", "reset_method"),
    ("FPT Sharable", "fpt_sharable"), ("NUMA Node", "numa_node"), ("Extended Device ID", "ext_device_id"),
    ("Extended Device Name", "ext_device_name"),
]


def pci_entry(device):
    address = device["address"]
    domain, bus, rest = address.split(":")
    slot, function = rest.split(".")
    passthru = device.get("passthru", False)
    values = dict(
        address=address, segment="0x%04x" % int(domain, 16), bus="0x%s" % bus, slot="0x%s" % slot, function="0x%s" % function,
        vmkernel_name="" if passthru else device.get("vmkernel_name", ""), vendor_name=device["vendor_name"],
        device_name=device["device_name"], owner="PCI Passthru" if passthru else "VMkernel",
        vendor_id=device["vendor_id"], device_id=device["device_id"], subvendor_id=device["vendor_id"],
        subdevice_id="0x0000", device_class=device["class"], class_name=device.get("class_name", ""), prog_if="0x00",
        revision="0x00", irq_line="0xff", irq="255", vector="0x00", pin="0x00", spawned_bus="0x00", flags="0x3219",
        module_id="-1" if passthru else "30", module_name="None" if passthru else device.get("module_name", ""),
        chassis="0", physical_slot=str(device.get("physical_slot", 0)),
        slot_description="PCIe Slot %s" % device.get("physical_slot", 0), bus_address="s0000000%s.00" % device.get("physical_slot", 0),
        passthru_capable="true", parent="PCI 0:%d:0:0" % max(int(bus, 16) - 1, 0), dependent="PCI %d:%d:%d:%d" % (
            int(domain, 16), int(bus, 16), int(slot, 16), int(function, 16)),
        reset_method="Function reset", fpt_sharable="true", numa_node=str(device.get("numa_node", 0)),
        ext_device_id="65535", ext_device_name="",
    )
    lines = [address]
    for label, key in PCI_FIELDS:
        lines.append(("   %s: %s" % (label, values[key])).rstrip())
    return "\n".join(lines) + "\n"


def pci_list(state, args):
    if args:
        options(args, {})
    return "\n".join(pci_entry(d) for d in state.data["pci"]), False


def mm_get(state, args):
    options(args, {})
    return ("Enabled" if state.data["maintenance_mode"] else "Disabled") + "\n", False


def mm_set(state, args):
    opts = options(args, {"-e": "enable", "--enable": "enable", "-t": "timeout", "--timeout": "timeout",
                          "-m": "mode", "--vsanmode": "mode"})
    if "enable" not in opts:
        raise Usage("Missing required parameter -e|--enable")
    wanted = opts["enable"].lower() in ("true", "1", "yes")
    if wanted == state.data["maintenance_mode"]:
        raise Failure("Maintenance mode is already %s." % ("enabled" if wanted else "disabled"))
    state.data["maintenance_mode"] = wanted
    return "", True


def reboot(state, args):
    opts = options(args, {"-r": "reason", "--reason": "reason", "-d": "delay", "--delay": "delay"})
    if "reason" not in opts:
        raise Usage("Missing required parameter -r|--reason")
    if not state.data["maintenance_mode"]:
        raise Failure("This operation is not allowed in the current state: the host is not in maintenance mode.")
    schedule_boot(state)
    return "", True


def schedule_boot(state):
    log = open(os.path.join(state.dir, "boot.log"), "a")
    subprocess.Popen(["/usr/bin/setsid", "-f", sys.executable, os.path.abspath(__file__), "boot"], stdin=subprocess.DEVNULL,
                     stdout=log, stderr=log, env=dict(os.environ, ESXCLI_SIM_STATE=state.dir), close_fds=True)


class Failure(Exception):
    pass


COMMANDS = {
    ("system", "settings", "kernel", "list"): kernel_list,
    ("system", "settings", "kernel", "set"): kernel_set,
    ("hardware", "pci", "list"): pci_list,
    ("system", "maintenanceMode", "get"): mm_get,
    ("system", "maintenanceMode", "set"): mm_set,
    ("system", "shutdown", "reboot"): reboot,
}


def esxcli(argv):
    args = list(argv)
    # Global options esxcli accepts before the namespace.
    while args and args[0] in ("--formatter=simple",):
        args.pop(0)
    if not args:
        sys.stdout.write("Usage: esxcli [options] {namespace}+ {cmd} [cmd options]\n")
        return 0
    state = State(STATE_DIR)
    for path, handler in COMMANDS.items():
        if tuple(args[:len(path)]) == path:
            try:
                out, mutating = handler(state, args[len(path):])
            except Usage as exc:
                sys.stderr.write("Error: %s\n" % exc)
                state.log(argv, 1, False)
                return 1
            except Failure as exc:
                sys.stdout.write("%s\n" % exc)
                state.log(argv, 1, False)
                return 1
            if mutating:
                state.save()
            state.log(argv, 0, mutating)
            sys.stdout.write(out)
            return 0
    state.log(argv, 1, False)
    sys.stderr.write("Error: Unknown command or namespace %s\n" % " ".join(args))
    return 1


def boot():
    """The reboot: the host's sshd goes away, Configured becomes Runtime, sshd comes back."""
    directory = STATE_DIR
    with open(os.path.join(directory, "state.json")) as handle:
        data = json.load(handle)
    time.sleep(1.0)  # the shutdown takes a moment; the reboot command has returned by then
    # Everything of this host goes down: sshd and every session (this host is its network namespace).
    own = os.readlink("/proc/self/ns/net")
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.readlink("/proc/%s/ns/net" % entry) == own:
                os.kill(int(entry), 9)
        except OSError:
            pass
    time.sleep(float(data.get("reboot_delay", 1.0)))
    if data.get("reboot_hangs"):
        return 0
    state = State(directory)
    for setting in state.data["settings"].values():
        setting["runtime"] = setting["configured"]
    state.data["reboots"] += 1
    state.save()
    state.lock.close()
    os.execv("/usr/sbin/sshd", ["/usr/sbin/sshd", "-f", os.path.join(directory, "sshd_config"),
                                "-E", os.path.join(directory, "sshd.log")])


def main(argv):
    if not STATE_DIR:
        sys.stderr.write("esxcli: ESXCLI_SIM_STATE is not set\n")
        return 2
    if argv[:1] == ["boot"]:
        return boot()
    if argv[:1] == ["force-reboot"]:
        state = State(STATE_DIR)
        state.log(["reboot"], 0, True)
        schedule_boot(state)
        return 0
    return esxcli(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
