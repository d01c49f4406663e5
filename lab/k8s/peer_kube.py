"""Lab peer ``kube_apiserver``: a real Kubernetes API server (kube-apiserver + etcd) on loopback.

The binary is built once from Debian's ``kubernetes`` source package by ``tests/run setup``
(``lab/k8s/build_kube_apiserver.sh``) and found through ``$ROCE_KUBE_APISERVER``; etcd is
Debian's ``etcd-server``. Every ``start`` begins from an empty etcd data directory and new
certificates, so each ``labctl up`` gives a fresh cluster. There is no controller-manager,
scheduler or kubelet: the server stores, validates and authorizes objects, and pods never run.

Host variables (inventory):

``roce_lab_k8s_port``        secure port of kube-apiserver (127.0.0.1)
``roce_lab_etcd_port``       etcd client port; etcd's peer port is the next one

Files in ``$ROCE_LAB_DIR/k8s/<host>/``:

``kubeconfig``               cluster-admin (token of user ``admin`` in group ``system:masters``)
``kubeconfig-viewer``        user ``viewer``: bound to the built-in ClusterRole ``view`` only
``kubeconfig-badtoken``      a token the server does not know
``audit.log``                JSON audit events of every create/update/patch/delete
``ca.crt``, ``*.log``, ``*.pid``
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from labutil import live_pid, stop_process  # noqa: E402  pylint: disable=wrong-import-position
from peer import Peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def default_binary():
    """Where tests/run setup puts the kube-apiserver built by the current recipe."""
    if os.environ.get("ROCE_KUBE_APISERVER"):
        return os.environ["ROCE_KUBE_APISERVER"]
    import hashlib
    cache = os.environ.get("ROCE_FABRIC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roce-fabric")
    with open(os.path.join(HERE, "build_kube_apiserver.sh"), "rb") as handle:
        key = hashlib.sha256(handle.read()).hexdigest()[:16]
    return os.path.join(cache, "kube-apiserver", key, "kube-apiserver")


# Only writes are audited: the benchmark and the idempotence tests count them.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
"""


def _stop_pid(path, timeout=10):
    stop_process(lambda: live_pid(path), grace=timeout)
    if os.path.exists(path):
        os.unlink(path)


class KubeApiserver(Peer):
    """A Kubernetes API server with etcd, token authentication and RBAC, on 127.0.0.1."""

    kind = "kube_apiserver"
    state_dir = "k8s"
    # The API server's audit log (every request) and the three kubeconfigs (admin, viewer, unknown token).
    artifacts = {"audit": "audit.log", "kubeconfig": "kubeconfig", "kubeconfig-viewer": "kubeconfig-viewer",
                 "kubeconfig-badtoken": "kubeconfig-badtoken"}

    def __init__(self, lab, name, host_vars, index):
        super(KubeApiserver, self).__init__(lab, name, host_vars, index)
        self.port = int(host_vars.get("roce_lab_k8s_port", 6443))
        self.etcd_port = int(host_vars.get("roce_lab_etcd_port", 23791))
        self.binary = host_vars.get("roce_lab_kube_apiserver") or default_binary()

    # Peers of this kind need no lab bridge.
    needs_bridge = False

    def describe(self):
        return "https://127.0.0.1:%d, etcd 127.0.0.1:%d, kubeconfig %s" % (
            self.port, self.etcd_port, os.path.join(self.dir, "kubeconfig"))

    def url(self):
        return "https://127.0.0.1:%d" % self.port

    # --- process control ----------------------------------------------------------------------------

    def running(self):
        return bool(live_pid(self.path("apiserver.pid")) and live_pid(self.path("etcd.pid")) and self.ready())

    def stop(self):
        _stop_pid(self.path("apiserver.pid"))
        _stop_pid(self.path("etcd.pid"))

    def reset(self):
        """A fresh, empty cluster: etcd's data is thrown away with the processes."""
        self.stop()
        self.start()

    def start(self, keep_state=False):
        if not os.access(self.binary, os.X_OK):
            raise SystemExit("lab: %s: no kube-apiserver at %s; run tests/run setup first" % (self.name, self.binary))
        # keep_state is ignored: an API server of the lab always starts empty (new etcd data directory).
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o700)
        self.make_certificates()
        self.make_tokens()
        self.start_etcd()
        self.start_apiserver()
        self.bootstrap()

    def _spawn(self, argv, log, pidfile):
        with open(self.path(log), "a") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=self.dir)
        with open(self.path(pidfile), "w") as handle:
            handle.write("%d\n" % proc.pid)
        return proc

    def _wait(self, proc, predicate, timeout, what, log):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise SystemExit("lab: %s: %s exited (rc=%s); see %s" % (self.name, what, proc.returncode, self.path(log)))
            if predicate():
                return
            time.sleep(0.2)
        raise SystemExit("lab: %s: timed out after %ss waiting for %s; see %s" % (self.name, timeout, what, self.path(log)))

    def start_etcd(self):
        client = "http://127.0.0.1:%d" % self.etcd_port
        peer = "http://127.0.0.1:%d" % (self.etcd_port + 1)
        argv = ["etcd", "--name", self.name, "--data-dir", self.path("etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "%s=%s" % (self.name, peer), "--initial-cluster-state", "new",
                "--log-level", "warn"]
        proc = self._spawn(argv, "etcd.log", "etcd.pid")

        def healthy():
            try:
                with urllib.request.urlopen(client + "/health", timeout=1) as resp:
                    return json.loads(resp.read().decode()).get("health") == "true"
            except (OSError, ValueError):
                return False
        self._wait(proc, healthy, 30, "etcd", "etcd.log")

    def start_apiserver(self):
        argv = [self.binary,
                "--etcd-servers", "http://127.0.0.1:%d" % self.etcd_port,
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                "--secure-port", str(self.port),
                "--tls-cert-file", self.path("apiserver.crt"), "--tls-private-key-file", self.path("apiserver.key"),
                "--client-ca-file", self.path("ca.crt"),
                "--token-auth-file", self.path("tokens.csv"),
                "--authorization-mode", "RBAC",
                "--anonymous-auth=false",
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", self.path("sa.pub"),
                "--service-account-signing-key-file", self.path("sa.key"),
                "--service-cluster-ip-range", "10.96.0.0/24",
                "--allow-privileged=true",
                # No controller-manager creates service accounts or their tokens here; pods are stored, never run.
                "--disable-admission-plugins", "ServiceAccount",
                "--audit-policy-file", self.path("audit-policy.yaml"),
                "--audit-log-path", self.path("audit.log"),
                "--audit-log-format", "json",
                "--profiling=false",
                "--v", "1"]
        proc = self._spawn(argv, "apiserver.log", "apiserver.pid")
        self._wait(proc, self.ready, 90, "kube-apiserver /readyz", "apiserver.log")
        # The default namespace appears shortly after /readyz.
        self._wait(proc, lambda: self.request("GET", "/api/v1/namespaces/default")[0] == 200, 60,
                   "namespace default", "apiserver.log")

    # --- files ---------------------------------------------------------------------------------------

    def _openssl(self, *args):
        subprocess.run(["openssl"] + list(args), check=True, cwd=self.dir,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def make_certificates(self):
        self._openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-keyout", "ca.key", "-out", "ca.crt",
                      "-subj", "/CN=roce-fabric-lab-ca")
        with open(self.path("apiserver.ext"), "w") as handle:
            handle.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default\n"
                         "extendedKeyUsage=serverAuth\n")
        self._openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out", "apiserver.csr",
                      "-subj", "/CN=kube-apiserver")
        self._openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                      "-days", "30", "-out", "apiserver.crt", "-extfile", "apiserver.ext")
        self._openssl("genrsa", "-out", "sa.key", "2048")
        self._openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        for name in ("ca.key", "apiserver.key", "sa.key"):
            os.chmod(self.path(name), 0o600)
        with open(self.path("audit-policy.yaml"), "w") as handle:
            handle.write(AUDIT_POLICY)

    def make_tokens(self):
        self.tokens = dict(admin=secrets.token_hex(16), viewer=secrets.token_hex(16))
        with open(self.path("tokens.csv"), "w") as handle:
            handle.write('%s,admin,uid-admin,"system:masters"\n' % self.tokens["admin"])
            handle.write("%s,viewer,uid-viewer\n" % self.tokens["viewer"])
        os.chmod(self.path("tokens.csv"), 0o600)
        self.write_kubeconfig("kubeconfig", "admin", self.tokens["admin"])
        self.write_kubeconfig("kubeconfig-viewer", "viewer", self.tokens["viewer"])
        self.write_kubeconfig("kubeconfig-badtoken", "nobody", secrets.token_hex(16))

    def write_kubeconfig(self, filename, user, token):
        cluster = "lab-%s" % self.name
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": {"server": self.url(), "certificate-authority": self.path("ca.crt")}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "%s@%s" % (user, cluster), "context": {"cluster": cluster, "user": user}}],
            "current-context": "%s@%s" % (user, cluster),
            "preferences": {},
        }
        path = self.path(filename)
        with open(path, "w") as handle:
            json.dump(config, handle, indent=2)
        os.chmod(path, 0o600)

    # --- talking to the server -----------------------------------------------------------------------

    def admin_token(self):
        with open(self.path("kubeconfig")) as handle:
            return json.load(handle)["users"][0]["user"]["token"]

    def request(self, method, path, body=None, token=None):
        """One HTTPS request as cluster-admin; returns (status, decoded JSON or text)."""
        context = ssl.create_default_context(cafile=self.path("ca.crt"))
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url() + path, data=data, method=method)
        req.add_header("Authorization", "Bearer %s" % (token or self.admin_token()))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=context, timeout=5) as resp:
                status, text = resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        except (OSError, ValueError):
            return 0, None
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def ready(self):
        if not os.path.exists(self.path("kubeconfig")):
            return False
        status, body = self.request("GET", "/readyz")
        return status == 200 and body == "ok"

    def bootstrap(self):
        """The restricted user: read-only through the built-in ClusterRole ``view``."""
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "roce-lab-viewer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}],
        }
        deadline = time.time() + 30
        while True:
            # The bootstrap ClusterRoles appear with the RBAC post-start hook; retry until 'view' exists.
            status, body = self.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
            if status in (201, 409):
                return
            if time.time() > deadline:
                raise SystemExit("lab: %s: could not bind the viewer user (%s): %s" % (self.name, status, body))
            time.sleep(0.5)

    def exec_argv(self, command):
        raise SystemExit("lab: %s is an API server; use KUBECONFIG=%s" % (self.name, self.path("kubeconfig")))
