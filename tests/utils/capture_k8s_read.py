# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture the API server's answers to one read of roce.fabric.k8s_objects_info, for the unit tests' corpus.

    tests/run env > /dev/null; python tests/utils/capture_k8s_read.py NAME "WHAT THE CLUSTER HOLDS"

Runs against the lab's kube-apiserver (k8s1, started with 'lab/labctl.py up k8s1'): renders the lab inventory's
k8s_rdma_network objects (the role's own templates, through ansible-playbook), reads the cluster with the module's
code, and writes every answer, keyed by the path asked, to
tests/unit/plugins/module_utils/fixtures/k8s/NAME.json with its corpus header.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "fixtures", "k8s")
RENDER = """
- hosts: k8s1
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: roce.fabric.k8s_rdma_network
        tasks_from: validate
    - ansible.builtin.copy:
        content: "{{ k8s_rdma_network__objects | to_nice_json }}"
        dest: "{{ out }}"
      delegate_to: localhost
"""


def render_objects():
    with tempfile.TemporaryDirectory() as tmp:
        play, out = os.path.join(tmp, "render.yml"), os.path.join(tmp, "objects.json")
        with open(play, "w") as handle:
            handle.write(RENDER)
        subprocess.run(["ansible-playbook", "-i", os.path.join(REPO, "inventories", "lab"), "--limit", "k8s1", play,
                        "-e", "out=%s" % out], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        with open(out) as handle:
            return json.load(handle)


def main(name, holds):
    # The collection as tests/run env installs it (a link to this checkout).
    sys.path.insert(0, os.environ["ANSIBLE_COLLECTIONS_PATH"].split(":")[0])
    from ansible_collections.roce.fabric.plugins.module_utils.k8s.read import read_objects
    from ansible_collections.roce.fabric.plugins.modules.k8s_objects_info import api_getter

    kubeconfig = os.path.join(REPO, ".lab", "k8s", "k8s1", "kubeconfig")
    get, _host = api_getter(dict(kubeconfig=kubeconfig, context=None, validate_certs=True, timeout=30))
    answers = {}

    def recording(path, query):
        key = path + ("?" + "&".join("%s=%s" % pair for pair in query) if query else "")
        answers[key] = get(path, query)
        return answers[key]

    objects = render_objects()
    read_objects(objects, recording, ["app.kubernetes.io/part-of=k8s-rdma-network"])
    version = get("/version", [])["gitVersion"]
    header = [
        "%% source: captured from the lab's kube-apiserver {0} (lab host k8s1, etcd), {1}, {2}".format(
            version, datetime.date.today().isoformat(), holds),
        "%% command: GET of each path below with a bearer token (roce.fabric.k8s_objects_info's read of the lab "
        "inventory's k8s_rdma_network objects), recorded by tests/utils/capture_k8s_read.py",
        "%% kind: captured",
        "%% notes: the answers of one read, keyed by the path asked (with its query); each answer is the server's JSON "
        "as decoded, re-indented",
    ]
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w") as handle:
        handle.write("\n".join(header) + "\n")
        json.dump(dict(objects=objects, answers=answers), handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
