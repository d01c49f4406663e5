# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rolling plays' batch guard: the batch a play keyword ``serial`` gives, and why one is refused.

PRIVATE to the roce.fabric collection: may change without notice.

Ansible reads the play keyword ``serial`` before inventory variables exist, so a batch size set in group_vars or
host_vars is silently not used; and a batch of every host takes the whole site down at once. ``batch_problem`` says
which, before the play changes anything, with Ansible's own arithmetic for percentages
(``ansible.utils.helpers.pct_to_int``: N% of the play's hosts, rounded down, at least 1).
"""

from __future__ import annotations

import json
import re

ITEM_RE = re.compile(r"[1-9][0-9]{0,5}|([1-9][0-9]?|100)%")


def _json(value):
    return json.dumps(value)


def _short(text, length=40):
    """The text as Jinja's truncate(40) shows it (kept up to 5 past the length; else cut at a word, "...")."""
    if len(text) <= length + 5:
        return text
    cut = text[:length - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "..."


def items_of(serial):
    """The batch sizes a ``serial`` value asks for, as trimmed strings (a list, or one value)."""
    values = serial if isinstance(serial, (list, tuple)) else [serial]
    return [str(value).strip() for value in values]


def batch_size(item, count):
    """Hosts in one batch for ``item`` (``"3"`` or ``"25%"``) of a play of ``count`` hosts: 1 to ``count``."""
    size = int(int(item[:-1]) * count / 100) if item.endswith("%") else int(item)
    return min(max(size, 1), count) if count > 0 else max(size, 1)


def batch_problem(serials, batch, count, name, all_at_once=False):
    """Why the rolling play may not go on ("" when it may): ``serials`` is the value of the batch variable ``name``
    for every host of the play, ``batch`` the number of hosts the play took in its first batch, ``count`` the
    play's hosts."""
    first = serials[0] if serials else 1
    items = items_of(first)
    bad = [item for item in items if not ITEM_RE.fullmatch(item)] + ([] if items else ["[]"])
    if bad:
        return ("%s must be a number of hosts (1 or more), a percentage (1%% to 100%%) or a list of them, not %s."
                % (name, _json(_short(bad[0]))))
    distinct = []
    for value in serials:
        if _json(value) not in distinct:
            distinct.append(_json(value))
    if len(distinct) > 1:
        return ("%s differs between the hosts of this play (%s): it sets one batch size for the play, so give it once."
                % (name, ", ".join(distinct)))
    sizes = [batch_size(item, count) for item in items]
    if sizes[0] != batch:
        return ("%s is %s for these hosts, but the play takes %d at a time: Ansible reads the play keyword serial before "
                "inventory variables, so a value in group_vars or host_vars is not used. Pass it with -e %s=..., or as "
                "a var of import_playbook in your site playbook." % (name, _json(first), batch, name))
    if max(sizes) >= count >= 2 and not all_at_once:
        return ("%s=%s takes %d of the play's %d hosts down at once, that is all of them. Use a smaller batch, or set "
                "roce_allow_all_at_once=true to accept it." % (name, _json(first), max(sizes), count))
    return ""
