"""The rdma_image role and roce.fabric.container_image against a real builder on this machine (podman with the runc
runtime; no registry can be reached, so the base is a Debian image made here by lab/image/base.py): every documented
variant of the Containerfile renders and lints clean with hadolint; the inbox variant builds, a second run builds
nothing, check mode of a changed Containerfile builds nothing, and the image holds rdma-core, perftest and Open MPI;
bad input is refused with podman's image store unchanged.

This machine's kernel has no RDMA devices and no Soft-RoCE module (libibverbs in the image reports "Failed to get IB
devices list: Function not implemented"), so here the test stops at the image's own tools answering; RDMA from inside
the container runs on the lab's VMs (test_rdma_image_vm_peer.py, in the validate tier)."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import REPO
from door import Lab

NAME = "localhost/roce-fabric/rdma-job-test"
TAG = "inbox-test"
# The lab's podman: crun cannot run under this machine's hybrid cgroup layout, runc can; the build never pulls.
BUILDER_ARGS = ["--runtime=runc", "--pull=never"]
RUN = ["podman", "run", "--rm", "--runtime", "runc", "--ulimit", "nofile=1024:20000", "--ulimit", "nproc=4096:4096"]


def have_podman():
    return shutil.which("podman") is not None and shutil.which("runc") is not None


pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not have_podman(), reason="needs root, podman and runc")


def images():
    """podman's image store: every reference and its id."""
    out = subprocess.run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"], capture_output=True,
                         text=True, check=True).stdout
    return sorted(out.splitlines())


def play(tmp_path, hosts, check=False):
    """playbooks/rdma_image.yml on local build hosts, each with its own variables (``hosts``: name -> vars)."""
    inventory = dict(all=dict(children=dict(rdma_image_builders=dict(hosts=dict(
        (name, dict(variables, ansible_connection="local", ansible_python_interpreter=os.path.join(REPO, ".venv", "bin", "python")))
        for name, variables in hosts.items())))))
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inventory))
    argv = ["ansible-playbook", "-i", str(path), os.path.join(REPO, "playbooks", "rdma_image.yml")]
    if check:
        argv.append("--check")
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, check=False)
    try:
        # Every play's tasks: the playbook's own after its preflight.
        tasks = [task for one in json.loads(proc.stdout)["plays"] for task in one["tasks"]]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("no result (rc=%d): %s %s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-2000:]))
    return proc.returncode, tasks


def result(tasks, host, task):
    for item in tasks:
        # Role tasks are named "<role> : <task>".
        if item["task"]["name"].split(" : ")[-1] == task and host in item["hosts"]:
            return item["hosts"][host]
    return None


BUILD = "Build the image where its context changed, and push it when asked"


@pytest.fixture(scope="module")
def base():
    return Lab.base_image()


def test_every_documented_variant_renders_and_lints_clean(tmp_path):
    installer = tmp_path / "MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.tgz"
    installer.write_bytes(b"stand-in")
    key = tmp_path / "key.asc"
    key.write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\n")
    common = dict(rdma_image_build=False, rdma_image_tag="v1")
    variants = {
        "inbox_debian": dict(rdma_image_base="debian:12.8-slim", rdma_image_driver="inbox"),
        "inbox_rhel": dict(rdma_image_base="rockylinux/rockylinux:9.5", rdma_image_os_family="redhat",
                           rdma_image_driver="inbox"),
        "mlnx_ofed_ngc": dict(rdma_image_base="nvcr.io/nvidia/pytorch:24.10-py3", rdma_image_driver="mlnx_ofed",
                              rdma_image_ofed_version="24.10-1.1.4.0", rdma_image_ofed_installer=str(installer),
                              rdma_image_mpi=False, rdma_image_nccl_tests=True,
                              rdma_image_nccl_tests_sha256="0" * 64, rdma_image_nccl_tests_mpi_home="/opt/hpcx/ompi"),
        "doca_ofed_repo": dict(rdma_image_base="nvcr.io/nvidia/cuda:12.6.2-devel-ubuntu22.04",
                               rdma_image_driver="doca_ofed", rdma_image_ofed_version="2.9.1",
                               rdma_image_ofed_repo_url="https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/",
                               rdma_image_ofed_repo_key_url="file://%s" % key,
                               rdma_image_ofed_packages=["doca-ofed-userspace"]),
    }
    hosts = dict((name, dict(common, rdma_image_dir=str(tmp_path / name), **variables))
                 for name, variables in variants.items())
    rc, tasks = play(tmp_path, hosts)
    assert rc == 0, json.dumps(tasks)[-3000:]
    for name in variants:
        path = tmp_path / name / "rdma-job" / "Containerfile"
        text = path.read_text()
        assert text.startswith("# Ansible managed") and "FROM %s\n" % variants[name]["rdma_image_base"] in text
        lint = subprocess.run(["hadolint", "--no-color", str(path)], capture_output=True, text=True, check=False)
        assert lint.returncode == 0, (name, lint.stdout, text)
        assert result(tasks, name, BUILD).get("skipped") is True
    ngc = (tmp_path / "mlnx_ofed_ngc" / "rdma-job" / "Containerfile").read_text()
    assert "mlnxofedinstall --user-space-only --without-fw-update --force" in ngc
    assert "sha256sum -c -" in ngc and "MPI_HOME=/opt/hpcx/ompi" in ngc and "openmpi-bin" not in ngc
    assert (tmp_path / "mlnx_ofed_ngc" / "rdma-job" / installer.name).read_bytes() == b"stand-in"
    repo = (tmp_path / "doca_ofed_repo" / "rdma-job" / "Containerfile").read_text()
    assert "signed-by=/etc/apt/keyrings/roce-fabric-ofed.asc" in repo and "doca-ofed-userspace" in repo
    assert "dnf install -y rdma-core" in (tmp_path / "inbox_rhel" / "rdma-job" / "Containerfile").read_text()


def test_the_inbox_variant_builds_once_and_carries_the_rdma_user_space(base, tmp_path):
    subprocess.run(["podman", "rmi", "--force", "%s:%s" % (NAME, TAG)], capture_output=True, check=False)
    host = dict(rdma_image_name=NAME, rdma_image_tag=TAG, rdma_image_base=base, rdma_image_driver="inbox",
                rdma_image_dir=str(tmp_path / "ctx"), rdma_image_builder="podman", rdma_image_builder_args=BUILDER_ARGS)
    rc, tasks = play(tmp_path, dict(builder=host))
    built = result(tasks, "builder", BUILD)
    assert rc == 0 and built["changed"] is True and built["image"]["built"] is True, json.dumps(tasks)[-3000:]
    assert built["image"]["builder"] == "podman" and built["commands"][0].startswith("/usr/bin/podman build --file ")
    store = images()
    labels = json.loads(subprocess.run(["podman", "image", "inspect", "%s:%s" % (NAME, TAG)], capture_output=True,
                                       text=True, check=True).stdout)[0]["Config"]["Labels"]
    assert labels["org.roce-fabric.context"] == built["image"]["context_digest"]
    assert labels["org.roce-fabric.driver"] == "inbox"

    # Nothing changed: nothing built, one inspect.
    rc, tasks = play(tmp_path, dict(builder=host))
    again = result(tasks, "builder", BUILD)
    assert rc == 0 and again["changed"] is False and again["commands"] == [], again
    assert images() == store

    # A changed Containerfile in check mode: reported, nothing built, the file left as it was.
    containerfile = tmp_path / "ctx" / NAME.rsplit("/", 1)[1] / "Containerfile"
    before = containerfile.read_text()
    rc, tasks = play(tmp_path, dict(builder=dict(host, rdma_image_packages=["iproute2"])), check=True)
    assert rc == 0 and result(tasks, "builder", "The Containerfile")["changed"] is True
    assert containerfile.read_text() == before and images() == store

    tools = subprocess.run(RUN + ["%s:%s" % (NAME, TAG), "bash", "-c",
                                  "ib_write_bw --version; mpirun --version | head -1; ibv_devices; "
                                  "dpkg-query -W -f '${Package} ${Version}\\n' rdma-core perftest"],
                           capture_output=True, text=True, check=False)
    out = tools.stdout + tools.stderr
    assert "Version: " in out and "Open MPI" in out, out
    assert "rdma-core 44.0" in out and "perftest 4.5" in out, out
    # This machine's kernel: no RDMA devices for the container to see.
    assert "Failed to get IB devices list" in out, out


@pytest.mark.parametrize("args, message", [
    (dict(tag="latest"), "tag 'latest' moves"),
    (dict(name="Localhost/Roce"), "must be an image name"),
    (dict(push=True, name="roce-fabric/rdma-job"), "push needs a name that starts with a registry host"),
    (dict(builder_args=["--tag=evil:1"]), "sets what the module sets itself"),
    (dict(builder_args=["--network", "host"]), "one --flag or --flag=value"),
    (dict(builder_args=["--network=host;touch /tmp/roce-pwned"]), "one --flag or --flag=value"),
    (dict(build_args={"A B": "1"}), "build argument name"),
    (dict(file="../Containerfile"), "must be a file name in the context"),
])
def test_bad_module_input_is_refused_and_builds_nothing(tmp_path, args, message):
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Containerfile").write_text("FROM scratch\n")
    store = images()
    arguments = dict(dict(name="localhost/roce-fabric/bad", tag="v1", context=str(context), builder="podman"), **args)
    proc = subprocess.run(["ansible", "-i", "localhost,", "localhost", "-c", "local", "-m", "roce.fabric.container_image",
                           "-a", json.dumps(arguments), "-e", "ansible_python_interpreter=%s" % os.path.join(REPO, ".venv", "bin", "python")],
                          capture_output=True, text=True, cwd=REPO, env=dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
                                                                             ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json"),
                          check=False)
    out = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert out.get("failed") is True and message in out["msg"] and "nothing was changed" in out["msg"], out
    assert out.get("commands") == [] and images() == store
    assert not os.path.exists("/tmp/roce-pwned")


@pytest.mark.parametrize("variables, message", [
    (dict(rdma_image_base="debian"), "must be pinned"),
    (dict(rdma_image_name="Roce/../../etc"), "the image name"),
    (dict(rdma_image_base="debian:latest"), "must be pinned"),
    (dict(rdma_image_driver="mlnx_ofed", rdma_image_ofed_version="24.10-1.1.4.0"), "either an installer tarball"),
    (dict(rdma_image_nccl_tests=True), "nccl-tests needs the SHA-256"),
    (dict(rdma_image_packages=["perftest; touch /tmp/roce-pwned"]), "package names"),
])
def test_bad_role_input_is_refused_and_writes_nothing(tmp_path, variables, message):
    store = images()
    host = dict(dict(rdma_image_tag="v1", rdma_image_base="debian:12.8-slim", rdma_image_dir=str(tmp_path / "ctx")),
                **variables)
    rc, tasks = play(tmp_path, dict(builder=host))
    failed = [item["hosts"]["builder"] for item in tasks if item["hosts"].get("builder", {}).get("failed")]
    # The checks are one assert looped over its conditions: the failed item says which.
    messages = [r["msg"] for r in failed[0].get("results", []) if r.get("failed")] if failed else []
    assert rc != 0 and messages and message in messages[0] and "Nothing was written or built" in messages[0], tasks
    assert not (tmp_path / "ctx").exists() and images() == store
