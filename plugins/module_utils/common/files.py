# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small readers of the node's files shared by the families that read /sys.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import os


def listdir(path):
    """The names in a directory, sorted; none when it is not there or cannot be read (a device gone meanwhile)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []
