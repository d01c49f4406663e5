# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Cumulus Linux (NVUE): the REST API transport (HTTPS, port 8765 by default).

PRIVATE to the roce.fabric collection: may change without notice.

The revision model of the NVUE API: ``POST /nvue_v1/revision`` creates a revision (state ``pending``),
``PATCH /nvue_v1/<path>?rev=<id>`` stages changes in it, ``PATCH /nvue_v1/revision/<id>`` with
``{"state": "apply", "auto-prompt": {"ays": "ays_yes"}}`` applies it, and ``GET /nvue_v1/revision/<id>`` is
polled until it is ``applied`` (or ``invalid``, ``ays_fail``... with the reasons in ``transition.issue``).
``PATCH /nvue_v1/revision/applied`` with ``{"state": "save"}`` saves the applied configuration to startup.

Every request has a timeout; the server's certificate is checked unless the task says otherwise; the
password travels only in the Authorization header.
"""

from __future__ import annotations

import json
import shlex
import socket
import ssl
import time
import traceback

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import quote
from ansible.module_utils.urls import open_url

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.common.ssh import (
    cause_of,
    exception_chain,
    missing_known_hosts,
    refused_host_key,
    substitute,
)
from ansible_collections.roce.fabric.plugins.module_utils.nvue.parsers import (
    DONE_STATES,
    FAILED_STATES,
    REST_DEFAULT_VERSION,
    apply_result,
    config_from_show,
    pending_changes,
    revision_id,
    revision_state,
)

PARAMIKO_IMPORT_ERROR = None
try:
    import paramiko
    from paramiko.ssh_exception import AuthenticationException, BadHostKeyException, SSHException
except ImportError:
    PARAMIKO_IMPORT_ERROR = traceback.format_exc()
    paramiko = None

    class AuthenticationException(Exception):
        """Stands in for paramiko's exception when paramiko is missing (never raised then)."""

    class BadHostKeyException(Exception):
        """Stands in for paramiko's exception when paramiko is missing (never raised then)."""

    class SSHException(Exception):
        """Stands in for paramiko's exception when paramiko is missing (never raised then)."""

API = "/nvue_v1"
APPLY_BODY = {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
SAVE_BODY = {"state": "save", "auto-prompt": {"ays": "ays_yes"}}


class NvueApiError(FabricError):
    """A request the API refused or did not answer."""


class NvueRest(object):
    """One switch's NVUE REST API. ``requests`` lists ``METHOD path`` of every request, ``mutating`` those that
    change something (creating, patching, applying, deleting or saving a revision)."""

    def __init__(self, host, port, username, password, timeout, validate_certs=True, ca_path=None, poll_interval=0.2):
        self.base = "https://%s:%d%s" % (host if ":" not in host else "[%s]" % host, port, API)
        self.username = username
        self.password = password
        self.timeout = timeout
        self.validate_certs = validate_certs
        self.ca_path = ca_path
        self.poll_interval = poll_interval
        self.requests = []
        self.mutating = []

    def _call(self, method, path, body=None, rev=None, what=None):
        url = self.base + path
        if rev is not None:
            url += ("&" if "?" in url else "?") + "rev=" + quote(rev, safe="")
        data = json.dumps(body) if body is not None else None
        record = "%s %s" % (method, path if rev is None else "%s?rev=%s" % (path, rev))
        self.requests.append(record)
        if method != "GET":
            self.mutating.append(record)
        kwargs = dict(method=method, data=data, headers={"Content-Type": "application/json", "Accept": "application/json"},
                      url_username=self.username, url_password=self.password, force_basic_auth=True,
                      validate_certs=self.validate_certs, timeout=self.timeout, follow_redirects="none")
        if self.ca_path:
            kwargs["ca_path"] = self.ca_path
        try:
            response = open_url(url, **kwargs)
            text = response.read()
        except HTTPError as exc:
            detail = _error_text(exc)
            raise NvueApiError("The switch's NVUE API refused %s (HTTP %d%s)" % (what or record, exc.code, detail),
                               status=exc.code)
        except URLError as exc:
            hint = ""
            if isinstance(exc.reason, ConnectionRefusedError):
                hint = (" (Cumulus Linux before %s serves no REST API until an operator enables it; nvue_transport: ssh "
                        "uses nv over SSH instead)" % REST_DEFAULT_VERSION)
            # A certificate that is not trusted is refused before the password is sent: not a switch that is down.
            failure = "certificate" if isinstance(exc.reason, ssl.SSLError) else "unreachable"
            raise NvueApiError("The switch's NVUE API at %s did not answer %s: %s%s" % (self.base, what or record, exc.reason, hint),
                               failure=failure)
        except (OSError, ValueError) as exc:
            raise NvueApiError("The switch's NVUE API at %s did not answer %s: %s" % (self.base, what or record, exc),
                               failure="unreachable")
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            raise NvueApiError("The switch's NVUE API answered %s with something that is not JSON" % (what or record))

    # --- reads -------------------------------------------------------------------------------------------------

    def applied(self):
        """The applied configuration, whole (``GET /nvue_v1/?rev=applied``)."""
        return self._call("GET", "/", rev="applied", what="reading the applied configuration")

    def interfaces(self):
        """The operational interface tree, each interface's ``link.stats`` in it (``GET /nvue_v1/interface``)."""
        return self._call("GET", "/interface", rev="operational", what="reading the interfaces' counters")

    def lldp_table(self):
        """None: the API's LLDP neighbour objects have no published sample to read them by (``nv show interface
        lldp`` over SSH has)."""
        return None

    def pfc_table(self, port, counters_first):  # pylint: disable=unused-argument
        """None: the API's PFC counter objects have no published sample either."""
        return None

    def revision(self, rev):
        return self._call("GET", "/revision/" + quote(rev, safe=""), what="reading revision %s" % rev)

    # --- the revision of one change ------------------------------------------------------------------------------

    def create(self):
        return revision_id(self._call("POST", "/revision", body={}, what="creating a revision"))

    def stage(self, rev, document, commands=None):  # pylint: disable=unused-argument
        return self._call("PATCH", "/", body=document, rev=rev, what="staging the change in revision %s" % rev)

    def apply(self, rev, deadline):
        """Apply ``rev`` and wait until it is done or ``deadline`` (time.monotonic) passes.

        Returns ``(state, issues, progress)``; ``state`` is the last one read (still ``apply``/``applying`` when
        the deadline passed)."""
        self._call("PATCH", "/revision/" + quote(rev, safe=""), body=APPLY_BODY, what="applying revision %s" % rev)
        while True:
            state, issues, progress = revision_state(self.revision(rev), rev)
            if state in DONE_STATES or state in FAILED_STATES or time.monotonic() >= deadline:
                return state, issues, progress
            time.sleep(self.poll_interval)

    def discard(self, rev):
        """Delete a revision that was not applied (best effort: an error here is not the one to report)."""
        try:
            self._call("DELETE", "/revision/" + quote(rev, safe=""), what="deleting revision %s" % rev)
            return True
        except NvueApiError:
            return False

    def save(self):
        return self._call("PATCH", "/revision/applied", body=SAVE_BODY, what="saving the applied configuration")


def _error_text(exc):
    try:
        body = exc.read()
    except Exception:  # pylint: disable=broad-except
        return ""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return ""
    if isinstance(data, dict):
        for key in ("detail", "message", "title"):
            if data.get(key):
                return ": %s" % str(data[key]).strip()
    return ""


class NvueSsh(object):
    """One switch's ``nv`` command line over SSH (Cumulus Linux before 5.6, or where the REST API is off).

    The same steps as :class:`NvueRest`: the applied configuration from ``nv config show -r applied -o json``;
    the change staged with ``nv set``/``nv unset`` in the login's pending revision (which must be empty first:
    ``nv config diff``, a pending change of the account refused, never applied nor detached) and applied with
    ``nv config apply -y``; a
    refused revision is detached again; ``nv config save``. One login, one exec channel per command, each with
    the timeout; the host key is checked against ``known_hosts`` before any credential is offered."""

    def __init__(self, host, port, username, password, timeout, key_file=None, host_key_checking=True, known_hosts_file=None,
                 proxy_command=None):
        self.host = host
        # A jump host: the session goes through this command (paramiko's ProxyCommand, started without a shell).
        self.proxy_command = substitute(proxy_command, host, port, username) if proxy_command else None
        self.port = port
        self.username = username
        self.password = password
        self.timeout = timeout
        self.key_file = key_file
        self.host_key_checking = host_key_checking
        self.known_hosts_file = known_hosts_file
        self.client = None
        self.requests = []
        self.mutating = []

    def where(self):
        return "%s:%s" % (self.host, self.port)

    def open(self):
        if self.client is not None:
            return
        client = paramiko.SSHClient()
        if self.host_key_checking:
            missing = missing_known_hosts(self.known_hosts_file, self.host, self.port, "nvue_known_hosts_file")
            if missing:
                raise NvueApiError(missing, failure="host_key")
            client.load_system_host_keys()
            if self.known_hosts_file:
                client.load_host_keys(self.known_hosts_file)
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            sock = paramiko.ProxyCommand(self.proxy_command) if self.proxy_command else None
            client.connect(self.host, port=self.port, username=self.username, password=self.password or None,
                           key_filename=self.key_file, allow_agent=False, look_for_keys=False, timeout=self.timeout,
                           banner_timeout=self.timeout, auth_timeout=self.timeout, sock=sock)
        except AuthenticationException as exc:
            raise NvueApiError("Authentication to %s as %s failed: %s" % (self.where(), self.username, exc), failure="auth")
        except (SSHException, BadHostKeyException, OSError, EOFError) as exc:
            known = "~/.ssh/known_hosts" + (" or %s" % self.known_hosts_file if self.known_hosts_file else "")
            message = refused_host_key(exception_chain(exc), self.where(), known, self.host_key_checking,
                                       "ssh-keyscan -p %s %s" % (self.port, self.host), "nvue_host_key_checking",
                                       bad_host_key=BadHostKeyException)
            if message:
                raise NvueApiError(message, failure="host_key")
            raise NvueApiError("The switch at %s did not answer over SSH: %s" % (self.where(), cause_of(exc)),
                               failure="unreachable")
        self.client = client

    def close(self):
        if self.client is not None:
            self.client.close()
            self.client = None

    def run(self, argv, mutating, timeout=None):
        """Run one ``nv`` command; ``(rc, stdout + stderr)``. The words are quoted for the switch's shell."""
        line = " ".join(shlex.quote(word) for word in argv)
        if any(ord(ch) < 32 for ch in line):
            raise NvueApiError("Refusing to send a command with a control character: %r" % line)
        self.open()
        self.requests.append(line)
        if mutating:
            self.mutating.append(line)
        try:
            stdin, stdout, stderr = self.client.exec_command(line, timeout=timeout or self.timeout)
            stdin.close()
            out = stdout.read().decode("utf-8", "replace")
            err = stderr.read().decode("utf-8", "replace")
            rc = stdout.channel.recv_exit_status()
        except (SSHException, OSError, EOFError, socket.timeout) as exc:
            raise NvueApiError("The SSH session to %s ended during '%s': %s" % (self.where(), line, cause_of(exc) if str(exc) else "timed out"),
                               failure="dropped")
        return rc, out + err

    def checked(self, argv, mutating):
        rc, output = self.run(argv, mutating)
        if rc != 0:
            raise NvueApiError("The switch refused '%s' (exit %d): %s" % (" ".join(argv), rc, output.strip()[:500]))
        return output

    def applied(self):
        output = self.checked(["nv", "config", "show", "-r", "applied", "-o", "json"], False)
        try:
            return config_from_show(json.loads(output))
        except ValueError as exc:
            raise NvueApiError("nv config show printed something that is not its JSON: %s" % exc)

    def interfaces(self):
        output = self.checked(["nv", "show", "interface", "--operational", "-o", "json"], False)
        try:
            return json.loads(output)
        except ValueError as exc:
            raise NvueApiError("nv show interface printed something that is not its JSON: %s" % exc)

    def lldp_table(self):
        """What the switch hears over LLDP on its interfaces, ``nv show interface lldp`` as it prints it."""
        return self.checked(["nv", "show", "interface", "lldp"], False)

    def pfc_table(self, port, counters_first):
        """A port's PFC counters as ``nv`` prints them: ``nv show interface <port> counters qos pfc-stats`` from
        Cumulus Linux 5.5 (``counters_first``), ``nv show interface <port> qos counters pfc-stats`` before."""
        words = ["counters", "qos"] if counters_first else ["qos", "counters"]
        return self.checked(["nv", "show", "interface", port] + words + ["pfc-stats"], False)

    def create(self):
        # The login's pending configuration is the account's, shared by every session of it: something staged there
        # by hand (or by another tool logged in as the same account) would ride along with this change, and a detach
        # would throw it away. Neither: a pending change this run did not stage stops it before anything is sent.
        pending = pending_changes(self.checked(["nv", "config", "diff", "-o", "json"], False))
        if pending:
            raise NvueApiError(
                "The account %s has configuration pending on %s that this run did not stage (nv config diff: %s); "
                "nothing was sent. Apply or detach it as that account (nv config apply, nv config detach), or give "
                "the automation an account of its own (docs/security.md)"
                % (self.username, self.where(), " ".join(pending.split())[:300]), failure="pending")
        return "pending"

    def stage(self, rev, document, commands=None):  # pylint: disable=unused-argument
        for command in commands or []:
            self.checked(shlex.split(command), True)

    def apply(self, rev, deadline):  # pylint: disable=unused-argument
        left = max(1, int(deadline - time.monotonic()))
        rc, output = self.run(["nv", "config", "apply", "-y"], True, timeout=left)
        state, issues, revision = apply_result(output, rc)
        return state, issues, "rev_id %s" % revision if revision else ""

    def discard(self, rev):  # pylint: disable=unused-argument
        try:
            self.run(["nv", "config", "detach"], True)
            return True
        except NvueApiError:
            return False

    def save(self):
        return self.checked(["nv", "config", "save"], True)
