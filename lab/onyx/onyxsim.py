# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stateful NVIDIA Onyx (Spectrum switch OS, 3.9/3.10) CLI simulator behind a real SSH server.

It answers what netmiko's ``mellanox_mlnxos`` driver and the collection's ``onyx_roce`` module send:
the Onyx prompts and modes, character echo, the config grammar (one-line global form, interface/VLAN
sub-modes, ``no`` forms, port ranges and breakout names), ``show`` output in the vendor's text and
``| json-print`` layouts (the older list/``header`` layout before 3.6.6000, the newer one from it,
compared numerically), running vs saved configuration, ``%`` errors, and injected faults.
Python 3.11, stdlib + paramiko.  Written from published output formats (the NVIDIA Onyx User Manual 3.10
"RoCE Commands" and show-command chapters, and public captures of Onyx 3.10 switches), not from vendor code.

Start::

    python onyxsim.py --listen 127.0.0.1 --port 2222 --username admin --password-file FILE --state-file PATH
                      [--hostname sw] [--version 3.10.4006] [--ports 32] [--host-key PATH] [--factory]
                      [--fault-drop-after N] [--fault-reject REGEX] [--fault-delay SECONDS]
                      [--authorized-key PUBFILE]

It prints ``READY <port>`` on stdout once listening (``--port 0`` picks a free port) and exits 0 on
SIGTERM/SIGINT.  Then: ``ssh admin@127.0.0.1 -p 2222`` or netmiko ``device_type="mellanox_mlnxos"``.

State file (JSON, replaced atomically after every command; read by tests)::

    {"version", "hostname", "ports": [running port names],
     "running": CONFIG, "saved": CONFIG, "effective": {...what show commands derive...},
     "commands": [{"session": n, "line": "...", "mode": "user|enable|config|config-if|config-vlan|config-if-vlan",
                   "ok": bool}],
     "logins": n, "auth_attempts": n, "sessions": n, "link_toggles": {port: n}, "config_commands": n, "drops": n,
     "faults": {"drop_after": N|null, "reject": REGEX|null, "delay": SECONDS,
                "counters": {port: {"Rx"|"Tx": {label: value}}}}}

    CONFIG = {"hostname", "port_count", "roce": null|"lossless"|"semi-lossless"|"lossy",
              "vlans": {"1": {"name": "default"}, "111": {"name": ""}},
              "interface_vlans": {"111": {"ip_address": "10.0.0.1/24"|null, "mtu": 1500}},
              "pfc": {"enabled": bool, "priorities": [3]}, "breakout": {"1/1": "qsfp-split-4"},
              "ports": {"1/1": {"mtu", "shutdown", "description", "speed", "switchport_mode", "access_vlan",
                                "allowed_vlans": "all"|[ids], "pfc_mode": "on"|null, "trust": null|"L2"|"L3"|"both",
                                "rewrite_pcp", "rewrite_dscp", "flowcontrol": {"send", "receive"},
                                "ecn": {"3": {"mode": "ecn"|"red", "threshold": "absolute"|"relative", "min", "max"}},
                                "ets": {"3": {"mode": "strict"|"wrr", "weight"}}}}}

Behaviour:

- Modes and prompts: ``sw >`` (user), ``sw #`` (enable), ``sw (config) #``, ``sw (config interface ethernet 1/1-1/4) #``,
  ``sw (config vlan 111) #``, ``sw (config interface vlan 111) #``.  ``exit`` goes up one level and closes the
  session at enable/user level; ``enable``, ``disable``, ``configure terminal`` (``config term``, ``conf t``).
  A sub-mode line is tried with the mode's prefix first (``mtu 9216 force`` = ``interface ethernet 1/1 mtu 9216
  force``), then as a global command (``show ...``, ``vlan 10``, ``interface ethernet 1/2``), like Onyx prefix modes.
- Keywords match by unique prefix (``sh int eth 1/1``); ``?`` lists what may follow, Tab completes a keyword.
- Terminal: echo of every character, CR, LF and CRLF line ends, backspace/DEL, Ctrl-U, Ctrl-C, arrow keys ignored,
  the prompt after every line (empty ones too).  Paging is on at login (screen height from the pty, ``lines 1-23 ``,
  space/Enter/q) until ``no cli session paging enable`` (what netmiko sends) or ``terminal length N``.
- ``dcb priority-flow-control enable`` without ``force`` asks ``Type 'yes' to confirm ...`` as Onyx does.
- MTU: 1500-9216; before 3.10 an MTU change on an enabled port needs ``force`` or ``shutdown`` first, from 3.10 it
  does not.  Changing the RoCE mode (all enabled ports) or the MTU/speed of an enabled port counts a link toggle.
- RoCE: ``roce`` = lossless; with RoCE on, ports without explicit settings trust L3, have ECN 150/1500 KB on
  TC 3 and ETS TC 3 WRR 50 / TC 6 strict, PFC is on for priority 3 (lossless, semi-lossless); explicit
  per-port settings override that and are what ``show running-config`` prints (``effective`` in the state file).
- Breakout: ``interface ethernet 1/1 module-type qsfp-split-4|qsfp-split-2 force`` replaces 1/1 by 1/1/1-1/1/4
  (25G) or 1/1/1-1/1/2 (50G); ``interface ethernet 1/1/1 no module-type force`` (or ``module-type qsfp``) joins them.
- VLANs must exist before ``vlan N name``, access/allowed VLANs and ``interface vlan N``; trunk ports allow all
  VLANs until ``switchport trunk allowed-vlan none|N|add|remove``; hybrid ports start with none.
- A restarted simulator loads the file and runs its *saved* configuration (unsaved changes are lost, as on a
  reboot; counters are kept); ``--factory`` starts from defaults; ``--ports``/``--hostname`` apply to a factory
  switch (``--hostname`` also renames a loaded one).
- Faults can be changed while it runs by rewriting the ``faults`` key of the state file (re-read before every
  command and before every write).  ``drop_after`` counts configuration lines (not ``show``/``exit``) from process
  start or from when the fault was set; the Nth line is applied, then the connection is closed without a reply,
  and the fault disarms itself.  ``reject`` answers matching lines with ``% Internal error, please try again``
  (not applied); ``delay`` sleeps before every answer; ``counters`` sets a port's ``show interfaces ethernet``
  Rx/Tx counters (no traffic passes through the simulator: the others read 0).

Verbatim from the Onyx manual and public captures: the prompts, ``show roce`` (lossless), the ``show dcb priority-flow-control``
text, the running-config header, section banners and line style, the ``show interfaces ethernet`` field labels,
``show version`` labels and JSON keys, every JSON key name and the two JSON layouts of interfaces, switchport,
VLANs, congestion-control, qos, ets, and ``% Unrecognized command "x".`` + ``Type "?" for help.``.  Invented
(plausible, see the ``ERR_*`` constants): the other error texts, the PFC confirmation wording (from memory), the
lossy/semi-lossless/disabled ``show roce`` variants, the text layouts of ``show vlan``, ``show interfaces
switchport``, congestion-control, qos and ets, the old (< 3.6.6000) PFC JSON, and the RoCE ETS weights.
"""

import argparse
import codecs
import copy
import datetime
import json
import logging
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback

import paramiko

DEFAULT_VERSION = '3.10.4006'
NEW_JSON_MIN = (3, 6, 6000)      # json-print layout changed here (mellanox.onyx ONYX_API_VERSION)
MTU_NO_FORCE_MIN = (3, 10)       # from here an MTU change on an enabled port no longer needs "force"
MAX_PORTS = 64
ROCE_ECN = {'mode': 'ecn', 'threshold': 'absolute', 'min': 150, 'max': 1500}
BUILD_DATES = {'3.6.5000': '2017-11-10 18:14:32', '3.8.2306': '2020-01-29 11:48:15'}
BASE_MAC = 0x7cfe90e5ca00
CONFIG_MODES = ('config', 'config-if', 'config-vlan', 'config-if-vlan')
SUB_MODES = ('config-if', 'config-vlan', 'config-if-vlan')

# ---------------------------------------------------------------------------------------------
# Error texts.  ERR_UNRECOGNIZED is verbatim Onyx/TMS CLI; the others are invented in the same style.
# ---------------------------------------------------------------------------------------------
ERR_UNRECOGNIZED = '% Unrecognized command "{0}".'
ERR_INCOMPLETE = '% Incomplete command.'
ERR_AMBIGUOUS = '% Ambiguous command "{0}".'
HINT_TOP = 'Type "?" for help.'
HINT = 'Type "{0} ?" for help.'
ERR_FAULT = '% Internal error, please try again'
ERR_NO_PORT = '% Interface ethernet {0} does not exist'
ERR_BAD_RANGE = '% Invalid interface range {0}'
ERR_VALUE = '% Invalid {0} {1}. Valid range is {2}-{3}.'
ERR_SPEED = '% Invalid speed {0}'
ERR_IP = '% Invalid IP address {0}'
ERR_NO_VLAN = '% VLAN {0} does not exist'
ERR_VLAN1 = '% Cannot delete default VLAN 1'
ERR_MTU_UP = '% Interface ethernet {0} is enabled: shut it down before changing the MTU, or use "force"'
ERR_ACCESS_MODE = '% Interface ethernet {0}: access VLAN can be set only in access or hybrid mode'
ERR_ALLOWED_MODE = '% Interface ethernet {0} is not in {1} mode'
ERR_THRESHOLDS = '% Minimum threshold {0} is greater than maximum threshold {1}'
ERR_SPLIT_UP = '% Interface ethernet {0} is enabled: shut it down before changing the module type, or use "force"'
ERR_SPLIT_SUB = '% Interface ethernet {0} is already split'
ERR_NOT_SPLIT = '% Interface ethernet {0} is not split'
ERR_NO_JSON = '% json-print is not supported for this command'
ERR_QUOTE = '% Unterminated quoted string'
ERR_SVI_MTU = '% Invalid MTU {0}. Valid range is 1280-9216.'
ERR_BUG = '% Simulator error (traceback on its stderr)'

CONFIRM_PFC = {
    True: "This action might cause traffic loss while shutting down a port with priority-flow-control mode on\n"
          "Type 'yes' to confirm enable pfc globally: ",
    False: "This action might cause traffic loss while shutting down a port with priority-flow-control mode on\n"
           "Type 'yes' to confirm disable pfc globally: ",
}


class CliError(Exception):
    """A command failed; the message is what the CLI prints."""


class Confirm:
    """A command that asks "Type 'yes' to confirm" before it applies."""

    def __init__(self, prompt, apply):
        self.prompt = prompt
        self.apply = apply


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------
def parse_version(text):
    """'3.10.4006' -> (3, 10, 4006): compare firmware versions numerically, never as strings."""
    parts = re.findall(r'\d+', text or '')
    if not parts:
        raise ValueError('bad version %r' % text)
    return tuple(int(p) for p in parts)


def port_key(name):
    return tuple(int(x) for x in name.split('/'))


def parent_of(name):
    return name.rsplit('/', 1)[0]


def compress_ints(values):
    """[1, 2, 3, 5] -> ['1-3', '5']"""
    runs = []
    for v in sorted(set(values)):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ['%d' % a if a == b else '%d-%d' % (a, b) for a, b in runs]


def port_runs(ports):
    """Consecutive ports (same breakout level and parent) -> ['1/1-1/4', '1/7']."""
    runs = []
    for p in ports:
        k = port_key(p)
        if runs:
            last = port_key(runs[-1][-1])
            if len(k) == len(last) and k[:-1] == last[:-1] and k[-1] == last[-1] + 1:
                runs[-1].append(p)
                continue
        runs.append([p])
    return [r[0] if len(r) == 1 else '%s-%s' % (r[0], r[-1]) for r in runs]


def quote(text):
    return '"%s"' % text


def tokenize(line):
    """Split on blanks; double quotes group words ("a b" -> one token 'a b')."""
    tokens, cur, in_quote, have = [], [], False, False
    for ch in line:
        if ch == '"':
            in_quote = not in_quote
            have = True
            continue
        if ch.isspace() and not in_quote:
            if have:
                tokens.append(''.join(cur))
                cur, have = [], False
            continue
        cur.append(ch)
        have = True
    if in_quote:
        raise CliError(ERR_QUOTE)
    if have:
        tokens.append(''.join(cur))
    return tokens


def split_pipes(line):
    """'show x | include "a|b" | json-print' -> ('show x', ['include "a|b"', 'json-print'])."""
    parts, cur, in_quote = [], [], False
    for ch in line:
        if ch == '"':
            in_quote = not in_quote
        if ch == '|' and not in_quote:
            parts.append(''.join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append(''.join(cur))
    return parts[0].strip(), [p.strip() for p in parts[1:]]


# ---------------------------------------------------------------------------------------------
# Parameter types of the grammar.  parse(token, switch) -> value, None (not this type) or ValueErr.
# ---------------------------------------------------------------------------------------------
class ValueErr:
    def __init__(self, msg):
        self.msg = msg


class Param:
    rest = False

    def parse(self, token, switch):
        raise NotImplementedError


class IntParam(Param):
    def __init__(self, lo, hi, label):
        self.lo, self.hi, self.label = lo, hi, label

    def parse(self, token, switch):
        if not re.fullmatch(r'\d+', token):
            return None
        value = int(token)
        if not self.lo <= value <= self.hi:
            return ValueErr(ERR_VALUE.format(self.label, token, self.lo, self.hi))
        return value


class PortsParam(Param):
    RE = re.compile(r'(\d+/\d+(?:/\d+)?)(?:-(\d+/\d+(?:/\d+)?))?')

    def parse(self, token, switch):
        m = self.RE.fullmatch(token)
        if not m:
            return None
        existing = switch.port_list()
        first, last = m.group(1), m.group(2)
        for p in (first, last):
            if p is not None and p not in switch.running['ports']:
                return ValueErr(ERR_NO_PORT.format(p))
        if last is None:
            return [first]
        ka, kb = port_key(first), port_key(last)
        if len(ka) != len(kb) or ka[:-1] != kb[:-1] or ka > kb:
            return ValueErr(ERR_BAD_RANGE.format(token))
        return [p for p in existing if len(port_key(p)) == len(ka) and ka <= port_key(p) <= kb]


class VlanParam(Param):
    def parse(self, token, switch):
        if not re.fullmatch(r'\d+', token):
            return None
        if not 1 <= int(token) <= 4094:
            return ValueErr(ERR_VALUE.format('VLAN ID', token, 1, 4094))
        return int(token)


class VlanListParam(Param):
    def parse(self, token, switch):
        if not re.fullmatch(r'\d+(-\d+)?(,\d+(-\d+)?)*', token):
            return None
        vlans = []
        for part in token.split(','):
            a, _sep, b = part.partition('-')
            lo, hi = int(a), int(b or a)
            for v in (lo, hi):
                if not 1 <= v <= 4094:
                    return ValueErr(ERR_VALUE.format('VLAN ID', v, 1, 4094))
            if lo > hi:
                return ValueErr(ERR_VALUE.format('VLAN range', part, 1, 4094))
            vlans.extend(range(lo, hi + 1))
        return sorted(set(vlans))


class MtuParam(IntParam):
    def __init__(self):
        super().__init__(1500, 9216, 'MTU')


class SpeedParam(Param):
    SPEEDS = ('1G', '10G', '25G', '40G', '50G', '56G', '100G', '200G', '400G', 'auto')

    def parse(self, token, switch):
        if not re.fullmatch(r'(?i)\d+G?|auto', token):
            return None
        value = token.upper() if token.lower() != 'auto' else 'auto'
        if re.fullmatch(r'\d+', value) and int(value) >= 1000:
            value = '%dG' % (int(value) // 1000)
        if value not in self.SPEEDS:
            return ValueErr(ERR_SPEED.format(token))
        return value


class IpParam(Param):
    RE = re.compile(r'(\d+)\.(\d+)\.(\d+)\.(\d+)(?:/(\d+))?')

    def parse(self, token, switch):
        m = self.RE.fullmatch(token)
        if not m:
            return None
        if any(int(o) > 255 for o in m.groups()[:4]) or (m.group(5) and int(m.group(5)) > 32):
            return ValueErr(ERR_IP.format(token))
        return token


class MaskParam(Param):
    def parse(self, token, switch):
        m = re.fullmatch(r'/(\d+)', token)
        if m:
            return int(m.group(1)) if int(m.group(1)) <= 32 else ValueErr(ERR_IP.format(token))
        m = re.fullmatch(r'(\d+)\.(\d+)\.(\d+)\.(\d+)', token)
        if not m:
            return None
        bits = ''.join('{0:08b}'.format(int(o) & 255) for o in m.groups())
        if '01' in bits:
            return ValueErr(ERR_IP.format(token))
        return bits.count('1')


class WordParam(Param):
    def __init__(self, pattern):
        self.pattern = re.compile(pattern)

    def parse(self, token, switch):
        return token if self.pattern.fullmatch(token) else None


class RestParam(Param):
    rest = True

    def parse(self, token, switch):
        return token


PARAM_TYPES = {
    'ports': PortsParam(),
    'vlan': VlanParam(),
    'vlans': VlanListParam(),
    'mtu': MtuParam(),
    'svimtu': IntParam(1, 65535, 'MTU'),
    'tc': IntParam(0, 7, 'traffic class'),
    'prio': IntParam(0, 7, 'switch priority'),
    'kb': IntParam(0, 100000, 'threshold (KB)'),
    'pct': IntParam(0, 100, 'threshold (%)'),
    'weight': IntParam(0, 100, 'weight'),
    'lines': IntParam(0, 999, 'terminal length'),
    'width': IntParam(34, 999, 'terminal width'),
    'speed': SpeedParam(),
    'ip': IpParam(),
    'mask': MaskParam(),
    'hostname': WordParam(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,62}'),
    'rest': RestParam(),
}


# ---------------------------------------------------------------------------------------------
# Grammar: a keyword trie.  Keywords match by unique case-insensitive prefix ("sh run", "int eth"),
# with backtracking so "config term" picks "configure terminal" over "configuration ...".
# ---------------------------------------------------------------------------------------------
class Node:
    def __init__(self):
        self.lits = {}
        self.params = []
        self.action = None


class Match:
    def __init__(self, action=None, values=None, error=None):
        self.action, self.values, self.error = action, values, error


class Grammar:
    # error priorities at the same token: ambiguous > bad value > incomplete > unrecognized
    PRIORITY = {'unrecognized': 0, 'incomplete': 1, 'value': 2, 'ambiguous': 3}

    def __init__(self):
        self.root = Node()

    @staticmethod
    def expand(spec):
        paths = [[]]
        for tok in spec.split():
            if tok.startswith('['):
                word = tok[1:-1]
                paths = [p + extra for p in paths for extra in ([], [('lit', word, word, True)])]
            elif tok.startswith('{'):
                body, _sep, name = tok[1:].partition('}')
                name = name.lstrip(':')
                paths = [p + [('lit', alt, name, alt)] for p in paths for alt in body.split('|')]
            elif tok.startswith('<'):
                name, _sep, typ = tok[1:-1].partition(':')
                paths = [p + [('param', name, typ)] for p in paths]
            else:
                paths = [p + [('lit', tok, None, None)] for p in paths]
        return paths

    def add(self, spec, handler):
        for path in self.expand(spec):
            node, static = self.root, {}
            for elem in path:
                if elem[0] == 'lit':
                    _kind, word, name, value = elem
                    if name:
                        static[name] = value
                    node = node.lits.setdefault(word, Node())
                else:
                    _kind, name, typ = elem
                    ptype = PARAM_TYPES[typ]
                    for pname, existing, child in node.params:
                        if pname == name and existing is ptype:
                            node = child
                            break
                    else:
                        child = Node()
                        node.params.append((name, ptype, child))
                        node = child
            if node.action is not None:
                raise ValueError('duplicate grammar entry: %s' % spec)
            node.action = (handler, static)

    def match(self, tokens, switch):
        found, errors = [], []
        self._walk(self.root, tokens, 0, {}, switch, found, errors)
        if found:
            action, values = found[0]
            return Match(action, values)
        if not errors:
            return Match(error=(0, 'unrecognized', tokens[0] if tokens else ''))
        index, _prio, kind, detail = max(errors, key=lambda e: (e[0], e[1]))
        return Match(error=(index, kind, detail))

    def complete(self, tokens, partial, switch):
        """What may follow tokens: keywords starting with partial, '<param>' and '<cr>' (for '?' and Tab)."""
        nodes = [self.root]
        for token in tokens:
            low, nxt = token.lower(), []
            for node in nodes:
                exact = [k for k in node.lits if k.lower() == low]
                nxt += [node.lits[k] for k in exact or [k for k in node.lits if k.lower().startswith(low)]]
                for _name, ptype, child in node.params:
                    value = ptype.parse(token, switch)
                    if value is not None and not isinstance(value, ValueErr):
                        nxt.append(child)
            nodes = nxt
        options = set()
        for node in nodes:
            options.update(k for k in node.lits if k.lower().startswith(partial.lower()))
            if not partial:
                options.update('<%s>' % name for name, _ptype, _child in node.params)
                if node.action:
                    options.add('<cr>')
        return sorted(options, key=lambda o: (o == '<cr>', o.startswith('<'), o))

    def _walk(self, node, tokens, i, values, switch, found, errors):
        if i == len(tokens):
            if node.action:
                found.append((node.action, values))
            else:
                errors.append((i, self.PRIORITY['incomplete'], 'incomplete', None))
            return
        token = tokens[i]
        low = token.lower()
        exact = [k for k in node.lits if k.lower() == low]
        candidates = exact or [k for k in node.lits if k.lower().startswith(low)]
        start = len(found)
        hits = 0
        for word in candidates:
            before = len(found)
            self._walk(node.lits[word], tokens, i + 1, values, switch, found, errors)
            hits += len(found) > before
        if hits > 1:
            del found[start:]
            errors.append((i, self.PRIORITY['ambiguous'], 'ambiguous', token))
            return
        matched = bool(candidates)
        for name, ptype, child in node.params:
            if ptype.rest:
                if child.action:
                    found.append((child.action, dict(values, **{name: ' '.join(tokens[i:])})))
                    matched = True
                continue
            value = ptype.parse(token, switch)
            if value is None:
                continue
            matched = True
            if isinstance(value, ValueErr):
                errors.append((i, self.PRIORITY['value'], 'value', value.msg))
                continue
            self._walk(child, tokens, i + 1, dict(values, **{name: value}), switch, found, errors)
        if not matched:
            errors.append((i, self.PRIORITY['unrecognized'], 'unrecognized', token))


def format_error(error, user_tokens, offset=0):
    index, kind, detail = error
    index = max(0, index - offset)
    if kind == 'value':
        return detail
    shown = user_tokens[:index]
    hint = HINT.format(' '.join(shown)) if shown else HINT_TOP
    if kind == 'incomplete':
        return ERR_INCOMPLETE + '\n' + hint
    if kind == 'ambiguous':
        return ERR_AMBIGUOUS.format(detail) + '\n' + hint
    return ERR_UNRECOGNIZED.format(detail) + '\n' + hint


def normalize_no(tokens):
    """'no interface ethernet 1/1 shutdown' -> 'interface ethernet 1/1 no shutdown' (both forms exist)."""
    if len(tokens) >= 2 and 'no'.startswith(tokens[0].lower()) and tokens[0]:
        second = tokens[1].lower()
        if len(tokens) >= 5 and len(second) >= 2 and 'interface'.startswith(second):
            return tokens[1:4] + ['no'] + tokens[4:]
        if len(tokens) >= 4 and len(second) >= 2 and 'vlan'.startswith(second):
            return tokens[1:3] + ['no'] + tokens[3:]
    return tokens


# ---------------------------------------------------------------------------------------------
# Configuration model
# ---------------------------------------------------------------------------------------------
def new_port():
    return {
        'mtu': 1500, 'shutdown': False, 'description': '', 'speed': None,
        'switchport_mode': 'access', 'access_vlan': 1, 'allowed_vlans': 'all',
        'pfc_mode': None, 'trust': None, 'rewrite_pcp': False, 'rewrite_dscp': False,
        'flowcontrol': {'send': 'off', 'receive': 'off'}, 'ecn': {}, 'ets': {},
    }


def factory_config(port_count, hostname):
    return {
        'hostname': hostname,
        'port_count': port_count,
        'roce': None,
        'vlans': {'1': {'name': 'default'}},
        'interface_vlans': {},
        'pfc': {'enabled': False, 'priorities': []},
        'breakout': {},
        'ports': {'1/%d' % i: new_port() for i in range(1, port_count + 1)},
    }


class Switch:
    """The one running configuration all SSH sessions share, its persistence, faults and show output."""

    def __init__(self, opts):
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.version = opts.version
        self.vtuple = parse_version(opts.version)
        self.state_file = opts.state_file
        self.username, self.password = opts.username, opts.password
        self.authorized = load_authorized_keys(opts.authorized_key)
        self.started = time.time()
        self.oper_change = {}
        self.faults = {'drop_after': opts.fault_drop_after, 'reject': opts.fault_reject, 'delay': opts.fault_delay or 0}
        self.fault_count = 0
        self.last_written = None
        self.commands, self.logins, self.sessions = [], 0, 0
        self.auth_attempts = 0  # credentials offered (password or key), whether right or wrong
        self.link_toggles, self.config_commands, self.drops = {}, 0, 0
        loaded = None
        if self.state_file and os.path.exists(self.state_file) and not opts.factory:
            with open(self.state_file, encoding='utf-8') as handle:
                loaded = json.load(handle)
        if loaded:
            self.saved = loaded['saved']
            self.running = copy.deepcopy(self.saved)
            self.commands = loaded.get('commands', [])
            self.logins = loaded.get('logins', 0)
            self.auth_attempts = loaded.get('auth_attempts', 0)
            self.sessions = loaded.get('sessions', 0)
            self.link_toggles = loaded.get('link_toggles', {})
            self.config_commands = loaded.get('config_commands', 0)
            self.drops = loaded.get('drops', 0)
        else:
            self.running = factory_config(opts.ports or 32, opts.hostname or 'switch')
            self.saved = copy.deepcopy(self.running)
        if opts.hostname and loaded:
            self.running['hostname'] = opts.hostname
        for p in self.running['ports']:
            self.link_toggles.setdefault(p, 0)
        self.write_state()

    # ---- persistence -------------------------------------------------------------------------
    def state_doc(self):
        return {
            'version': self.version,
            'hostname': self.running['hostname'],
            'ports': self.port_list(),
            'running': self.running,
            'saved': self.saved,
            'effective': self.effective(),
            'commands': self.commands,
            'logins': self.logins,
            'auth_attempts': self.auth_attempts,
            'sessions': self.sessions,
            'link_toggles': self.link_toggles,
            'config_commands': self.config_commands,
            'drops': self.drops,
            'faults': self.faults,
        }

    def write_state(self):
        if not self.state_file:
            return
        self.refresh_faults()
        directory = os.path.dirname(os.path.abspath(self.state_file))
        fd, tmp = tempfile.mkstemp(prefix='.onyxsim-', dir=directory)
        try:
            with os.fdopen(fd, 'w', encoding='utf-8') as handle:
                handle.write(json.dumps(self.state_doc(), separators=(',', ':')))  # one-shot: the C encoder
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.state_file)
        except OSError:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        st = os.stat(self.state_file)
        self.last_written = (st.st_mtime_ns, st.st_size, st.st_ino)

    def refresh_faults(self):
        """Pick up a 'faults' key that a test rewrote in the state file since our last write."""
        if not self.state_file:
            return
        try:
            st = os.stat(self.state_file)
        except OSError:
            return
        if (st.st_mtime_ns, st.st_size, st.st_ino) == self.last_written:
            return
        try:
            with open(self.state_file, encoding='utf-8') as handle:
                faults = json.load(handle).get('faults') or {}
        except (OSError, ValueError):
            return
        new = {'drop_after': faults.get('drop_after'), 'reject': faults.get('reject'), 'delay': faults.get('delay') or 0,
               'counters': faults.get('counters') or {}}
        if new['drop_after'] != self.faults.get('drop_after'):
            self.fault_count = 0
        self.faults = new
        self.last_written = (st.st_mtime_ns, st.st_size, st.st_ino)

    # ---- model helpers ----------------------------------------------------------------------
    def port_list(self, cfg=None):
        return sorted((cfg or self.running)['ports'], key=port_key)

    def port(self, name):
        return self.running['ports'][name]

    def default_speed(self, name):
        if len(port_key(name)) == 3:
            return {'qsfp-split-4': '25G', 'qsfp-split-2': '50G'}.get(self.running['breakout'].get(parent_of(name)), '25G')
        return '100G'

    def speed(self, name):
        speed = self.port(name)['speed']
        return self.default_speed(name) if speed in (None, 'auto') else speed

    def mac(self, name):
        k = port_key(name)
        value = BASE_MAC + k[1] * 4 + (k[2] - 1 if len(k) == 3 else 0)
        return ':'.join('%02x' % ((value >> s) & 0xff) for s in range(40, -8, -8))

    def toggle(self, ports):
        now = time.time()
        for p in ports:
            if p in self.running['ports'] and not self.port(p)['shutdown']:
                self.link_toggles[p] = self.link_toggles.get(p, 0) + 1
                self.oper_change[p] = now

    def lossless(self):
        return self.running['roce'] in ('lossless', 'semi-lossless')

    def pfc_enabled(self):
        return self.running['pfc']['enabled'] or self.lossless()

    def pfc_priorities(self):
        prios = set(self.running['pfc']['priorities'])
        if self.lossless():
            prios.add(3)
        return sorted(prios)

    def trust(self, name):
        return self.port(name)['trust'] or ('L3' if self.running['roce'] else 'L2')

    def ecn(self, name):
        ecn = {'3': dict(ROCE_ECN)} if self.running['roce'] else {}
        ecn.update(self.port(name)['ecn'])
        return ecn

    def ets(self, name):
        if self.running['roce']:
            weights = {0: 8, 1: 8, 2: 8, 3: 50, 4: 9, 5: 9, 7: 8}
            ets = {str(tc): {'mode': 'strict', 'weight': 0} if tc == 6 else {'mode': 'wrr', 'weight': weights[tc]} for tc in range(8)}
        else:
            ets = {str(tc): {'mode': 'wrr', 'weight': 12 if tc % 2 == 0 else 13} for tc in range(8)}
        ets.update(self.port(name)['ets'])
        return ets

    def pfc_oper(self, name):
        pc = self.port(name)
        if self.pfc_enabled() and self.pfc_priorities() and (pc['pfc_mode'] == 'on' or self.lossless()):
            return 'Enabled'
        return 'Disabled'

    def effective(self):
        ports = {}
        for p in self.port_list():
            pc = self.port(p)
            ports[p] = {
                'oper_state': 'Down' if pc['shutdown'] else 'Up',
                'speed': self.speed(p),
                'trust': self.trust(p),
                'pfc_admin': 'on' if pc['pfc_mode'] == 'on' else 'Auto',
                'pfc_oper': self.pfc_oper(p),
                'ecn': self.ecn(p),
                'ets': self.ets(p),
            }
        return {'roce': self.running['roce'] or 'disabled',
                'pfc': {'enabled': self.pfc_enabled(), 'priorities': self.pfc_priorities()},
                'ports': ports}

    def vlan_ports(self, vlan):
        members = []
        for p in self.port_list():
            pc = self.port(p)
            allowed = self.allowed(p)
            if (pc['switchport_mode'] in ('access', 'hybrid') and pc['access_vlan'] == vlan) or \
                    (pc['switchport_mode'] in ('trunk', 'hybrid') and vlan in allowed):
                members.append(p)
        return members

    def allowed(self, name):
        pc = self.port(name)
        if pc['switchport_mode'] == 'access':
            return []
        if pc['allowed_vlans'] == 'all':
            return sorted(int(v) for v in self.running['vlans'])
        return list(pc['allowed_vlans'])

    def uptime(self):
        secs = time.time() - self.started
        days, rem = divmod(int(secs), 86400)
        hours, rem = divmod(rem, 3600)
        mins = rem // 60
        return '%dd %dh %dm %.3fs' % (days, hours, mins, secs - days * 86400 - hours * 3600 - mins * 60)

    def last_change(self, name):
        n = self.link_toggles.get(name, 0)
        if not n or name not in self.oper_change:
            return 'Never'
        ago = int(time.time() - self.oper_change[name])
        return '%d:%02d:%02d ago (%d oper change%s)' % (ago // 3600, ago // 60 % 60, ago % 60, n, '' if n == 1 else 's')

    def json_new(self):
        return self.vtuple >= NEW_JSON_MIN

    # ---- command execution -------------------------------------------------------------------
    def execute(self, sess, line):
        """Run one CLI line for a session; returns (output or Confirm, drop_connection)."""
        text = line.strip()
        with self.lock:
            self.refresh_faults()
            delay = float(self.faults.get('delay') or 0)
        if delay > 0:
            time.sleep(delay)
        if not text:
            return '', False
        with self.lock:
            mode = sess.mode
            reject = self.faults.get('reject')
            try:
                rejected = bool(reject) and re.search(reject, text) is not None
            except re.error:
                rejected = False
            if rejected:
                out, ok = ERR_FAULT, False
            else:
                out, ok = self.run_line(sess, text)
            self.commands.append({'session': sess.sid, 'line': text, 'mode': mode, 'ok': ok})
            drop = False
            first = text.split()[0].lower()
            if mode in CONFIG_MODES and not first.startswith('#') and not 'show'.startswith(first) \
                    and not 'exit'.startswith(first):
                self.config_commands += 1
                self.fault_count += 1
                limit = self.faults.get('drop_after')
                if limit and self.fault_count >= int(limit):
                    drop = True
                    self.drops += 1
                    self.faults['drop_after'] = None
                    self.fault_count = 0
            self.write_state()
        return out, drop

    def confirm(self, conf, answer):
        with self.lock:
            if answer.strip().lower() == 'yes':
                conf.apply()
            self.write_state()
        return ''

    def run_line(self, sess, text):
        try:
            cmd, pipes = split_pipes(text)
            if cmd.startswith('#') or cmd.startswith('!'):
                return '', True
            tokens = tokenize(cmd)
            if not tokens:
                raise CliError(ERR_UNRECOGNIZED.format('|') + '\n' + HINT_TOP)
            want_json, filters = False, []
            for pipe in pipes:
                ptoks = tokenize(pipe)
                if ptoks and ptoks[0] in ('json-print', 'json') and len(ptoks) == 1:
                    want_json = True
                elif len(ptoks) >= 2 and ptoks[0] in ('include', 'exclude'):
                    filters.append((ptoks[0], ' '.join(ptoks[1:])))
                else:
                    raise CliError(ERR_UNRECOGNIZED.format(ptoks[0] if ptoks else '|') + '\n' + HINT.format(cmd + ' |'))
            handler, values = self.resolve(sess, tokens)
            if want_json and not getattr(handler[0], 'json_ok', False):
                raise CliError(ERR_NO_JSON)
            args = dict(handler[1])
            args.update(values)
            args['_json'] = want_json
            out = handler[0](sess, args)
            if isinstance(out, Confirm):
                return out, True
            return apply_filters(out or '', filters), True
        except CliError as exc:
            return str(exc), False
        except Exception:  # pylint: disable=broad-except  # a simulator bug must not look like a dropped link
            traceback.print_exc()
            return ERR_BUG, False

    def resolve(self, sess, tokens):
        tokens = normalize_no(tokens)
        if sess.mode in SUB_MODES:
            prefix = sess.prefix()
            first = GRAMMARS['config'].match(prefix + tokens, self)
            if first.action:
                return first.action, first.values
            second = GRAMMARS['config'].match(tokens, self)
            if second.action:
                return second.action, second.values
            if first.error[0] - len(prefix) >= second.error[0]:
                raise CliError(format_error(first.error, tokens, len(prefix)))
            raise CliError(format_error(second.error, tokens))
        grammar = GRAMMARS['config' if sess.mode == 'config' else sess.mode]
        result = grammar.match(tokens, self)
        if result.action:
            return result.action, result.values
        raise CliError(format_error(result.error, tokens))


def line_matches(pattern, line):
    try:
        return re.search(pattern, line) is not None
    except re.error:
        return pattern in line


def completions(sess, line):
    try:
        tokens = tokenize(line)
    except CliError:
        return []
    partial = '' if not line or line[-1].isspace() else (tokens.pop() if tokens else '')
    tokens = normalize_no(tokens)
    with sess.sim.lock:
        if sess.mode in SUB_MODES:
            grammar = GRAMMARS['config']
            found = grammar.complete(sess.prefix() + tokens, partial, sess.sim) + grammar.complete(tokens, partial, sess.sim)
            return sorted(set(found), key=lambda o: (o == '<cr>', o.startswith('<'), o))
        return GRAMMARS['config' if sess.mode == 'config' else sess.mode].complete(tokens, partial, sess.sim)


def apply_filters(out, filters):
    for kind, pattern in filters:
        out = '\n'.join(line for line in out.split('\n') if line_matches(pattern, line) == (kind == 'include'))
    return out


def load_authorized_keys(path):
    keys = set()
    if not path:
        return keys
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            fields = line.split()
            for i, field in enumerate(fields[:-1]):
                if field.startswith(('ssh-', 'ecdsa-')):
                    keys.add((field, fields[i + 1]))
                    break
    return keys


# ---------------------------------------------------------------------------------------------
# Command handlers: handler(session, args) -> output text, Confirm or None.  args holds the grammar's
# parameters and literal choices; args['_json'] is True for "| json-print".
# ---------------------------------------------------------------------------------------------
def json_ok(func):
    func.json_ok = True
    return func


def h_noop(sess, a):
    return ''


def h_exit(sess, a):
    if sess.mode in SUB_MODES:
        sess.set_mode('config')
    elif sess.mode == 'config':
        sess.set_mode('enable')
    else:
        sess.closing = True
    return ''


def h_enable(sess, a):
    if sess.mode == 'user':
        sess.set_mode('enable')
    return ''


def h_disable(sess, a):
    sess.set_mode('user')
    return ''


def h_configure(sess, a):
    if sess.mode == 'enable':
        sess.set_mode('config')
    return ''


def h_paging(sess, a):
    sess.paging = not a.get('no')
    return ''


def h_terminal_length(sess, a):
    sess.page_len = max(1, a['lines'] - 1) if a['lines'] else 10 ** 6
    return ''


def h_configuration_write(sess, a):
    sw = sess.sim
    sw.saved = copy.deepcopy(sw.running)
    return ''


def h_hostname(sess, a):
    sess.sim.running['hostname'] = a['name']
    return ''


# ---- RoCE ---------------------------------------------------------------------------------------
def h_roce(sess, a):
    sw = sess.sim
    mode = None if a.get('no') else a.get('mode', 'lossless')
    if sw.running['roce'] != mode:
        sw.running['roce'] = mode
        sw.toggle(sw.port_list())
    return ''


# ---- VLANs ---------------------------------------------------------------------------------------
def h_vlan(sess, a):
    sw = sess.sim
    for v in a['vlans']:
        sw.running['vlans'].setdefault(str(v), {'name': ''})
    sess.set_mode('config-vlan', ','.join(compress_ints(a['vlans'])))
    return ''


def need_vlans(sw, vlans):
    for v in vlans:
        if str(v) not in sw.running['vlans']:
            raise CliError(ERR_NO_VLAN.format(v))


def h_vlan_name(sess, a):
    sw = sess.sim
    need_vlans(sw, a['vlans'])
    for v in a['vlans']:
        sw.running['vlans'][str(v)]['name'] = '' if a.get('no') else a['name']
    return ''


def h_no_vlan(sess, a):
    sw = sess.sim
    if 1 in a['vlans']:
        raise CliError(ERR_VLAN1)
    need_vlans(sw, a['vlans'])
    for v in a['vlans']:
        del sw.running['vlans'][str(v)]
        sw.running['interface_vlans'].pop(str(v), None)
        for p in sw.port_list():
            pc = sw.port(p)
            if pc['access_vlan'] == v:
                pc['access_vlan'] = 1
            if isinstance(pc['allowed_vlans'], list) and v in pc['allowed_vlans']:
                pc['allowed_vlans'].remove(v)
    return ''


def h_interface_vlan(sess, a):
    sw = sess.sim
    need_vlans(sw, [a['vlan']])
    sw.running['interface_vlans'].setdefault(str(a['vlan']), {'ip_address': None, 'mtu': 1500})
    sess.set_mode('config-if-vlan', str(a['vlan']))
    return ''


def svi(sess, a):
    sw = sess.sim
    need_vlans(sw, [a['vlan']])
    return sw.running['interface_vlans'].setdefault(str(a['vlan']), {'ip_address': None, 'mtu': 1500})


def h_svi_ip(sess, a):
    entry = svi(sess, a)
    if a.get('no'):
        entry['ip_address'] = None
        return ''
    ip = a['ip']
    if '/' not in ip:
        if a.get('mask') is None:
            raise CliError(ERR_INCOMPLETE + '\n' + HINT.format('interface vlan %d ip address %s' % (a['vlan'], ip)))
        ip = '%s/%d' % (ip, a['mask'])
    entry['ip_address'] = ip
    return ''


def h_svi_mtu(sess, a):
    entry = svi(sess, a)
    if a.get('no'):
        entry['mtu'] = 1500
    elif not 1280 <= a['mtu'] <= 9216:
        raise CliError(ERR_SVI_MTU.format(a['mtu']))
    else:
        entry['mtu'] = a['mtu']
    return ''


def h_no_interface_vlan(sess, a):
    sess.sim.running['interface_vlans'].pop(str(a['vlan']), None)
    return ''


# ---- Ethernet ports ------------------------------------------------------------------------------
def h_interface_ethernet(sess, a):
    sess.set_mode('config-if', sess.ports_text(a['ports']))
    return ''


def each_port(sess, a):
    sw = sess.sim
    return [(p, sw.port(p)) for p in a['ports']]


def h_switchport_mode(sess, a):
    mode = 'access' if a.get('no') else a['swmode']
    for _p, pc in each_port(sess, a):
        if pc['switchport_mode'] == mode:
            continue
        pc['switchport_mode'] = mode
        pc['access_vlan'] = None if mode == 'trunk' else 1
        pc['allowed_vlans'] = [] if mode == 'hybrid' else 'all'
    return ''


def h_access_vlan(sess, a):
    sw = sess.sim
    ports = each_port(sess, a)
    for p, pc in ports:
        if pc['switchport_mode'] not in ('access', 'hybrid'):
            raise CliError(ERR_ACCESS_MODE.format(p))
    if not a.get('no'):
        need_vlans(sw, [a['vlan']])
    for _p, pc in ports:
        pc['access_vlan'] = 1 if a.get('no') else a['vlan']
    return ''


def h_allowed_vlan(sess, a):
    sw = sess.sim
    ports = each_port(sess, a)
    for p, pc in ports:
        if pc['switchport_mode'] != a['swmode']:
            raise CliError(ERR_ALLOWED_MODE.format(p, a['swmode']))
    op = a.get('op', 'set')
    if op in ('set', 'add'):
        need_vlans(sw, a['vlans'])
    for p, pc in ports:
        current = set(sw.allowed(p))
        if op == 'all':
            pc['allowed_vlans'] = 'all'
            continue
        if op == 'none':
            new = set()
        elif op == 'set':
            new = set(a['vlans'])
        elif op == 'add':
            new = current | set(a['vlans'])
        else:
            new = current - set(a['vlans'])
        pc['allowed_vlans'] = sorted(new)
    return ''


def h_mtu(sess, a):
    sw = sess.sim
    mtu = 1500 if a.get('no') else a['mtu']
    ports = each_port(sess, a)
    if sw.vtuple < MTU_NO_FORCE_MIN and not a.get('force'):
        for p, pc in ports:
            if pc['mtu'] != mtu and not pc['shutdown']:
                raise CliError(ERR_MTU_UP.format(p))
    changed = [p for p, pc in ports if pc['mtu'] != mtu]
    for _p, pc in ports:
        pc['mtu'] = mtu
    sw.toggle(changed)
    return ''


def h_shutdown(sess, a):
    for _p, pc in each_port(sess, a):
        pc['shutdown'] = not a.get('no')
    return ''


def h_description(sess, a):
    for _p, pc in each_port(sess, a):
        pc['description'] = '' if a.get('no') else a['text']
    return ''


def h_speed(sess, a):
    sw = sess.sim
    ports = each_port(sess, a)
    speed = None if a.get('no') else a['speed']
    changed = [p for p, pc in ports if pc['speed'] != speed]
    for _p, pc in ports:
        pc['speed'] = speed
    sw.toggle(changed)
    return ''


def h_flowcontrol(sess, a):
    for _p, pc in each_port(sess, a):
        pc['flowcontrol'][a['dir']] = a['val']
    return ''


def h_congestion(sess, a):
    ports = each_port(sess, a)
    if a.get('no'):
        for _p, pc in ports:
            pc['ecn'].pop(str(a['tc']), None)
        return ''
    if a['min'] > a['max']:
        raise CliError(ERR_THRESHOLDS.format(a['min'], a['max']))
    entry = {'mode': a['cc'], 'threshold': a['threshold'].split('-', 1)[1], 'min': a['min'], 'max': a['max']}
    for _p, pc in ports:
        pc['ecn'][str(a['tc'])] = dict(entry)
    return ''


def h_ets(sess, a):
    for _p, pc in each_port(sess, a):
        if a.get('no'):
            pc['ets'].pop(str(a['tc']), None)
        elif a.get('strict'):
            pc['ets'][str(a['tc'])] = {'mode': 'strict', 'weight': 0}
        else:
            pc['ets'][str(a['tc'])] = {'mode': 'wrr', 'weight': a['weight']}
    return ''


def h_pfc_mode(sess, a):
    for _p, pc in each_port(sess, a):
        pc['pfc_mode'] = None if a.get('no') else 'on'
    return ''


def h_trust(sess, a):
    for _p, pc in each_port(sess, a):
        pc['trust'] = None if a.get('no') else a['trust']
    return ''


def h_rewrite(sess, a):
    for _p, pc in each_port(sess, a):
        pc['rewrite_' + a['what']] = not a.get('no')
    return ''


def h_module_type(sess, a):
    sw = sess.sim
    cfg = sw.running
    kind = 'qsfp' if a.get('no') else a['mtype']
    ports = list(a['ports'])
    for p in ports:
        depth = len(port_key(p))
        if kind == 'qsfp' and depth != 3:
            raise CliError(ERR_NOT_SPLIT.format(p))
        if kind != 'qsfp' and depth != 2:
            raise CliError(ERR_SPLIT_SUB.format(p))
        if not a.get('force') and not sw.port(p)['shutdown']:
            raise CliError(ERR_SPLIT_UP.format(p))
    for p in ports:
        if kind == 'qsfp':
            parent = parent_of(p)
            if parent not in cfg['breakout']:
                continue
            for sub in [q for q in cfg['ports'] if parent_of(q) == parent and len(port_key(q)) == 3]:
                del cfg['ports'][sub]
            del cfg['breakout'][parent]
            cfg['ports'][parent] = new_port()
            sw.link_toggles.setdefault(parent, 0)
        else:
            del cfg['ports'][p]
            cfg['breakout'][p] = kind
            for i in range(1, (4 if kind == 'qsfp-split-4' else 2) + 1):
                sub = '%s/%d' % (p, i)
                cfg['ports'][sub] = new_port()
                sw.link_toggles.setdefault(sub, 0)
    if sess.mode == 'config-if':
        sess.set_mode('config')
    return ''


# ---- DCB PFC (global) ------------------------------------------------------------------------
def h_pfc_global(sess, a):
    sw = sess.sim
    enable = not a.get('no')

    def apply():
        sw.running['pfc']['enabled'] = enable
    if a.get('force'):
        apply()
        return ''
    return Confirm(CONFIRM_PFC[enable], apply)


def h_pfc_priority(sess, a):
    prios = set(sess.sim.running['pfc']['priorities'])
    if a.get('no'):
        prios.discard(a['prio'])
    else:
        prios.add(a['prio'])
    sess.sim.running['pfc']['priorities'] = sorted(prios)
    return ''


# ---------------------------------------------------------------------------------------------
# show commands
# ---------------------------------------------------------------------------------------------
def dump(obj):
    return json.dumps(obj, indent=4)


@json_ok
def h_show_hosts(sess, a):
    # Only the first line is modelled: "Hostname: <name>", which mellanox.onyx's cliconf reads with
    # "show hosts | include Hostname" and split(':')[1] (and the JSON API returns as {"Hostname": ...}).
    # The DNS and static-host lines that follow it on a real switch are not modelled.
    if a['_json']:
        return dump([{'Hostname': sess.sim.running['hostname']}])
    return 'Hostname: %s' % sess.sim.running['hostname']


@json_ok
def h_show_version(sess, a):
    sw = sess.sim
    rel = sw.version
    date = BUILD_DATES.get(rel, '2022-07-27 10:53:33')
    info = [
        ('Product name', 'Onyx' if sw.vtuple >= (3, 6) else 'MLNX-OS'),
        ('Product release', rel),
        ('Build ID', '#1-dev'),
        ('Build date', date),
        ('Target arch', 'x86_64'),
        ('Target hw', 'x86_64'),
        ('Built by', 'jenkins@onyxsim'),
        ('Version summary', 'X86_64 %s %s x86_64' % (rel, date)),
        ('Product model', 'x86onie'),
        ('Host ID', '%012X' % BASE_MAC),
        ('System serial num', 'MT0000X00000'),
        ('System UUID', '00000000-0000-4000-8000-%012x' % BASE_MAC),
        ('Uptime', sw.uptime()),
        ('CPU load averages', '0.12 / 0.10 / 0.08'),
        ('Number of CPUs', '4'),
        ('System memory', '2480 MB used / 5309 MB free / 7789 MB total'),
        ('Swap', '0 MB used / 0 MB free / 0 MB total'),
    ]
    if a['_json']:
        return dump(dict(info))
    lines = []
    for key, value in info:
        lines.append('%-19s%s' % (key + ':', value))
        if key in ('Version summary', 'System UUID'):
            lines.append('')
    return '\n'.join(lines)


def h_show_roce(sess, a):
    sw = sess.sim
    mode = sw.running['roce']
    if not mode:
        return 'RoCE mode      : N/A\nLLDP           : enabled\nPort trust mode: N/A\n\nException list:\nN/A'
    pfc = 'enabled' if mode != 'lossy' else 'disabled'
    pool = 'lossless' if mode != 'lossy' else 'lossy   '
    return '\n'.join([
        'RoCE mode      : %s' % mode,
        'LLDP           : enabled',
        'Port trust mode: L3',
        '',
        'Application TLV:',
        '  Selector: udp',
        '  Protocol: 4791',
        '  Priority: 3',
        '',
        'Port congestion-control:',
        '  Mode    : ecn, absolute',
        '  Min (KB): %d' % ROCE_ECN['min'],
        '  Max (KB): %d' % ROCE_ECN['max'],
        '',
        'PFC              : %s' % pfc,
        'switch-priority 3: %s' % pfc,
        '',
        'RoCE used TCs:',
        '  ----------------------------------------------',
        '  Switch-Priority   TC     Application   ETS    ',
        '  ----------------------------------------------',
        '  3                 3      RoCE          WRR 50%',
        '  6                 6      CNP           Strict ',
        '',
        'RoCE buffer pools:',
        '  ' + '-' * 94,
        '  Traffic                  Type      Memory   Switch        Memory actual   Usage    Max Usage ',
        '  Pool                               [%]      Priorities                                       ',
        '  ' + '-' * 94,
        '  lossy-default            lossy     auto     0, 1, 2, 4,   3.6M            0        47.1K     ',
        '                                              5, 6, 7                                ',
        '  roce-reserved            %s  auto     3             3.6M            0        1.8M      ' % pool,
        '',
        'Exception list:',
        'N/A',
    ])


def if_attrs(sw, p, text=False):
    pc = sw.port(p)
    speed = sw.speed(p)
    mtu = '%d bytes%s(Maximum packet size %d bytes)' % (pc['mtu'], ' ' if text else '', pc['mtu'] + 22)
    return [
        ('Admin state', 'Disabled' if pc['shutdown'] else 'Enabled'),
        ('Operational state', 'Down' if pc['shutdown'] else 'Up'),
        ('Last change in operational status', sw.last_change(p)),
        ('Boot delay time', '0 sec'),
        ('Description', pc['description'] or 'N\\A'),
        ('Mac address', sw.mac(p)),
        ('MTU', mtu),
        ('Fec', 'auto'),
        ('Flow-control', 'receive %s send %s' % (pc['flowcontrol']['receive'], pc['flowcontrol']['send'])),
        ('Actual speed', '%s Gbps' % speed[:-1]),
        ('Auto-negotiation', 'Enabled' if pc['speed'] in (None, 'auto') else 'Disabled'),
        ('Width reduction mode', 'Unknown'),
        ('Switchport mode', pc['switchport_mode']),
        ('MAC learning mode', 'Enabled'),
        ('Forwarding mode', 'inherited cut-through'),
    ]


# The Rx and Tx objects of a real switch's interfaces (mellanox.onyx's onyx_interfaces_show.cfg fixture); Tx has
# head-of-queue discards too.
COUNTERS = {'Rx': ('error packets', 'packets', 'bytes', 'multicast packets', 'unicast packets', 'discard packets',
                   'broadcast packets'),
            'Tx': ('error packets', 'packets', 'bytes', 'multicast packets', 'unicast packets', 'discard packets',
                   'hoq discard packets', 'broadcast packets')}


def counters(sw, p, direction):
    """``{label: value}`` of one port's Rx or Tx: no traffic passes here, so 0 but for what the lab armed (fault
    ``counters``: ``{"1/1": {"Rx": {"error packets": 25}}}``)."""
    armed = ((sw.faults.get('counters') or {}).get(p) or {}).get(direction) or {}
    return dict((c, str(int(armed.get(c, 0)))) for c in COUNTERS[direction])


@json_ok
def h_show_interfaces(sess, a):
    sw = sess.sim
    ports = a.get('ports') or sw.port_list()
    if a['_json']:
        result = []
        for p in ports:
            attrs = dict(if_attrs(sw, p))
            attrs['Rx'] = counters(sw, p, 'Rx')
            attrs['Tx'] = counters(sw, p, 'Tx')
            if sw.json_new():
                result.append({'Eth' + p: [attrs]})
            else:
                attrs['header'] = 'Eth' + p
                result.append(attrs)
        return dump(result)
    blocks = []
    for p in ports:
        lines = ['Eth%s:' % p]
        lines += ['  %-33s: %s' % kv for kv in if_attrs(sw, p, text=True)]
        for direction in ('Rx', 'Tx'):
            lines += ['', direction + ':'] + ['  %-20s %s' % (v, c) for c, v in counters(sw, p, direction).items()]
        blocks.append('\n'.join(lines))
    return '\n' + '\n\n'.join(blocks)


@json_ok
def h_show_switchport(sess, a):
    sw = sess.sim
    rows = []
    for p in sw.port_list():
        pc = sw.port(p)
        access = 'N/A' if pc['switchport_mode'] == 'trunk' else str(pc['access_vlan'])
        allowed = ', '.join(str(v) for v in sw.allowed(p))
        rows.append((p, pc['switchport_mode'], access, allowed))
    if a['_json']:
        data = {}
        for p, mode, access, allowed in rows:
            entry = {'Access vlan': access, 'Allowed vlans': allowed, 'Mode': mode}
            data['Eth' + p] = [entry] if sw.json_new() else entry
        return dump(data)
    sep = '-' * 80
    lines = ['', sep, '%-17s%-15s%-15s%s' % ('Interface', 'Mode', 'Access vlan', 'Allowed vlans'), sep]
    lines += [('%-17s%-15s%-15s%s' % ('Eth' + p, mode, access, allowed)).rstrip() for p, mode, access, allowed in rows]
    return '\n'.join(lines)


@json_ok
def h_show_vlan(sess, a):
    sw = sess.sim
    vlans = sorted(int(v) for v in sw.running['vlans'])
    if a.get('vlans'):
        vlans = [v for v in vlans if v in a['vlans']]
    rows = [(v, sw.running['vlans'][str(v)]['name'], ', '.join('Eth' + p for p in sw.vlan_ports(v))) for v in vlans]
    if a['_json']:
        data = {}
        for v, name, ports in rows:
            entry = {'Name': name, 'Ports': ports}
            data[str(v)] = [entry] if sw.json_new() else entry
        return dump(data)
    sep = '-' * 77
    lines = ['', sep, '%-8s%-31s%s' % ('VLAN', 'Name', 'Ports'), sep]
    for v, name, ports in rows:
        chunks = [p.strip() for p in ports.split(',')] if ports else []
        first = True
        while first or chunks:
            part, chunks = chunks[:6], chunks[6:]
            text = ', '.join(part) + (',' if chunks else '')
            lines.append(('%-8s%-31s%s' % (str(v) if first else '', name if first else '', text)).rstrip())
            first = False
    return '\n'.join(lines)


@json_ok
def h_show_pfc(sess, a):
    sw = sess.sim
    prios = sw.pfc_priorities()
    glob = [('PFC', 'enabled' if sw.pfc_enabled() else 'disabled'),
            ('Priority Enabled List', ' '.join(str(p) for p in prios)),
            ('Priority Disabled List', ' '.join(str(p) for p in range(8) if p not in prios))]
    table = [('Eth' + p, 'on' if sw.port(p)['pfc_mode'] == 'on' else 'Auto', sw.pfc_oper(p)) for p in sw.port_list()]
    if a['_json']:
        ifs = {name: [{'PFC admin': admin, 'PFC oper': oper}] for name, admin, oper in table}
        if sw.json_new():
            return dump([dict(glob[:1]), dict(glob[1:]), ifs])
        data = dict(glob)
        data['Table 2'] = ifs
        return dump(data)
    lines = ['%s: %s' % kv for kv in glob]
    sep = '-' * 49
    lines += [sep, '%-17s%-17s%s' % ('Interface', 'PFC admin', 'PFC oper'), sep]
    lines += ['%-17s%-17s%s' % row for row in table]
    return '\n'.join(lines)


def cc_entries(sw, p):
    ecn = sw.ecn(p)
    entries = [{'Interface ethernet': p, 'ECN marked packets': '0'}]
    for tc in range(8):
        e = ecn.get(str(tc))
        if not e:
            entries.append({'header': 'TC-%d' % tc, 'Mode': 'none'})
            continue
        unit = ' KB' if e['threshold'] == 'absolute' else '%'
        entries.append({
            'Threshold mode': e['threshold'],
            'RED dropped packets': '0',
            'header': 'TC-%d' % tc,
            'Mode': e['mode'].upper(),
            'Maximum threshold': '%d%s' % (e['max'], unit),
            'Minimum threshold': '%d%s' % (e['min'], unit),
        })
    return entries


@json_ok
def h_show_congestion(sess, a):
    sw = sess.sim
    if a['_json']:
        if len(a['ports']) == 1:
            return dump(cc_entries(sw, a['ports'][0]))
        return dump({'Eth' + p: cc_entries(sw, p) for p in a['ports']})
    blocks = []
    for p in a['ports']:
        entries = cc_entries(sw, p)
        lines = ['Interface ethernet %s' % p, '  ECN marked packets: 0', '']
        for e in entries[1:]:
            lines.append('  %s:' % e['header'])
            lines.append('    Mode               : %s' % e['Mode'])
            if e['Mode'] != 'none':
                lines.append('    Threshold mode     : %s' % e['Threshold mode'])
                lines.append('    Minimum threshold  : %s' % e['Minimum threshold'])
                lines.append('    Maximum threshold  : %s' % e['Maximum threshold'])
                lines.append('    RED dropped packets: 0')
        blocks.append('\n'.join(lines))
    return '\n\n'.join(blocks)


def qos_entry(sw, p):
    pc = sw.port(p)
    attrs = {
        'PCP,DEI rewrite': 'enabled' if pc['rewrite_pcp'] else 'disabled',
        'Default switch-priority': '0',
        'IP PCP;DEI rewrite': 'enable',
        'Default DEI': '0',
        'Default PCP': '0',
        'Trust mode': sw.trust(p),
        'DSCP rewrite': 'enabled' if pc['rewrite_dscp'] else 'disabled',
    }
    to_prio = {'%d(0) %d(1)' % (sp, sp): [{'switch-priority': str(sp), 'DSCP': ' '.join(str(d) for d in range(sp * 8, sp * 8 + 8))}]
               for sp in range(8)}
    rewrite = {str(sp): [{'PCP(DEI)': '%d(0)' % sp, 'TC': str(sp), 'DSCP': str(sp * 8)}] for sp in range(8)}
    return [attrs, {'PCP(DEI); DSCP to switch-priority mapping': [to_prio]},
            {'PCP(DEI); DSCP rewrite mapping (switch-priority to PCP(DEI); DSCP; traffic-class)': [rewrite]}]


@json_ok
def h_show_qos(sess, a):
    sw = sess.sim
    if a['_json']:
        return dump([{'Eth' + p: qos_entry(sw, p)} for p in a['ports']])
    blocks = []
    for p in a['ports']:
        attrs = qos_entry(sw, p)[0]
        lines = ['Interface: Eth%s' % p]
        lines += ['  %-24s: %s' % (k, attrs[k]) for k in ('Default switch-priority', 'Default PCP', 'Default DEI', 'Trust mode',
                                                          'PCP,DEI rewrite', 'IP PCP;DEI rewrite', 'DSCP rewrite')]
        lines += ['', '  PCP(DEI); DSCP to switch-priority mapping:', '    %-14s%-17s%s' % ('PCP(DEI)', 'switch-priority', 'DSCP')]
        lines += ['    %-14s%-17s%s' % ('%d(0) %d(1)' % (sp, sp), sp, ' '.join(str(d) for d in range(sp * 8, sp * 8 + 8))) for sp in range(8)]
        blocks.append('\n'.join(lines))
    return '\n\n'.join(blocks)


def ets_entry(sw, p):
    ets = sw.ets(p)
    total = sum(e['weight'] for e in ets.values() if e['mode'] == 'wrr') or 1
    per_tc = {}
    for tc in range(8):
        e = ets[str(tc)]
        wrr = e['mode'] == 'wrr'
        per_tc[str(tc)] = [{
            'S.Mode': 'WRR' if wrr else 'Strict',
            'BW Sh.(Mbps)': 'N/A',
            'W(%)': str(int(round(100.0 * e['weight'] / total))) if wrr else '0',
            'BW Gr.(Mbps)': '0',
            'W': str(e['weight']) if wrr else '0',
        }]
    return [
        {'Multicast unaware mapping': 'disabled', 'Interface Bandwidth Shape [Mbps]': 'N/A'},
        {'Flags': [{'S.Mode': 'Scheduling Mode [Strict/WRR]', 'Bw.Sh': 'Bandwidth Shaper', 'D': '-', 'W': 'Weight',
                    'Bw.Gr': 'Bandwidth Guaranteed'}]},
        {'ETS per TC': [per_tc]},
    ]


@json_ok
def h_show_ets(sess, a):
    sw = sess.sim
    if a['_json']:
        return dump([{'Eth' + p: ets_entry(sw, p)} for p in a['ports']])
    blocks = []
    for p in a['ports']:
        per_tc = ets_entry(sw, p)[2]['ETS per TC'][0]
        lines = ['Interface ethernet %s:' % p, '  Multicast unaware mapping: disabled', '  Interface Bandwidth Shape [Mbps]: N/A', '',
                 '  %-5s%-9s%-5s%-7s%-15s%s' % ('TC', 'S.Mode', 'W', 'W(%)', 'BW Gr.(Mbps)', 'BW Sh.(Mbps)'),
                 '  %-5s%-9s%-5s%-7s%-15s%s' % ('--', '------', '-', '----', '------------', '------------')]
        for tc in range(8):
            e = per_tc[str(tc)][0]
            lines.append('  %-5s%-9s%-5s%-7s%-15s%s' % (tc, e['S.Mode'], e['W'], e['W(%)'], e['BW Gr.(Mbps)'], e['BW Sh.(Mbps)']))
        blocks.append('\n'.join(lines))
    return '\n\n'.join(blocks)


# ---- running-config --------------------------------------------------------------------------
def port_suffixes(sw, p):
    """(section, order, suffix) for every running-config line of one port."""
    pc = sw.port(p)
    out = []
    if pc['speed']:
        out.append(('eth', 1, 'speed %s force' % pc['speed']))
    if pc['mtu'] != 1500:
        out.append(('eth', 2, 'mtu %d force' % pc['mtu']))
    if pc['switchport_mode'] != 'access':
        out.append(('eth', 3, 'switchport mode %s' % pc['switchport_mode']))
    if pc['description']:
        out.append(('eth', 4, 'description %s' % quote(pc['description'])))
    for direction in ('receive', 'send'):
        if pc['flowcontrol'][direction] == 'on':
            out.append(('eth', 5, 'flowcontrol %s on force' % direction))
    if pc['shutdown']:
        out.append(('eth', 6, 'shutdown'))
    mode = pc['switchport_mode']
    if mode == 'trunk' and pc['allowed_vlans'] != 'all':
        out.append(('vlan', 1, 'switchport trunk allowed-vlan none'))
    if mode in ('access', 'hybrid') and pc['access_vlan'] not in (None, 1):
        out.append(('vlan', 2, 'switchport access vlan %d' % pc['access_vlan']))
    if mode in ('trunk', 'hybrid') and pc['allowed_vlans'] != 'all':
        for run in compress_ints(pc['allowed_vlans']):
            out.append(('vlan', 3, 'switchport %s allowed-vlan add %s' % (mode, run)))
    if pc['pfc_mode'] == 'on':
        out.append(('pfc', 1, 'dcb priority-flow-control mode on force'))
    if pc['trust']:
        out.append(('qos', 1, 'qos trust %s' % pc['trust']))
    for what in ('pcp', 'dscp'):
        if pc['rewrite_' + what]:
            out.append(('qos', 2, 'qos rewrite %s' % what))
    for tc in sorted(pc['ecn'], key=int):
        e = pc['ecn'][tc]
        out.append(('qos', 3, 'traffic-class %s congestion-control %s minimum-%s %d maximum-%s %d'
                    % (tc, e['mode'], e['threshold'], e['min'], e['threshold'], e['max'])))
    for tc in sorted(pc['ets'], key=int):
        e = pc['ets'][tc]
        out.append(('qos', 4, 'traffic-class %s dcb ets %s' % (tc, 'strict' if e['mode'] == 'strict' else 'wrr %d' % e['weight'])))
    return out


def port_lines(sw, ports, section):
    """Group lines by kind, then by ports with the same line, ranges merged as Onyx prints them."""
    per_port = {p: [(order, sfx) for sec, order, sfx in port_suffixes(sw, p) if sec == section] for p in ports}
    keys = sorted({k for items in per_port.values() for k in items})
    lines = []
    for order, sfx in keys:
        having = [p for p in ports if (order, sfx) in per_port[p]]
        lines += ['interface ethernet %s %s' % (run, sfx) for run in port_runs(having)]
    return lines


def running_sections(sw):
    cfg = sw.running
    ports = sw.port_list()
    sections = [('Running-config temporary prefix mode setting', ['no cli default prefix-modes enable'])]
    eth = ['interface ethernet %s module-type %s force' % (parent, kind)
           for parent, kind in sorted(cfg['breakout'].items(), key=lambda kv: port_key(kv[0]))]
    sections.append(('Interface Ethernet configuration', eth + port_lines(sw, ports, 'eth')))
    vlan_ids = sorted(int(v) for v in cfg['vlans'] if v != '1')
    vlan = ['vlan %s' % run for run in compress_ints(vlan_ids)]
    vlan += ['vlan %d name %s' % (v, quote(cfg['vlans'][str(v)]['name'])) for v in vlan_ids if cfg['vlans'][str(v)]['name']]
    sections.append(('VLAN configuration', vlan + port_lines(sw, ports, 'vlan')))
    l3 = []
    svis = sorted(int(v) for v in cfg['interface_vlans'])
    l3 += ['interface vlan %d' % v for v in svis]
    for v in svis:
        entry = cfg['interface_vlans'][str(v)]
        if entry['ip_address']:
            l3.append('interface vlan %d ip address %s primary' % (v, entry['ip_address']))
        if entry['mtu'] != 1500:
            l3.append('interface vlan %d mtu %d' % (v, entry['mtu']))
    sections.append(('L3 configuration', l3))
    pfc = ['dcb priority-flow-control enable force'] if cfg['pfc']['enabled'] else []
    pfc += ['dcb priority-flow-control priority %d enable' % p for p in cfg['pfc']['priorities']]
    sections.append(('DCBX PFC configuration', pfc + port_lines(sw, ports, 'pfc')))
    sections.append(('QoS switch configuration', port_lines(sw, ports, 'qos')))
    if cfg['roce']:
        sections.append(('RoCE configuration', ['roce' if cfg['roce'] == 'lossless' else 'roce %s' % cfg['roce']]))
    sections.append(('Other IP configuration', ['hostname %s' % cfg['hostname']]))
    sections.append(('Persistent prefix mode setting', ['cli default prefix-modes enable']))
    return [(title, lines) for title, lines in sections if lines]


def h_show_running(sess, a):
    sw = sess.sim
    if a.get('ports'):
        lines = []
        for section in ('eth', 'vlan', 'pfc', 'qos'):
            lines += port_lines(sw, a['ports'], section)
        return '\n'.join(lines)
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y/%m/%d %H:%M:%S +0000')
    out = ['##', '## Running database "initial"', '## Generated at %s' % now, '## Hostname: %s' % sw.running['hostname'],
           '## Product release: %s' % sw.version, '##']
    for title, lines in running_sections(sw):
        out += ['', '##', '## %s' % title, '##']
        out += [line if line.startswith(('no ', 'cli ')) else '   ' + line for line in lines]
    return '\n'.join(out)


# ---------------------------------------------------------------------------------------------
# The grammar tables.  Modes a command is available in: U = user, E = enable, C = config and sub-modes.
# ---------------------------------------------------------------------------------------------
ETH = 'interface ethernet <ports:ports> '
COMMANDS = [
    ('UEC', 'exit', h_exit),
    ('UEC', 'enable', h_enable),
    ('E', 'disable', h_disable),
    ('EC', 'configure terminal', h_configure),
    ('UEC', '{no}:no cli session paging enable', h_paging),
    ('UEC', 'cli session paging enable', h_paging),
    ('UEC', 'terminal length <lines:lines>', h_terminal_length),
    ('UEC', 'terminal width <cols:width>', h_noop),
    ('EC', 'configuration write', h_configuration_write),
    ('EC', 'write memory', h_configuration_write),
    ('UEC', 'show version', h_show_version),
    ('UEC', 'show hosts', h_show_hosts),
    ('UEC', 'show roce', h_show_roce),
    ('UEC', 'show interfaces ethernet', h_show_interfaces),
    ('UEC', 'show interfaces ethernet <ports:ports>', h_show_interfaces),
    ('UEC', 'show interfaces ethernet <ports:ports> congestion-control', h_show_congestion),
    ('UEC', 'show interfaces switchport', h_show_switchport),
    ('UEC', 'show vlan', h_show_vlan),
    ('UEC', 'show vlan id <vlans:vlans>', h_show_vlan),
    ('UEC', 'show dcb priority-flow-control', h_show_pfc),
    ('UEC', 'show dcb ets interface ethernet <ports:ports>', h_show_ets),
    ('UEC', 'show qos interface ethernet <ports:ports>', h_show_qos),
    ('EC', 'show running-config', h_show_running),
    ('EC', 'show running-config interface ethernet <ports:ports>', h_show_running),
    ('C', 'cli default prefix-modes enable', h_noop),
    ('C', 'no cli default prefix-modes enable', h_noop),
    ('C', 'cli default paging enable', h_noop),
    ('C', 'no cli default paging enable', h_noop),
    ('C', 'hostname <name:hostname>', h_hostname),
    ('C', 'roce', h_roce),
    ('C', 'roce {lossless|semi-lossless|lossy}:mode', h_roce),
    ('C', '{no}:no roce', h_roce),
    ('C', 'vlan <vlans:vlans>', h_vlan),
    ('C', 'vlan <vlans:vlans> name <name:rest>', h_vlan_name),
    ('C', 'vlan <vlans:vlans> {no}:no name', h_vlan_name),
    ('C', 'no vlan <vlans:vlans>', h_no_vlan),
    ('C', 'interface vlan <vlan:vlan>', h_interface_vlan),
    ('C', 'interface vlan <vlan:vlan> ip address <ip:ip> [primary]', h_svi_ip),
    ('C', 'interface vlan <vlan:vlan> ip address <ip:ip> <mask:mask> [primary]', h_svi_ip),
    ('C', 'interface vlan <vlan:vlan> {no}:no ip address', h_svi_ip),
    ('C', 'interface vlan <vlan:vlan> mtu <mtu:svimtu>', h_svi_mtu),
    ('C', 'interface vlan <vlan:vlan> {no}:no mtu', h_svi_mtu),
    ('C', 'no interface vlan <vlan:vlan>', h_no_interface_vlan),
    ('C', 'interface ethernet <ports:ports>', h_interface_ethernet),
    ('C', ETH + 'switchport mode {access|trunk|hybrid}:swmode', h_switchport_mode),
    ('C', ETH + '{no}:no switchport mode', h_switchport_mode),
    ('C', ETH + 'switchport access vlan <vlan:vlan>', h_access_vlan),
    ('C', ETH + '{no}:no switchport access vlan', h_access_vlan),
    ('C', ETH + 'switchport {trunk|hybrid}:swmode allowed-vlan <vlans:vlans>', h_allowed_vlan),
    ('C', ETH + 'switchport {trunk|hybrid}:swmode allowed-vlan {add|remove}:op <vlans:vlans>', h_allowed_vlan),
    ('C', ETH + 'switchport {trunk|hybrid}:swmode allowed-vlan {all|none}:op', h_allowed_vlan),
    ('C', ETH + 'mtu <mtu:mtu> [force]', h_mtu),
    ('C', ETH + '{no}:no mtu [force]', h_mtu),
    ('C', ETH + 'shutdown', h_shutdown),
    ('C', ETH + '{no}:no shutdown', h_shutdown),
    ('C', ETH + 'description <text:rest>', h_description),
    ('C', ETH + '{no}:no description', h_description),
    ('C', ETH + 'speed <speed:speed> [force]', h_speed),
    ('C', ETH + '{no}:no speed [force]', h_speed),
    ('C', ETH + 'flowcontrol {send|receive}:dir {on|off}:val [force]', h_flowcontrol),
    ('C', ETH + 'traffic-class <tc:tc> congestion-control {ecn|red}:cc {minimum-absolute}:threshold <min:kb> maximum-absolute <max:kb>',
     h_congestion),
    ('C', ETH + 'traffic-class <tc:tc> congestion-control {ecn|red}:cc {minimum-relative}:threshold <min:pct> maximum-relative <max:pct>',
     h_congestion),
    ('C', ETH + '{no}:no traffic-class <tc:tc> congestion-control', h_congestion),
    ('C', ETH + 'traffic-class <tc:tc> dcb ets {strict}:strict', h_ets),
    ('C', ETH + 'traffic-class <tc:tc> dcb ets wrr <weight:weight>', h_ets),
    ('C', ETH + '{no}:no traffic-class <tc:tc> dcb ets', h_ets),
    ('C', ETH + 'dcb priority-flow-control mode on [force]', h_pfc_mode),
    ('C', ETH + '{no}:no dcb priority-flow-control mode [force]', h_pfc_mode),
    ('C', ETH + 'qos trust {L2|L3|both}:trust', h_trust),
    ('C', ETH + '{no}:no qos trust', h_trust),
    ('C', ETH + 'qos rewrite {pcp|dscp}:what', h_rewrite),
    ('C', ETH + '{no}:no qos rewrite {pcp|dscp}:what', h_rewrite),
    ('C', ETH + 'module-type {qsfp-split-4|qsfp-split-2|qsfp}:mtype [force]', h_module_type),
    ('C', ETH + '{no}:no module-type [force]', h_module_type),
    ('C', 'dcb priority-flow-control enable [force]', h_pfc_global),
    ('C', '{no}:no dcb priority-flow-control enable [force]', h_pfc_global),
    ('C', 'dcb priority-flow-control priority <prio:prio> enable', h_pfc_priority),
    ('C', '{no}:no dcb priority-flow-control priority <prio:prio> enable', h_pfc_priority),
]


def build_grammars():
    grammars = {'user': Grammar(), 'enable': Grammar(), 'config': Grammar()}
    for modes, spec, handler in COMMANDS:
        for letter, name in (('U', 'user'), ('E', 'enable'), ('C', 'config')):
            if letter in modes:
                grammars[name].add(spec, handler)
    return grammars


GRAMMARS = build_grammars()


# ---------------------------------------------------------------------------------------------
# One interactive CLI session on an SSH channel: echo, line editing, modes, prompts, pager.
# ---------------------------------------------------------------------------------------------
class Session:
    def __init__(self, sim, chan, sid, peer, size):
        self.sim, self.chan, self.sid, self.peer = sim, chan, sid, peer
        self.mode, self.ctx = 'user', ''
        self.paging = True
        self.page_len = max(1, (size[1] or 24) - 1)
        self.line, self.out = [], []
        self.closing = False
        self.confirm = None
        self.pager = None
        self.esc = 0
        self.last_cr = False
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')

    # ---- modes -----------------------------------------------------------------------------
    def set_mode(self, mode, ctx=''):
        self.mode, self.ctx = mode, ctx

    def prefix(self):
        if self.mode == 'config-if':
            return ['interface', 'ethernet', self.ctx]
        if self.mode == 'config-vlan':
            return ['vlan', self.ctx]
        return ['interface', 'vlan', self.ctx]

    @staticmethod
    def ports_text(ports):
        return ports[0] if len(ports) == 1 else '%s-%s' % (ports[0], ports[-1])

    def prompt(self):
        host = self.sim.running['hostname']
        if self.mode == 'user':
            return '%s > ' % host
        if self.mode == 'enable':
            return '%s # ' % host
        context = {'config': '', 'config-if': ' interface ethernet ', 'config-vlan': ' vlan ', 'config-if-vlan': ' interface vlan '}[self.mode]
        return '%s (config%s%s) # ' % (host, context, self.ctx)

    # ---- I/O -------------------------------------------------------------------------------
    def send(self, text):
        self.out.append(text.replace('\r\n', '\n').replace('\n', '\r\n'))

    def flush(self):
        data = ''.join(self.out)
        self.out = []
        if data:
            self.chan.sendall(data.encode('utf-8'))

    def run(self):
        now = time.strftime('%a %b %d %H:%M:%S %Y', time.gmtime())
        self.send('Last login: %s from %s\n\nNVIDIA Switch\n\n' % (now, self.peer))
        self.send(self.prompt())
        self.flush()
        self.chan.settimeout(0.5)
        while not self.closing and not self.sim.stopping.is_set():
            try:
                data = self.chan.recv(4096)
            except socket.timeout:
                continue
            except (OSError, EOFError, paramiko.SSHException):
                break
            if not data:
                break
            self.feed(self.decoder.decode(data))
            if self.closing:
                break
            self.flush()

    def feed(self, text):
        for ch in text:
            if self.closing:
                return
            if self.esc == 1:
                self.esc = 2 if ch in '[O' else 0
                continue
            if self.esc == 2:
                if '@' <= ch <= '~':
                    self.esc = 0
                continue
            if ch == '\x1b':
                self.esc = 1
                continue
            if ch == '\n' and self.last_cr:
                self.last_cr = False
                continue
            self.last_cr = ch == '\r'
            if self.pager is not None:
                self.pager_key(ch)
                continue
            if ch in '\r\n':
                self.send('\n')
                self.flush()
                line = ''.join(self.line)
                self.line = []
                self.enter(line)
            elif ch in '\x7f\x08':
                if self.line:
                    self.line.pop()
                    self.send('\b \b')
            elif ch == '\x03':
                self.line, self.confirm = [], None
                self.send('\n' + self.prompt())
            elif ch == '?':
                line = ''.join(self.line)
                self.send('?\n' + ''.join('  %s\n' % opt for opt in completions(self, line)) + self.prompt() + line)
            elif ch == '\t':
                line = ''.join(self.line)
                words = [w for w in completions(self, line) if not w.startswith('<')]
                if len(words) == 1 and line and not line[-1].isspace():
                    rest = words[0][len(line.split()[-1]):] + ' '
                    self.line.extend(rest)
                    self.send(rest)
            elif ch == '\x15':
                self.send('\b \b' * len(self.line))
                self.line = []
            elif ch >= ' ':
                self.line.append(ch)
                self.send(ch)

    def enter(self, line):
        if self.confirm is not None:
            conf, self.confirm = self.confirm, None
            self.respond(self.sim.confirm(conf, line))
            return
        out, drop = self.sim.execute(self, line)
        if drop:
            self.closing = True
            self.chan.get_transport().close()
            return
        if isinstance(out, Confirm):
            self.confirm = out
            self.send(out.prompt)
            return
        if self.closing:
            self.flush()
            return
        self.respond(out)

    def respond(self, out):
        lines = out.split('\n') if out else []
        if self.paging and len(lines) > self.page_len:
            self.pager = {'lines': lines, 'pos': 0, 'status': ''}
            self.pager_show(self.page_len)
            return
        if lines:
            self.send('\n'.join(lines) + '\n')
        self.send(self.prompt())

    # ---- pager (Onyx paging is on until "no cli session paging enable") ----------------------
    def pager_show(self, count):
        pg = self.pager
        chunk = pg['lines'][pg['pos']:pg['pos'] + count]
        pg['pos'] += len(chunk)
        self.send(''.join(line + '\n' for line in chunk))
        total = len(pg['lines'])
        first = max(1, pg['pos'] - self.page_len + 1)
        if pg['pos'] >= total:
            pg['status'] = 'lines %d-%d/%d (END) ' % (first, total, total)
        else:
            pg['status'] = 'lines %d-%d ' % (first, pg['pos'])
        self.send(pg['status'])

    def pager_key(self, ch):
        pg = self.pager
        at_end = pg['pos'] >= len(pg['lines'])
        self.send('\r' + ' ' * len(pg['status']) + '\r')
        if ch in 'qQ' or (at_end and ch in ' \r\n'):
            self.pager = None
            self.send(self.prompt())
        elif ch == ' ':
            self.pager_show(self.page_len)
        elif ch in '\r\n':
            self.pager_show(1)
        else:
            self.send(pg['status'])


# ---------------------------------------------------------------------------------------------
# SSH server
# ---------------------------------------------------------------------------------------------
class SSHServer(paramiko.ServerInterface):
    def __init__(self, sim):
        super().__init__()
        self.sim = sim
        self.shell = threading.Event()
        self.size = (80, 24)

    def get_allowed_auths(self, username):
        return 'password,publickey' if self.sim.authorized else 'password'

    def offered(self):
        with self.sim.lock:
            self.sim.auth_attempts += 1
            self.sim.write_state()

    def check_auth_password(self, username, password):
        self.offered()
        ok_user = username == self.sim.username
        ok_pass = password == self.sim.password
        return paramiko.AUTH_SUCCESSFUL if ok_user and ok_pass else paramiko.AUTH_FAILED

    def check_auth_publickey(self, username, key):
        self.offered()
        if username == self.sim.username and (key.get_name(), key.get_base64()) in self.sim.authorized:
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == 'session' else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_pty_request(self, channel, term, width, height, pixelwidth, pixelheight, modes):
        self.size = (width, height)
        return True

    def check_channel_window_change_request(self, channel, width, height, pixelwidth, pixelheight):
        self.size = (width, height)
        return True

    def check_channel_shell_request(self, channel):
        self.shell.set()
        return True

    def get_banner(self):
        return ('NVIDIA Onyx Switch Management\r\n', 'en-US')


class Listener:
    def __init__(self, sim, host_key, address, port):
        self.sim = sim
        self.host_key = host_key
        self.sock = socket.socket(socket.AF_INET6 if ':' in address else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.sock.listen(64)
        # How soon a stop (SIGTERM) is seen: the lab stops and starts switches between tests.
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.transports = set()
        self.tlock = threading.Lock()

    def serve(self):
        while not self.sim.stopping.is_set():
            try:
                conn, addr = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            threading.Thread(target=self.handle, args=(conn, addr), daemon=True).start()
        self.sock.close()
        with self.tlock:
            for transport in list(self.transports):
                transport.close()

    def handle(self, conn, addr):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as sshd does for interactive sessions
        transport = paramiko.Transport(conn)
        transport.local_version = 'SSH-2.0-OpenSSH_8.4'
        transport.add_server_key(self.host_key)
        server = SSHServer(self.sim)
        with self.tlock:
            self.transports.add(transport)
        try:
            transport.start_server(server=server)
            chan = transport.accept(timeout=30)
            if chan is None:
                return
            with self.sim.lock:
                self.sim.logins += 1
                self.sim.write_state()
            if not server.shell.wait(15):
                return
            with self.sim.lock:
                self.sim.sessions += 1
                sid = self.sim.sessions
                self.sim.write_state()
            Session(self.sim, chan, sid, addr[0], server.size).run()
        except (paramiko.SSHException, EOFError, OSError):
            pass
        finally:
            transport.close()
            with self.tlock:
                self.transports.discard(transport)


def load_host_key(path):
    if not path:
        return paramiko.ECDSAKey.generate()
    if os.path.exists(path):
        return paramiko.PKey.from_path(path)
    key = paramiko.ECDSAKey.generate()
    key.write_private_key_file(path)
    return key


def parse_args(argv):
    parser = argparse.ArgumentParser(description='Stateful NVIDIA Onyx CLI simulator over SSH')
    parser.add_argument('--listen', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=2222, help='0 picks a free port')
    parser.add_argument('--username', default='admin')
    parser.add_argument('--password-file', default=None,
                        help="file whose first line is the login password (default: Onyx's factory 'admin'); "
                             'never on the command line, where any local user reads it')
    parser.add_argument('--state-file', required=True)
    parser.add_argument('--hostname', default=None, help='default: "switch" (factory), or the saved hostname')
    parser.add_argument('--version', default=DEFAULT_VERSION, help='Onyx release, e.g. 3.10.4006 or 3.6.5000')
    parser.add_argument('--ports', type=int, default=None, help='front-panel ports of a factory switch (default 32)')
    parser.add_argument('--host-key', default=None, help='private key file; created if missing; default: a new key per start')
    parser.add_argument('--authorized-key', default=None, help='OpenSSH public key file allowed for --username')
    parser.add_argument('--factory', action='store_true', help='ignore an existing state file and start from defaults')
    parser.add_argument('--fault-drop-after', type=int, default=None, metavar='N')
    parser.add_argument('--fault-reject', default=None, metavar='REGEX')
    parser.add_argument('--fault-delay', type=float, default=0.0, metavar='SECONDS')
    opts = parser.parse_args(argv)
    opts.password = 'admin'
    if opts.password_file:
        with open(opts.password_file, encoding='utf-8') as handle:
            opts.password = handle.readline().rstrip('\n')
    try:
        parse_version(opts.version)
    except ValueError:
        parser.error('--version must look like 3.10.4006')
    if opts.ports is not None and not 1 <= opts.ports <= MAX_PORTS:
        parser.error('--ports must be 1-%d' % MAX_PORTS)
    if opts.fault_reject:
        try:
            re.compile(opts.fault_reject)
        except re.error as exc:
            parser.error('--fault-reject: %s' % exc)
    return opts


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    logging.getLogger('paramiko').addHandler(logging.NullHandler())
    logging.getLogger('paramiko').propagate = False
    sim = Switch(opts)
    listener = Listener(sim, load_host_key(opts.host_key), opts.listen, opts.port)

    def stop(_signum, _frame):
        sim.stopping.set()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print('READY %d' % listener.port, flush=True)
    listener.serve()
    with sim.lock:
        sim.write_state()
    return 0


if __name__ == '__main__':
    sys.exit(main())
