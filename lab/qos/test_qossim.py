# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-tests of lab/qos/qossim.py, the mlnx_qos / dcb simulator of the lab's namespace hosts.

The mlnx_qos output is held against the real output of a ConnectX NIC with MLNX_OFED in the corpus
(qos/mlnx_qos_trust_dscp_os.txt), the dcb error against the real one captured on the lab VMs.
Run: python3 -m pytest lab -q
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
QOSSIM = os.path.join(HERE, "qossim.py")
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import corpus  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def sim(tmp_path):
    state = str(tmp_path / "qos")
    subprocess.run([sys.executable, QOSSIM, "admin", "--state-dir", state, "init", "eth4", "ens1f0np0"], check=True)

    def run(tool, *args):
        return subprocess.run([sys.executable, QOSSIM, "--as", tool] + list(args), capture_output=True, text=True,
                              env=dict(os.environ, QOSSIM_STATE_DIR=state), check=False, timeout=30)
    run.state = state
    return run


def test_mlnx_qos_replays_a_real_connectx_output(sim):
    """Trust DSCP after PFC on priority 3, as the published MLNX_OFED session did: the same text, line for line."""
    assert sim("mlnx_qos", "-i", "eth4", "--pfc", "0,0,0,1,0,0,0,0").returncode == 0
    proc = sim("mlnx_qos", "-i", "eth4", "--trust", "dscp")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.expandtabs(8) == corpus.body("qos", "mlnx_qos_trust_dscp_os.txt")


def test_mlnx_qos_defaults_and_errors(sim):
    out = sim("mlnx_qos", "-i", "ens1f0np0").stdout
    assert "Priority trust state: pcp" in out and "dscp2prio mapping" not in out
    assert "\tenabled     0   0   0   0   0   0   0   0   " in out
    bad = sim("mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,1")
    assert bad.returncode == 1 and bad.stdout == "pfc list must have 8 items\n"
    bad = sim("mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp", "--dscp2prio", "set,26,3")
    assert bad.returncode == 1 and "cannot be used at the same time" in bad.stdout
    assert sim("mlnx_qos", "-i", "ens1f0np0", "--trust", "l3").stdout == "Invalid trust state command. Refer to the help.\n"
    assert sim("mlnx_qos", "-i", "nosuch0").returncode == 1
    # A remapped DSCP moves between the priority rows.
    out = sim("mlnx_qos", "-i", "ens1f0np0", "--dscp2prio", "set,26,4").stdout
    out = sim("mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp").stdout
    assert "\tprio:3 dscp:31,30,29,28,27,25,24,\n" in out and "\tprio:4 dscp:39,38,37,36,35,34,33,32,\n\tprio:4 dscp:26,\n" in out


def test_dcb_show_set_and_reboot(sim):
    assert sim("dcb", "pfc", "show", "dev", "ens1f0np0", "prio-pfc").stdout == \
        "prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n"
    assert sim("dcb", "apptrust", "show", "dev", "ens1f0np0", "order").stdout == "order: pcp \n"
    assert sim("dcb", "pfc", "set", "dev", "ens1f0np0", "prio-pfc", "3:on").returncode == 0
    assert sim("dcb", "apptrust", "set", "dev", "ens1f0np0", "order", "dscp", "pcp").returncode == 0
    assert sim("dcb", "app", "replace", "dev", "ens1f0np0", "dscp-prio", "26:4").returncode == 0
    assert sim("dcb", "pfc", "show", "dev", "ens1f0np0").stdout == \
        "pfc-cap 8 macsec-bypass off delay 0 \nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n"
    assert sim("dcb", "app", "show", "dev", "ens1f0np0", "dscp-prio").stdout == "dscp-prio AF31:4\n"
    assert sim("dcb", "apptrust", "show", "dev", "ens1f0np0", "order").stdout == "order: dscp pcp \n"
    missing = sim("dcb", "pfc", "show", "dev", "nosuch0")
    assert missing.returncode == 1 and missing.stderr == corpus.body("qos", "dcb_err_no_device.txt")
    # A reboot of the lab host: the driver's defaults again.
    subprocess.run([sys.executable, QOSSIM, "admin", "--state-dir", sim.state, "reset"], check=True)
    assert "3:off" in sim("dcb", "pfc", "show", "dev", "ens1f0np0", "prio-pfc").stdout
    calls = [json.loads(line) for line in open(os.path.join(sim.state, "calls.jsonl"))]
    assert calls[0]["argv"][:2] == ["dcb", "pfc"] and all("rc" in c for c in calls)
