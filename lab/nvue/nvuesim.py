# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Cumulus Linux switch's NVUE REST API for the lab: HTTPS, basic authentication and the revision model.

What it serves, as the NVUE API guide describes it (Cumulus Linux 5.x, ``/nvue_v1``):

- ``GET /nvue_v1/<path>?rev=applied|<revision>``: the applied configuration, or a revision's (applied + staged);
- ``POST /nvue_v1/revision``: a new revision ``changeset/<user>/<date>_<time>_<XXXX>``, state ``pending``;
- ``PATCH /nvue_v1/<path>?rev=<revision>``: stage a change (JSON merge; ``null`` unsets);
- ``PATCH /nvue_v1/revision/<revision>`` ``{"state": "apply", "auto-prompt": {"ays": "ays_yes"}}``: apply; without
  ``ays_yes`` the apply aborts as ``ays_fail`` (client_timeout), an invalid configuration ends ``invalid`` with
  ``config_invalid`` issues naming the location and reason, and the applied configuration is unchanged;
- ``GET /nvue_v1/revision[/<revision>]``, ``DELETE /nvue_v1/revision/<revision>`` (a revision not applied);
- ``PATCH /nvue_v1/revision/applied`` ``{"state": "save"}``: the applied configuration becomes the startup one.

and, with ``--ssh-port``, the ``nv`` command line over SSH (exec requests), on the same state:
``nv config show [-r applied|startup] -o json`` (a list, ``[{"header": ...}, {"set": ...}]``, as ``startup.yaml``),
``nv set``/``nv unset`` (staged in the login's pending revision; ports as ranges ``swp1-4,swp7``),
``nv config apply [-y]`` (``Invalid config [rev_id: N]`` and the reasons, exit 1, when refused),
``nv config detach``, ``nv config save``, ``nv show interface lldp`` (what the lab's leaf of the switch's name
hears, ``--lldp-socket``) and ``nv show interface <port> counters qos pfc-stats`` (``qos counters pfc-stats``
before 5.5; fault ``pfc``).

The switch starts from the applied configuration of a real Cumulus Linux 5.5.0 switch (the corpus sample
``nvue/config_applied_5.5.0_vx.json``), with the release of ``--version`` in its header; on a release before
5.3 the QoS objects NVUE gained in 5.3 are absent and staging them is refused.

State lives in ``--state-file`` (JSON), read and written under a lock for every request, so the lab's door can
read it and arm faults between requests: ``apply`` (``fail``: the apply ends ``apply_fail``; ``hang``: the
revision stays ``applying``), ``drop_after`` (close the connection without an answer after N more requests),
``delay`` (seconds before each answer) and ``counters`` (a port's ``link.stats`` values in the operational
interface tree, ``GET /nvue_v1/interface?rev=operational`` and ``nv show interface --operational -o json``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import datetime
import fcntl
import hmac
import json
import logging
import shlex
import socket
import os
import random
import re
import ssl
import string
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
import corpus  # noqa: E402  pylint: disable=wrong-import-position

try:
    import paramiko
except ImportError:  # the REST side runs without it
    paramiko = None

BASE_SAMPLE = ("nvue", "config_applied_5.5.0_vx.json")
API = "/nvue_v1"
MTU = (552, 9216)
RESERVED_VLANS = (3725, 3999)
QOS_SINCE = (5, 3)              # qos mapping / pfc / congestion-control objects
AUTO_SAVE_SINCE = (5, 9)        # nv config apply saves by itself (system config auto-save enable on by default)
MODES = {"lossless": (5, 0), "lossy": (5, 0), "lossless-single-ipool": (5, 12), "lossy-multi-tc": (5, 14)}
TRUST = ("l2", "l3", "both", "port")
LOCK = threading.Lock()
CLOSE_AFTER = 10


@contextlib.contextmanager
def locked(switch):
    """The simulator's threads, and the lab's door in its own process (which arms faults by rewriting the state
    file), take turns at the state file: a fault cleared between a request's load and save is not lost."""
    with LOCK, open(switch.args.state_file + ".lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def release_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def initial_config(version):
    config = json.loads(corpus.body(*BASE_SAMPLE))
    config["header"]["version"] = "Cumulus Linux %s" % version
    if release_tuple(version) < QOS_SINCE:
        for key in ("mapping", "pfc", "congestion-control"):
            config["qos"].pop(key, None)
    return config


def merge(target, patch):
    """NVUE's PATCH: a JSON merge; ``null`` unsets; a link's ``state`` (``{"up": {}}``/``{"down": {}}``) is one value."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif key == "state" and isinstance(value, dict) and set(value) <= {"up", "down"}:
            target[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def subtree(config, parts):
    node = config
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


class Switch(object):
    """The switch's state; every method runs under LOCK with the state file loaded."""

    def __init__(self, args):
        self.args = args
        self.data = None

    def load(self):
        if os.path.exists(self.args.state_file):
            with open(self.args.state_file) as handle:
                self.data = json.load(handle)
        else:
            config = initial_config(self.args.version)
            self.data = dict(applied=config, startup=copy.deepcopy(config), revisions={}, pending={}, requests=[], applies=0, saves=0,
                             faults=dict(apply=None, drop_after=None, delay=0), ports=self.args.ports,
                             breakouts=self.args.breakouts, version=self.args.version)
            self.save()

    def save(self):
        tmp = self.args.state_file + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.data, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.args.state_file)

    def operational_interfaces(self):
        """The operational interface tree: the applied configuration's interfaces and every front-panel port of the
        switch, each with the ``link.stats`` of the NVUE API (the Cumulus Linux 5.9 guide's ``GET
        /nvue_v1/interface``: carrier-transitions, in/out bytes, drops, errors, pkts); no traffic passes here, so
        they are 0 but for what the lab armed (fault ``counters``: ``{"swp1": {"in-errors": 25}}``)."""
        tree = copy.deepcopy(self.data["applied"].get("interface") or {})
        for number in range(1, self.data["ports"] + 1):
            if number in self.data["breakouts"]:
                names = ["swp%ds%d" % (number, sub) for sub in range(4)]
            else:
                names = ["swp%d" % number]
            for name in names:
                tree.setdefault(name, {"type": "swp"})
        armed = self.data["faults"].get("counters") or {}
        for name, entry in tree.items():
            stats = dict((key, 0) for key in STATS)
            stats.update(armed.get(name) or {})
            entry.setdefault("link", {})["stats"] = stats
        return tree

    # --- validation of a configuration (what an apply checks) ---------------------------------------------

    def port_exists(self, name):
        match = re.match(r"^swp([1-9][0-9]*)(?:s([0-3]))?$", name)
        if not match:
            return False
        number = int(match.group(1))
        if number > self.data["ports"]:
            return False
        broken_out = number in self.data["breakouts"]
        return broken_out == (match.group(2) is not None)

    def problems(self, config):
        found = []
        version = release_tuple(self.data["version"])
        qos = config.get("qos") or {}
        if version < QOS_SINCE:
            for key in ("mapping", "pfc", "congestion-control"):
                if key in qos:
                    found.append(("qos.%s" % key, "unknown object in Cumulus Linux %s" % self.data["version"]))
        roce = qos.get("roce") or {}
        mode = roce.get("mode")
        if mode is not None and (mode not in MODES or version < MODES[mode]):
            found.append(("qos.roce.mode", "'%s' is not one of %s" % (mode, ", ".join(m for m, v in MODES.items() if version >= v))))
        trust = subtree(config, ["qos", "mapping", "default-global", "trust"])
        if trust is not None and trust not in TRUST:
            found.append(("qos.mapping.default-global.trust", "'%s' is not one of %s" % (trust, ", ".join(TRUST))))
        for prio in subtree(config, ["qos", "pfc", "default-global", "switch-priority"]) or {}:
            if not prio.isdigit() or int(prio) > 7:
                found.append(("qos.pfc.default-global.switch-priority", "%s is not a switch priority (0-7)" % prio))
        for tc, entry in (subtree(config, ["qos", "congestion-control", "default-global", "traffic-class"]) or {}).items():
            low, high = entry.get("min-threshold"), entry.get("max-threshold")
            if not tc.isdigit() or int(tc) > 7:
                found.append(("qos.congestion-control.default-global.traffic-class", "%s is not a traffic class (0-7)" % tc))
            elif isinstance(low, int) and isinstance(high, int) and low > high:
                found.append(("qos.congestion-control.default-global.traffic-class.%s" % tc,
                              "min-threshold %d is above max-threshold %d" % (low, high)))
        vlans = set()
        for vid in subtree(config, ["bridge", "domain", "br_default", "vlan"]) or {}:
            if not vid.isdigit() or not 1 <= int(vid) <= 4094 or RESERVED_VLANS[0] <= int(vid) <= RESERVED_VLANS[1]:
                found.append(("bridge.domain.br_default.vlan", "%s is not a VLAN this switch can use" % vid))
            else:
                vlans.add(int(vid))
        for name, entry in (config.get("interface") or {}).items():
            if name in ("eth0", "lo") or (entry or {}).get("type") in ("bond", "loopback", "eth", "svi"):
                continue
            if not self.port_exists(name):
                found.append(("interface.%s" % name, "%s is not a port of this switch" % name))
                continue
            mtu = subtree(entry, ["link", "mtu"])
            if mtu is not None and (not isinstance(mtu, int) or not MTU[0] <= mtu <= MTU[1]):
                found.append(("interface.%s.link.mtu" % name, "%s is not between %d and %d" % (mtu, MTU[0], MTU[1])))
            domain = subtree(entry, ["bridge", "domain", "br_default"]) or {}
            access = domain.get("access")
            if access is not None and access not in vlans:
                found.append(("interface.%s.bridge.domain.br_default.access" % name, "VLAN %s is not a VLAN of br_default" % access))
            for vid in domain.get("vlan") or {}:
                if not vid.isdigit() or int(vid) not in vlans:
                    found.append(("interface.%s.bridge.domain.br_default.vlan" % name, "VLAN %s is not a VLAN of br_default" % vid))
        return found

    # --- the revision model ------------------------------------------------------------------------------------

    def candidate(self, rev):
        config = copy.deepcopy(self.data["applied"])
        for patch in rev["patches"]:
            node = config
            for part in patch["path"][:-1]:
                node = node.setdefault(part, {})
            if patch["path"]:
                last = patch["path"][-1]
                if patch["body"] is None:
                    node.pop(last, None)
                elif isinstance(patch["body"], dict):
                    if not isinstance(node.get(last), dict):
                        node[last] = {}
                    merge(node[last], patch["body"])
                else:
                    node[last] = patch["body"]
            else:
                merge(config, patch["body"])
        return config

    def create(self, user):
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H.%M.%S")
        rev = "changeset/%s/%s_%s" % (user, stamp, "".join(random.choice(string.ascii_uppercase + string.digits) for dummy in range(4)))
        self.data["revisions"][rev] = dict(state="pending", issues={}, progress="", patches=[])
        return rev

    def view(self, rev):
        entry = self.data["revisions"][rev]
        return dict(state=entry["state"], transition=dict(issue=entry["issues"], progress=entry["progress"]))

    def apply(self, rev, body):
        entry = self.data["revisions"][rev]
        if ((body.get("auto-prompt") or {}).get("ays")) != "ays_yes":
            entry.update(state="ays_fail", progress="Aborted apply after warnings", issues={"0": dict(
                code="client_timeout", data={}, message="Timeout while waiting for client response", severity="error")})
            return
        config = self.candidate(entry)
        problems = self.problems(config)
        if problems:
            entry.update(state="invalid", progress="Invalid config", issues=dict(
                (str(i), dict(code="config_invalid", data=dict(location=loc, reason=reason + "\n"),
                              message="Config invalid at %s: %s\n" % (loc, reason), severity="error"))
                for i, (loc, reason) in enumerate(problems)))
            return
        fault = self.data["faults"].get("apply")
        if fault == "hang":
            entry.update(state="applying", progress="Applying")
            return
        if fault == "fail":
            entry.update(state="apply_fail", progress="Apply failed", issues={"0": dict(
                code="apply_fail", data={}, message="switchd reload failed; the previous configuration was restored",
                severity="error")})
            return
        self.data["applied"] = config
        self.data["applies"] += 1
        if self.auto_save(config):
            # "In Cumulus Linux 5.9 and later, auto save is on by default; the nv config apply command automatically
            # saves the configuration" (NVUE command reference, nv config apply).
            self.data["startup"] = copy.deepcopy(config)
        entry.update(state="applied", progress="")

    def auto_save(self, config):
        setting = ((config.get("system") or {}).get("config") or {}).get("auto-save") or {}
        if "enable" in setting:
            return str(setting["enable"]).lower() == "on"
        return release_tuple(self.data["version"]) >= AUTO_SAVE_SINCE


# --- the nv command line -------------------------------------------------------------------------------------

# Words after which the next word is a key of a collection (``interface swp1``, ``vlan 111``), and leaves that take a
# value (``link mtu 9216``); every other word is an object on the path. Taken from the nv set commands of the Cumulus
# Linux guides for the objects this simulator models.
COLLECTIONS = ("interface", "domain", "vlan", "mapping", "pfc", "congestion-control", "traffic-class", "switch-priority")
LEAVES = ("mtu", "access", "trust", "tx", "rx", "ecn", "min-threshold", "max-threshold", "mode", "enable", "probability",
          "red", "port-default-sp")
STATS = ("carrier-transitions", "in-bytes", "in-drops", "in-errors", "in-pkts", "out-bytes", "out-drops", "out-errors",
         "out-pkts")
NUMBERS = ("mtu", "access", "min-threshold", "max-threshold", "probability", "port-default-sp")


def expand_interfaces(text):
    out = []
    for part in text.split(","):
        match = re.match(r"^swp(\d+)-(\d+)$", part)
        if match:
            out.extend("swp%d" % n for n in range(int(match.group(1)), int(match.group(2)) + 1))
        else:
            out.append(part)
    return out


def nv_path(words):
    """``(paths, value)`` of the words after ``nv set``: one path per interface of a range."""
    paths = [[]]
    value = {}
    i = 0
    while i < len(words):
        word = words[i]
        last = paths[0][-1] if paths[0] else None
        if word in LEAVES or (word == "state" and last == "link"):
            if i + 1 >= len(words):
                raise ValueError("Incomplete command: %s needs a value" % word)
            raw = words[i + 1]
            value = {raw: {}} if word == "state" else (int(raw) if word in NUMBERS and raw.isdigit() else raw)
            paths = [p + [word] for p in paths]
            if i + 2 != len(words):
                raise ValueError("Invalid command: unexpected '%s'" % words[i + 2])
            break
        if word in COLLECTIONS and i + 1 < len(words):
            keys = expand_interfaces(words[i + 1]) if word == "interface" else [words[i + 1]]
            paths = [p + [word, key] for p in paths for key in keys]
            i += 2
            continue
        paths = [p + [word] for p in paths]
        i += 1
    return paths, value


LLDP_COLUMNS = ("Interface", "Speed", "Type", "Remote Host", "Remote Port")
PFC_COLUMNS = ("switch-priority", "rx-pause-frames", "rx-pause-duration", "tx-pause-frames", "tx-pause-duration")
# nv show interface <port> counters qos pfc-stats from Cumulus Linux 5.5; qos counters pfc-stats before.
COUNTERS_FIRST_SINCE = (5, 5)


def nv_table(columns, rows):
    """An ``nv show`` table as NVUE lays it out: the header, a rule of dashes as wide as each column (its header or
    its widest value), the rows; two spaces between columns, every cell padded to its column."""
    widths = [max([len(columns[i])] + [len(row[i]) for row in rows]) for i in range(len(columns))]
    lines = [columns, tuple("-" * width for width in widths)] + list(rows)
    return "".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)) + "\n" for line in lines)


def pfc_table(armed):
    """``nv show interface <port> counters qos pfc-stats`` laid out as NVIDIA's NVUE reference prints it (the corpus
    sample ``nvue/nv_show_counters_qos_pfc_stats_5.5_doc.txt``): one row a switch priority, 0-7; no traffic passes
    here, so every counter is 0 but what the lab armed (fault ``pfc``: ``{"swp1": {"3": {"rx-pause-frames": 9}}}``)."""
    rows = []
    for priority in range(8):
        values = (armed or {}).get(str(priority)) or {}
        rows.append(tuple([str(priority)] + [str(int(values.get(column, 0))) for column in PFC_COLUMNS[1:]]))
    return nv_table(PFC_COLUMNS, rows)


def lldp_table(socket_path):
    """``nv show interface lldp`` laid out as NVIDIA's NVUE reference prints it (the corpus sample
    ``lldp/nv_show_interface_lldp_cl5.txt``: a header, a rule of dashes as wide as each column, then one row for each
    interface with a neighbour: its type, the neighbour's system name and port ID), from what the lab's leaf of this
    switch's name hears: its real lldpd (lab/rdma/leaf.py), asked with ``lldpcli -f json0`` on its socket. Without a
    leaf (no VM cabled into it) there is no row. The leaf's ports are taps, whose speed is no switch port's: the
    Speed column stays empty."""
    rows = []
    if socket_path and os.path.exists(socket_path):
        try:
            proc = subprocess.run(["lldpcli", "-u", socket_path, "-f", "json0", "show", "neighbors"],
                                  capture_output=True, text=True, timeout=10, check=False)
            data = json.loads(proc.stdout) if proc.returncode == 0 else {}
        except (OSError, ValueError, subprocess.TimeoutExpired):
            data = {}
        for block in data.get("lldp") or []:
            for interface in block.get("interface") or []:
                chassis = (interface.get("chassis") or [{}])[0]
                port = (interface.get("port") or [{}])[0]
                host = ((chassis.get("name") or [{}])[0]).get("value") or ""
                port_id = ((port.get("id") or [{}])[0]).get("value") or ""
                # A neighbour that sends no system name is listed with its port ID and an empty host.
                if interface.get("name") and (host or port_id):
                    rows.append((interface["name"], "", "swp", host, port_id))
    rows.sort(key=lambda row: [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", row[0])])
    return nv_table(LLDP_COLUMNS, rows)


def nv_command(switch, user, line):
    """Run one ``nv`` command line as ``user``; ``(output, exit status)``."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        return "bash: %s\n" % exc, 2
    if not words or words[0] != "nv":
        return "bash: %s: command not found\n" % (words[0] if words else ""), 127
    args = words[1:]
    pending = switch.data["pending"]
    if args[:2] == ["config", "show"]:
        rev = args[args.index("-r") + 1] if "-r" in args else "applied"
        config = switch.data["startup"] if rev == "startup" else switch.data["applied"]
        if rev not in ("applied", "startup") and user in pending:
            config = switch.candidate(switch.data["revisions"][pending[user]])
        body = dict((k, v) for k, v in config.items() if k != "header")
        return json.dumps([{"header": config["header"]}, {"set": body}], indent=2) + "\n", 0
    if args[:2] == ["config", "diff"]:
        # The login's pending changes against the applied configuration, as the list of set/unset entries the
        # Cumulus Linux guide prints ("- unset: system: ..."); nothing pending prints an empty object, as NVIDIA's
        # NVUE tests read it after an apply.
        rev = pending.get(user)
        patches = switch.data["revisions"][rev]["patches"] if rev in switch.data["revisions"] else []
        entries = []
        for patch in patches:
            tree = patch["body"] if patch["body"] is not None else {}
            for part in reversed(patch["path"]):
                tree = {part: tree}
            entries.append({"unset" if patch["body"] is None else "set": tree})
        return (json.dumps(entries, indent=2) if entries else "{}") + "\n", 0
    if args[:2] == ["show", "interface"] and args[2:] == ["--operational", "-o", "json"]:
        return json.dumps(switch.operational_interfaces(), indent=2) + "\n", 0
    if args == ["show", "interface", "lldp"]:
        return lldp_table(switch.args.lldp_socket), 0
    counters_first = release_tuple(switch.data["version"]) >= COUNTERS_FIRST_SINCE
    wanted = ["counters", "qos", "pfc-stats"] if counters_first else ["qos", "counters", "pfc-stats"]
    if args[:2] == ["show", "interface"] and len(args) == 6 and args[3:] == wanted:
        if not switch.port_exists(args[2]):
            return "Error: interface %s not found\n" % args[2], 1
        return pfc_table((switch.data["faults"].get("pfc") or {}).get(args[2])), 0
    if args[:2] == ["config", "detach"]:
        rev = pending.pop(user, None)
        if rev is not None:
            switch.data["revisions"].pop(rev, None)
        return "", 0
    if args[:2] == ["config", "save"]:
        switch.data["startup"] = copy.deepcopy(switch.data["applied"])
        switch.data["saves"] += 1
        return "saved\n", 0
    if args[:2] == ["config", "apply"]:
        rev = pending.get(user)
        if rev is None:
            return "Warning: The pending config does not have any changes\n", 0
        answer = {"state": "apply", "auto-prompt": {"ays": "ays_yes" if ("-y" in args or "--assume-yes" in args) else None}}
        switch.apply(rev, answer)
        entry = switch.data["revisions"][rev]
        number = rev.rsplit("/", 1)[-1]
        if entry["state"] == "applied":
            pending.pop(user)
            return "applied [rev_id: %s]\n" % number, 0
        if entry["state"] == "invalid":
            reasons = "".join("  %s\n" % issue["message"].strip() for issue in entry["issues"].values())
            return "Invalid config [rev_id: %s]\n%s" % (number, reasons), 1
        reasons = "".join("  %s\n" % issue["message"].strip() for issue in entry["issues"].values())
        return "Error: apply of [rev_id: %s] failed\n%s" % (number, reasons), 1
    if args[:1] in (["set"], ["unset"]):
        try:
            paths, value = nv_path(args[1:])
        except ValueError as exc:
            return "Error: %s\n" % exc, 1
        if user not in pending:
            switch.data["cli_revisions"] = switch.data.get("cli_revisions", 0) + 1
            rev = "cli/%s/%d" % (user, switch.data["cli_revisions"])
            switch.data["revisions"][rev] = dict(state="pending", issues={}, progress="", patches=[])
            pending[user] = rev
        for path in paths:
            switch.data["revisions"][pending[user]]["patches"].append(dict(path=path, body=None if args[0] == "unset" else value))
        return "", 0
    return "Error: '%s' is not an nv command this switch knows\n" % " ".join(args[:2]), 1


class SshServer(paramiko.ServerInterface if paramiko else object):
    """Password logins of the switch's user; exec requests run ``nv`` commands."""

    def __init__(self, switch):
        super(SshServer, self).__init__()
        self.switch = switch
        self.commands = []

    def get_allowed_auths(self, username):
        return "password"

    def check_auth_password(self, username, password):
        args = self.switch.args
        if hmac.compare_digest(username, args.username) and hmac.compare_digest(password, args.password):
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        threading.Thread(target=self.exec_command, args=(channel, command.decode("utf-8", "replace")), daemon=True).start()
        return True

    def exec_command(self, channel, line):
        switch = self.switch
        with locked(switch):
            switch.load()
            switch.data["requests"].append(dict(method="SSH", path=line, rev=None, time=time.time()))
            faults = switch.data["faults"]
            drop = faults.get("drop_after")
            if drop is not None:
                faults["drop_after"] = drop - 1
            switch.save()
        if drop is not None and drop <= 0:
            channel.get_transport().close()
            return
        if faults.get("delay"):
            time.sleep(float(faults["delay"]))
        hang = False
        with locked(switch):
            switch.load()
            if faults.get("apply") == "hang" and line.startswith("nv config apply"):
                hang = True
            output, status = nv_command(switch, switch.args.username, line) if not hang else ("", 0)
            switch.save()
        if hang:
            time.sleep(3600)
            return
        try:
            channel.sendall(output.encode())
            channel.send_exit_status(status)
            channel.shutdown_write()
        except (OSError, EOFError):
            return
        # paramiko answers the exec request only after check_channel_exec_request returns, and a client that sees
        # the channel closed before that answer raises "Channel closed." without reading the output it already has.
        # sshd answers first; so the close here waits for the client's own close (or its connection's end), and
        # only a client that keeps the channel open past CLOSE_AFTER seconds has it closed under it.
        deadline = time.monotonic() + CLOSE_AFTER
        while not channel.closed and time.monotonic() < deadline:
            time.sleep(0.05)
        channel.close()


def serve_ssh(switch, address, port, host_key):
    logging.getLogger("paramiko").addHandler(logging.NullHandler())
    logging.getLogger("paramiko").propagate = False
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    sock.listen(64)

    def handle(conn):
        transport = paramiko.Transport(conn)
        transport.local_version = "SSH-2.0-OpenSSH_8.4p1 Debian-5+deb11u3"
        transport.add_server_key(host_key)
        channels = []  # held: a channel nobody refers to is closed when it is collected
        try:
            transport.start_server(server=SshServer(switch))
            while transport.is_active():
                channel = transport.accept(timeout=1)
                if channel is not None:
                    channels = [c for c in channels if not c.closed] + [channel]
        except (paramiko.SSHException, EOFError, OSError):
            pass
        finally:
            transport.close()

    while True:
        conn = sock.accept()[0]
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


class Handler(BaseHTTPRequestHandler):
    server_version = "nginx"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # pylint: disable=arguments-differ
        sys.stderr.write("%s %s\n" % (self.command, self.path))

    def answer(self, status, body):
        data = json.dumps(body, indent=2).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def problem(self, status, title, detail):
        self.answer(status, dict(status=status, title=title, detail=detail, type="about:blank"))

    def user(self):
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return None
        try:
            user, dummy, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        args = self.server.switch.args
        if hmac.compare_digest(user, args.username) and hmac.compare_digest(password, args.password):
            return user
        return None

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return {}
        return json.loads(self.rfile.read(length))

    def handle_any(self):
        switch = self.server.switch
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        with locked(switch):
            switch.load()
            faults = switch.data["faults"]
            switch.data["requests"].append(dict(method=self.command, path=url.path, rev=(query.get("rev") or [None])[0],
                                                time=time.time()))
            drop = faults.get("drop_after")
            if drop is not None:
                faults["drop_after"] = drop - 1
            switch.save()
        if drop is not None and drop <= 0:
            self.close_connection = True
            self.connection.close()
            return
        if faults.get("delay"):
            time.sleep(float(faults["delay"]))
        user = self.user()
        if user is None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="NVUE"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            payload = self.body() if self.command in ("PATCH", "POST") else None
        except ValueError:
            return self.problem(400, "Bad Request", "the body is not JSON")
        if not url.path.startswith(API + "/") and url.path != API:
            return self.problem(404, "Not Found", "the requested URL was not found on the server")
        parts = [unquote(p) for p in url.path[len(API):].split("/") if p]
        with locked(switch):
            switch.load()
            status, body = self.route(switch, parts, query, payload, user)
            switch.save()
        self.answer(status, body)

    def route(self, switch, parts, query, payload, user):  # pylint: disable=too-many-return-statements
        revisions = switch.data["revisions"]
        method = self.command
        if parts[:1] == ["revision"]:
            if len(parts) == 1 and method == "POST":
                rev = switch.create(user)
                return 200, {rev: switch.view(rev)}
            if len(parts) == 1 and method == "GET":
                return 200, dict((rev, switch.view(rev)) for rev in revisions)
            rev = "/".join(parts[1:])
            if rev == "applied" and method == "PATCH" and (payload or {}).get("state") == "save":
                switch.data["startup"] = copy.deepcopy(switch.data["applied"])
                switch.data["saves"] += 1
                return 200, dict(state="save", transition=dict(issue={}, progress=""))
            if rev not in revisions:
                return 404, dict(status=404, title="Not Found", detail="revision %s not found" % rev, type="about:blank")
            if method == "GET":
                return 200, switch.view(rev)
            if method == "DELETE":
                if revisions[rev]["state"] in ("applied", "applying"):
                    return 409, dict(status=409, title="Conflict", detail="revision %s is %s" % (rev, revisions[rev]["state"]),
                                     type="about:blank")
                del revisions[rev]
                return 204, {}
            if method == "PATCH" and (payload or {}).get("state") == "apply":
                if revisions[rev]["state"] != "pending":
                    return 409, dict(status=409, title="Conflict", detail="revision %s is %s" % (rev, revisions[rev]["state"]),
                                     type="about:blank")
                switch.apply(rev, payload)
                return 200, dict(state="apply", transition=dict(issue={}, progress=""))
            return 400, dict(status=400, title="Bad Request", detail="unsupported change of revision %s" % rev, type="about:blank")
        rev = (query.get("rev") or ["applied"])[0]
        if method == "GET":
            if rev in ("applied", "operational"):
                config = switch.data["applied"]
            elif rev == "startup":
                config = switch.data["startup"]
            elif rev in revisions:
                config = switch.candidate(revisions[rev])
            else:
                return 404, dict(status=404, title="Not Found", detail="revision %s not found" % rev, type="about:blank")
            if rev == "operational" and parts[:1] == ["interface"]:
                config = dict(config, interface=switch.operational_interfaces())
            node = subtree(config, parts)
            if node is None:
                return 404, dict(status=404, title="Not Found", detail="%s not found" % "/".join(parts), type="about:blank")
            return 200, node
        if method == "PATCH":
            if rev not in revisions:
                return 400, dict(status=400, title="Bad Request", detail="a change needs a pending revision (?rev=)", type="about:blank")
            if revisions[rev]["state"] != "pending":
                return 409, dict(status=409, title="Conflict", detail="revision %s is %s" % (rev, revisions[rev]["state"]),
                                 type="about:blank")
            if not parts and not isinstance(payload, dict):
                return 400, dict(status=400, title="Bad Request", detail="the root takes an object", type="about:blank")
            revisions[rev]["patches"].append(dict(path=parts, body=payload))
            return 200, payload
        return 405, dict(status=405, title="Method Not Allowed", detail="%s %s" % (method, "/".join(parts)), type="about:blank")

    do_GET = do_POST = do_PATCH = do_DELETE = handle_any


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--username", required=True)
    parser.add_argument("--password-file", required=True,
                        help="file whose first line is the login password (never on the command line, where any local user reads it)")
    parser.add_argument("--state-file", required=True)
    parser.add_argument("--version", default="5.9.2")
    parser.add_argument("--ports", type=int, default=32)
    parser.add_argument("--breakouts", default="", help="ports broken out into four (swpNs0-3), comma separated")
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ssh-port", type=int, default=0, help="serve the nv command line over SSH on this port")
    parser.add_argument("--host-key", help="the SSH host key (made when missing)")
    parser.add_argument("--no-rest", action="store_true", help="no REST API (Cumulus Linux before 5.6, API not enabled)")
    parser.add_argument("--lldp-socket", help="the control socket of the lab leaf's lldpd that stands for this "
                                              "switch's LLDP (nv show interface lldp)")
    args = parser.parse_args(argv)
    with open(args.password_file, encoding="utf-8") as handle:
        args.password = handle.readline().rstrip("\n")
    args.breakouts = [int(p) for p in args.breakouts.split(",") if p]
    switch = Switch(args)
    with locked(switch):
        switch.load()
    if args.ssh_port:
        if os.path.exists(args.host_key):
            host_key = paramiko.PKey.from_path(args.host_key)
        else:
            host_key = paramiko.ECDSAKey.generate()
            host_key.write_private_key_file(args.host_key)
        ssh = threading.Thread(target=serve_ssh, args=(switch, args.listen, args.ssh_port, host_key), daemon=True)
        ssh.start()
        if args.no_rest:
            ssh.join()
            return
    server = ThreadingHTTPServer((args.listen, args.port), Handler)
    server.daemon_threads = True
    server.switch = switch
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
