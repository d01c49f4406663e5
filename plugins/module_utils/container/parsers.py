# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Container images on a build host: pure parsers of what the builders print.

PRIVATE to the roce.fabric collection: may change without notice.

- ``parse_inspect``: ``podman image inspect REF`` and ``docker image inspect REF`` (a JSON list of one image with
  ``Id`` and ``Config.Labels``), ``buildah inspect --type image REF`` (one JSON object, the labels under
  ``OCIv1.config.Labels``); ``None`` where the output names no image (podman prints ``[]`` for an image it does not
  have, on exit status 125).
- ``not_found``: whether an error message says the image is not there.
"""

from __future__ import annotations

import json

NOT_FOUND = ("image not known", "no such image", "image not found", "no such object", "not found in local storage")


def parse_inspect(text):
    """``dict(id, labels)`` of the one image the output describes, or ``None``."""
    try:
        data = json.loads(text or "null")
    except ValueError:
        return None
    if isinstance(data, list):
        data = data[0] if data else None
    if not isinstance(data, dict):
        return None
    labels = (data.get("Config") or {}).get("Labels")
    if labels is None and isinstance(data.get("OCIv1"), dict):
        labels = (data["OCIv1"].get("config") or {}).get("Labels")
    image_id = data.get("Id") or data.get("FromImageID") or ""
    return dict(id=image_id, labels=dict(labels or {}))


def not_found(text):
    lowered = (text or "").lower()
    return any(marker in lowered for marker in NOT_FOUND)
