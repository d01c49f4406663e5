# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Running vendor command-line tools from modules.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import shlex

# Pin the locale so parsing never depends on the target's language settings.
LOCALE_ENV = {"LC_ALL": "C", "LANGUAGE": "C", "LANG": "C"}


class CommandRunner(object):
    """Runs argv lists through ``module.run_command`` with a fixed locale and records them.

    ``executed`` keeps every command line run (for the ``commands`` return value) and
    ``mutating`` the subset that changed something. User values are never expanded
    (``expand_user_and_vars=False``) and no shell is involved.
    """

    def __init__(self, module):
        self.module = module
        self.executed = []
        self.mutating = []

    def run(self, argv, mutating=False, data=None):
        rc, out, err = self.module.run_command(
            [str(arg) for arg in argv],
            environ_update=dict(LOCALE_ENV),
            expand_user_and_vars=False,
            data=data,
        )
        line = self.render(argv)
        self.executed.append(line)
        if mutating:
            self.mutating.append(line)
        return rc, out, err

    @staticmethod
    def render(argv):
        return " ".join(shlex.quote(str(arg)) for arg in argv)
