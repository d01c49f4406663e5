"""Lab peer kind ``prometheus``: a real Prometheus server (Debian's ``prometheus`` package) on loopback.

It scrapes the RDMA exporters of the lab's VMs through the ports QEMU forwards to them
(``roce_lab_vm_forwards``), so tests ask a real Prometheus, through its HTTP API, what the exporter's
counters did: ``rate()`` over a perftest run, a device removed and added again, a reboot.

Host variables (``inventories/lab/hosts.yml``):

``roce_lab_prometheus_port``
    The port of its web UI and HTTP API on 127.0.0.1 (29090-29099).
``roce_lab_prometheus_scrape``
    What it scrapes: ``[{host: node1, target: "127.0.0.1:29101"}]``; each target's series get ``host``.
``roce_lab_prometheus_interval``
    Scrape (and evaluation) interval, default ``1s``: a test sees a change within seconds.

It keeps its time series under the peer's directory; ``reset`` starts it again with none.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from peer import LabError, ProcessPeer  # noqa: E402  pylint: disable=wrong-import-position

PROMETHEUS = "/usr/bin/prometheus"
_TARGET = re.compile(r"^127\.[0-9.]+:[0-9]{2,5}$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class Prometheus(ProcessPeer):
    kind = "prometheus"
    needs_bridge = False
    artifacts = {"config": "prometheus.yml", "log": "prometheus.log"}

    def __init__(self, lab, name, host_vars, index):
        super(Prometheus, self).__init__(lab, name, host_vars, index)
        self.address = host_vars.get("ansible_host", "127.0.0.1")
        if self.address != "127.0.0.1":
            raise SystemExit("lab: prometheus %s must listen on 127.0.0.1" % name)
        self.port = int(host_vars.get("roce_lab_prometheus_port", 29090))
        if not 29090 <= self.port <= 29099:
            raise SystemExit("lab: prometheus %s: port %d outside 29090-29099" % (name, self.port))
        self.interval = str(host_vars.get("roce_lab_prometheus_interval", "1s"))
        if not re.match(r"^[0-9]+(ms|s)$", self.interval):
            raise SystemExit("lab: prometheus %s: interval %r is not like 1s or 500ms" % (name, self.interval))
        self.scrape = list(host_vars.get("roce_lab_prometheus_scrape") or [])
        for entry in self.scrape:
            if not (_TARGET.match(str(entry.get("target", ""))) and _NAME.match(str(entry.get("host", "")))):
                raise SystemExit("lab: prometheus %s: scrape entry %s needs a host name and a loopback target" % (name, entry))

    def describe(self):
        return "http://127.0.0.1:%d, scrapes %s every %s" % (
            self.port, ", ".join("%s (%s)" % (e["host"], e["target"]) for e in self.scrape) or "nothing", self.interval)

    def config(self):
        """prometheus.yml: one job, ``rdma``, a static target per lab host with the host's name as a label."""
        lines = ["global:", "  scrape_interval: %s" % self.interval, "  evaluation_interval: %s" % self.interval,
                 "  scrape_timeout: %s" % self.interval, "scrape_configs:", "  - job_name: rdma", "    static_configs:"]
        for entry in self.scrape:
            lines += ["      - targets: [%s]" % json.dumps(entry["target"]), "        labels: {host: %s}" % json.dumps(entry["host"])]
        if not self.scrape:
            lines += ["      - targets: []"]
        return "\n".join(lines) + "\n"

    def start(self, keep_state=False):
        if not os.path.exists(PROMETHEUS):
            raise SystemExit("lab: %s missing; install Debian's prometheus package (tests/run setup does)" % PROMETHEUS)
        os.makedirs(self.dir, exist_ok=True)
        data = self.path("data")
        if not keep_state and os.path.exists(data):
            shutil.rmtree(data)
        with open(self.path("prometheus.yml"), "w") as handle:
            handle.write(self.config())
        argv = [PROMETHEUS, "--config.file=%s" % self.path("prometheus.yml"), "--storage.tsdb.path=%s" % data,
                "--storage.tsdb.retention.time=2h", "--web.listen-address=127.0.0.1:%d" % self.port,
                "--web.console.templates=%s" % self.path("none"), "--web.console.libraries=%s" % self.path("none")]
        self.spawn(argv, "prometheus.log", self.ready, "Prometheus %s" % self.name)

    def running(self):
        return self.pid() is not None and self.ready()

    def ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.loads(response.read())
        except OSError as exc:
            raise LabError("%s: %s: %s" % (self.name, path, exc))
        if body.get("status") != "success":
            raise LabError("%s: %s: %s" % (self.name, path, body))
        return body["data"]

    # --- what the door reads ------------------------------------------------------------------------------

    def state(self):
        """Its scrape targets: ``{host: {"health": "up", "last_error": "", "last_scrape": ...}}``."""
        targets = {}
        for target in self.api("targets", state="active")["activeTargets"]:
            host = target["labels"].get("host", target["scrapeUrl"])
            targets[host] = dict(health=target["health"], last_error=target.get("lastError", ""),
                                 last_scrape=target.get("lastScrape"), url=target["scrapeUrl"])
        return dict(targets=targets)

    def query(self, expr, at=None):
        """An instant PromQL query: ``[{"metric": {labels}, "value": [time, "text"]}]``."""
        params = dict(query=expr)
        if at is not None:
            params["time"] = "%.3f" % at
        return self.api("query", **params)["result"]

    def query_range(self, expr, start, end, step="1s"):
        """A range query: ``[{"metric": {labels}, "values": [[time, "text"], ...]}]``."""
        return self.api("query_range", query=expr, start="%.3f" % start, end="%.3f" % end, step=step)["result"]
