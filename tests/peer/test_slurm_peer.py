"""roce.fabric.slurm_node and the node_drain role against the lab's Slurm cluster (lab host slurm1: Debian's own
slurmctld 22.05 and munged, a slurmd in the namespaces of gpu1 and gpu2, which are its compute nodes; lab/slurm/).
Every case reads Slurm's own state from outside (scontrol, squeue) and the firmware simulator's on gpu1."""

import re
import time

import pytest

from conftest import INVENTORY, LAB, run_module
from test_nic_firmware_image_peer import CX6DX, CX7, PSID_CX6DX, PSID_CX7, burns, controller_image, firmware_playbook, images

MODULE = "roce.fabric.slurm_node"


@pytest.fixture(scope="module")
def slurm(lab):
    LAB.up("slurm1")
    conf = LAB.artifact("slurm1", "slurm.conf")
    yield conf
    LAB.down("slurm1")


@pytest.fixture
def cluster(slurm):
    """Every job cancelled, every node idle."""
    LAB.reset("slurm1")
    return slurm


def sh(*argv):
    proc = LAB.exec("slurm1", list(argv), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def node(name):
    """(State, Reason) as scontrol prints them."""
    line = sh("scontrol", "--oneliner", "show", "node", name)
    state = re.search(r" State=(\S+)", line).group(1)
    reason = line.partition(" Reason=")[2].strip() or None
    return state, reason


def job_on(name, job_name="train-llm"):
    """A batch job that holds node ``name`` until cancelled; its id once it runs."""
    # Its output nowhere: the job runs in the submitting folder.
    submitted = sh("sbatch", "-w", name, "-J", job_name, "--output=/dev/null", "--wrap", "sleep 600")
    job = re.search(r"Submitted batch job (\d+)", submitted).group(1)
    deadline = time.time() + 60
    while time.time() < deadline:
        if sh("squeue", "--noheader", "-j", job, "-o", "%T").strip() == "RUNNING":
            return job
        time.sleep(0.5)
    raise AssertionError("job %s did not start on %s" % (job, name))


def slurm_node(conf, check=False, **args):
    return run_module(INVENTORY, "slurm1", MODULE, dict(dict(slurm_conf=conf, poll_interval=1), **args), check=check,
                      connection="local")


def wait_idle(name, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if node(name)[0] == "IDLE":
            return
        time.sleep(1)
    raise AssertionError("%s is %s, not IDLE" % (name, node(name)))


def test_a_drain_waits_for_the_job_names_it_and_only_our_drain_is_resumed(cluster):
    job = job_on("gpu1")
    checked = slurm_node(cluster, check=True, name="gpu1", state="drained", reason="reboot: test")
    assert checked["changed"] is True and [j["id"] for j in checked["jobs"]] == [job] and node("gpu1")[0] == "ALLOCATED"
    held = slurm_node(cluster, name="gpu1", state="drained", reason="reboot: test", wait_timeout=3)
    assert held["failed"] is True and held["failure"] == "jobs_running", held
    assert "Slurm node gpu1 is drained but jobs still run on it after 3 s: %s (root, RUNNING, train-llm)" % job in held["msg"]
    state, reason = node("gpu1")
    assert state == "ALLOCATED+DRAIN" and reason.startswith("roce.fabric: reboot: test [root@"), (state, reason)
    # The job ends within the wait: the next drain (ours already) returns once the node is idle.
    sh("scancel", job)
    done = slurm_node(cluster, name="gpu1", state="drained", reason="reboot: test", wait_timeout=60)
    assert done["changed"] is False and done["drained_by"] == "roce.fabric" and done["jobs"] == [], done
    assert done["state"] == "IDLE+DRAIN" == node("gpu1")[0]
    back = slurm_node(cluster, name="gpu1", state="resumed")
    assert back["changed"] is True and node("gpu1")[1] is None, back
    # Slurm marks a resumed node not responding until its next ping of the slurmd answers.
    wait_idle("gpu1")
    assert slurm_node(cluster, name="gpu1", state="resumed")["changed"] is False


def test_someone_elses_drain_stays_and_bad_input_changes_nothing(cluster):
    sh("scontrol", "update", "NodeName=gpu2", "State=DRAIN", "Reason=admin: bad DIMM B2")
    before = node("gpu2")
    drained = slurm_node(cluster, name="gpu2", state="drained", reason="reboot: test")
    assert drained["changed"] is False and drained["drained_by"] == "other", drained
    # Who drained it and when, split from the reason as scontrol prints them: the evidence of whose drain it is.
    assert (drained["reason"], drained["reason_user"]) == ("admin: bad DIMM B2", "root"), drained
    assert drained["reason_time"] and drained["reason_time"] in before[1]
    assert drained["note"] == "gpu2 drained or down already by someone else (admin: bad DIMM B2, set by root at %s): " \
                              "left so" % drained["reason_time"]
    resumed = slurm_node(cluster, name="gpu2", state="resumed")
    assert resumed["changed"] is False and "left drained" in resumed["note"]
    assert node("gpu2") == before and before[1].startswith("admin: bad DIMM B2 [root@")
    for args, words in ((dict(name="gpu[1-2]"), "name must be one Slurm node name"),
                        (dict(name="gpu1", reason="x\nState=DOWN"), "reason must be one line"),
                        (dict(name="gpu9"), "Node gpu9 not found")):
        result = slurm_node(cluster, **dict(dict(state="drained", reason="reboot: test"), **args))
        assert result["failed"] is True and words in result["msg"], result
    assert node("gpu1") == ("IDLE", None) and node("gpu2") == before


def test_the_rolling_play_waits_for_the_job_and_resumes_the_node_after_its_checks(cluster, gpu1, tmp_path):
    """playbooks/nic_firmware.yml with Slurm draining: a running job keeps gpu1 from its live reset and reboot (named,
    the node left drained); once the job is gone the node is drained, reset, rebooted (its slurmd starts again at
    boot), checked and resumed."""
    cx6dx, cx6dx_digest = controller_image(tmp_path, "fw-cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    cx7, cx7_digest = controller_image(tmp_path, "fw-cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX6DX: dict(version="22.45.3608", src=cx6dx, sha256=cx6dx_digest),
                PSID_CX7: dict(version="28.43.1014", src=cx7, sha256=cx7_digest)}
    drain = dict(roce_drain_slurm=True, roce_drain_slurm_host="slurm1", roce_drain_slurm_conf=cluster, roce_drain_timeout=3)
    job = job_on("gpu1")
    held = firmware_playbook(versions, **drain)
    assert held.returncode != 0 and "jobs still run on it after 3 s: %s (root, RUNNING, train-llm)" % job in held.stdout, \
        held.stdout[-3000:]
    assert len(burns(gpu1)) == 2 and gpu1.reboots() == 0
    assert not [c for c in gpu1.mutating_calls() if "reset" in c["argv"]]
    assert node("gpu1")[0] == "ALLOCATED+DRAIN"

    sh("scancel", job)
    done = firmware_playbook(versions, **drain)
    assert done.returncode == 0, done.stdout[-3000:]
    assert gpu1.reboots() == 1 and images(gpu1)[CX7]["running"] == "28.43.1014" and images(gpu1)[CX6DX]["running"] == "22.45.3608"
    # Resumed after its checks; its slurmd came back with the host.
    wait_idle("gpu1")
    assert node("gpu1") == ("IDLE", None)
    assert sh("squeue", "--noheader") == ""
