# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's version, for the records it writes (the validation report's ``generated``).

PRIVATE to the roce.fabric collection: may change without notice. A unit test holds it equal to galaxy.yml's.
"""

from __future__ import annotations

COLLECTION_VERSION = "1.0.0"
