# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: the record of when and how a validation report was made (its ``generated`` field).

PRIVATE to the roce.fabric collection: may change without notice.

roce.fabric.validation_report's action plugin gathers what only Ansible knows of the run (its inventory, limit, tags,
check mode, play and version) and ``generated_record`` decides what the report says of it: the command that repeats
the run, never its extra variables, which may hold secrets.
"""

from __future__ import annotations

import os


def generated_record(when, inventory_dir=None, limit=None, run_tags=None, check_mode=False, play=None,
                     ansible_version=None):
    """The report's ``generated`` record. ``when``: the UTC time as ``%Y-%m-%dT%H:%M:%SZ``; ``inventory_dir``: the
    inventory's folder (its name is shown, not its path); ``limit``: ``--limit`` as given; ``run_tags``: the
    ``--tags`` (``["all"]`` when none were given); ``play``: the play's name."""
    inventory = os.path.basename(os.path.normpath(inventory_dir)) if inventory_dir else ""
    command = "ansible-playbook -i %s" % inventory
    if limit:
        command += " --limit %s" % limit
    tags = list(run_tags or ["all"])
    if tags != ["all"]:
        command += " --tags %s" % ",".join(tags)
    if check_mode:
        command += " --check"
    return dict(time=when, inventory=inventory, play=play or "", command=command, ansible_version=ansible_version or "")
