# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The record of the last reboot made for a host, and the rule it serves: never reboot twice for what a reboot did
not clear.

PRIVATE to the roce.fabric collection: may change without notice.

A record holds the reasons of the reboot, the identity of the boot it produced (``boot_id``: Linux's
``/proc/sys/kernel/random/boot_id``, or ESXi's boot time), the boot before it, when it happened, and an optional
``subject`` (what the reasons were about, such as the settings asked for). A reason that is still pending in the
boot a recorded reboot produced was not cleared by that reboot (a setting only a power cycle loads, a change that
fails at boot): rebooting for it again would not clear it either, on every run. A new boot (a power cycle, a
reboot by someone else) allows one more.

A record that cannot be read (empty or cut short: a host that lost power while it was written; not JSON; not the
shape below) is no record: the host may reboot once more, and the problem is reported, never a template error
that blocks every later reboot.
"""

from __future__ import annotations

import json

FIELDS = ("reasons", "boot_id", "previous_boot_id", "rebooted_at", "subject")


def parse_record(text):
    """``(record, problem)`` from the file's text (``None`` for a file that is not there): ``record`` is a dict of
    FIELDS or None; ``problem`` says why a file that is there is no record."""
    if text is None:
        return None, None
    if not text.strip():
        return None, "the record is empty (a write cut short)"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, "the record is not JSON (%s)" % exc
    if not isinstance(data, dict):
        return None, "the record is not a JSON object"
    reasons = data.get("reasons")
    if not isinstance(reasons, list) or not all(isinstance(reason, str) for reason in reasons):
        return None, "the record's reasons are not a list of strings"
    for key in ("boot_id", "previous_boot_id", "rebooted_at"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return None, "the record's %s is not a string" % key
    if not data.get("boot_id"):
        return None, "the record has no boot_id"
    return dict((key, data.get(key)) for key in FIELDS), None


def not_cleared(record, reasons, boot_id, subject=None):
    """The reasons of ``reasons`` that the recorded reboot did not clear: those it was made for, still pending in
    the boot it produced (and for the same ``subject`` when one is given)."""
    if not record or not boot_id or record.get("boot_id") != boot_id:
        return []
    if subject is not None and record.get("subject") != subject:
        return []
    return sorted(set(reasons) & set(record.get("reasons") or []))


def decide(record, reasons, boot_id, subject=None):
    """``dict(not_cleared, reboot_for)``: what a reboot would not clear again, and what a reboot is for."""
    blocked = not_cleared(record, reasons, boot_id, subject)
    return dict(not_cleared=blocked, reboot_for=sorted(set(reasons) - set(blocked)))


def new_record(reasons, boot_id, previous_boot_id, rebooted_at, subject=None):
    record = dict(reasons=sorted(set(reasons)), boot_id=boot_id, previous_boot_id=previous_boot_id or "",
                  rebooted_at=rebooted_at)
    if subject is not None:
        record["subject"] = subject
    return record


def same_reboot(old, new):
    """Whether ``old`` already records ``new``'s reboot (so writing it again changes nothing)."""
    if not old:
        return False
    return all(old.get(key) == new.get(key) for key in ("reasons", "boot_id", "previous_boot_id", "subject"))


def with_reason(pending, source, reason):
    """``pending`` (what each role of the run waits a reboot for: source -> reason) with ``source``'s reason set; an
    empty reason takes a recorded one back."""
    updated = dict(pending or {})
    updated[str(source)] = str(reason or "").strip()
    return updated


def all_reasons(pending, extra=()):
    """Every reason to reboot for, once each and in name order: the roles' recorded reasons (``pending``) and the
    operator's own (``extra``); empty ones are none."""
    reasons = [str(reason).strip() for reason in list((pending or {}).values()) + list(extra or [])]
    return sorted(set(reason for reason in reasons if reason), key=lambda reason: (reason.lower(), reason))
