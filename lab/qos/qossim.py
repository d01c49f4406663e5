"""The lab's NIC QoS simulator: answers as NVIDIA's ``mlnx_qos`` or iproute2's ``dcb`` for the ConnectX ports of a
network-namespace lab host, with state. Only the standard library: lab hosts run it with the system python3.

    qossim.py --as mlnx_qos -i IF [--trust dscp|pcp] [--pfc 0,0,0,1,0,0,0,0] [--dscp2prio set,D,P ...]
    qossim.py --as dcb pfc|app|apptrust show|set|replace dev IF ...
    qossim.py admin --state-dir DIR init IF [IF ...] | reset | show

State: one JSON file per interface under $QOSSIM_STATE_DIR (trust, PFC vector, DSCP map, priority-to-TC map,
the DCB APP table and trust order); a reboot of the lab host (``reset``) brings the driver's defaults back, as
a real NIC forgets what mlnx_qos set. Every call is appended to calls.jsonl.

Output formats, as the real tools print them:
- mlnx_qos: the layout of mlnx-tools' python/mlnx_qos (``pretty_print``), held against the real output of a
  ConnectX NIC with MLNX_OFED in the corpus (qos/mlnx_qos_trust_dscp_os.txt), replayed in test_qossim.py;
- dcb: iproute2's dcb/dcb_pfc.c, dcb_app.c and dcb_apptrust.c print formats (``prio-pfc 0:off ...``,
  ``dscp-prio 24:3`` with DSCP names, ``order: dscp pcp``); its error for a NIC without DCB is the real one
  captured on the lab VMs (``Attribute read: Operation not supported``).
"""

import argparse
import json
import os
import sys
import time

DSCP_NAMES = {0: "CS0", 8: "CS1", 10: "AF11", 12: "AF12", 14: "AF13", 16: "CS2", 18: "AF21", 20: "AF22", 22: "AF23",
              24: "CS3", 26: "AF31", 28: "AF32", 30: "AF33", 32: "CS4", 34: "AF41", 36: "AF42", 38: "AF43", 40: "CS5",
              44: "VA", 46: "EF", 48: "CS6", 56: "CS7"}
NAMES_DSCP = dict((v, k) for k, v in DSCP_NAMES.items())


def defaults():
    """A ConnectX port after the driver loads: trust PCP, PFC off, DSCP map by the three high bits,
    IEEE's priority-to-TC map (priority 0 on TC 1, 1 on TC 0), vendor TSA, cable length 7."""
    return dict(trust="pcp", pfc=[0] * 8, dscp2prio=dict((str(d), d >> 3) for d in range(64)),
                prio_tc=[1, 0, 2, 3, 4, 5, 6, 7], cable_len=7, dcbx="os", app={}, apptrust=["pcp"])


class State(object):
    def __init__(self, state_dir):
        self.dir = state_dir

    def path(self, netdev):
        return os.path.join(self.dir, "%s.json" % netdev)

    def known(self):
        try:
            with open(os.path.join(self.dir, "netdevs.json")) as handle:
                return json.load(handle)
        except (IOError, OSError, ValueError):
            return []

    def load(self, netdev):
        if netdev not in self.known():
            return None
        try:
            with open(self.path(netdev)) as handle:
                return json.load(handle)
        except (IOError, OSError, ValueError):
            return defaults()

    def save(self, netdev, state):
        tmp = self.path(netdev) + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(state, handle, sort_keys=True)
        os.rename(tmp, self.path(netdev))

    def log(self, argv, rc):
        with open(os.path.join(self.dir, "calls.jsonl"), "a") as handle:
            handle.write(json.dumps(dict(time=time.time(), argv=argv, rc=rc)) + "\n")


# --- mlnx_qos ------------------------------------------------------------------------------------------

def mlnx_qos_print(state, out):
    out.write("DCBX mode: %s\n" % ("OS controlled" if state["dcbx"] == "os" else "Firmware controlled"))
    out.write("Priority trust state: %s\n" % state["trust"])
    if state["trust"] == "dscp":
        out.write("dscp2prio mapping:\n")
        per_prio = dict((p, "") for p in range(8))
        for dscp in range(63, -1, -1):
            per_prio[state["dscp2prio"][str(dscp)]] += "%02d," % dscp
        for prio in range(8):
            text, lines, pad = per_prio[prio], [], "\tprio:%d dscp:" % prio
            while len(text) > 24:
                lines.append(pad + text[:24])
                text = text[24:]
            if text:
                lines.append(pad + text)
            if lines:
                out.write("\n".join(lines) + "\n")
    out.write("Cable len: %d\n" % state["cable_len"])
    out.write("PFC configuration:\n")
    out.write("\tpriority    0   1   2   3   4   5   6   7\n")
    out.write("\tenabled     " + "".join("%1d   " % v for v in state["pfc"]) + "\n")
    tc2up = {}
    for up, tc in enumerate(state["prio_tc"]):
        tc2up.setdefault(tc, []).append(up)
    for tc in sorted(tc2up):
        out.write("tc: %d ratelimit: unlimited, tsa: vendor\n" % tc)
        for up in tc2up[tc]:
            out.write("\t priority:  %s\n" % up)


def mlnx_qos(store, argv, out, err):
    parser = argparse.ArgumentParser(prog="mlnx_qos", add_help=False)
    parser.add_argument("-i", "--interface", dest="intf")
    parser.add_argument("-f", "--pfc")
    parser.add_argument("--trust")
    parser.add_argument("--dscp2prio", action="append")
    parser.add_argument("--cable_len")
    options, rest = parser.parse_known_args(argv)
    if rest:
        out.write("Bad arguments\n")
        return 1
    if options.intf is None:
        out.write("Interface name is required\n")
        return 1
    state = store.load(options.intf)
    if state is None:
        # Not a ConnectX port of this host (the lab's own simulator message; no real text was captured).
        err.write("qossim: %s is not a simulated ConnectX port of this lab host\n" % options.intf)
        return 1
    if options.pfc:
        values = options.pfc.split(",")
        if len(values) > 8:
            out.write("Too many items for PFC\n")
            return 1
        if len(values) != 8:
            out.write("pfc list must have 8 items\n")
            return 1
        try:
            pfc = [int(v) for v in values]
            if any(v not in (0, 1) for v in pfc):
                raise ValueError("%s is not in the range 0..1" % [v for v in pfc if v not in (0, 1)][0])
        except ValueError as exc:
            out.write("Bad value for PFC: %s\n" % exc)
            return 1
        state["pfc"] = pfc
    if options.cable_len:
        state["cable_len"] = int(options.cable_len)
    if options.dscp2prio and options.trust:
        out.write("trust and dscp2prio commands cannot be used at the same time.\n")
        return 1
    for item in options.dscp2prio or []:
        try:
            action, dscp, prio = item.split(",")
            dscp, prio = int(dscp), int(prio)
            if action not in ("set", "del") or dscp > 63 or prio > 7:
                raise ValueError(item)
        except ValueError:
            out.write("Invalid dscp2prio command. Refer to the help.\n")
            return 1
        state["dscp2prio"][str(dscp)] = prio if action == "set" else 0
    if options.trust:
        if options.trust not in ("dscp", "pcp"):
            out.write("Invalid trust state command. Refer to the help.\n")
            return 1
        state["trust"] = options.trust
    store.save(options.intf, state)
    mlnx_qos_print(state, out)
    return 0


# --- dcb -----------------------------------------------------------------------------------------------

def dcb(store, argv, out, err):
    if len(argv) < 4 or argv[2] != "dev":
        err.write("Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }\n")
        return 1
    obj, command, netdev, args = argv[0], argv[1], argv[3], argv[4:]
    state = store.load(netdev)
    if state is None:
        err.write("Attribute read: No such device\n")
        return 1
    if obj == "pfc" and command == "show":
        fields = args or ["pfc-cap", "macsec-bypass", "delay", "prio-pfc"]
        head = []
        for field in fields:
            if field == "pfc-cap":
                head.append("pfc-cap 8 ")
            elif field == "macsec-bypass":
                head.append("macsec-bypass off ")
            elif field == "delay":
                head.append("delay 0 ")
            elif field == "prio-pfc":
                if head:
                    out.write("".join(head) + "\n")
                    head = []
                out.write("prio-pfc " + "".join("%d:%s " % (p, "on" if v else "off") for p, v in enumerate(state["pfc"])) + "\n")
            else:
                err.write("What is \"%s\"?\n" % field)
                return 1
        if head:
            out.write("".join(head) + "\n")
        return 0
    if obj == "pfc" and command == "set":
        if not args or args[0] != "prio-pfc":
            err.write("What is \"%s\"?\n" % (args[0] if args else ""))
            return 1
        for mapping in args[1:]:
            key, _sep, value = mapping.partition(":")
            if value not in ("on", "off") or not (key == "all" or (key.isdigit() and int(key) < 8)):
                err.write("Invalid pfc mapping %s\n" % mapping)
                return 1
            for prio in (range(8) if key == "all" else [int(key)]):
                state["pfc"][prio] = 1 if value == "on" else 0
        store.save(netdev, state)
        return 0
    if obj == "app" and command == "show":
        entries = sorted((int(d), p) for d, p in state["app"].items())
        out.write("dscp-prio " + " ".join("%s:%d" % (DSCP_NAMES.get(d, str(d)), p) for d, p in entries) + "\n")
        return 0
    if obj == "app" and command in ("add", "replace", "del"):
        if not args or args[0] != "dscp-prio":
            err.write("What is \"%s\"?\n" % (args[0] if args else ""))
            return 1
        for mapping in args[1:]:
            key, _sep, value = mapping.rpartition(":")
            dscp = NAMES_DSCP.get(key.upper(), int(key) if key.isdigit() else None)
            if dscp is None or dscp > 63 or not value.isdigit() or int(value) > 7:
                err.write("Invalid mapping %s\n" % mapping)
                return 1
            if command == "del":
                state["app"].pop(str(dscp), None)
            else:
                state["app"][str(dscp)] = int(value)
                state["dscp2prio"][str(dscp)] = int(value)
        store.save(netdev, state)
        return 0
    if obj == "apptrust" and command == "show":
        out.write("order: " + "".join("%s " % s for s in state["apptrust"]) + "\n")
        return 0
    if obj == "apptrust" and command == "set":
        if not args or args[0] != "order":
            err.write("What is \"%s\"?\n" % (args[0] if args else ""))
            return 1
        order = args[1:]
        if any(s not in ("ethtype", "stream-port", "dgram-port", "port", "dscp", "pcp") for s in order):
            err.write("Invalid list of selectors\n")
            return 1
        state["apptrust"] = order
        state["trust"] = "dscp" if order and order[0] == "dscp" else "pcp"
        store.save(netdev, state)
        return 0
    err.write("What is \"%s\"?\n" % command)
    return 1


def admin(argv):
    parser = argparse.ArgumentParser(prog="qossim admin")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("command", choices=["init", "reset", "show"])
    parser.add_argument("netdevs", nargs="*")
    args = parser.parse_args(argv)
    os.makedirs(args.state_dir, exist_ok=True)
    store = State(args.state_dir)
    if args.command == "init":
        for name in os.listdir(args.state_dir):
            os.unlink(os.path.join(args.state_dir, name))
        with open(os.path.join(args.state_dir, "netdevs.json"), "w") as handle:
            json.dump(args.netdevs, handle)
    elif args.command == "reset":
        # A reboot: the driver comes up with its defaults (what mlnx_qos or dcb set is gone).
        for netdev in store.known():
            if os.path.exists(store.path(netdev)):
                os.unlink(store.path(netdev))
    else:
        sys.stdout.write(json.dumps(dict((n, store.load(n)) for n in store.known()), sort_keys=True) + "\n")
    return 0


def main(argv):
    if argv and argv[0] == "admin":
        return admin(argv[1:])
    if len(argv) < 2 or argv[0] != "--as" or argv[1] not in ("mlnx_qos", "dcb"):
        sys.stderr.write("usage: qossim.py --as mlnx_qos|dcb ARGS...\n")
        return 2
    store = State(os.environ.get("QOSSIM_STATE_DIR", "."))
    tool, args = argv[1], argv[2:]
    if tool == "dcb":
        # -N / -s / -j options are accepted and ignored by the simulator's text output.
        while args and args[0].startswith("-"):
            args = args[1:]
        rc = dcb(store, args, sys.stdout, sys.stderr)
    else:
        rc = mlnx_qos(store, args, sys.stdout, sys.stderr)
    store.log([tool] + argv[2:], rc)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
