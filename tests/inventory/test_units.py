"""The boot units the roles render, for a NIC whose name systemd must escape.

A unit that ``BindsTo`` a network interface's device names the device unit; systemd names it after the escaped
path, so a NIC called ``roce-p0`` is ``sys-subsystem-net-devices-roce\\x2dp0.device``. The nic_qos unit named it
unescaped: after a reboot it waited for a device that never appears and the NIC's trust, PFC and DSCP map were not
restored. Each role's unit template is rendered here by Ansible, as the role renders it, and its device lines are
compared with what systemd-escape 252 printed for the same name (the corpus sample
tests/unit/plugins/module_utils/fixtures/systemd/systemd_escape_252.txt).

Run alone: python -m pytest tests/inventory/test_units.py (after eval "$(tests/run env)").
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "fixtures", "systemd", "systemd_escape_252.txt")


def printed_by_systemd_escape(name):
    with open(SAMPLE) as handle:
        for line in handle:
            if line.startswith("path\t%s\t" % name):
                return line.rstrip("\n").split("\t")[2] + ".device"
    raise AssertionError("no systemd-escape sample for %s" % name)


TEMPLATES = [
    ("nic_qos", "qos.service.j2", {"item": {"netdev": "NAME"}, "nic_qos_settings": {"roce_dscp": 26, "roce_priority": 3}}),
    ("rdma_host", "softroce.service.j2", {"item": {"netdev": "NAME", "name": "rxe-roce"}}),
    ("sriov", "sriov.service.j2", {"item": {"netdev": "NAME", "num_vfs": 2}}),
]


def render(role, template, variables):
    path = os.path.join(REPO, "roles", role, "templates", template)
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(["ansible", "localhost", "-m", "ansible.builtin.debug", "-a",
                           "msg={{ lookup('ansible.builtin.template', '%s') }}" % path, "-e", json.dumps(variables)],
                          capture_output=True, text=True, cwd=REPO, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]


@pytest.mark.parametrize("name", ["roce-p0", "bond-roce.100", "ens1f0np0"])
@pytest.mark.parametrize("role, template, variables", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_every_unit_binds_to_the_device_systemd_names(role, template, variables, name):
    variables = json.loads(json.dumps(variables).replace("NAME", name))
    unit = render(role, template, variables)
    device = printed_by_systemd_escape(name)
    binds = [line for line in unit.splitlines() if line.startswith(("BindsTo=", "After="))]
    assert binds[0] == "BindsTo=%s" % device, unit
    assert binds[1].startswith("After=%s" % device), unit
