"""The README's small site with nothing to reach: every switch and GPU server moved to a closed port on loopback.

Shared by tests/inventory/test_check_summary.py and tests/bench/newcomer_bench.py (a --check of roce.yml where
every host refuses its connection at once).
"""

from __future__ import annotations

import os
import socket

import yaml


def closed_port():
    """A loopback port nothing listens on (bound, then released): connecting to it is refused at once."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def write_closed_site(source, folder, command_timeout=None):
    """``source`` (an inventory file) written to ``folder``/hosts.yml with every host of roce_switches and gpu_nodes
    on a closed loopback port, and an empty known_hosts beside it; returns (path, {host: port})."""
    with open(source) as handle:
        inventory = yaml.safe_load(handle)
    ports = {}
    for group in ("roce_switches", "gpu_nodes"):
        for host, variables in inventory["all"]["children"][group]["hosts"].items():
            ports[host] = closed_port()
            variables.update(ansible_host="127.0.0.1", ansible_port=ports[host])
    if command_timeout is not None:
        inventory["all"]["children"]["roce_switches"].setdefault("vars", {})["ansible_command_timeout"] = command_timeout
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "hosts.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle, sort_keys=False)
    open(os.path.join(folder, "known_hosts"), "w").close()
    return path, ports
