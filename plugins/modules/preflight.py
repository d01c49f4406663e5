#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight
short_description: Check every host of every stage of a playbook before anything connects
version_added: 1.0.0
description:
  - Runs on the controller (an action) and connects to no host. For each stage of the playbook, it takes the stage's
    hosts (the stage's host pattern given with C(-e), else its group, which a site may not have), and checks each
    host's variables (inventory and extra vars, templated with the role's defaults, as the role will see them)
    against the argument spec of every role the stage runs on that host (types, choices, suboptions, required
    options).
  - Reports every problem of every host at once, errors before warnings, and fails when there is an error; then
    nothing has been changed anywhere.
  - A variable whose name starts with one of the collection's prefixes (C(roce_), C(nic_firmware_), C(rdma_host_),
    C(nic_qos_), C(sriov_), C(validate_), C(k8s_rdma_), C(esxi_ats_), C(host_reboot_), C(nvme_scratch_),
    C(rdma_image_), C(rdma_exporter_), C(onyx_), C(nvue_), ...) and is no variable of the collection is a warning
    that names the closest known name (an error with O(strict)).
  - Also reported - a RoCE QoS contract (C(roce_fabric_qos)) that cannot be read; a switch without
    C(ansible_network_os); a lossless contract on a GPU node whose C(nic_qos_interfaces) names no NIC (a warning);
    a play keyword variable (C(roce_reboot_serial), C(roce_*_hosts)) set in the inventory, where it has no effect.
  - Every playbook of the collection starts with it; C(playbooks/roce.yml) checks all its stages in one task.
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
    description:
      - The playbook whose stages to check (C(roce), C(switch), C(host), C(nic_firmware), C(nvme_scratch),
        C(esxi_ats), C(kubernetes), C(k8s_nccl_job), C(telemetry), C(validate), C(rdma_image)).
      - One of O(playbook) and O(stages) is needed.
    type: str
  stages:
    description:
      - The stages to check, in place of O(playbook) - C(switch), C(host), C(firmware), C(nvme_scratch), C(esxi),
        C(kubernetes), C(k8s_job), C(telemetry), C(validate_switches), C(validate), C(image).
    type: list
    elements: str
  strict:
    description:
      - Unknown variable names (and play keyword variables set in the inventory) are errors, not warnings.
      - Default the inventory's or the command line's C(roce_preflight_strict).
    type: bool
notes:
  - Names of the site's own that share a prefix are left alone when C(roce_preflight_ignore) lists them (names or
    shell patterns, for example C(roce_lab_*)).
  - With C(--limit), only the hosts of the limit are checked.
  - See the collection's docs/playbook_variables.md for the playbooks' own variables.
seealso:
  - name: Playbook variables
    description: The variables the playbooks read themselves, and which must be extra vars.
    link: https://github.com/roce-fabric/roce.fabric/blob/main/docs/playbook_variables.md
"""

EXAMPLES = r"""
- name: Preflight of the whole job
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Every host of every stage against the roles it will run
      roce.fabric.preflight:
        playbook: roce

- name: Only the switches, unknown names as errors
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Switch stage
      roce.fabric.preflight:
        stages: [switch]
        strict: true
"""

RETURN = r"""
hosts:
  description:
    - Per host, the stages it is in, its errors and its warnings.
    - A stage switched off on the host is not judged and not listed (C(validate_switches) with
      C(roce_validate_switches=false)).
  returned: always
  type: dict
  sample:
    gpu01:
      stages: [host, validate]
      errors: ["role nic_firmware: nic_firmware_settings must be of type dict"]
      warnings: ["nic_firmware_setings is not a variable of roce.fabric; did you mean nic_firmware_settings?"]
stages:
  description: Per stage, the hosts checked (those where it is switched off left out).
  returned: always
  type: dict
  sample: {switch: [leaf01, leaf02], host: [gpu01, gpu02]}
msg:
  description: Every problem of every host, one line each, errors first.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(playbook=dict(type="str"), stages=dict(type="list", elements="str"),
                           strict=dict(type="bool")),
        supports_check_mode=True,
    )
    module.fail_json(msg="roce.fabric.preflight runs on the controller as an action; it cannot run as a module")


if __name__ == "__main__":
    main()
