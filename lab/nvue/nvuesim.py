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

The switch starts from the applied configuration of a real Cumulus Linux 5.5.0 switch (the corpus sample
``nvue/config_applied_5.5.0_vx.json``), with the release of ``--version`` in its header; on a release before
5.3 the QoS objects NVUE gained in 5.3 are absent and staging them is refused.

State lives in ``--state-file`` (JSON), read and written under a lock for every request, so the lab's door can
read it and arm faults between requests: ``apply`` (``fail``: the apply ends ``apply_fail``; ``hang``: the
revision stays ``applying``), ``drop_after`` (close the connection without an answer after N more requests)
and ``delay`` (seconds before each answer).
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime
import hmac
import json
import os
import random
import re
import ssl
import string
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
import corpus  # noqa: E402  pylint: disable=wrong-import-position

BASE_SAMPLE = ("nvue", "config_applied_5.5.0_vx.json")
API = "/nvue_v1"
MTU = (552, 9216)
RESERVED_VLANS = (3725, 3999)
QOS_SINCE = (5, 3)              # qos mapping / pfc / congestion-control objects
MODES = {"lossless": (5, 0), "lossy": (5, 0), "lossless-single-ipool": (5, 12), "lossy-multi-tc": (5, 14)}
TRUST = ("l2", "l3", "both", "port")
LOCK = threading.Lock()


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
            self.data = dict(applied=config, startup=copy.deepcopy(config), revisions={}, requests=[], applies=0, saves=0,
                             faults=dict(apply=None, drop_after=None, delay=0), ports=self.args.ports,
                             breakouts=self.args.breakouts, version=self.args.version)
            self.save()

    def save(self):
        tmp = self.args.state_file + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.data, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.args.state_file)

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
        entry.update(state="applied", progress="")


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
        with LOCK:
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
        with LOCK:
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
    parser.add_argument("--password", required=True)
    parser.add_argument("--state-file", required=True)
    parser.add_argument("--version", default="5.9.2")
    parser.add_argument("--ports", type=int, default=32)
    parser.add_argument("--breakouts", default="", help="ports broken out into four (swpNs0-3), comma separated")
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    args.breakouts = [int(p) for p in args.breakouts.split(",") if p]
    switch = Switch(args)
    with LOCK:
        switch.load()
    server = ThreadingHTTPServer((args.listen, args.port), Handler)
    server.daemon_threads = True
    server.switch = switch
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
