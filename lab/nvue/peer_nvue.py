"""NVUE family: a Cumulus Linux switch as a lab peer (``roce_lab_peer: nvue_switch``).

The NVUE simulator ``nvuesim.py`` on loopback: the REST API over HTTPS on ``nvue_api_port`` (not on releases
before 5.6, whose API an operator must enable first, unless ``roce_lab_cumulus_rest`` says so), and the ``nv``
command line over SSH on ``ansible_port`` when it is set. The certificate is signed by the lab's own CA
(``<lab dir>/switches/nvue-ca.pem``, made once), so the collection checks it as it would a real switch's certificate
signed by the site's CA (inventories/lab: ``nvue_ca_path``); the SSH host key is pinned in the lab's known_hosts
(``nvue_known_hosts_file``).
"""

from __future__ import annotations

import datetime
import fcntl
import ipaddress
import json
import os
import socket
import ssl
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from labutil import host_key_entry, host_key_pinned, pin_host_key, ssh_banner  # noqa: E402  pylint: disable=wrong-import-position
from peer import ProcessPeer  # noqa: E402  pylint: disable=wrong-import-position

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rdma"))
import leaf  # noqa: E402  pylint: disable=wrong-import-position,import-error

NVUESIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvuesim.py")


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _certificate(subject, issuer, public_key, signing_key, ca, san=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def tls_answers(address, port, timeout=1):
    """Whether something completes a TLS handshake on ``address:port`` (any certificate)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((address, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=address):
                return True
    except OSError:
        return False


class NvueSwitch(ProcessPeer):
    """A Cumulus Linux switch: its NVUE REST API (lab/nvue/nvuesim.py) over HTTPS on loopback."""

    kind = "nvue_switch"
    state_dir = "switches"

    def __init__(self, lab, name, host_vars, index):
        super(NvueSwitch, self).__init__(lab, name, host_vars, index)
        self.address = host_vars.get("ansible_host", "127.0.0.1")
        if not self.address.startswith("127."):
            raise SystemExit("lab: switch %s must listen on loopback (127.0.0.0/8), not %s" % (name, self.address))
        self.port = int(host_vars.get("nvue_api_port", 8765))
        self.version = str(host_vars.get("roce_lab_cumulus_version", "5.9.2"))
        self.ports = int(host_vars.get("roce_lab_cumulus_ports", 32))
        self.breakouts = [int(p) for p in host_vars.get("roce_lab_cumulus_breakouts", [])]
        self.ssh_port = int(host_vars["ansible_port"]) if host_vars.get("ansible_port") else None
        release = tuple(int(part) for part in self.version.split(".")[:2])
        self.rest = bool(host_vars.get("roce_lab_cumulus_rest", release >= (5, 6)))
        if not self.rest and not self.ssh_port:
            raise SystemExit("lab: switch %s has neither the REST API (Cumulus Linux %s) nor ansible_port for SSH" % (name, self.version))
        self.state_file = os.path.join(self.dir, "state.json")

    def describe(self):
        where = []
        if self.rest:
            where.append("https://%s:%d" % (self.address, self.port))
        if self.ssh_port:
            where.append("ssh %s:%d" % (self.address, self.ssh_port))
        return "%s, Cumulus Linux %s, %d ports" % (", ".join(where), self.version, self.ports)

    def answers(self):
        return ((not self.rest or tls_answers(self.address, self.port))
                and (not self.ssh_port or ssh_banner(self.address, self.ssh_port)))

    def running(self):
        return self.pid() is not None and self.answers()

    def known_hosts(self):
        """The lab's known_hosts of its switches (inventories/lab: nvue_known_hosts_file)."""
        return os.path.join(self.lab.dir, self.state_dir, "known_hosts")

    # --- the lab's CA and the switch's certificate --------------------------------------------------------

    def ca_files(self):
        folder = os.path.join(self.lab.dir, self.state_dir)
        return os.path.join(folder, "nvue-ca.pem"), os.path.join(folder, "nvue-ca.key")

    def ensure_ca(self):
        cert_path, key_path = self.ca_files()
        if os.path.exists(cert_path) and os.path.exists(key_path):
            with open(key_path, "rb") as handle:
                key = serialization.load_pem_private_key(handle.read(), None)
            with open(cert_path, "rb") as handle:
                return x509.load_pem_x509_certificate(handle.read()), key
        os.makedirs(os.path.dirname(cert_path), exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "roce.fabric lab CA")])
        cert = _certificate(name, name, key.public_key(), key, ca=True)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_key_pem(key))
        with open(cert_path, "wb") as handle:
            handle.write(cert.public_bytes(serialization.Encoding.PEM))
        return cert, key

    def issue_certificate(self):
        """A certificate for this switch's address, signed by the lab CA (made when missing)."""
        if os.path.exists(self.path("cert.pem")) and os.path.exists(self.path("key.pem")):
            return
        ca_cert, ca_key = self.ensure_ca()
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.name)])
        san = [x509.DNSName(self.name), x509.IPAddress(ipaddress.ip_address(self.address))]
        cert = _certificate(subject, ca_cert.subject, key.public_key(), ca_key, ca=False, san=san)
        fd = os.open(self.path("key.pem"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_key_pem(key))
        with open(self.path("cert.pem"), "wb") as handle:
            handle.write(cert.public_bytes(serialization.Encoding.PEM))

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self, keep_state=False):
        os.makedirs(self.dir, exist_ok=True)
        if not keep_state and os.path.exists(self.state_file):
            os.unlink(self.state_file)
        self.issue_certificate()
        argv = [sys.executable, NVUESIM, "--listen", self.address, "--port", str(self.port),
                "--username", self.vars.get("ansible_user", "cumulus"),
                "--password-file", self.secret_file("password", self.vars.get("ansible_password", "cumulus")),
                "--state-file", self.state_file, "--version", self.version, "--ports", str(self.ports),
                "--breakouts", ",".join(str(p) for p in self.breakouts),
                "--cert", self.path("cert.pem"), "--key", self.path("key.pem"),
                # Its LLDP is what the lab's leaf of its name hears (lab/rdma/leaf.py), once VMs are cabled into it.
                "--lldp-socket", leaf.socket_path(self.lab.dir, self.name)]
        if not self.rest:
            argv.append("--no-rest")
        if self.ssh_port:
            argv += ["--ssh-port", str(self.ssh_port), "--host-key", self.path("host_key")]
        self.spawn(argv, "nvuesim.log", self.answers, "the NVUE simulator %s" % self.name)
        if self.ssh_port:
            entry = host_key_entry(self.address, self.ssh_port, self.path("host_key"))
            if not host_key_pinned(self.known_hosts(), entry):
                pin_host_key(self.known_hosts(), entry)

    # --- what the door reads and arms -----------------------------------------------------------------

    def state(self):
        """Applied and startup configuration, revisions, every request, applies, saves and armed faults."""
        with open(self.state_file) as handle:
            return json.load(handle)

    def calls(self):
        return self.state()["requests"]

    def fault(self, **faults):
        """``apply`` (``fail`` or ``hang``, None to clear), ``drop_after`` (requests answered before the connection
        is closed unanswered), ``delay`` (seconds before each answer), ``counters`` (``{port: {stat: value}}``, the
        ports' ``link.stats`` as the NVUE API names them), ``pfc`` (``{port: {priority: {column: value}}}``, what
        ``nv show interface <port> counters qos pfc-stats`` counts)."""
        unknown = set(faults) - {"apply", "drop_after", "delay", "counters", "pfc"}
        if unknown:
            raise SystemExit("lab: %s takes the faults apply, drop_after, delay, counters and pfc, not %s"
                             % (self.name, ", ".join(sorted(unknown))))
        with open(self.state_file + ".lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # the simulator's lock: no request's save overwrites this
            state = self.state()
            state["faults"] = dict(dict(apply=None, drop_after=None, delay=0), **faults)
            tmp = self.state_file + ".door"
            with open(tmp, "w") as handle:
                json.dump(state, handle)
            os.replace(tmp, self.state_file)

    def exec_argv(self, command):
        raise SystemExit("lab: %s is a switch; use its NVUE API (https://%s:%d/nvue_v1/) or nv over SSH"
                         % (self.name, self.address, self.port))
