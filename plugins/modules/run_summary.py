#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_summary
short_description: Per host of every stage, what the run changed or would change, or why the host was not read
version_added: 1.0.0
description:
  - Runs on the controller (an action) at the end of C(playbooks/roce.yml) and connects to no host.
  - For every host of every stage of the playbook (the hosts the stage's plays had), reads the module results the
    collection's roles keep in host variables (the switch's, the firmware's, the NIC QoS', the SR-IOV's, the NVMe
    scratch array's, the reboot's and its pending reasons, the ESXi ATS', the validation report) and says per host
    and stage what changed (in check mode, what would change, with the first commands), what failed or was
    unreachable with the whole message, or that the host was not reached at all.
  - Hosts with something to say come first; a host where nothing changes is one line.
author:
  - roce.fabric contributors (@roce-fabric)
attributes:
  check_mode:
    description: Runs in check mode as in a real run; it only reads.
    support: full
  diff_mode:
    description: Nothing to show; it changes nothing.
    support: none
  idempotent:
    description: Reads only.
    support: full
  action:
    description: Runs on the controller as an action plugin.
    support: full
options:
  playbook:
    description: The playbook whose stages to summarise (as for roce.fabric.preflight); one of this and O(stages).
    type: str
  stages:
    description: The stages to summarise, in place of O(playbook).
    type: list
    elements: str
seealso:
  - module: roce.fabric.preflight
"""

EXAMPLES = r"""
- name: Summary of the whole job
  hosts: localhost
  gather_facts: false
  tasks:
    - name: What each host changed
      roce.fabric.run_summary:
        playbook: roce
      register: summary

    - name: Show it
      ansible.builtin.debug:
        var: summary.lines
"""

RETURN = r"""
hosts:
  description: Per host, one entry per stage result - C(stage), C(what), C(status) (ok, changed, would change, pending,
    failed, unreachable, not reached) and C(detail).
  returned: always
  type: dict
  sample:
    leaf02: [{stage: switch, what: switch, status: unreachable,
              detail: "The switch at 192.0.2.12:22 did not answer over SSH: Error reading SSH protocol banner"}]
lines:
  description: The summary, one line per host and result (C(msg) split).
  returned: always
  type: list
  elements: str
msg:
  description: The summary as text.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(playbook=dict(type="str"), stages=dict(type="list", elements="str")),
        supports_check_mode=True,
    )
    module.fail_json(msg="roce.fabric.run_summary runs on the controller as an action; it cannot run as a module")


if __name__ == "__main__":
    main()
