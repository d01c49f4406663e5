"""The validation's host lock on lab host gpu1 over SSH: a run longer than validate_lock_stale_after keeps its lock
when the validate role's refresh (tasks/lock_refresh.yml, at each of its steps) runs, and loses it to another run
without. Real time passes: the module's shortest stale_after is 60 s."""

import json
import os
import subprocess
import tempfile

from conftest import INVENTORY, REPO

PLAY = """
- hosts: gpu1
  gather_facts: false
  vars:
    validate_lock_stale_after: 60
  tasks:
    - name: Take both locks at the run's start (the refreshed one, and one nothing refreshes)
      roce.fabric.run_lock:
        path: "{{ item }}"
        owner: run-long
        stale_after: 60
      loop: [/var/lib/roce-fabric/validate.lock, /var/lib/roce-fabric/unrefreshed.lock]
      register: taken
    - name: The validate role's record of its lock
      ansible.builtin.set_fact:
        validate_lock: "{{ taken.results[0] }}"
        validate_lock_file: /var/lib/roce-fabric/validate.lock
    - name: A long step, then the role's refresh (as after each round), twice
      ansible.builtin.include_tasks: step.yml
      loop: [1, 2]
    - name: The rest of the run (65 s after its start in all)
      ansible.builtin.wait_for:
        timeout: 25
      delegate_to: localhost
    - name: Another run tries to take either lock
      roce.fabric.run_lock:
        path: "{{ item }}"
        owner: run-other
        stale_after: 60
      loop: [/var/lib/roce-fabric/validate.lock, /var/lib/roce-fabric/unrefreshed.lock]
      register: other
      failed_when: false
"""

STEP = """
- name: A step of the run (20 s)
  ansible.builtin.wait_for:
    timeout: 20
  delegate_to: localhost
- name: The validate role's lock refresh
  ansible.builtin.include_role:
    name: roce.fabric.validate
    tasks_from: lock_refresh
"""


def test_a_validation_longer_than_stale_after_keeps_its_lock_through_the_role_s_refresh(gpu1):
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "play.yml"), "w") as handle:
            handle.write(PLAY)
        with open(os.path.join(folder, "step.yml"), "w") as handle:
            handle.write(STEP)
        env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
        proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, os.path.join(folder, "play.yml")], env=env,
                              capture_output=True, text=True, cwd=REPO, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    other = [t for t in tasks if t["task"]["name"] == "Another run tries to take either lock"][0]["hosts"]["gpu1"]
    # The refreshed lock is still the long run's (refused: locked); the one nothing refreshed was taken over.
    found = [(r.get("failure"), (r.get("taken_over") or {}).get("owner")) for r in other["results"]]
    assert found == [("locked", None), (None, "run-long")], found
