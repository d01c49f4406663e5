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
import time

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import quote
from ansible.module_utils.urls import open_url

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError
from ansible_collections.roce.fabric.plugins.module_utils.nvue.parsers import (
    DONE_STATES,
    FAILED_STATES,
    revision_id,
    revision_state,
)

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
            raise NvueApiError("The switch's NVUE API at %s did not answer %s: %s" % (self.base, what or record, exc.reason))
        except (OSError, ValueError) as exc:
            raise NvueApiError("The switch's NVUE API at %s did not answer %s: %s" % (self.base, what or record, exc))
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

    def revision(self, rev):
        return self._call("GET", "/revision/" + quote(rev, safe=""), what="reading revision %s" % rev)

    # --- the revision of one change ------------------------------------------------------------------------------

    def create(self):
        return revision_id(self._call("POST", "/revision", body={}, what="creating a revision"))

    def stage(self, rev, document):
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
