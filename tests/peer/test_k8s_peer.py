"""The k8s_rdma_network and k8s_rdma_job roles against a real kube-apiserver (lab host k8s1).

The server's state is read from outside with the Kubernetes Python client, and every request that
could change it is counted from the server's audit log, so "no change" means no write was sent.
"""

import contextlib
import copy
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

import pytest
import yaml

from conftest import INVENTORY, LAB, REPO, labctl

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import config as k8s_config  # noqa: E402
from kubernetes.dynamic import DynamicClient  # noqa: E402
from kubernetes.dynamic.exceptions import ApiException, NotFoundError, ResourceNotFoundError  # noqa: E402

HOST = "k8s1"
PLAYBOOK = os.path.join(REPO, "playbooks", "kubernetes.yml")
MUTATING = ("create", "update", "patch", "delete", "deletecollection")
with open(os.path.join(REPO, "inventories", "lab", "group_vars", "k8s_clusters.yml")) as _handle:
    LAB_VARS = yaml.safe_load(_handle)


class Cluster(object):
    """The lab's API server, read from outside."""

    def __init__(self):
        self.kubeconfig = LAB.artifact(HOST, "kubeconfig")
        self.api = DynamicClient(k8s_config.new_client_from_config(self.kubeconfig))

    def resource(self, api_version, kind):
        return self.api.resources.get(api_version=api_version, kind=kind)

    def names(self, api_version, kind, namespace=None, labelled=True):
        selector = "app.kubernetes.io/part-of=k8s-rdma-network" if labelled else None
        try:
            items = self.resource(api_version, kind).get(namespace=namespace, label_selector=selector).to_dict()["items"]
        except Exception:  # the kind is not served (its CRD is absent, or was just deleted)
            return []
        return sorted(i["metadata"]["name"] for i in items)

    def get(self, api_version, kind, name, namespace=None):
        try:
            return self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None

    def snapshot(self):
        """Every object of the role's kinds, with resourceVersions: equal snapshots mean nothing changed."""
        kinds = [("apiextensions.k8s.io/v1", "CustomResourceDefinition", None), ("apps/v1", "DaemonSet", "kube-system"),
                 ("v1", "ConfigMap", "kube-system"), ("v1", "ServiceAccount", "kube-system"),
                 ("rbac.authorization.k8s.io/v1", "ClusterRole", None), ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "default")]
        state = {}
        for api_version, kind, namespace in kinds:
            try:
                items = self.resource(api_version, kind).get(namespace=namespace).to_dict()["items"]
            except Exception:
                items = []
            for item in items:
                state["%s/%s/%s" % (kind, namespace, item["metadata"]["name"])] = item["metadata"]["resourceVersion"]
        return state

    def audit_mark(self):
        with open(LAB.artifact(HOST, "audit")) as handle:
            return len(handle.readlines())

    def writes_since(self, mark, users=("admin", "viewer", "nobody"), reviews=True):
        """Successful write requests since mark by the test's users; server-side dry runs store nothing and
        are left out; access reviews (POSTs that store nothing either) are counted unless reviews=False."""
        events = []
        with open(LAB.artifact(HOST, "audit")) as handle:
            for number, line in enumerate(handle):
                if number < mark:
                    continue
                event = json.loads(line)
                code = (event.get("responseStatus") or {}).get("code", 0)
                if "dryRun=All" in event.get("requestURI", ""):
                    continue
                if not reviews and event["objectRef"].get("resource") == "selfsubjectaccessreviews":
                    continue
                if event["verb"] in MUTATING and event["user"]["username"] in users and 200 <= code < 300:
                    events.append("%s %s %s" % (event["verb"], event["objectRef"].get("resource"), event["objectRef"].get("name")))
        return events


def playbook(extra_vars=None, check=False, playbook_path=PLAYBOOK, tasks=None):
    """Run a playbook against k8s1; returns (rc, stats of k8s1, messages of failed tasks, stdout)."""
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    argv = ["ansible-playbook", "-i", INVENTORY, "--limit", HOST, playbook_path]
    for key, value in (extra_vars or {}).items():
        argv += ["-e", json.dumps({key: value})]
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    try:
        output = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from ansible-playbook (rc=%d)\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    failures = []
    for play in output["plays"]:
        for task in play["tasks"]:
            result = task["hosts"].get(HOST) or {}
            if result.get("failed"):
                failures.append(result.get("msg") or json.dumps(result)[:2000])
                failures.extend(item.get("msg", "") for item in result.get("results", []) if item.get("failed"))
    return proc.returncode, output["stats"].get(HOST, {}), failures, proc.stdout


@pytest.fixture(scope="module")
def k8s_lab():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    labctl("up", HOST)
    yield HOST
    labctl("down", HOST)


@pytest.fixture
def cluster(k8s_lab):
    """The running API server, as the previous test left it (credentials are read anew after a reset)."""
    return Cluster()


@pytest.fixture
def deployed(k8s_lab):
    """The lab inventory's full set applied (once: later tests find it in place)."""
    current = Cluster()
    if current.names("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "default") != expected_nads():
        rc, stats, failures, out = playbook()
        assert rc == 0, failures
    return current


@pytest.fixture
def fresh(k8s_lab):
    """An empty API server for the test (a new etcd)."""
    labctl("reset", HOST)
    return Cluster()


def expected_nads():
    return sorted([r["network_name"] for r in LAB_VARS["k8s_rdma_network_sriov_resources"]]
                  + [n["name"] for n in LAB_VARS["k8s_rdma_network_host_device_networks"]]
                  + [n["name"] for n in LAB_VARS["k8s_rdma_network_macvlan_networks"]])


def test_apply_idempotent_check_and_remove(fresh):
    rc, stats, failures, out = playbook()
    assert rc == 0, failures
    assert stats["changed"] >= 3 and stats["failures"] == 0
    assert fresh.names("apiextensions.k8s.io/v1", "CustomResourceDefinition") == [
        "ippools.whereabouts.cni.cncf.io", "mpijobs.kubeflow.org",
        "network-attachment-definitions.k8s.cni.cncf.io", "overlappingrangeipreservations.whereabouts.cni.cncf.io"]
    for name in fresh.names("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        crd = fresh.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        assert {"type": "Established", "status": "True"}.items() <= dict(
            (c["type"], c) for c in crd["status"]["conditions"])["Established"].items()
    assert fresh.names("apps/v1", "DaemonSet", "kube-system") == [
        "kube-cni-plugins-ds", "kube-multus-ds", "kube-sriov-cni-ds", "kube-sriov-device-plugin", "rdma-shared-dp-ds", "whereabouts"]
    assert fresh.names("apps/v1", "Deployment", "mpi-operator") == ["mpi-operator"]
    assert fresh.names("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "default") == expected_nads()

    # What the server stored is what the inventory asked for.
    nad = fresh.get("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "sriov111", "default")
    config = json.loads(nad["spec"]["config"])
    assert config == {"cniVersion": "0.3.1", "name": "sriov111", "type": "sriov", "vlan": 111, "spoofchk": "off", "trust": "on",
                      "ipam": {"type": "whereabouts", "range": "10.111.0.0/24"}}
    assert nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "intel.com/sriov_111"
    hostdev = json.loads(fresh.get("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "hostdev-ens192", "default")["spec"]["config"])
    assert hostdev["type"] == "host-device" and hostdev["device"] == "ens192" and hostdev["ipam"]["type"] == "whereabouts"
    dp = json.loads(fresh.get("v1", "ConfigMap", "sriovdp-config", "kube-system")["data"]["config.json"])
    assert [r["resourceName"] for r in dp["resourceList"]] == ["sriov_111", "sriov_112"]
    assert dp["resourceList"][0]["selectors"] == {"vendors": ["15b3"], "devices": ["101c"], "drivers": ["mlx5_core"],
                                                  "pfNames": ["ens1f0np0"], "isRdma": True}
    rdma = json.loads(fresh.get("v1", "ConfigMap", "rdma-devices", "kube-system")["data"]["config.json"])
    assert rdma["configList"][0]["selectors"] == {"ifNames": ["ens192"]}
    images = [c["image"] for c in fresh.get("apps/v1", "DaemonSet", "kube-multus-ds", "kube-system")["spec"]["template"]["spec"]["containers"]]
    assert images == ["ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.0"]

    before = fresh.snapshot()
    mark = fresh.audit_mark()
    rc, stats, failures, out = playbook()
    assert rc == 0 and stats["changed"] == 0, failures
    rc, stats, failures, out = playbook(check=True)
    assert rc == 0 and stats["changed"] == 0, failures
    assert fresh.writes_since(mark) == []
    assert fresh.snapshot() == before

    # Drift is put back: someone edits the device plugin's ConfigMap.
    cm = fresh.resource("v1", "ConfigMap")
    cm.patch(name="sriovdp-config", namespace="kube-system", body={"data": {"config.json": "{}"}},
             content_type="application/merge-patch+json")
    rc, stats, failures, out = playbook()
    assert rc == 0 and stats["changed"] == 1, failures
    assert json.loads(fresh.get("v1", "ConfigMap", "sriovdp-config", "kube-system")["data"]["config.json"]) == dp

    # A network taken out of the inventory is not removed by present (it is only ever added); removal removes all.
    rc, stats, failures, out = playbook({"k8s_rdma_network_state": "absent"}, check=True)
    assert rc == 0 and stats["changed"] >= 1, failures
    assert fresh.names("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "default") == expected_nads()
    rc, stats, failures, out = playbook({"k8s_rdma_network_state": "absent", "k8s_rdma_network_remove_crds": True})
    assert rc == 0 and stats["changed"] >= 1, failures
    assert fresh.names("apps/v1", "DaemonSet", "kube-system", labelled=False) == []
    assert fresh.names("v1", "ConfigMap", "kube-system") == []
    assert fresh.names("apiextensions.k8s.io/v1", "CustomResourceDefinition") == []
    mark = fresh.audit_mark()
    rc, stats, failures, out = playbook({"k8s_rdma_network_state": "absent", "k8s_rdma_network_remove_crds": True})
    assert rc == 0 and stats["changed"] == 0, failures
    assert fresh.writes_since(mark) == []


def bad_input(change):
    variables = {key: copy.deepcopy(value) for key, value in LAB_VARS.items() if key.startswith("k8s_rdma_network_")}
    change(variables)
    return variables


@pytest.mark.parametrize("change,message", [
    (lambda v: v["k8s_rdma_network_sriov_resources"][1].update(vlan_id=4095),
     "sriov_resources[1]: vlan_id 4095 is out of range 0-4094"),
    (lambda v: v["k8s_rdma_network_sriov_resources"][1].update(res_name="sriov_111"),
     "sriov_resources[1]: resource name 'sriov_111' is already used by sriov_resources[0]"),
    (lambda v: v["k8s_rdma_network_sriov_resources"][0].update(pf_name="ens1f0/np0"),
     "sriov_resources[0]: pf_name 'ens1f0/np0' is not an interface name"),
    (lambda v: v.update(k8s_rdma_network_sriov_dev_id="0x101c"),
     "sriov_dev_id: '0x101c' is not a PCI ID of four hexadecimal digits"),
    (lambda v: v.update(k8s_rdma_network_extra_networks=[{"name": "raw", "config": '{"cniVersion": "0.3.1", "type": "sriov",'}]),
     "extra_networks[0] (raw): CNI config is not valid JSON"),
], ids=["vlan-range", "duplicate-resource", "pf-name", "hex-device-id", "malformed-cni-json"])
def test_bad_input_changes_nothing(deployed, change, message):
    # On a server that already holds a deployment, so "unchanged" is a real assertion.
    cluster = deployed
    before = cluster.snapshot()
    mark = cluster.audit_mark()
    rc, stats, failures, out = playbook(bad_input(change))
    assert rc != 0
    assert any(message in f and "nothing was applied" in f for f in failures), failures
    assert cluster.writes_since(mark) == []
    assert cluster.snapshot() == before


def kubeconfig_variant(tmp_path, name, server=None):
    with open(LAB.artifact(HOST, name)) as handle:
        config = json.load(handle)
    if server:
        config["clusters"][0]["cluster"]["server"] = server
    path = tmp_path / ("%s.json" % name)
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("variant,message", [
    ("unreachable", "cannot be used with kubeconfig"),
    ("badtoken", "Unauthorized"),
    ("viewer", "forbidden"),
])
def test_api_faults_change_nothing(deployed, tmp_path, variant, message):
    fresh = deployed
    if variant == "unreachable":
        kubeconfig = kubeconfig_variant(tmp_path, "kubeconfig", server="https://127.0.0.1:6449")
    elif variant == "badtoken":
        kubeconfig = kubeconfig_variant(tmp_path, "kubeconfig-badtoken")
    else:
        kubeconfig = kubeconfig_variant(tmp_path, "kubeconfig-viewer")
    before = fresh.snapshot()
    mark = fresh.audit_mark()
    rc, stats, failures, out = playbook({"k8s_rdma_network_kubeconfig": kubeconfig})
    assert rc != 0
    assert any(message.lower() in f.lower() and "nothing was applied" in f.lower() for f in failures), failures
    assert fresh.writes_since(mark) == []
    assert fresh.snapshot() == before


def test_server_rejects_a_nad_that_breaks_the_crd_schema(deployed):
    cluster = deployed
    nads = cluster.resource("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
    body = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition", "metadata": {"name": "broken", "namespace": "default"},
            "spec": {"config": {"cniVersion": "0.3.1", "type": "sriov"}}}
    with pytest.raises(ApiException) as err:
        nads.create(body=body, namespace="default")
    assert err.value.status == 422 and "spec.config" in err.value.body
    # Every NAD the role wrote is CNI JSON the role's own checks accept.
    for name in expected_nads():
        config = json.loads(cluster.get("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", name, "default")["spec"]["config"])
        assert config["cniVersion"] == "0.3.1" and config["name"] == name and config["type"] in ("sriov", "host-device", "macvlan")
        assert config["ipam"]["type"] == "whereabouts"


JOB_PLAY = """
- name: NCCL job
  hosts: k8s_clusters
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  roles:
    - role: roce.fabric.k8s_rdma_job
"""


@pytest.mark.parametrize("kind,workload", [("mpijob", "nccl-tests"), ("mpijob", "pytorch-ddp"), ("pods", "pytorch-ddp")])
def test_job_templates_are_accepted_by_the_server(deployed, tmp_path, kind, workload):
    cluster = deployed  # the MPIJob CRD and the networks are in place
    play = tmp_path / "job.yml"
    play.write_text(JOB_PLAY)
    variables = {"k8s_rdma_job_kind": kind, "k8s_rdma_job_workload": workload, "k8s_rdma_job_name": "allreduce-" + kind,
                 "k8s_rdma_job_networks": ["sriov111", "sriov112"], "k8s_rdma_job_shm_size": "32Gi",
                 "k8s_rdma_job_resources": {"intel.com/sriov_111": 1, "intel.com/sriov_112": 1},
                 "k8s_rdma_job_nccl_env": {"NCCL_IB_DISABLE": "0", "NCCL_NET_GDR_LEVEL": 2, "NCCL_IB_HCA": "mlx5"},
                 "k8s_rdma_job_render_to": str(tmp_path / "rendered.yml")}
    mark = cluster.audit_mark()
    rc, stats, failures, out = playbook(variables, check=True, playbook_path=str(play))  # server-side dry run
    assert rc == 0 and stats["changed"] >= 1, failures
    assert cluster.writes_since(mark, reviews=False) == []
    rc, stats, failures, out = playbook(variables, playbook_path=str(play))
    assert rc == 0 and stats["changed"] >= 1, failures
    rendered = [d for d in yaml.safe_load_all((tmp_path / "rendered.yml").read_text()) if d]
    if kind == "mpijob":
        job = cluster.get("kubeflow.org/v2beta1", "MPIJob", "allreduce-mpijob", "default")
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
        assert worker["replicas"] == 2 and job["spec"]["slotsPerWorker"] == 8
        pod_meta, pod_spec = worker["template"]["metadata"], worker["template"]["spec"]
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
        assert launcher[:4] == ["mpirun", "--allow-run-as-root", "-np", "16"]
        assert ("-x", "NCCL_IB_HCA") in list(zip(launcher, launcher[1:]))
        if workload == "nccl-tests":
            assert launcher[-9:] == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "4G", "-f", "2", "-g", "1"]
    else:
        pods = [cluster.get("v1", "Pod", "allreduce-pods-%d" % i, "default") for i in range(2)]
        assert all(pods) and cluster.get("v1", "Service", "allreduce-pods", "default")["spec"]["clusterIP"] == "None"
        pod_meta, pod_spec = pods[1]["metadata"], pods[1]["spec"]
        assert "--node-rank=1" in pod_spec["containers"][0]["command"]
    assert pod_meta["annotations"]["k8s.v1.cni.cncf.io/networks"] == "sriov111,sriov112"
    container = pod_spec["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    # Quantities: strings in a Pod, kept as given (numbers) inside an MPIJob's template.
    limits = container["resources"]["limits"]
    assert "%s" % limits["intel.com/sriov_111"] == "1" and "%s" % limits["nvidia.com/gpu"] == "8"
    env = dict((e["name"], e["value"]) for e in container["env"])
    assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_NET_GDR_LEVEL"] == "2" and env["NCCL_IB_HCA"] == "mlx5"
    shm = [v for v in pod_spec["volumes"] if v["name"] == "dshm"][0]
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "32Gi"}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert [d["kind"] for d in rendered][-1] in ("MPIJob", "Pod")
    if (kind, workload) != ("mpijob", "nccl-tests"):
        return
    # Idempotent, then removed.
    rc, stats, failures, out = playbook(variables, playbook_path=str(play))
    assert rc == 0 and stats["changed"] == 0, failures
    rc, stats, failures, out = playbook(dict(variables, k8s_rdma_job_state="absent"), playbook_path=str(play))
    assert rc == 0 and stats["changed"] >= 1, failures
    assert cluster.names("v1", "Pod", "default", labelled=False) == []


def test_an_erdma_job_as_ack_runs_it(deployed, tmp_path):
    """The MPIJob equivalent of Alibaba's Arena command for eRDMA (arena submit mpijob --device=aliyun/erdma=1
    --hostNetwork true ... mpirun --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --mca pml ob1
    --mca btl ^openib), accepted and stored by the API server."""
    cluster = deployed
    play = tmp_path / "job.yml"
    play.write_text(JOB_PLAY)
    variables = {"k8s_rdma_job_name": "allreduce-erdma", "k8s_rdma_job_resources": {"aliyun/erdma": 1},
                 "k8s_rdma_job_host_network": True, "k8s_rdma_job_mpi_tcp_interfaces": ["eth0"],
                 "k8s_rdma_job_qos": None,
                 "k8s_rdma_job_nccl_env": {"NCCL_IB_HCA": "erdma", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"}}
    rc, stats, failures, out = playbook(variables, playbook_path=str(play))
    assert rc == 0 and stats["changed"] >= 1, failures
    job = cluster.get("kubeflow.org/v2beta1", "MPIJob", "allreduce-erdma", "default")
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    for spec in (launcher, worker):
        assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    argv = launcher["containers"][0]["command"]
    pairs = list(zip(argv, argv[1:], argv[2:]))
    for wanted in (("-mca", "btl_tcp_if_include", "eth0"), ("-mca", "oob_tcp_if_include", "eth0"),
                   ("-mca", "pml", "ob1"), ("-mca", "btl", "^openib")):
        assert wanted in pairs, (wanted, argv)
    limits = worker["containers"][0]["resources"]["limits"]
    assert "%s" % limits["aliyun/erdma"] == "1"
    env = dict((e["name"], e["value"]) for e in worker["containers"][0]["env"])
    assert env["NCCL_IB_HCA"] == "erdma" and "NCCL_IB_TC" not in env
    rc, stats, failures, out = playbook(variables, playbook_path=str(play))
    assert rc == 0 and stats["changed"] == 0, failures
    # Interface and resource names that are not names are refused before the server.
    mark = cluster.audit_mark()
    for bad in ({"k8s_rdma_job_mpi_tcp_interfaces": ["eth0 -x LD_PRELOAD=/tmp/x.so"]},
                {"k8s_rdma_job_resources": {"aliyun/erdma\n  hostPID: true": 1}}):
        rc, stats, failures, out = playbook(dict(variables, k8s_rdma_job_name="erdma-bad", **bad), playbook_path=str(play))
        assert rc != 0 and "Nothing was applied" in failures[0], failures
    assert cluster.writes_since(mark, reviews=False) == []
    rc, stats, failures, out = playbook(dict(variables, k8s_rdma_job_state="absent"), playbook_path=str(play))
    assert rc == 0 and stats["changed"] >= 1, failures


@pytest.mark.parametrize("variables", [
    {"k8s_rdma_job_shm_size": "16GB!"},
    # Hardening: values that used to be written into the YAML unquoted and would add fields of their own.
    {"k8s_rdma_job_image": "busybox\n    securityContext: {privileged: true}"},
    {"k8s_rdma_job_namespace": "default\n  labels: {x: y}"},
    {"k8s_rdma_job_shm_size": "1Gi}\n  - name: root\n    hostPath: {path: /}"},
    {"k8s_rdma_job_image": "busybox latest"},
])
def test_job_yaml_injection_and_bad_values_are_refused_before_the_server(deployed, tmp_path, variables):
    cluster = deployed
    play = tmp_path / "job.yml"
    play.write_text(JOB_PLAY)
    mark = cluster.audit_mark()
    bad = dict({"k8s_rdma_job_kind": "pods", "k8s_rdma_job_workload": "pytorch-ddp", "k8s_rdma_job_name": "badjob"}, **variables)
    for check in (True, False):
        rc, stats, failures, out = playbook(bad, check=check, playbook_path=str(play))
        assert rc != 0
        assert any("Nothing was applied" in f and "no spaces or quotes" in f for f in failures), failures
    assert cluster.get("v1", "Pod", "badjob-0", "default") is None
    assert cluster.writes_since(mark) == []


def test_check_mode_on_an_empty_server_stores_nothing(fresh):
    before = fresh.snapshot()
    rc, stats, failures, out = playbook(check=True)
    assert rc == 0, failures
    assert stats["changed"] >= 2
    assert "would be created after their CRD or namespace: mpi-operator, mpi-operator, sriov111, sriov112, hostdev-ens192, macvlan-ens2np0" in out
    assert fresh.snapshot() == before
    assert fresh.names("apiextensions.k8s.io/v1", "CustomResourceDefinition") == []


READ_ALL = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}


def grant_viewer(cluster, name, rules):
    """A ClusterRole of these rules, bound to the lab's user viewer (kubeconfig-viewer)."""
    cluster.resource("rbac.authorization.k8s.io/v1", "ClusterRole").create(body={
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
    cluster.resource("rbac.authorization.k8s.io/v1", "ClusterRoleBinding").create(body={
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]})


def test_rbac_user_that_may_read_but_not_write(fresh, tmp_path):
    """A user who can read everything the role reads is stopped by the access review, before any write."""
    grant_viewer(fresh, "lab-reader", [READ_ALL])
    before = fresh.snapshot()
    mark = fresh.audit_mark()
    rc, stats, failures, out = playbook({"k8s_rdma_network_kubeconfig": kubeconfig_variant(tmp_path, "kubeconfig-viewer")})
    assert rc != 0
    refusal = [f for f in failures if "may not create customresourcedefinitions, " in f and "nothing was applied" in f]
    assert refusal, failures
    # Every kind and namespace about to be written is named, each once.
    for words in ("create clusterroles", "create clusterrolebindings", "create serviceaccounts in kube-system",
                  "create daemonsets in kube-system", "create configmaps in kube-system",
                  "create network-attachment-definitions in default", "create deployments in mpi-operator",
                  "create namespaces"):
        assert refusal[0].count(words + ",") + refusal[0].count(words + ";") == 1, (words, refusal[0])
    assert fresh.writes_since(mark, reviews=False) == []
    assert fresh.snapshot() == before


def test_a_user_who_may_write_all_but_services_is_stopped_before_the_exporter(fresh, tmp_path):
    """The exporter's Service is reviewed like the rest: a user who may write everything else is refused, and the
    refusal names only what is denied; nothing is written, not even the ConfigMap and DaemonSet that were allowed."""
    writes = ["create", "patch", "update", "delete"]
    rules = [READ_ALL,
             {"apiGroups": [""], "resources": ["configmaps", "serviceaccounts"], "verbs": writes},
             {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": writes},
             # The NetworkAttachmentDefinition CRD and the inventory's networks, which the role keeps whatever else it does.
             {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": writes},
             {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["network-attachment-definitions"], "verbs": writes}]
    grant_viewer(fresh, "lab-no-services", rules)
    before = fresh.snapshot()
    mark = fresh.audit_mark()
    wanted = dict(EXPORTER, k8s_rdma_network_kubeconfig=kubeconfig_variant(tmp_path, "kubeconfig-viewer"))
    rc, stats, failures, out = playbook(wanted)
    assert rc != 0
    refusal = [f for f in failures if "may not" in f]
    assert len(refusal) == 1 and "may not create services in kube-system; nothing was applied" in refusal[0], failures
    assert fresh.writes_since(mark, reviews=False) == []
    assert fresh.snapshot() == before
    assert exporter_objects(fresh)["ConfigMap"] is None and exporter_objects(fresh)["DaemonSet"] is None


def test_a_user_who_may_create_roles_but_not_hold_their_rules_is_stopped_before_any_write(fresh, tmp_path):
    """Issue 37, 18: the reviews asked create and patch only. A user who may create every object the role writes,
    ClusterRoles and their bindings included, but holds neither the rules of those ClusterRoles nor escalate and bind,
    passed the review; the API server's privilege escalation check then refused the first ClusterRole, after the
    objects before it were written. The reviews ask escalate and bind too now: nothing is written."""
    writes = ["create", "patch", "update", "delete"]
    rules = [READ_ALL, {"apiGroups": ["", "apps", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "k8s.cni.cncf.io"],
                        "resources": ["*"], "verbs": writes}]
    grant_viewer(fresh, "lab-no-escalate", rules)
    before = fresh.snapshot()
    mark = fresh.audit_mark()
    rc, stats, failures, out = playbook({"k8s_rdma_network_kubeconfig": kubeconfig_variant(tmp_path, "kubeconfig-viewer")})
    assert rc != 0
    refusal = [f for f in failures if "may not" in f and "nothing was applied" in f]
    assert len(refusal) == 1, failures
    assert "escalate clusterroles" in refusal[0] and "bind clusterroles" in refusal[0], refusal[0]
    assert "create " not in refusal[0] and "patch " not in refusal[0], refusal[0]
    assert fresh.writes_since(mark, reviews=False) == []
    assert fresh.snapshot() == before


def make_node(cluster, name, allocatable):
    nodes = cluster.resource("v1", "Node")
    nodes.create(body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"roce-lab": "worker"}}})
    # The node status, as a kubelet with the device plugins registered would write it.
    capacity = dict({"cpu": "64", "memory": "512Gi", "pods": "110"}, **allocatable)
    nodes.status.patch(name=name, body={"status": {"capacity": capacity, "allocatable": capacity}},
                       content_type="application/merge-patch+json")


def test_node_check_names_nodes_and_missing_resources(fresh):
    make_node(fresh, "gpu-a", {"intel.com/sriov_111": "8", "intel.com/sriov_112": "8", "rdma/rdma_shared_ens192": "63"})
    make_node(fresh, "gpu-b", {"intel.com/sriov_111": "8"})
    rc, stats, failures, out = playbook({"k8s_rdma_network_check_node_selector": "roce-lab=worker"})
    assert rc != 0
    assert failures == ["k8s_rdma_network: 1 of 2 node(s) do not advertise every resource: gpu-b lacks intel.com/sriov_112, "
                        "rdma/rdma_shared_ens192. Check the VFs (sriov_numvfs), the device plugin pods' logs and their ConfigMap "
                        "selectors on those nodes."]
    # Everything was applied before the check: the check reads, it does not undo.
    assert fresh.names("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "default") == expected_nads()
    fresh.resource("v1", "Node").status.patch(
        name="gpu-b", content_type="application/merge-patch+json",
        body={"status": {"allocatable": {"intel.com/sriov_112": "8", "rdma/rdma_shared_ens192": "63"}}})
    rc, stats, failures, out = playbook({"k8s_rdma_network_check_node_selector": "roce-lab=worker"})
    assert rc == 0 and stats["changed"] == 0, failures
    # Reporting instead of failing.
    make_node(fresh, "gpu-c", {})
    rc, stats, failures, out = playbook({"k8s_rdma_network_node_check_fail": False})
    assert rc == 0, failures
    assert "gpu-c lacks intel.com/sriov_111, intel.com/sriov_112, rdma/rdma_shared_ens192" in out
    # A resource another component advertises (ACK's eRDMA controller: aliyun/erdma) is checked as well.
    fresh.resource("v1", "Node").status.patch(
        name="gpu-a", content_type="application/merge-patch+json", body={"status": {"allocatable": {"aliyun/erdma": "400"}}})
    rc, stats, failures, out = playbook({"k8s_rdma_network_check_node_selector": "roce-lab=worker",
                                         "k8s_rdma_network_check_resources": ["aliyun/erdma"],
                                         "k8s_rdma_network_node_check_retries": 0})
    assert rc != 0
    assert "2 of 3 node(s)" in failures[0] and "gpu-b lacks aliyun/erdma;" in failures[0], failures
    assert "gpu-a lacks" not in failures[0]
    mark = fresh.audit_mark()
    rc, stats, failures, out = playbook({"k8s_rdma_network_check_resources": ["aliyun/erdma; rm -rf /"]})
    assert rc != 0 and "takes resource names such as aliyun/erdma" in failures[0], failures
    assert fresh.writes_since(mark, reviews=False) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_an_apply_the_server_refuses_halfway_names_what_was_applied(deployed):
    """Issue 15 (9): one object of an apply is refused (a DaemonSet whose selector, immutable, differs from the
    role's), another is applied (a deleted ConfigMap). The failure names both, and the audit log agrees."""
    cluster = deployed
    daemonsets = cluster.resource("apps/v1", "DaemonSet")
    configmaps = cluster.resource("v1", "ConfigMap")
    ds_name = cluster.names("apps/v1", "DaemonSet", "kube-system")[0]
    cm_name = cluster.names("v1", "ConfigMap", "kube-system")[0]
    original = cluster.get("apps/v1", "DaemonSet", ds_name, "kube-system")
    changed = copy.deepcopy(original)
    changed["metadata"] = dict((k, v) for k, v in original["metadata"].items() if k in ("name", "namespace", "labels", "annotations"))
    changed.pop("status", None)
    changed["spec"]["selector"] = {"matchLabels": {"roce-lab-test": "other-selector"}}
    changed["spec"]["template"]["metadata"]["labels"] = {"roce-lab-test": "other-selector"}
    daemonsets.delete(name=ds_name, namespace="kube-system")
    daemonsets.create(body=changed, namespace="kube-system")
    configmaps.delete(name=cm_name, namespace="kube-system")
    try:
        mark = cluster.audit_mark()
        # Nodes an earlier test registered are not this test's subject.
        rc, stats, failures, out = playbook({"k8s_rdma_network_check_nodes": False})
        assert rc != 0
        report = [f for f in failures if "The API server refused 1 of" in f]
        assert report, failures
        assert "DaemonSet kube-system/%s (" % ds_name in report[0] and "immutable" in report[0], report[0]
        print("failure as reported: %s" % report[0])
        applied = report[0].split("Applied by this run: ", 1)[1].split(". Already as wanted", 1)[0]
        assert applied == "ConfigMap kube-system/%s" % cm_name, report[0]
        writes = cluster.writes_since(mark, reviews=False)
        assert "create configmaps %s" % cm_name in writes, writes
        assert not any(w.endswith(" daemonsets %s" % ds_name) for w in writes), writes
        assert cluster.get("apps/v1", "DaemonSet", ds_name, "kube-system")["spec"]["selector"] == changed["spec"]["selector"]
    finally:
        # The role's own DaemonSet back as it was (the role already recreated the ConfigMap).
        daemonsets.delete(name=ds_name, namespace="kube-system")
        restored = copy.deepcopy(original)
        restored["metadata"] = dict((k, v) for k, v in original["metadata"].items() if k in ("name", "namespace", "labels", "annotations"))
        restored.pop("status", None)
        daemonsets.create(body=restored, namespace="kube-system")


# The RDMA exporter as a DaemonSet (issue 17), with the other components off so that the runs are about it.
EXPORTER = {"k8s_rdma_network_exporter": True, "k8s_rdma_network_exporter_image": "registry.example.com/roce/rdma-exporter:1.0.0",
            "k8s_rdma_network_multus": False, "k8s_rdma_network_cni_plugins": False, "k8s_rdma_network_sriov": False,
            "k8s_rdma_network_rdma_shared_device_plugin": False, "k8s_rdma_network_whereabouts": False,
            "k8s_rdma_network_mpi_operator": False, "k8s_rdma_network_host_device_networks": [],
            "k8s_rdma_network_macvlan_networks": [], "k8s_rdma_network_check_nodes": False}
SERVICE_MONITOR_CRD = os.path.join(REPO, "tests", "peer", "fixtures", "monitoring.coreos.com_servicemonitors.yaml")


def exporter_objects(cluster):
    found = {}
    for api, kind in (("v1", "ConfigMap"), ("apps/v1", "DaemonSet"), ("v1", "Service"), ("monitoring.coreos.com/v1", "ServiceMonitor")):
        try:
            found[kind] = cluster.get(api, kind, "roce-rdma-exporter", "kube-system")
        except ResourceNotFoundError:  # the kind is not served (no ServiceMonitor CRD)
            found[kind] = None
    return found


def wait_established(cluster, name, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        crd = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name) or {}
        conditions = dict((c["type"], c["status"]) for c in (crd.get("status") or {}).get("conditions") or [])
        if conditions.get("Established") == "True":
            return
        time.sleep(1)
    raise AssertionError("CRD %s not Established after %d s" % (name, timeout))


def test_the_exporter_daemonset_its_service_and_servicemonitor(fresh, tmp_path):
    """The exporter's ConfigMap (the collection's program, which runs), DaemonSet (sysfs read-only, no privilege, the
    node's network), headless Service; its ServiceMonitor only where the Prometheus Operator's CRD is served (the
    real CRD, so the server checks the object against its schema); idempotent, check mode, removal; bad input and a
    required ServiceMonitor without its CRD change nothing."""
    cluster = fresh
    mark = cluster.audit_mark()
    for bad, words in ((dict(EXPORTER, k8s_rdma_network_exporter_image=""), "needs k8s_rdma_network_exporter_image"),
                       (dict(EXPORTER, k8s_rdma_network_exporter_image="evil:1\n  hostPID: true"), "needs k8s_rdma_network_exporter_image"),
                       (dict(EXPORTER, k8s_rdma_network_exporter_service_monitor="required"), "does not serve")):
        rc, stats, failures, out = playbook(bad)
        assert rc != 0 and any(words in f for f in failures), failures
    assert cluster.writes_since(mark, reviews=False) == []

    rc, stats, failures, out = playbook(EXPORTER)
    assert rc == 0, failures
    objects = exporter_objects(cluster)
    assert objects["ServiceMonitor"] is None and "does not serve the ServiceMonitor CRD" in out
    program = objects["ConfigMap"]["data"]["roce-rdma-exporter.py"]
    pod = objects["DaemonSet"]["spec"]["template"]
    assert pod["metadata"]["annotations"]["roce.fabric/program-sha256"] == hashlib.sha256(program.encode()).hexdigest()
    spec = pod["spec"]
    container = spec["containers"][0]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet" and not spec["automountServiceAccountToken"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 65534
    assert container["image"] == "registry.example.com/roce/rdma-exporter:1.0.0"
    assert container["command"] == ["python3", "-I", "/opt/roce-rdma-exporter/roce-rdma-exporter.py", "--port", "9879",
                                    "--sysfs", "/host/sys", "--listen-address", "$(POD_IP)", "--min-interval", "5",
                                    "--max-clients", "4"]
    # The pod's own address (the node's, on its network) from the downward API, not every address of the node.
    assert container["env"] == [{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}]
    assert container["resources"]["limits"] == {"cpu": "250m", "memory": "128Mi"}
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
    assert {"name": "sys", "mountPath": "/host/sys", "readOnly": True} in container["volumeMounts"]
    assert {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}} in spec["volumes"]
    service = objects["Service"]["spec"]
    assert service["clusterIP"] == "None" and service["selector"] == {"app": "roce-rdma-exporter"}
    assert service["ports"] == [{"name": "metrics", "port": 9879, "targetPort": "metrics", "protocol": "TCP"}]
    # What the ConfigMap holds is the collection's exporter, and it runs (this machine has no RDMA device).
    path = tmp_path / "roce-rdma-exporter.py"
    path.write_text(program)
    proc = subprocess.run([sys.executable, "-I", str(path), "--once", "--no-ethtool", "--sysfs", str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "rdma_exporter_devices 0.0" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]

    # The Prometheus Operator's CRD served: the ServiceMonitor is made, with the labels its Prometheus selects.
    with open(SERVICE_MONITOR_CRD) as handle:
        crd = yaml.safe_load(handle)
    crds = cluster.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    crds.create(body=crd)
    try:
        wait_established(cluster, "servicemonitors.monitoring.coreos.com")
        cluster = Cluster()  # a client that discovers the new kind
        wanted = dict(EXPORTER, k8s_rdma_network_exporter_service_monitor="required",
                      k8s_rdma_network_exporter_service_monitor_labels={"release": "kube-prometheus-stack"})
        rc, stats, failures, out = playbook(wanted)
        assert rc == 0, failures
        monitor = exporter_objects(cluster)["ServiceMonitor"]
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert monitor["spec"]["selector"] == {"matchLabels": {"app": "roce-rdma-exporter"}}
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["kube-system"]}
        endpoint = monitor["spec"]["endpoints"][0]
        assert (endpoint["port"], endpoint["path"], endpoint["interval"]) == ("metrics", "/metrics", "30s")
        assert endpoint["relabelings"][0]["targetLabel"] == "node"

        # Nothing to do: no write, in a real run or in check mode.
        mark = cluster.audit_mark()
        rc, stats, failures, out = playbook(wanted)
        assert rc == 0 and stats["changed"] == 0, failures
        rc, stats, failures, out = playbook(wanted, check=True)
        assert rc == 0 and stats["changed"] == 0, failures
        assert cluster.writes_since(mark) == []

        # The pod's own network: no ethtool (the RoCE netdevs are the node's), the cluster's DNS.
        rc, stats, failures, out = playbook(dict(wanted, k8s_rdma_network_exporter_host_network=False))
        assert rc == 0 and stats["changed"] >= 1, failures
        spec = exporter_objects(cluster)["DaemonSet"]["spec"]["template"]["spec"]
        assert not spec.get("hostNetwork") and spec["dnsPolicy"] == "ClusterFirst"
        assert spec["containers"][0]["command"][-1] == "--no-ethtool"
        mark = cluster.audit_mark()
        rc, stats, failures, out = playbook(dict(wanted, k8s_rdma_network_exporter_host_network=False))
        assert rc == 0 and stats["changed"] == 0, failures
        assert cluster.writes_since(mark) == []

        # Removal takes every object of the exporter away, then has nothing left to do.
        rc, stats, failures, out = playbook(dict(wanted, k8s_rdma_network_state="absent"))
        assert rc == 0 and stats["changed"] >= 1, failures
        assert exporter_objects(cluster) == {"ConfigMap": None, "DaemonSet": None, "Service": None, "ServiceMonitor": None}
        mark = cluster.audit_mark()
        rc, stats, failures, out = playbook(dict(wanted, k8s_rdma_network_state="absent"))
        assert rc == 0 and stats["changed"] == 0, failures
        assert cluster.writes_since(mark) == []
    finally:
        crds.delete(name="servicemonitors.monitoring.coreos.com")


def drain(cluster, state, node, **extra):
    """roce.fabric.node_drain (tasks_from: main or undrain) for ``node`` on the controller; (rc, stdout)."""
    # The controller's own Python (where the Kubernetes client is), as a playbook's implicit localhost has it.
    # What the host's turn disrupts, as a rolling play's first play would have recorded it (undrain, a run of its own
    # here, is told what the drain was for).
    reasons = ["reboot: ConnectX firmware settings pending on 0000:3b:00.0 (ATS_ENABLED=True)"]
    variables = dict(dict(node_drain_kubernetes=True, node_drain_kubernetes_node=node, node_drain_kubeconfig=cluster.kubeconfig,
                          node_drain_timeout=30, ansible_python_interpreter=sys.executable,
                          **({"node_drain_disruptions": reasons} if state == "main" else {"node_drain_drained_for": reasons})),
                     **extra)
    argv = ["ansible", "localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.include_role",
            "-a", "name=roce.fabric.node_drain tasks_from=%s" % state, "-e", json.dumps(variables)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_node_is_drained_through_the_eviction_api_a_budget_holds_and_it_is_uncordoned(cluster):
    """Issue 40: pods bound to a GPU node (by name, as the API server takes them without a kubelet), one of them
    covered by a PodDisruptionBudget that allows no disruption, and a DaemonSet's pod. The drain cordons the node
    and fails naming the pod the budget holds; without the budget every pod but the DaemonSet's leaves through the
    Eviction API; undrain uncordons."""
    node, namespace = "gpu-drain-1", "drain-lab"
    make_node(cluster, node, {})
    cluster.resource("v1", "Namespace").create(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    pods = cluster.resource("v1", "Pod")
    daemonset = cluster.resource("apps/v1", "DaemonSet").create(namespace=namespace, body={
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    for name, labels, owner in (("nccl-0", {"app": "nccl"}, None), ("nccl-1", {"app": "nccl"}, None),
                                ("agent-x", {"app": "agent"}, daemonset)):
        metadata = {"name": name, "labels": labels}
        if owner is not None:
            metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner.metadata.name,
                                            "uid": owner.metadata.uid, "controller": True}]
        pods.create(namespace=namespace, body={"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {
            "nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
    # Kubernetes 1.20 (the lab's server) serves budgets as policy/v1beta1; policy/v1 came with 1.21.
    budgets = cluster.resource("policy/v1beta1", "PodDisruptionBudget")
    budgets.create(namespace=namespace, body={"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                                              "metadata": {"name": "nccl"},
                                              "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "nccl"}}}})
    # The API server computes a budget's allowed disruptions from its status, as the disruption controller writes it.
    budgets.status.patch(name="nccl", namespace=namespace, content_type="application/merge-patch+json", body={"status": {
        "currentHealthy": 2, "desiredHealthy": 2, "disruptionsAllowed": 0, "expectedPods": 2, "observedGeneration": 1}})

    rc, out = drain(cluster, "main", node, node_drain_force=True, node_drain_timeout=10)
    assert rc != 0 and "drain-lab/nccl-0, drain-lab/nccl-1 did not leave" in out, out[-3000:]
    assert cluster.get("v1", "Node", node)["spec"].get("unschedulable") is True
    assert sorted(p.metadata.name for p in pods.get(namespace=namespace).items) == ["agent-x", "nccl-0", "nccl-1"]

    budgets.delete(name="nccl", namespace=namespace)
    # The node's kubelet, played here: it stops each evicted pod's containers and confirms (the API server then
    # removes the pod), as a real one does within the pod's grace period.
    stop = threading.Event()

    def kubelet():
        while not stop.is_set():
            for pod in pods.get(namespace=namespace).items:
                if pod.metadata.deletionTimestamp:
                    with contextlib.suppress(NotFoundError):
                        pods.delete(name=pod.metadata.name, namespace=namespace, body={"gracePeriodSeconds": 0})
            stop.wait(0.5)
    worker = threading.Thread(target=kubelet, daemon=True)
    worker.start()
    try:
        rc, out = drain(cluster, "main", node, node_drain_force=True)
    finally:
        stop.set()
        worker.join(10)
    assert rc == 0, out[-3000:]
    assert [p.metadata.name for p in pods.get(namespace=namespace).items] == ["agent-x"]
    rc, out = drain(cluster, "undrain", node)
    assert rc == 0, out[-3000:]
    assert not cluster.get("v1", "Node", node)["spec"].get("unschedulable")


def test_undrain_uncordons_only_a_node_this_collection_cordoned(cluster):
    """An admin cordoned gpu-held-1 (a bad GPU held out of scheduling): the drain still runs for the host's turn, and
    undrain leaves the node cordoned. gpu-free-1, schedulable before, is cordoned with roce.fabric's annotation in
    the same request, and undrain returns it and takes the annotation away; a second undrain writes nothing."""
    nodes = cluster.resource("v1", "Node")
    make_node(cluster, "gpu-held-1", {})
    make_node(cluster, "gpu-free-1", {})
    nodes.patch(name="gpu-held-1", body={"spec": {"unschedulable": True}}, content_type="application/merge-patch+json")

    def node(name):
        found = cluster.get("v1", "Node", name)
        return bool(found["spec"].get("unschedulable")), (found["metadata"].get("annotations") or {})

    for name in ("gpu-held-1", "gpu-free-1"):
        rc, out = drain(cluster, "main", name)
        assert rc == 0, out[-3000:]
    assert node("gpu-held-1") == (True, {})
    assert "was cordoned already, not by roce.fabric" in drain(cluster, "main", "gpu-held-1")[1]
    unschedulable, annotations = node("gpu-free-1")
    assert unschedulable is True and annotations["roce.fabric/cordoned"].startswith(
        "roce.fabric: reboot: ConnectX firmware settings pending"), annotations
    # A drain run again on a node this collection cordoned (a turn that failed before its undrain) keeps it ours.
    rc, out = drain(cluster, "main", "gpu-free-1")
    assert rc == 0 and node("gpu-free-1")[1].get("roce.fabric/cordoned"), out[-3000:]

    for name in ("gpu-held-1", "gpu-free-1"):
        rc, out = drain(cluster, "undrain", name)
        assert rc == 0, out[-3000:]
    assert node("gpu-held-1") == (True, {})
    assert node("gpu-free-1") == (False, {})
    mark = cluster.audit_mark()
    rc, out = drain(cluster, "undrain", "gpu-free-1")
    assert rc == 0 and cluster.writes_since(mark) == [], out[-3000:]


def test_the_rolling_play_resets_and_reboots_no_node_whose_pod_will_not_leave(fresh, gpu1, tmp_path):
    """Issue 40: playbooks/nic_firmware.yml on lab host gpu1 with the Kubernetes drain on, gpu1 a node of the lab's API
    server with a pod that a PodDisruptionBudget holds: the images are burnt in the first play (nothing disruptive
    there), then the drain fails naming the pod, and gpu1 is neither reset live nor rebooted."""
    from test_nic_firmware_image_peer import PSID_CX6DX, PSID_CX7, burns, controller_image, firmware_playbook  # pylint: disable=import-outside-toplevel
    cluster, namespace = fresh, "held-lab"
    make_node(cluster, "gpu1", {})
    cluster.resource("v1", "Namespace").create(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    cluster.resource("v1", "Pod").create(namespace=namespace, body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer-0", "labels": {"app": "trainer"}},
        "spec": {"nodeName": "gpu1", "containers": [{"name": "c", "image": "busybox"}]}})
    budgets = cluster.resource("policy/v1beta1", "PodDisruptionBudget")
    budgets.create(namespace=namespace, body={"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                                              "metadata": {"name": "trainer"},
                                              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "trainer"}}}})
    budgets.status.patch(name="trainer", namespace=namespace, content_type="application/merge-patch+json", body={"status": {
        "currentHealthy": 1, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 1, "observedGeneration": 1}})
    cx6dx, cx6dx_digest = controller_image(tmp_path, "fw-cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    cx7, cx7_digest = controller_image(tmp_path, "fw-cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX6DX: dict(version="22.45.3608", src=cx6dx, sha256=cx6dx_digest),
                PSID_CX7: dict(version="28.43.1014", src=cx7, sha256=cx7_digest)}
    held = firmware_playbook(versions, roce_drain_kubernetes=True, roce_drain_kubeconfig=cluster.kubeconfig,
                             roce_drain_timeout=10, node_drain_force=True)
    assert held.returncode != 0 and "held-lab/trainer-0 did not leave" in held.stdout, held.stdout[-3000:]
    assert len(burns(gpu1)) == 2 and gpu1.reboots() == 0
    assert not [c for c in gpu1.mutating_calls() if "reset" in c["argv"]]
    assert cluster.get("v1", "Node", "gpu1")["spec"].get("unschedulable") is True
    assert cluster.get("v1", "Pod", "trainer-0", namespace) is not None
