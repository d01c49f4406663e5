# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm family: a node's drain and return, read and decided here (roce.fabric.slurm_node). Pure.

PRIVATE to the roce.fabric collection: may change without notice.

A node is drained with ``scontrol update NodeName=<n> State=DRAIN Reason="roce.fabric: <why>"``: Slurm starts no new
job on it, the running ones go on (``MIXED+DRAIN``, ``ALLOCATED+DRAIN``: draining) until none is left
(``IDLE+DRAIN``: drained). The reason's ``roce.fabric:`` mark is how a later run knows the drain is its own: a node
that someone else drained (another reason) is never returned (``State=RESUME``) by this collection.
"""

from __future__ import annotations

import re

MARK = "roce.fabric:"
# Slurm node names: letters, digits and . _ - (no list syntax: one node per call).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# scontrol's key=value words; Reason (which holds spaces) is read to the end of its line.
_WORD_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=(\S*)")
# Base states that mean jobs (or their ends) are still on the node.
BUSY_STATES = ("ALLOCATED", "MIXED", "COMPLETING")
# Job states that hold a node (squeue's JOB STATE CODES): a job resizing is still on it.
HOLDING_JOBS = ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING")
# What scontrol prints after a Reason: who set it and when (``admin: bad DIMM B2 [root@2026-11-28T09:56:59]``).
REASON_BY_RE = re.compile(r"^(?P<text>.*?)\s*\[(?P<user>[^\[\]@\s]+)@(?P<time>[0-9T:-]+)\]\s*$")
# The squeue format this module reads: job id, user, state, name (the name last: it may hold the separator).
SQUEUE_FORMAT = "%i|%u|%T|%j"


class SlurmError(ValueError):
    """Output that is not what scontrol or squeue print."""


def parse_node(text, name=None):
    """One node of ``scontrol show node [-o] <name>`` as a dict of its fields (``NodeName``, ``State``, ``Reason``,
    ...), the multi-line and the one-line forms alike; ``Reason`` is the rest of its line after the ``=``."""
    nodes = parse_nodes(text)
    if name is not None:
        nodes = [node for node in nodes if node.get("NodeName") == name]
    if len(nodes) != 1:
        raise SlurmError("scontrol printed %d nodes%s, not one" % (len(nodes), " named %s" % name if name else ""))
    return nodes[0]


def parse_nodes(text):
    nodes = []
    for line in (text or "").splitlines():
        head, _sep, reason = line.partition("Reason=") if "Reason=" in line else (line, "", None)
        words = dict(_WORD_RE.findall(head))
        if "NodeName" in words:
            nodes.append({})
        if not nodes:
            continue
        nodes[-1].update(words)
        if reason is not None:
            nodes[-1]["Reason"] = reason.strip()
    return nodes


def state_of(node):
    """``(base, flags)`` of the node's ``State`` (``MIXED+DRAIN`` -> ``("MIXED", ["DRAIN"])``; a trailing ``*``, not
    responding, is a flag ``NOT_RESPONDING``)."""
    state = node.get("State") or ""
    if not state:
        raise SlurmError("scontrol printed no State for node %s" % node.get("NodeName"))
    flags = []
    if state.endswith("*"):
        state, flags = state[:-1], ["NOT_RESPONDING"]
    parts = state.split("+")
    return parts[0], flags + parts[1:]


def split_reason(reason):
    """``{"text", "user", "time"}`` of a node's Reason as scontrol prints it: the reason, then who set it and when in
    brackets (``admin: bad DIMM B2 [root@2026-11-28T09:56:59]``); user and time None where Slurm printed none."""
    reason = (reason or "").strip()
    match = REASON_BY_RE.match(reason)
    if not match:
        return dict(text=reason or None, user=None, time=None)
    return dict(text=match.group("text") or None, user=match.group("user"), time=match.group("time"))


def reason_words(node):
    """The node's reason for a message: its text, and who set it when (the evidence of someone else's drain)."""
    reason = split_reason(node.get("Reason"))
    if not reason["text"]:
        return "no reason"
    if reason["user"]:
        return "%s, set by %s at %s" % (reason["text"], reason["user"], reason["time"])
    return reason["text"]


def drained_by(node):
    """``roce.fabric`` (a drain with this collection's mark), ``other`` (another drain or a node down with its own
    reason) or ``none``."""
    base, flags = state_of(node)
    if "DRAIN" not in flags and base not in ("DRAINED", "DRAINING", "DOWN", "FAIL") and "FAIL" not in flags:
        return "none"
    return "roce.fabric" if (split_reason(node.get("Reason"))["text"] or "").startswith(MARK) else "other"


def busy(node):
    """Whether the node still runs (or is ending) jobs, by its state."""
    base, flags = state_of(node)
    return base in BUSY_STATES or base == "DRAINING" or "COMPLETING" in flags


def parse_jobs(text):
    """``squeue -h -w <node> -o '%i|%u|%T|%j'`` as ``[{id, user, state, name}]``."""
    jobs = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 3)
        if len(parts) != 4:
            raise SlurmError("squeue printed %r, not id|user|state|name" % line)
        jobs.append(dict(id=parts[0].strip(), user=parts[1].strip(), state=parts[2].strip(), name=parts[3].strip()))
    return jobs


def holding(jobs):
    return [job for job in jobs if job["state"] in HOLDING_JOBS]


def job_words(jobs):
    return ", ".join("%s (%s, %s, %s)" % (job["id"], job["user"], job["state"], job["name"]) for job in jobs)


def reason_text(reason):
    """The reason written to Slurm: this collection's mark, then ``reason`` on one line."""
    reason = " ".join(str(reason or "").split())
    if reason.startswith(MARK):
        reason = reason[len(MARK):].strip()
    return "%s %s" % (MARK, reason) if reason else MARK


def plan(node, wanted):
    """What to send for ``wanted`` (``drained`` or ``resumed``) on a node read with :func:`parse_node`:
    ``(action, note)``, action ``drain``, ``resume`` or None."""
    by = drained_by(node)
    if wanted == "drained":
        if by == "none":
            return "drain", None
        if by == "other":
            return None, "drained or down already by someone else (%s): left so" % reason_words(node)
        return None, None
    if by == "roce.fabric":
        return "resume", None
    if by == "other":
        return None, "drained or down by someone else (%s): left drained" % reason_words(node)
    return None, None
