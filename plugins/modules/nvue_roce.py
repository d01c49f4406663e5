#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvue_roce
short_description: RoCE on an NVIDIA Spectrum switch running Cumulus Linux, through the NVUE REST API
version_added: 1.0.0
description:
  - Configures what a RoCE fabric needs on an NVIDIA Spectrum switch running Cumulus Linux 5, the same contract as
    M(roce.fabric.onyx_roce) - RoCE mode (C(nv set qos roce mode)), VLANs of the bridge C(br_default) and their
    access and trunk ports, port MTU and admin state, ECN thresholds per traffic class, PFC priorities and the trust
    mode of the C(default-global) QoS profiles - and optionally saves the configuration.
  - Only what the task names is compared and changed. The module reads the applied configuration once
    (C(GET /nvue_v1/?rev=applied)), computes the difference once and, when something differs, stages all of it in
    one new revision with one PATCH and applies that revision once, then reads the applied configuration back to
    prove it took. When nothing differs it makes no request that changes anything (no revision is created).
  - In check mode nothing is created; the task reports the C(nv set) commands it would apply.
  - When the switch refuses the revision (state C(invalid), C(ays_fail), C(apply_fail)) the task fails with the
    revision's state and NVUE's issue messages; the applied configuration is unchanged. A revision that was created
    but not applied is deleted, so no half-staged revision is left behind.
  - The switch's release (C(header.version) of the configuration) is compared numerically against what each
    setting needs - the QoS objects C(trust), C(pfc) and C(ecn) exist in NVUE from Cumulus Linux 5.3, RoCE mode
    C(lossless-single-ipool) from 5.12 - and a setting the release lacks is refused before anything is staged.
  - Runs on the controller. With the collection's action plugin the connection comes from the switch's inventory.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs on the controller and reaches the switch's NVUE REST API over HTTPS.
    support: full
    platforms: posix
requirements:
  - paramiko on the controller, for O(transport=ssh)
options:
  transport:
    description:
      - V(rest) talks to the NVUE REST API over HTTPS (on by default from Cumulus Linux 5.6).
      - V(ssh) runs the C(nv) command line over SSH (C(nv config show), C(nv set), C(nv config apply -y)), for
        switches whose REST API is off. The same comparison, commands and checks; the change is staged in the login's
        pending configuration, which is the account's and must be empty (C(nv config diff)) - a change pending that
        this run did not stage (someone logged in as the same account, a dropped run) is refused with
        C(failure=pending), nothing sent, and neither applied nor detached. Give the automation an account of its
        own. Taken from C(nvue_transport).
    type: str
    choices: [rest, ssh]
    default: rest
  host:
    description:
      - The switch's address. Taken from C(ansible_host) by the action plugin.
      - Required unless O(state=rendered).
    type: str
  port:
    description:
      - HTTPS port of the NVUE REST API. Taken from C(nvue_api_port), else C(ansible_httpapi_port), by the action
        plugin. The API is HTTPS only - C(ansible_httpapi_use_ssl) false is refused.
    type: int
    default: 8765
  ssh_port:
    description: SSH port (O(transport=ssh)). Taken from C(ansible_port) by the action plugin.
    type: int
    default: 22
  ssh_key_file:
    description: Private key for the SSH login (O(transport=ssh)). Taken from C(ansible_ssh_private_key_file).
    type: path
  host_key_checking:
    description:
      - Check the switch's SSH host key against C(~/.ssh/known_hosts) and O(known_hosts_file) before logging in
        (O(transport=ssh)); an unknown or changed key is refused and no credential is sent. Taken from
        C(nvue_host_key_checking).
    type: bool
    default: true
  known_hosts_file:
    description: A known_hosts file with the switches' keys (O(transport=ssh)). Taken from C(nvue_known_hosts_file).
    type: path
  proxy_command:
    description:
      - A command whose standard input and output carry the SSH session (O(transport=ssh)) through a jump host
        (C(ssh -W %h:%p admin@bastion)); C(%h), C(%p) and C(%r) become the switch's address, SSH port and user. Run on
        the controller without a shell.
      - Taken by the action plugin from C(ansible_paramiko_proxy_command), else from a C(ProxyCommand) or
        C(ProxyJump) (C(-J)) in C(ansible_ssh_common_args) or C(ansible_ssh_extra_args).
      - The REST transport goes through the proxy of the controller's C(https_proxy) environment variable instead.
    type: str
  username:
    description: API user (a Cumulus Linux account). Taken from C(ansible_user) by the action plugin.
    type: str
  password:
    description:
      - The user's password; sent only in the HTTP Authorization header (or the SSH login). Taken from
        C(ansible_password).
    type: str
  validate_certs:
    description:
      - Check the switch's certificate against the controller's trust store and O(ca_path). A switch still on the
        self-signed certificate Cumulus Linux ships needs its certificate (or its CA) in O(ca_path), or V(false),
        which sends the password to whoever answers. Taken from C(nvue_validate_certs), else
        C(ansible_httpapi_validate_certs), by the action plugin.
    type: bool
    default: true
  ca_path:
    description: A PEM file of CA certificates (or the switch's own certificate) to trust. Taken from C(nvue_ca_path).
    type: path
  timeout:
    description: Seconds for connecting and for each request, 1 to 3600.
    type: int
    default: 30
  apply_timeout:
    description:
      - Seconds to wait for the revision to reach C(applied), 1 to 3600. A revision still applying then is reported
        with its state; it is not deleted (the switch may still finish it), and running the task again converges.
    type: int
    default: 120
  roce_mode:
    description:
      - V(lossless) (PFC and ECN), V(lossy) (ECN only), V(lossless-single-ipool) (lossless, one shared ingress pool,
        Cumulus Linux 5.12 and later) or V(disabled) (C(nv unset qos roce)).
      - Changing the mode reprograms the switch's buffers (see RV(switch_wide)).
    type: str
    choices: [lossless, lossy, lossless-single-ipool, disabled]
  trust:
    description: What the C(default-global) mapping trusts - V(l2) (PCP), V(l3) (DSCP), V(both) or V(port).
    type: str
    choices: [l2, l3, both, port]
  pfc:
    description: PFC of the C(default-global) profile.
    type: dict
    suboptions:
      enabled:
        description: PFC transmit and receive on (V(true)) or off.
        type: bool
        default: true
      priorities:
        description: Switch priorities with PFC (RoCE uses 3); priorities not listed lose PFC.
        type: list
        elements: int
  ecn:
    description: ECN marking of the C(default-global) congestion-control profile, per traffic class.
    type: list
    elements: dict
    suboptions:
      traffic_class:
        description: Traffic class, 0 to 7 (RoCE uses 3).
        type: int
        required: true
      min_bytes:
        description: Minimum threshold in bytes (marking starts).
        type: int
        required: true
      max_bytes:
        description: Maximum threshold in bytes (every packet marked), not below O(ecn[].min_bytes).
        type: int
        required: true
  vlans:
    description: VLANs of the bridge C(br_default) and the ports that join them.
    type: list
    elements: dict
    suboptions:
      id:
        description: VLAN id, 1 to 4094, outside 3725-3999 (reserved by Cumulus Linux).
        type: int
        required: true
      access_ports:
        description: Ports that become access ports of this VLAN, as ports (V(swp1)), ranges (V(swp1-4)) or breakouts (V(swp1s0-swp1s3)).
        type: list
        elements: str
      trunk_ports:
        description: Ports on which this VLAN is allowed (tagged).
        type: list
        elements: str
  ports:
    description: Per-port settings. A port may appear in one entry only.
    type: list
    elements: dict
    suboptions:
      ports:
        description: Ports the settings apply to (ports, ranges, breakouts).
        type: list
        elements: str
        required: true
      mtu:
        description: MTU, 552 to 9216. Changing it toggles the link of a port that is up.
        type: int
      shutdown:
        description: Administratively down (V(true)) or up (V(false)).
        type: bool
  save:
    description:
      - Save the applied configuration to the startup configuration after a change (C(nv config save)).
      - A switch that saves every apply by itself (C(system config auto-save), on by default from Cumulus Linux 5.9)
        gets no save of its own; RV(saved) says true.
    type: bool
    default: false
  allow_link_toggle:
    description:
      - V(false) refuses a change that toggles links (an MTU change on a port that is up) or reprograms the switch's
        buffers (a RoCE mode or PFC change), naming them and the commands, before anything is staged.
    type: bool
    default: true
  pause_ports:
    description:
      - State V(gathered) - the ports whose PFC pause counters are read as well, over SSH (C(nv show interface <port>
        counters qos pfc-stats); C(qos counters pfc-stats) before Cumulus Linux 5.5), one command a port. Each
        port's RV(counters) then has C(rx_pause), C(tx_pause) (pause frames of every switch priority) and
        C(rx_pause_duration), C(tx_pause_duration). Ranges as in O(vlans) (C(swp1-4)).
      - The validate role gives the ports its cabling plan names on the switch. Over the REST API they are not read
        (RV(pause_errors) says so).
    type: list
    elements: str
    default: []
  state:
    description:
      - V(merged) configures the switch.
      - V(gathered) reads the applied configuration (one C(GET) or C(nv config show)) and returns its RoCE part, in
        this module's own option shape (RV(gathered)); given back with V(merged), it changes nothing. It reads every
        interface's counters too (RV(counters); C(GET /nvue_v1/interface?rev=operational) or C(nv show interface
        --operational -o json)) and, over SSH, what the switch hears over LLDP (RV(lldp); C(nv show interface lldp)).
      - V(rendered) returns the C(nv) commands for a switch with nothing configured, without connecting to anything
        (RV(rendered)).
    type: str
    choices: [merged, gathered, rendered]
    default: merged
notes:
  - Bad input (port names, overlapping ports, VLANs, MTU, thresholds, priorities) fails before any connection.
  - The REST API listens by default from Cumulus Linux 5.6; on older releases an operator enables it first (see
    the collection's Cumulus deployment guide).
seealso:
  - name: Cumulus Linux - RDMA over Converged Ethernet
    description: The RoCE modes and what each configures.
    link: https://docs.nvidia.com/networking-ethernet-software/cumulus-linux/Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE/
  - name: Cumulus Linux - NVUE API
    description: Revisions, apply and save over the REST API.
    link: https://docs.nvidia.com/networking-ethernet-software/cumulus-linux/System-Configuration/NVIDIA-User-Experience-NVUE/NVUE-API/
"""

EXAMPLES = r"""
# In a play on the Cumulus switches: the action plugin takes host, user and password from inventory.
- name: Lossless RoCE for four GPU servers on swp1-4 in VLAN 111, jumbo frames
  roce.fabric.nvue_roce:
    roce_mode: lossless
    trust: l3
    pfc:
      priorities: [3]
    ecn:
      - traffic_class: 3
        min_bytes: 150000
        max_bytes: 1500000
    vlans:
      - id: 111
        access_ports: [swp1-4]
      - id: 112
        trunk_ports: [swp31-32]
    ports:
      - ports: [swp1-4, swp31-32]
        mtu: 9216
    save: true

- name: The commands for a switch with nothing configured, without a switch
  roce.fabric.nvue_roce:
    state: rendered
    roce_mode: lossy
    ports:
      - ports: [swp1s0-swp1s3]
        mtu: 9216
  register: plan

# Over SSH (nvue_transport ssh): the RoCE settings, every port's counters, the switch's LLDP table and the PFC
# pause counters of the GPU servers' ports, read only.
- name: Read the switch for the validation
  roce.fabric.nvue_roce:
    state: gathered
    pause_ports: [swp1-4]
  register: leaf
"""

RETURN = r"""
before:
  description:
    - The switch's configuration of the given ports and settings before the task, in this module's option shape
      (RoCE mode, trust, PFC, ECN, VLANs with their access and trunk ports, port entries), whether or not C(--diff)
      is on.
  returned: when the switch was read (state merged)
  type: dict
  sample: {roce_mode: disabled, vlans: [], ports: [], pfc: {enabled: true, priorities: []}, ecn: []}
after:
  description: The same after the task (in check mode, as it would be), from the same wanted state as RV(commands).
  returned: when the switch was read (state merged)
  type: dict
  sample: {roce_mode: lossless, trust: l3, vlans: [{id: 111, access_ports: [swp1-4], trunk_ports: []}],
           ports: [{ports: [swp1-4], mtu: 9216}], pfc: {enabled: true, priorities: [3]},
           ecn: [{traffic_class: 3, min_bytes: 150000, max_bytes: 1500000}]}
gathered:
  description: The switch's RoCE configuration (every port the applied configuration names), in this module's option
    shape (state gathered).
  returned: state gathered
  type: dict
  sample: {roce_mode: lossless, trust: l3, vlans: [{id: 111, access_ports: [swp1-4], trunk_ports: [swp31s0-3]}],
           ports: [{ports: [swp1-4, swp31s0-3], mtu: 9216}], pfc: {enabled: true, priorities: [3]},
           ecn: [{traffic_class: 3, min_bytes: 150000, max_bytes: 1500000}]}
counters:
  description:
    - Every interface's counters (state gathered), from its operational C(link.stats), under the names the Onyx module
      and the host side use - C(in_errors), C(in_discards) (C(in-drops)), C(in_packets), C(out_errors),
      C(out_discards) (C(out-drops)), C(out_packets), C(carrier_transitions); for the ports of O(pause_ports) over
      SSH also C(rx_pause), C(tx_pause), C(rx_pause_duration), C(tx_pause_duration) (PFC, every switch priority).
    - The validate role reads them before and after its traffic and the report takes the difference.
  returned: state gathered
  type: dict
  sample: {swp1: {in_errors: 0, in_discards: 0, in_packets: 2371, out_errors: 0, out_discards: 0, out_packets: 762,
                  carrier_transitions: 2}}
lldp:
  description:
    - What the switch hears over LLDP on each interface with a neighbour (state gathered, O(transport=ssh)), from
      C(nv show interface lldp) - C(host) (the neighbour's system name), C(port) (its port ID - an interface name,
      or a MAC address where the neighbour is a host whose lldpd sends its default), C(speed), C(type).
    - The validate role compares it with the site's cabling plan. Over the REST API it is not read (the API's LLDP
      neighbour objects have no published sample to read them by).
  returned: state gathered with O(transport=ssh), when the table could be read
  type: dict
  sample: {swp1: {host: server01, port: "48:b0:2d:76:ee:8e", speed: 1G, type: swp},
           swp51: {host: spine01, port: swp1, speed: 1G, type: swp}}
lldp_error:
  description: Why C(nv show interface lldp)'s output could not be read (state gathered, O(transport=ssh)).
  returned: when the LLDP table could not be read
  type: str
pause_errors:
  description: Each port of O(pause_ports) whose PFC counters could not be read, and why (state gathered).
  returned: when a port's PFC counters could not be read
  type: dict
  sample: {swp9: "The switch refused 'nv show interface swp9 counters qos pfc-stats' (exit 1): ..."}
rendered:
  description: The C(nv) commands for a switch with nothing configured (state rendered), as RV(commands).
  returned: state rendered
  type: list
  elements: str
changed:
  description: Whether a revision was (or, in check mode, would be) applied.
  returned: always
  type: bool
commands:
  description: The change as C(nv) commands, in the order an operator would type them (all applied as one revision).
  returned: always
  type: list
  elements: str
  sample: ["nv set qos roce mode lossless", "nv set bridge domain br_default vlan 111", "nv set interface swp1-4 link mtu 9216"]
patch:
  description: The one PATCH document staged in the revision (C(null) unsets).
  returned: always
  type: dict
revision:
  description: The revision the task created.
  returned: when a revision was created
  type: str
  sample: changeset/cumulus/2026-11-25_16.09.18_5Z1K
revision_state:
  description: The revision's last state (C(applied), or why not).
  returned: when a revision was created
  type: str
revision_issues:
  description: NVUE's issue messages for the revision.
  returned: when a revision was created
  type: list
  elements: str
release:
  description: The switch's Cumulus Linux release.
  returned: when state is merged
  type: str
  sample: 5.9.2
toggled_ports:
  description: Ports whose links the change toggles (MTU changes on ports that are up).
  returned: always
  type: list
  elements: str
switch_wide:
  description: Changed items that reprogram the switch's buffers (C(roce_mode), C(pfc)), which may drop packets momentarily.
  returned: always
  type: list
  elements: str
auto_save:
  description:
    - Whether the switch saves every applied revision by itself (C(system config auto-save), on by default from
      Cumulus Linux 5.9); then the module sends no save of its own and RV(saved) is true after a change.
  returned: after a change
  type: bool
saved:
  description: Whether the applied configuration was saved to startup (by O(save), or by the switch's auto-save).
  returned: always
  type: bool
requests:
  description: The API requests (method and path) or, with O(transport=ssh), the C(nv) commands the task ran, in order.
  returned: when state is merged
  type: list
  elements: str
diff:
  description: The managed settings before and after (C(roce_mode), C(trust), C(pfc), C(ecn), C(vlans), C(ports)).
  returned: when diff mode is on
  type: dict
"""

import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.nvue import parsers, state
from ansible_collections.roce.fabric.plugins.module_utils.nvue.transport import PARAMIKO_IMPORT_ERROR, NvueRest, NvueSsh


def argument_spec():
    return dict(
        transport=dict(type="str", default="rest", choices=["rest", "ssh"]),
        host=dict(type="str"),
        port=dict(type="int", default=8765),
        ssh_port=dict(type="int", default=22),
        ssh_key_file=dict(type="path"),
        host_key_checking=dict(type="bool", default=True),
        known_hosts_file=dict(type="path"),
        proxy_command=dict(type="str"),
        username=dict(type="str"),
        password=dict(type="str", no_log=True),
        validate_certs=dict(type="bool", default=True),
        ca_path=dict(type="path"),
        timeout=dict(type="int", default=30),
        apply_timeout=dict(type="int", default=120),
        roce_mode=dict(type="str", choices=list(parsers.ROCE_MODES)),
        trust=dict(type="str", choices=list(parsers.TRUST_MODES)),
        pfc=dict(type="dict", options=dict(
            enabled=dict(type="bool", default=True),
            priorities=dict(type="list", elements="int"),
        )),
        ecn=dict(type="list", elements="dict", options=dict(
            traffic_class=dict(type="int", required=True),
            min_bytes=dict(type="int", required=True),
            max_bytes=dict(type="int", required=True),
        )),
        vlans=dict(type="list", elements="dict", options=dict(
            id=dict(type="int", required=True),
            access_ports=dict(type="list", elements="str"),
            trunk_ports=dict(type="list", elements="str"),
        )),
        ports=dict(type="list", elements="dict", options=dict(
            ports=dict(type="list", elements="str", required=True),
            mtu=dict(type="int"),
            shutdown=dict(type="bool"),
        )),
        save=dict(type="bool", default=False),
        allow_link_toggle=dict(type="bool", default=True),
        state=dict(type="str", default="merged", choices=["merged", "gathered", "rendered"]),
        pause_ports=dict(type="list", elements="str", default=[]),
    )


def invalid(exc):
    return FabricError("Invalid input, nothing was sent to the switch: %s" % exc)


def report_plan(run, planned):
    run.update(commands=planned["commands"], patch=planned["patch"], toggled_ports=planned["toggled"],
               switch_wide=planned["switch_wide"], before=planned["before"], after=planned["after"])
    run.set_diff(planned["diff"]["before"], planned["diff"]["after"])


def connect(params):
    if params["transport"] == "ssh":
        return NvueSsh(params["host"], params["ssh_port"], params["username"], params["password"], params["timeout"],
                       key_file=params["ssh_key_file"], host_key_checking=params["host_key_checking"],
                       known_hosts_file=params["known_hosts_file"], proxy_command=params["proxy_command"])
    return NvueRest(params["host"], params["port"], params["username"], params["password"], params["timeout"],
                    validate_certs=params["validate_certs"], ca_path=params["ca_path"])


def read_applied(api):
    """The switch's applied configuration and its Cumulus Linux release."""
    config = api.applied()
    try:
        return config, parsers.release_of(config)
    except ValueError as exc:
        raise FabricError("The switch's answer is not an NVUE configuration: %s" % exc)


def read_pauses(run, api, ports, release):
    """The PFC pause counters of ``ports`` (state gathered, over SSH: ``nv show interface <port> counters qos
    pfc-stats``, ``qos counters pfc-stats`` before Cumulus Linux 5.5), summed over the switch priorities into each
    port's counters; why a port's could not be read in ``pause_errors``. Over the REST API none is read."""
    errors = {}
    for port in ports:
        try:
            table = api.pfc_table(port, parsers.version_at_least(release, "5.5"))
            if table is None:
                errors[port] = "not read over the REST API (over SSH: nvue_transport ssh)"
                continue
            run.result["counters"].setdefault(port, {}).update(parsers.pause_totals(parsers.pfc_stats(table)))
        except (FabricError, parsers.NvueTableError) as exc:
            errors[port] = str(exc)
    if errors:
        run.update(pause_errors=errors)


def gather(run, params):
    """state gathered: one read of the applied configuration, its RoCE part in the module's option shape."""
    api = connect(params)
    try:
        config, release = read_applied(api)
        run.update(release=release, gathered=state.gathered(parsers.parse_config(config)),
                   counters=parsers.port_counters(api.interfaces()))
        table = api.lldp_table()
        if table is not None:
            try:
                run.update(lldp=parsers.lldp_neighbours(table))
            except parsers.NvueTableError as exc:
                run.update(lldp_error="nv show interface lldp: %s" % exc)
        read_pauses(run, api, params["pause_ports"], release)
    finally:
        run.update(requests=list(api.requests))
        if isinstance(api, NvueSsh):
            api.close()


def converge(run, params, want):
    api = connect(params)
    try:
        config, release = read_applied(api)
        run.update(release=release)
        try:
            state.check_release(want, release)
        except parsers.NvueInputError as exc:
            raise invalid(exc)
        have = parsers.parse_config(config)
        planned = state.plan(want, have)
        report_plan(run, planned)
        if not planned["changes"]:
            return
        if (planned["toggled"] or planned["switch_wide"]) and not params["allow_link_toggle"]:
            what = []
            if planned["toggled"]:
                what.append("toggle the links of %s" % parsers.compress_ports(planned["toggled"]))
            if planned["switch_wide"]:
                what.append("reprogram the switch's buffers (%s), which may drop packets on every port" % ", ".join(planned["switch_wide"]))
            raise FabricError("The change would %s; nothing was staged (%s). Allow it (allow_link_toggle, "
                              "roce_switch_allow_link_toggle) in a maintenance window." % (" and ".join(what), "; ".join(planned["commands"])))
        run.changed(True)
        if run.check_mode:
            return
        apply_revision(run, api, params, planned, want)
    finally:
        run.update(requests=list(api.requests))
        if hasattr(api, "close"):
            api.close()


def apply_revision(run, api, params, planned, want):
    rev = api.create()
    run.update(revision=rev)
    try:
        api.stage(rev, planned["patch"], planned["commands"])
    except FabricError as exc:
        left = "" if api.discard(rev) else " Revision %s could not be deleted; delete it on the switch (nv config detach)." % rev
        raise FabricError("%s. Nothing was applied.%s" % (str(exc).rstrip("."), left), revision=rev, **exc.details)
    try:
        rev_state, issues, progress = api.apply(rev, time.monotonic() + params["apply_timeout"])
    except FabricError as exc:
        pending = (" Over SSH the change stays pending in the account's configuration until the apply ends; if it does "
                   "not, detach it there (nv config detach) first: a run refuses what is pending that it did not stage."
                   if isinstance(api, NvueSsh) else "")
        raise FabricError("%s while revision %s was being applied: whether the switch applied it is not known. Running "
                          "the task again reads the switch and converges.%s" % (str(exc).rstrip("."), rev, pending),
                          revision=rev, **exc.details)
    run.update(revision_state=rev_state, revision_issues=issues)
    if rev_state not in parsers.DONE_STATES:
        detail = "; ".join(issues) or progress or "no reason given"
        if rev_state in parsers.FAILED_STATES:
            left = "" if api.discard(rev) else " It could not be deleted; delete it on the switch."
            raise FabricError("The switch refused revision %s (state %s: %s). The applied configuration is unchanged.%s"
                              % (rev, rev_state, detail, left), changed=False)
        raise FabricError("Revision %s was still %s after %d s (%s); the switch may still apply it. Running the task "
                          "again converges." % (rev, rev_state, params["apply_timeout"], detail))
    config = api.applied()
    have = parsers.parse_config(config)
    left = state.compare(want, have)
    if left:
        raise FabricError("Revision %s was applied but the switch does not hold: %s" % (rev, "; ".join(c["command"] for c in left)))
    if parsers.auto_save(config, run.result.get("release")):
        # The apply saved it (Cumulus Linux 5.9 and later by default, or system config auto-save on): said as it is.
        run.update(saved=True, auto_save=True)
    elif params["save"]:
        api.save()
        run.update(saved=True)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("state", "merged", ["host", "username"]), ("state", "gathered", ["host", "username"])],
        supports_check_mode=True,
    )
    params = module.params
    run = ModuleRun(module, toggled_ports=[], switch_wide=[], saved=False, patch={})
    try:
        want = state.normalize_want(params)
    except parsers.NvueInputError as exc:
        run.fail(str(invalid(exc)))

    if params["state"] == "rendered":
        report_plan(run, state.plan(want, state.factory_state()))
        run.update(rendered=run.result["commands"])
        run.result.pop("before", None)
        run.result.pop("after", None)
        run.changed(False)
        module.exit_json(**run.result)

    if not params["password"] and not (params["transport"] == "ssh" and params["ssh_key_file"]):
        run.fail("Give the switch's password (ansible_password), or ssh_key_file with transport ssh")
    for key, low, high in (("timeout", 1, 3600), ("apply_timeout", 1, 3600), ("port", 1, 65535), ("ssh_port", 1, 65535)):
        if not low <= params[key] <= high:
            run.fail("Invalid input, nothing was sent to the switch: %s %d is outside %d-%d" % (key, params[key], low, high))
    if params["transport"] == "ssh" and PARAMIKO_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("paramiko"), exception=PARAMIKO_IMPORT_ERROR)
    if params["state"] == "gathered":
        try:
            params["pause_ports"] = parsers.expand_port_list(params["pause_ports"], "pause_ports")
        except parsers.NvueInputError as exc:
            run.fail(str(invalid(exc)))
        run.execute(lambda run: gather(run, params))
    run.execute(lambda run: converge(run, params, want))


if __name__ == "__main__":
    main()
