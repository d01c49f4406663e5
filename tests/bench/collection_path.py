# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmarks' way to this checkout's Python: module_utils import each other as ``ansible_collections.roce.fabric``,
so a benchmark run from the checkout puts a folder on ``sys.path`` where that name is this checkout."""

import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def add(prefix="roce-bench-"):
    """Make ``ansible_collections.roce.fabric`` importable as this checkout; returns the folder put on sys.path."""
    base = tempfile.mkdtemp(prefix=prefix)
    os.makedirs(os.path.join(base, "ansible_collections", "roce"))
    os.symlink(ROOT, os.path.join(base, "ansible_collections", "roce", "fabric"))
    sys.path.insert(0, base)
    return base
