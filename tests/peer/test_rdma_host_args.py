"""The rdma_host role's checks of the NVIDIA stack source (mlnx_ofed / doca_ofed), run on the controller:
those install paths cannot run in the lab, but what they accept and refuse can be tested."""

import json
import subprocess
import sys

import pytest

from conftest import REPO

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: roce.fabric.rdma_host
        tasks_from: validate
"""

GOOD_URL = "https://linux.mellanox.com/public/repo/mlnx_ofed/24.10-1.1.4.0/ubuntu22.04/x86_64"
KEY = "https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox"


def validate(tmp_path, **variables):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    argv = ["ansible-playbook", "-i", "localhost,", str(play), "-e", "@%s" % extra, "-e", "ansible_python_interpreter=%s" % sys.executable]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("variables", [
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version="24.10-1.1.4.0", rdma_host_ofed_repo_url=GOOD_URL,
         rdma_host_ofed_repo_key_url=KEY),
    dict(rdma_host_driver="doca_ofed", rdma_host_ofed_version="2.9.1",
         rdma_host_ofed_installer="/srv/doca-host_2.9.1-018000-24.10-ubuntu2204_amd64.tgz"),
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version="24.10-1.1.4.0",
         rdma_host_ofed_installer="/srv/MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.iso"),
    dict(rdma_host_driver="inbox"),
])
def test_pinned_sources_are_accepted(tmp_path, variables):
    rc, out = validate(tmp_path, **variables)
    assert rc == 0, out


@pytest.mark.parametrize("variables", [
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_repo_url=GOOD_URL, rdma_host_ofed_repo_key_url=KEY),
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version="24.10-1.1.4.0",
         rdma_host_ofed_repo_url="https://linux.mellanox.com/public/repo/mlnx_ofed/latest/ubuntu22.04/x86_64",
         rdma_host_ofed_repo_key_url=KEY),
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version="24.10-1.1.4.0", rdma_host_ofed_repo_url=GOOD_URL.replace("https", "http"),
         rdma_host_ofed_repo_key_url=KEY),
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version="24.10-1.1.4.0", rdma_host_ofed_repo_url=GOOD_URL),
    dict(rdma_host_driver="mlnx_ofed", rdma_host_ofed_version="24.10-1.1.4.0", rdma_host_ofed_repo_url=GOOD_URL,
         rdma_host_ofed_repo_key_url=KEY, rdma_host_ofed_installer="/srv/MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.tgz"),
    dict(rdma_host_driver="doca_ofed", rdma_host_ofed_version="2.9.1", rdma_host_ofed_installer="/srv/doca-host.tgz"),
    dict(rdma_host_driver="doca_ofed", rdma_host_ofed_version="2.9.1", rdma_host_ofed_installer="srv/doca-host_2.9.1.tgz"),
    dict(rdma_host_driver="doca_ofed", rdma_host_ofed_version="2.9.1", rdma_host_ofed_installer="/srv/doca-host_2.9.1.deb"),
    dict(rdma_host_driver="doca_ofed", rdma_host_ofed_version="2.9.1"),
    dict(rdma_host_softroce_links=[{"name": "rxe0", "netdev": "a"}, {"name": "rxe0", "netdev": "b"}]),
    dict(rdma_host_softroce_links=[{"name": "rxe 0", "netdev": "a"}]),
])
def test_unpinned_or_ambiguous_sources_are_refused(tmp_path, variables):
    rc, out = validate(tmp_path, **variables)
    assert rc != 0, out
    assert "rdma_host_" in out


def test_argument_spec_refuses_an_unknown_driver(tmp_path):
    """The role's entry point validates its arguments before any task (meta/argument_specs.yml)."""
    play = tmp_path / "spec.yml"
    play.write_text(PLAY.replace("        tasks_from: validate\n", ""))
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", str(play), "-e", "rdma_host_driver=ofed",
                           "-e", "ansible_python_interpreter=%s" % sys.executable], capture_output=True, text=True, cwd=REPO, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "rdma_host_driver" in out and "ofed" in out
    # Nothing ran after the validation.
    assert "Install the inbox RDMA stack" not in out
