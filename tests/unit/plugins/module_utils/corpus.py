# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The corpus of real tool output under ``fixtures/``: every file starts with ``%%`` header lines.

Header keys (one per line, ``%% key: value``): ``source`` (where the output comes from: a public issue,
a vendor document, a capture from the lab's kernel or the GPU machine), ``command`` (what printed it),
``kind`` and optional notes. ``kind`` is one of:

- ``captured``: captured by this project on the lab's real kernel or on the GPU machine, verbatim;
- ``public``: printed by a real device or tool and published by someone else, verbatim;
- ``excerpt``: like ``public``, with whole lines left out (what was left out is said in ``notes``);
- ``derived``: a real sample changed as ``notes`` says (cut short, one value changed) to make a failure case.

The body is everything after the header, byte for byte as the tool printed it.
"""

from __future__ import annotations

import os

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
KINDS = ("captured", "public", "excerpt", "derived")
REAL_KINDS = ("captured", "public", "excerpt")


def split(text):
    """``(meta, body)`` of one corpus file's text."""
    meta = {}
    lines = text.splitlines(True)
    count = 0
    for line in lines:
        if not line.startswith("%%"):
            break
        count += 1
        content = line[2:].strip()
        if ":" in content:
            key, value = content.split(":", 1)
            key = key.strip()
            meta[key] = (meta[key] + " " + value.strip()) if key in meta else value.strip()
    return meta, "".join(lines[count:])


def path(tool, name):
    return os.path.join(FIXTURES, tool, name)


def read(tool, name):
    """The body of ``fixtures/<tool>/<name>``: the tool's output without the header."""
    with open(path(tool, name)) as handle:
        return split(handle.read())[1]


def meta(tool, name):
    with open(path(tool, name)) as handle:
        return split(handle.read())[0]


def samples(tool, prefix="", kinds=REAL_KINDS):
    """Names of the files of ``tool`` whose name starts with ``prefix`` and whose kind is in ``kinds``."""
    names = []
    for name in sorted(os.listdir(os.path.join(FIXTURES, tool))):
        if name.startswith(prefix) and meta(tool, name).get("kind") in kinds:
            names.append(name)
    return names
