# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nic_firmware role's pinned images: what it copies to the host and what roce.fabric.nic_firmware_image takes
(module_utils/firmware/flash.py image_files); its verify step's failure text (module_utils/firmware/power_cycle.py
not_running_message)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.roce.fabric.plugins.module_utils.firmware.flash import image_files
from ansible_collections.roce.fabric.plugins.module_utils.firmware.power_cycle import not_running_message


def nic_firmware_images(versions, image_dir, download_dir=None):
    if not isinstance(versions, dict):
        raise AnsibleFilterError("nic_firmware_images: nic_firmware_versions must be a dictionary of PSIDs or part numbers")
    return image_files(versions, str(image_dir), str(download_dir) if download_dir else None)


def nic_firmware_not_running(result, kind, reboot_reason="", reboot_type="none", not_cleared=None):
    if kind not in ("settings", "images"):
        raise AnsibleFilterError("nic_firmware_not_running: kind must be settings or images, not %r" % (kind,))
    return not_running_message(kind, result if isinstance(result, dict) else {}, reboot_reason or "", reboot_type or "none",
                               list(not_cleared or []))


class FilterModule:

    def filters(self):
        return {"nic_firmware_images": nic_firmware_images, "nic_firmware_not_running": nic_firmware_not_running}
