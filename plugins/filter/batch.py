# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rolling plays' batch guard (module_utils/common/batch.py)."""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.roce.fabric.plugins.module_utils.common.batch import batch_problem as _batch_problem


def batch_problem(serials, batch, count, name, all_at_once=False):
    return _batch_problem(list(serials or []), int(batch), int(count), str(name), boolean(all_at_once, strict=False))


class FilterModule:

    def filters(self):
        return {"batch_problem": batch_problem}
