"""The validation's host lock on lab host gpu1 over SSH: a run longer than validate_lock_stale_after keeps its lock
when the validate role's refresh (tasks/lock_refresh.yml, at each of its steps) runs, and loses it to another run
without. The run's length is made, not waited for: both locks are dated 65 s back on the host, and the role's record of
its lock 65 s back on the controller (the module's shortest stale_after is 60 s); the host's clock judges the age."""

import json
import os
import subprocess
import tempfile

from conftest import INVENTORY, REPO

# Moves a lock's "since" back, as a run of that length would have left it (the file stays the module's own, 0600).
BACKDATE = ("import json, sys\n"
            "for path in sys.argv[2:]:\n"
            "    with open(path, 'r+') as f:\n"
            "        lock = json.load(f); lock['since'] -= float(sys.argv[1])\n"
            "        f.seek(0); f.truncate(); json.dump(lock, f)\n")

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
    - name: The run has lasted 65 s, on the host's clock
      ansible.builtin.command:
        argv: [python3, -c, "%s", "65", /var/lib/roce-fabric/validate.lock, /var/lib/roce-fabric/unrefreshed.lock]
      changed_when: true
    - name: The validate role's record of its lock, 65 s old on the controller's clock
      ansible.builtin.set_fact:
        validate_lock: "{{ taken.results[0] | combine({'controller_time': taken.results[0].controller_time - 65}) }}"
        validate_lock_file: /var/lib/roce-fabric/validate.lock
    - name: The role's refresh, as after a round
      ansible.builtin.include_role:
        name: roce.fabric.validate
        tasks_from: lock_refresh
    - name: Another run tries to take either lock
      roce.fabric.run_lock:
        path: "{{ item }}"
        owner: run-other
        stale_after: 60
      loop: [/var/lib/roce-fabric/validate.lock, /var/lib/roce-fabric/unrefreshed.lock]
      register: other
      failed_when: false
""" % json.dumps(BACKDATE)[1:-1]


def test_a_validation_longer_than_stale_after_keeps_its_lock_through_the_role_s_refresh(gpu1):
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "play.yml"), "w") as handle:
            handle.write(PLAY)
        env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
        proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, os.path.join(folder, "play.yml")], env=env,
                              capture_output=True, text=True, cwd=REPO, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    other = [t for t in tasks if t["task"]["name"] == "Another run tries to take either lock"][0]["hosts"]["gpu1"]
    # The refreshed lock is still the long run's (refused: locked); the one nothing refreshed was taken over.
    found = [(r.get("failure"), (r.get("taken_over") or {}).get("owner")) for r in other["results"]]
    assert found == [("locked", None), (None, "run-long")], found
    refreshed = [t for t in tasks if t["task"]["name"].endswith("Refresh this host's validation lock (a long run keeps it)")]
    assert refreshed and refreshed[0]["hosts"]["gpu1"].get("skipped") is not True, [t["task"]["name"] for t in tasks]
