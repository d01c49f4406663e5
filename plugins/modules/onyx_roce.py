#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: onyx_roce
short_description: RoCE on an NVIDIA Onyx (Spectrum) switch in one declarative task
version_added: 1.0.0
description:
  - Configures what a RoCE fabric needs on an NVIDIA Spectrum switch running Onyx (formerly MLNX-OS),
    RoCE mode, VLANs and their access and trunk ports, port MTU, ECN thresholds per traffic class, PFC
    (globally, per priority and per port) and the trust mode, and optionally saves the configuration.
  - Only the ports and settings it is given are touched. It reads the switch with C(show version | json-print),
    C(show running-config), C(show roce) and C(show interfaces ethernet | json-print) (both JSON layouts, before
    and after Onyx 3.6.6000, told apart with a numeric version comparison), computes the commands, and sends
    them in a safe order over one SSH session (VLANs before the ports that join them; on releases that need it
    the port is shut down around an MTU change). It stops at the first command the switch refuses and reports
    which commands were applied and which were not; running it again converges.
  - Runs on the controller with netmiko's C(mellanox_mlnxos) driver. With the collection's action plugin the
    connection options come from the switch's inventory as Ansible's network connections take them
    (C(ansible_host), C(ansible_port), C(ansible_user), C(ansible_password) or C(--ask-pass),
    C(ansible_ssh_private_key_file), C(ansible_command_timeout), a jump host from C(ansible_ssh_common_args) or
    C(ansible_paramiko_proxy_command)), so a play can target the switches (for example the group
    C(roce_switches)) directly. A switch that does not answer is reported unreachable.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs on the controller and reaches the switch over SSH.
    support: full
    platforms: posix
requirements:
  - netmiko >= 4.0 on the controller
options:
  host:
    description:
      - The switch's address. Taken from C(ansible_host) by the action plugin; environment C(ONYX_HOST).
      - Required unless O(state=rendered).
    type: str
  port:
    description: SSH port.
    type: int
    default: 22
  username:
    description: Login user. Taken from C(ansible_user) by the action plugin; environment C(ONYX_USERNAME).
    type: str
  password:
    description: Login password. Taken from C(ansible_password) by the action plugin; environment C(ONYX_PASSWORD).
    type: str
  ssh_key_file:
    description: Private key for the login. Taken from C(ansible_ssh_private_key_file); environment C(ONYX_SSH_KEY_FILE).
    type: path
  timeout:
    description: Seconds for connecting and for each command, 1 to 3600 (0 would wait forever).
    type: int
    default: 30
  host_key_checking:
    description:
      - Check the switch's SSH host key against the controller's C(~/.ssh/known_hosts) and O(known_hosts_file) before
        logging in; an unknown or changed key is refused and no password or key is sent.
      - V(false) trusts any key (the switch's password goes to whoever answers). Taken from C(onyx_host_key_checking) by
        the action plugin; environment C(ONYX_HOST_KEY_CHECKING).
    type: bool
    default: true
  known_hosts_file:
    description: A known_hosts file with the switches' keys, read besides C(~/.ssh/known_hosts). Taken from
      C(onyx_known_hosts_file) by the action plugin; environment C(ONYX_KNOWN_HOSTS_FILE).
    type: path
  proxy_command:
    description:
      - A command whose standard input and output carry the SSH session to the switch, through a jump host
        (C(ssh -W %h:%p admin@bastion)); C(%h), C(%p) and C(%r) become the switch's address, port and user. Run on
        the controller without a shell.
      - Taken by the action plugin from C(ansible_paramiko_proxy_command), else from a C(ProxyCommand) or
        C(ProxyJump) (C(-J)) in C(ansible_ssh_common_args) or C(ansible_ssh_extra_args), as Ansible's SSH
        connections take them.
      - The switch's host key is checked as without a jump host (its known_hosts entry names the switch's address
        and port).
    type: str
  roce_mode:
    description:
      - V(lossless) (C(roce), full PFC), V(semi-lossless), V(lossy) (ECN only, no PFC) or V(disabled) (C(no roce)).
      - Changing the mode toggles the switch's ports.
    type: str
    choices: [lossless, semi-lossless, lossy, disabled]
  vlans:
    description: VLANs to create and the ports that join them.
    type: list
    elements: dict
    suboptions:
      id:
        description: VLAN id, 1 to 4094.
        type: int
        required: true
      name:
        description: VLAN name, 1 to 32 letters, digits, C(_), C(.) or C(-) (a safe subset of what Onyx accepts).
        type: str
      access_ports:
        description: Ports that become access ports of this VLAN, as ranges (V(1/1-1/4)), ports or breakouts (V(1/1/2)).
        type: list
        elements: str
      trunk_ports:
        description: Trunk ports on which this VLAN is allowed.
        type: list
        elements: str
  ports:
    description: Per-port settings. A port may appear in one entry only.
    type: list
    elements: dict
    suboptions:
      ports:
        description: Ports the settings apply to (ranges, ports, breakouts).
        type: list
        elements: str
        required: true
      mtu:
        description: MTU, 1500 to 9216. Changing it toggles the port.
        type: int
      trust:
        description: QoS trust mode.
        type: str
        choices: [L2, L3, both]
      pfc:
        description: PFC mode on for these ports (V(true)) or off (V(false)).
        type: bool
      shutdown:
        description: Administratively down (V(true)) or up (V(false)).
        type: bool
      ecn:
        description: ECN marking thresholds per traffic class.
        type: list
        elements: dict
        suboptions:
          traffic_class:
            description: Traffic class, 0 to 7 (RoCE uses 3).
            type: int
            required: true
          min_kb:
            description: Minimum absolute threshold in KB.
            type: int
            required: true
          max_kb:
            description: Maximum absolute threshold in KB, not below O(ports[].ecn[].min_kb).
            type: int
            required: true
  pfc:
    description: Global PFC.
    type: dict
    suboptions:
      enabled:
        description: PFC on the switch.
        type: bool
        default: true
      priorities:
        description: Priorities with PFC on (RoCE uses 3).
        type: list
        elements: int
  save:
    description: Write the running configuration to the saved one (C(configuration write)) after a change.
    type: bool
    default: false
  allow_link_toggle:
    description:
      - V(false) refuses a change that would take links down and up (a RoCE mode or MTU change), naming the ports and
        the commands, before anything is sent. The check is made in the same session that would send the change, so
        nothing can change in between.
    type: bool
    default: true
  record_dir:
    description:
      - Folder on the controller for the record of ports this module shut down only to change their MTU (releases
        before 3.6), one file per switch, mode 0600 in a 0700 folder. The ports are recorded before they are shut
        and removed once they are up again; when a run fails in between, the next run brings them back up.
      - The same folder holds a lock per switch, so that the tasks of this controller configure one switch one at
        a time (see O(lock_timeout)).
      - An empty string keeps no record (a port left down by a dropped session then stays down) and takes no lock.
    type: path
    default: ~/.local/state/roce-fabric/onyx
  lock_timeout:
    description:
      - Seconds to wait while another task of this controller configures the same switch (two plays, or two runs,
        at once); then the task fails with nothing sent. V(0) fails at once. Tasks run from other controllers are
        not seen.
    type: int
    default: 600
  state:
    description:
      - V(merged) configures the switch.
      - V(gathered) reads the switch and returns its RoCE configuration, every port, in this module's own option
        shape (RV(gathered)), and every port's counters (RV(counters), from the same C(show interfaces ethernet)
        read); given back with V(merged), the configuration changes nothing. Nothing is sent but the reads.
      - V(rendered) returns the commands for a switch in factory state without connecting to anything (RV(rendered)).
    type: str
    choices: [merged, gathered, rendered]
    default: merged
notes:
  - Bad input (port names, overlapping ranges, VLAN, MTU, thresholds, modes) fails before any connection.
  - "Releases before 3.6 take MTU changes only on a port that is shut down: the module shuts down the ports that are
    up, changes the MTU and brings those ports back up; a port that was already down stays down. When a command is
    refused in between, the module brings the ports back up in the same session before it fails; when the session
    drops, the ports stay in O(record_dir) and the next run brings them back up (see RV(restored_ports))."
seealso:
  - name: NVIDIA Onyx RoCE commands
    description: The RoCE mode commands and what each mode configures.
    link: https://docs.nvidia.com/networking/display/onyxv3102002/roce+commands
"""

EXAMPLES = r"""
# In a play on the switches (hosts: roce_switches): the action plugin takes host, port, user
# and password from each switch's inventory.
- name: Lossless RoCE for four GPU servers on ports 1/1-1/4 in VLAN 111, jumbo frames
  roce.fabric.onyx_roce:
    roce_mode: lossless
    vlans:
      - id: 111
        name: roce
        access_ports: [1/1-1/4]
    ports:
      - ports: [1/1-1/4]
        mtu: 9216
        trust: L3
        pfc: true
        ecn:
          - traffic_class: 3
            min_kb: 150
            max_kb: 1500
    pfc:
      enabled: true
      priorities: [3]
    save: true

- name: Lossy RoCE with ECN on traffic class 3 for two workers, connection given explicitly
  roce.fabric.onyx_roce:
    host: 192.0.2.2
    username: admin
    password: "{{ vault_switch_password }}"
    roce_mode: lossy
    ports:
      - ports: [1/1-1/3]
        ecn:
          - traffic_class: 3
            min_kb: 150
            max_kb: 1500

- name: Show the commands for a factory-new switch, without a switch
  roce.fabric.onyx_roce:
    state: rendered
    roce_mode: lossless
    ports:
      - ports: [1/1-1/32]
        mtu: 9216
  register: plan
"""

RETURN = r"""
before:
  description:
    - The switch's configuration of the given ports and settings before the task, in this module's option shape
      (RoCE mode, VLANs with their access and trunk ports, per-port entries, PFC), whether or not C(--diff) is on.
  returned: when the switch was read (state merged)
  type: dict
  sample: {roce_mode: disabled, vlans: [], ports: [{ports: [1/1-1/4], mtu: 1500, pfc: false, shutdown: false}],
           pfc: {enabled: false, priorities: []}}
after:
  description: The same after the task (in check mode, as it would be), from the same comparison as RV(commands).
  returned: when the switch was read (state merged)
  type: dict
  sample: {roce_mode: lossless, vlans: [{id: 111, name: roce, access_ports: [1/1-1/4], trunk_ports: []}],
           ports: [{ports: [1/1-1/4], mtu: 9216, pfc: true, shutdown: false, trust: L3}],
           pfc: {enabled: true, priorities: [3]}}
gathered:
  description: The switch's whole RoCE configuration (every port), in this module's option shape (state gathered).
  returned: state gathered
  type: dict
  sample: {roce_mode: lossless, vlans: [{id: 111, name: roce, access_ports: [1/1-1/4], trunk_ports: [1/32]}],
           ports: [{ports: [1/1-1/4, 1/32], mtu: 9216, pfc: true, shutdown: false, trust: L3,
                    ecn: [{traffic_class: 3, min_kb: 150, max_kb: 1500}]},
                   {ports: [1/5-1/31], mtu: 1500, pfc: false, shutdown: false}],
           pfc: {enabled: true, priorities: [3]}}
counters:
  description:
    - Every port's counters (state gathered), from the C(Rx) and C(Tx) objects of C(show interfaces ethernet |
      json-print), under the names the Cumulus Linux module and the host side use - C(in_errors), C(in_discards),
      C(in_packets), C(out_errors), C(out_discards), C(out_hoq_discards) (head-of-queue discards), C(out_packets);
      a counter the release does not print is left out.
    - The validate role reads them before and after its traffic and the report takes the difference.
  returned: state gathered
  type: dict
  sample: {"1/1": {in_errors: 0, in_discards: 0, in_packets: 1830, out_errors: 0, out_discards: 0,
                   out_hoq_discards: 0, out_packets: 1902}}
rendered:
  description: The commands for a switch in factory state (state rendered), as RV(commands).
  returned: state rendered
  type: list
  elements: str
changed:
  description: Whether commands were (or, in check mode, would be) sent.
  returned: always
  type: bool
commands:
  description: The configuration commands computed for the switch, in the order they are (or would be) sent.
  returned: always
  type: list
  elements: str
  sample: ["roce", "vlan 111", "interface ethernet 1/1-1/4 switchport access vlan 111", "interface ethernet 1/1-1/4 mtu 9216 force"]
applied:
  description: The commands the switch accepted.
  returned: when state is merged and not in check mode
  type: list
  elements: str
not_applied:
  description: The commands not applied because an earlier one was refused or the session ended.
  returned: when state is merged and not in check mode
  type: list
  elements: str
toggles_ports:
  description: Whether the change takes links down and up (RoCE mode and MTU changes do).
  returned: always
  type: bool
toggled_ports:
  description: The ports whose links the change toggles.
  returned: always
  type: list
  elements: str
release:
  description: The switch's Onyx release (C(Product release)).
  returned: when state is merged
  type: str
  sample: 3.10.4006
saved:
  description: Whether C(configuration write) was run.
  returned: always
  type: bool
restored_ports:
  description:
    - Ports shut down for an MTU change (releases before 3.6) that the task brought (or, in check mode, would bring)
      back up, from an earlier run's record or after a refused command of this one.
  returned: when state is merged
  type: list
  elements: str
  sample: ["1/1", "1/2"]
held_down_ports:
  description: Ports shut down for an MTU change that are still down and recorded in O(record_dir) for the next run.
  returned: when state is merged
  type: list
  elements: str
lock_waited:
  description: Seconds the task waited for another task of this controller that was configuring the switch.
  returned: when state is merged
  type: float
  sample: 0.0
logins:
  description: SSH logins the task made (one per task).
  returned: when state is merged
  type: int
diff:
  description: The managed settings before and after, per item (C(roce), C(vlans), C(pfc), C(ports)).
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.onyx import parsers, state
from ansible_collections.roce.fabric.plugins.module_utils.onyx.held_down import HeldDown, SwitchLock
from ansible_collections.roce.fabric.plugins.module_utils.onyx.transport import (
    NETMIKO_IMPORT_ERROR,
    OnyxSession,
    connection_argument_spec,
)

ECN_SPEC = dict(traffic_class=dict(type="int", required=True), min_kb=dict(type="int", required=True), max_kb=dict(type="int", required=True))


def argument_spec():
    spec = connection_argument_spec()
    spec.update(
        roce_mode=dict(type="str", choices=list(parsers.ROCE_MODES)),
        vlans=dict(type="list", elements="dict", options=dict(
            id=dict(type="int", required=True),
            name=dict(type="str"),
            access_ports=dict(type="list", elements="str"),
            trunk_ports=dict(type="list", elements="str"),
        )),
        ports=dict(type="list", elements="dict", options=dict(
            ports=dict(type="list", elements="str", required=True),
            mtu=dict(type="int"),
            trust=dict(type="str", choices=list(parsers.TRUST_MODES)),
            pfc=dict(type="bool"),
            shutdown=dict(type="bool"),
            ecn=dict(type="list", elements="dict", options=ECN_SPEC),
        )),
        pfc=dict(type="dict", options=dict(
            enabled=dict(type="bool", default=True),
            priorities=dict(type="list", elements="int"),
        )),
        save=dict(type="bool", default=False),
        allow_link_toggle=dict(type="bool", default=True),
        record_dir=dict(type="path", default="~/.local/state/roce-fabric/onyx"),
        lock_timeout=dict(type="int", default=600),
        state=dict(type="str", default="merged", choices=["merged", "gathered", "rendered"]),
    )
    return spec


def invalid(exc):
    return FabricError("Invalid input, nothing was sent to the switch: %s" % exc)


def open_session(params):
    return OnyxSession(params["host"], params["port"], params["username"], params["password"], params["ssh_key_file"],
                       params["timeout"], host_key_checking=params["host_key_checking"],
                       known_hosts_file=params["known_hosts_file"], proxy_command=params["proxy_command"])


def gather(run, params):
    """state gathered: one session of reads, the configuration in the module's option shape."""
    session = open_session(params)
    try:
        session.open()
        release, have, roce_mode, interfaces = state.read_switch(session)
        run.update(gathered=state.gathered(have, roce_mode), release=release, counters=parsers.port_counters(interfaces))
    finally:
        session.close()
        run.update(logins=session.logins)


def converge(run, params, want):
    """Read the switch once, compare once, send what differs, save if asked."""
    session = open_session(params)
    record = HeldDown(params["record_dir"], params["host"], params["port"])
    with SwitchLock(params["record_dir"], params["host"], params["port"], params["lock_timeout"]) as lock:
        held = record.load()
        run.update(lock_waited=lock.waited)
        in_session(run, params, want, session, record, held)


def in_session(run, params, want, session, record, held):
    """The switch's one session: read, compare once, send, save; ``record`` tracks ports held down."""
    try:
        session.open()
        release, have, roce_mode, existing = state.read_switch(session)
        try:
            state.check_ports_exist(want, existing)
        except parsers.OnyxInputError as exc:
            raise invalid(exc)
        planned = state.plan(want, have, release, roce_mode=roce_mode, held_down=held)
        commands = planned["commands"]
        run.update(commands=commands, toggles_ports=bool(planned["toggles"]), toggled_ports=planned["toggles"], release=release,
                   restored_ports=planned["restores"], held_down_ports=[], before=planned["before"], after=planned["after"])
        run.set_diff(planned["diff"]["before"], planned["diff"]["after"])
        if planned["toggles"] and not params["allow_link_toggle"]:
            raise FabricError("The change would take links down and up on %s (%s); nothing was sent. Allow it "
                              "(allow_link_toggle, onyx_switch_allow_link_toggle) in a maintenance window."
                              % (", ".join(planned["toggles"]), "; ".join(commands)), commands=commands)
        run.changed(bool(commands))
        if run.check_mode:
            return
        pending = parsers.sort_ports(set(held) | set(planned["shut_for_mtu"]))
        if planned["shut_for_mtu"]:
            record.save(pending)  # before a port goes down, so that a dropped session leaves a trace
        if commands:
            applied, failed, error = session.configure(commands)
            run.update(applied=applied, not_applied=commands[len(applied):], changed=bool(applied))
            if failed:
                restored, left = bring_back_up(session, want, pending)
                record.save(left)
                run.update(restored_ports=restored, held_down_ports=left, changed=bool(applied or restored))
                raise FabricError(
                    "The switch refused '%s' (%s). Applied %d of %d commands; not applied: %s. %sRunning the task again converges."
                    % (failed, error, len(applied), len(commands), "; ".join(commands[len(applied):]), held_message(restored, left)),
                    logins=session.logins,
                )
        record.save([])
        if params["save"] and run.result["changed"]:
            session.save()
            run.update(saved=True)
    finally:
        session.close()
        run.update(logins=session.logins)


def bring_back_up(session, want, pending):
    """After a failed apply: ``no shutdown`` for the ports of ``pending`` (shut for an MTU change) that are still
    down and not wanted down. Returns ``(restored, still held down)``; a dead session restores nothing."""
    if not pending:
        return [], []
    try:
        have = parsers.parse_running_config(session.show("show running-config"))
    except FabricError:
        return [], pending
    keep_down = set(p for p, entry in want["ports"].items() if entry.get("shutdown") is True)
    down = [p for p in state.still_down(have, pending) if p not in keep_down]
    if not down:
        return [], []
    commands = ["interface ethernet %s no shutdown" % spec for spec in parsers.compress_ports(down)]
    try:
        applied, failed, _error = session.configure(commands)
    except FabricError:
        return [], down
    if failed:
        return [], down
    return down, []


def held_message(restored, left):
    text = ""
    if restored:
        text += "The ports shut down for the MTU change were brought back up: %s. " % ", ".join(restored)
    if left:
        text += "The ports %s were shut down for the MTU change and are still down; running the task again brings them up. " % ", ".join(left)
    return text


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("state", "merged", ["host", "username"]), ("state", "gathered", ["host", "username"])],
        supports_check_mode=True,
    )
    params = module.params
    run = ModuleRun(module, toggles_ports=False, toggled_ports=[], saved=False)
    try:
        want = state.normalize_want(params)
    except parsers.OnyxInputError as exc:
        run.fail(str(invalid(exc)))

    if params["state"] == "rendered":
        commands, toggles = state.generate_commands(want, parsers.parse_running_config(""), parsers.JSON_LAYOUT_VERSION, roce_mode="disabled")
        run.update(commands=commands, rendered=commands, toggles_ports=bool(toggles), toggled_ports=toggles)
        module.exit_json(**run.result)

    if not 1 <= params["timeout"] <= 3600:
        run.fail("Invalid input, nothing was sent to the switch: timeout %d is outside 1-3600 seconds" % params["timeout"])
    if not 0 <= params["lock_timeout"] <= 86400:
        run.fail("Invalid input, nothing was sent to the switch: lock_timeout %d is outside 0-86400 seconds" % params["lock_timeout"])
    if NETMIKO_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("netmiko"), exception=NETMIKO_IMPORT_ERROR)
    if not params["password"] and not params["ssh_key_file"]:
        module.fail_json(msg="Give the switch's password or ssh_key_file (or ansible_password / ansible_ssh_private_key_file in the inventory)")
    if params["state"] == "gathered":
        run.execute(lambda run: gather(run, params))
    run.execute(lambda run: converge(run, params, want))


if __name__ == "__main__":
    main()
