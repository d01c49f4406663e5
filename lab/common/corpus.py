# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real tool output of the test corpus, for the simulators' self-tests that replay it.

The corpus lives with the collection's unit tests (tests/unit/plugins/module_utils/fixtures/<tool>/); each
file starts with ``%%`` lines naming its source, which a replay leaves out."""

from __future__ import annotations

import os

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "unit", "plugins", "module_utils",
                      "fixtures")


def path(tool, name):
    return os.path.join(CORPUS, tool, name)


def body(tool, name):
    """The tool's output as it printed it: the file without its ``%%`` header lines."""
    with open(path(tool, name), encoding="utf-8") as handle:
        return "".join(line for line in handle if not line.startswith("%%"))
