# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):

    # Connection options of the modules that talk to vCenter or ESXi through the vSphere API.
    DOCUMENTATION = r"""
options:
  hostname:
    description: vCenter or ESXi host name or address. Falls back to E(VMWARE_HOST).
    type: str
  port:
    description: API port. Falls back to E(VMWARE_PORT).
    type: int
    default: 443
  username:
    description: API user. Falls back to E(VMWARE_USER).
    type: str
    aliases: [user]
  password:
    description: API password. Falls back to E(VMWARE_PASSWORD).
    type: str
    aliases: [pass, pwd]
  validate_certs:
    description: Verify the server's TLS certificate. Falls back to E(VMWARE_VALIDATE_CERTS). Turn off only for test systems.
    type: bool
    default: true
  timeout:
    description:
      - Seconds, 1 to 3600, that connecting and each API request may take. A vCenter or host that accepts the
        connection and then never answers fails the task after this time instead of hanging the play.
    type: int
    default: 60
"""
