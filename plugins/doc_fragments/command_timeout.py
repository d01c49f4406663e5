# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):

    # The bound on every command a module runs on its target (roce.fabric.common.run.CommandRunner).
    DOCUMENTATION = r"""
options:
  command_timeout:
    description:
      - Seconds each command the module runs on the target may take, 1 to 86400.
      - A command still running then is stopped (SIGTERM, SIGKILL 5 seconds later; to its whole process group where
        the target has coreutils C(timeout)) and the module fails with C(failure=timeout) and the command in
        C(failed_command), so a wedged adapter or a hung tool never hangs the play.
    type: int
    default: 300
"""
