# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Onyx (Spectrum) switches: one SSH session through netmiko's ``mellanox_mlnxos`` driver.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import json
import re
import traceback

from ansible.module_utils.basic import env_fallback

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import (
    cause_of,
    exception_chain,
    missing_known_hosts,
    refused_host_key,
    substitute,
)

NETMIKO_IMPORT_ERROR = None
try:
    from netmiko.exceptions import NetmikoAuthenticationException, NetmikoTimeoutException, ReadTimeout
    from paramiko.ssh_exception import BadHostKeyException, SSHException
    from paramiko.proxy import ProxyCommand
    # What a session that breaks mid-way raises.
    SESSION_ERRORS = (OSError, EOFError, ValueError, SSHException, ReadTimeout)
    from netmiko.mellanox.mellanox_mlnxos_ssh import MellanoxMlnxosSSH
except ImportError:
    NETMIKO_IMPORT_ERROR = traceback.format_exc()
    MellanoxMlnxosSSH = object
    ProxyCommand = None
    SESSION_ERRORS = (OSError, EOFError, ValueError)

    class NetmikoAuthenticationException(Exception):
        """Stands in for netmiko's exception when netmiko is missing (never raised then)."""

    class NetmikoTimeoutException(Exception):
        """Stands in for netmiko's exception when netmiko is missing (never raised then)."""

    class BadHostKeyException(Exception):
        """Stands in for paramiko's exception when netmiko is missing (never raised then)."""


def connection_argument_spec():
    """Connection options shared by the Onyx modules (filled from inventory by their action plugin)."""
    return dict(
        host=dict(type="str", fallback=(env_fallback, ["ONYX_HOST"])),
        port=dict(type="int", default=22),
        username=dict(type="str", fallback=(env_fallback, ["ONYX_USERNAME"])),
        password=dict(type="str", no_log=True, fallback=(env_fallback, ["ONYX_PASSWORD"])),
        ssh_key_file=dict(type="path", fallback=(env_fallback, ["ONYX_SSH_KEY_FILE"])),
        timeout=dict(type="int", default=30),
        host_key_checking=dict(type="bool", default=True, fallback=(env_fallback, ["ONYX_HOST_KEY_CHECKING"])),
        known_hosts_file=dict(type="path", fallback=(env_fallback, ["ONYX_KNOWN_HOSTS_FILE"])),
        proxy_command=dict(type="str"),
    )


class OnyxCliError(FabricError):
    """A failure talking to the switch; ``kind`` (auth, unreachable, rejected or dropped) is its ``failure``."""

    def __init__(self, kind, msg):
        super(OnyxCliError, self).__init__(msg, failure=kind)
        self.kind = kind


# The end of an Onyx CLI prompt: "switch-5e8b4c [standalone: master] > " (user), "... # " (enable, config).
PROMPT_END = r"[>#] ?$"


def prompt_pattern(prompt):
    """A pattern for the prompt of this switch in every CLI mode, from the one ``find_prompt`` read."""
    host = prompt.rstrip()[:-1].rstrip()
    return re.escape(host) + r"(?: \((?:config)[^)]*\))? ?[>#]"


class OnyxSSH(MellanoxMlnxosSSH):
    """netmiko's MLNX-OS/Onyx driver, with a login that reads up to the first prompt.

    netmiko's generic session preparation, which this driver inherits, reads the channel until it has been quiet
    for 2 seconds: most of a session that only reads. Here it reads until the login banner ends with a prompt, then
    finds the prompt and turns paging off as before."""

    def session_preparation(self):
        self._test_channel_read(pattern=PROMPT_END)
        self.set_base_prompt()
        self.disable_paging()


class OnyxSession(object):
    """Runs show and configuration commands over one login; records what it sent."""

    ERROR_MARK = "%"

    def __init__(self, host, port, username, password=None, key_file=None, timeout=30, connect=None,
                 host_key_checking=True, known_hosts_file=None, proxy_command=None):
        self.params = dict(device_type="mellanox_mlnxos", host=host, port=port, username=username,
                           password=password or "", key_file=key_file, use_keys=bool(key_file),
                           allow_agent=False, timeout=timeout, conn_timeout=timeout, auth_timeout=timeout,
                           banner_timeout=timeout, fast_cli=True)
        # Host keys: checked before any credential is sent (paramiko verifies the key, then authenticates).
        # Known keys come from the controller's ~/.ssh/known_hosts and known_hosts_file; an unknown or changed
        # key is refused (netmiko's ssh_strict is paramiko's RejectPolicy).
        self.known_hosts_file = known_hosts_file
        self.host_key_checking = host_key_checking
        if host_key_checking:
            self.params.update(ssh_strict=True, system_host_keys=True, alt_host_keys=bool(known_hosts_file),
                               alt_key_file=known_hosts_file or "")
        else:
            self.params.update(ssh_strict=False, system_host_keys=False, alt_host_keys=False)
        self.connect = connect or OnyxSSH
        # A jump host: the session goes through this command's standard input and output (paramiko's
        # ProxyCommand, started without a shell), as Ansible's own SSH connections do.
        self.proxy_command = substitute(proxy_command, host, port, username) if proxy_command else None
        self.prompt = None
        self.conn = None
        self.logins = 0
        self.sent_show = []
        self.sent_config = []

    def open(self):
        if self.host_key_checking:
            missing = missing_known_hosts(self.known_hosts_file, self.params["host"], self.params["port"],
                                          "onyx_known_hosts_file")
            if missing:
                raise OnyxCliError("host_key", missing)
        try:
            params = dict(self.params)
            if self.proxy_command:
                params["sock"] = ProxyCommand(self.proxy_command)
            self.conn = self.connect(**params)
            self.logins += 1
            self.conn.enable()
            # The prompt, found once: every read ends at it, in any mode ("sw #", "sw (config) #", "sw (config
            # interface ethernet 1/1) #"); netmiko would otherwise look for it again before each command.
            self.prompt = prompt_pattern(self.conn.find_prompt())
        except NetmikoAuthenticationException as exc:
            raise OnyxCliError("auth", "Authentication to %s as %s failed: %s" % (self.params["host"], self.params["username"], cause_of(exc)))
        except (NetmikoTimeoutException, BadHostKeyException) + SESSION_ERRORS as exc:
            # netmiko re-raises paramiko's host key errors as a timeout: the cause is in the exception's context.
            self.raise_host_key_error(exc)
            if isinstance(exc, NetmikoTimeoutException):
                raise OnyxCliError("unreachable", "Cannot reach %s:%s: %s" % (self.params["host"], self.params["port"], cause_of(exc)))
            raise OnyxCliError("unreachable", "Cannot open a session to %s:%s: %s" % (self.params["host"], self.params["port"], cause_of(exc)))
        return self

    @staticmethod
    def refuse_control_characters(commands):
        """Defence in depth: a command line with a newline or another control character would be two commands."""
        for command in commands:
            if any(ord(ch) < 32 or ord(ch) == 127 for ch in command):
                raise OnyxCliError("refused", "Refusing to send a command with a control character, nothing of it was sent: %r"
                                   % command)

    def raise_host_key_error(self, exc):
        """An OnyxCliError ``host_key`` when ``exc`` (or what it was raised from) is a refused host key."""
        where = "%s:%s" % (self.params["host"], self.params["port"])
        message = refused_host_key(exception_chain(exc), where, self.known_hosts_where(), self.host_key_checking,
                                   "ssh-keyscan -p %s %s" % (self.params["port"], self.params["host"]), "onyx_host_key_checking",
                                   bad_host_key=BadHostKeyException)
        if message:
            raise OnyxCliError("host_key", message)

    def known_hosts_where(self):
        return "~/.ssh/known_hosts or %s" % self.known_hosts_file if self.known_hosts_file else "~/.ssh/known_hosts"

    def show(self, command):
        self.refuse_control_characters([command])
        self.sent_show.append(command)
        try:
            output = self.conn.send_command(command, read_timeout=self.params["timeout"],
                                            expect_string=self.prompt)
        except SESSION_ERRORS as exc:
            raise OnyxCliError("dropped", "The session to %s ended during '%s': %s" % (self.params["host"], command, cause_of(exc)))
        if output.lstrip().startswith(self.ERROR_MARK):
            raise OnyxCliError("rejected", "'%s' was refused by the switch: %s" % (command, output.strip()))
        return output

    def show_json(self, command):
        text = self.show(command + " | json-print")
        try:
            return json.loads(text)
        except ValueError:
            raise OnyxCliError("rejected", "'%s | json-print' did not return JSON: %s" % (command, text.strip()[:200]))

    def configure(self, commands):
        """Send commands one by one in config mode; stop at the first refused one.

        Returns ``(applied, failed, error)``: the commands the switch accepted, the one it refused
        (or during which the session dropped), and the switch's message.
        """
        applied = []
        if not commands:
            return applied, None, None
        self.refuse_control_characters(commands)
        try:
            self.conn.config_mode()
            for command in commands:
                self.sent_config.append(command)
                output = self.conn.send_config_set([command], enter_config_mode=False, exit_config_mode=False,
                                                   read_timeout=self.params["timeout"])
                error = _error_in(output)
                if error:
                    return applied, command, error
                applied.append(command)
            self.conn.exit_config_mode()
        except SESSION_ERRORS as exc:
            failed = commands[len(applied)] if len(applied) < len(commands) else None
            return applied, failed, "the session ended: %s" % cause_of(exc)
        return applied, None, None

    def save(self):
        self.sent_config.append("configuration write")
        try:
            output = self.conn.save_config()
        except SESSION_ERRORS as exc:
            raise OnyxCliError("dropped", "Saving the configuration failed: %s" % cause_of(exc))
        error = _error_in(output)
        if error:
            raise OnyxCliError("rejected", "configuration write was refused: %s" % error)

    def close(self):
        if self.conn is not None:
            try:
                self.conn.disconnect()
            except SESSION_ERRORS:
                pass
            self.conn = None


def _error_in(output):
    for line in (output or "").splitlines():
        if line.strip().startswith("%"):
            return line.strip()
    return None
