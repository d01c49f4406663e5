"""Verify nic_firmware on the lab's GPU nodes: the firmware runs the wanted values, each host rebooted
exactly once (converge), and the check and idempotence runs made no mutating firmware call."""

import json
import os

import testinfra.utils.ansible_runner

# The scenario's inventory directory holds the linked lab inventory (hosts and group_vars).
INVENTORY = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("gpu_nodes")
if not testinfra_hosts:
    raise RuntimeError("no gpu_nodes in %s: nothing would be verified" % INVENTORY)

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LAB_DIR = os.environ.get("ROCE_LAB_DIR", os.path.join(PROJECT, ".lab"))
WANTED = {"ATS_ENABLED": "True(1)", "SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}
ADAPTERS = {"gpu1": ["0000:3b:00.0", "0000:86:00.0"], "gpu2": ["0000:5e:00.0"]}


def host_name(host):
    return host.backend.get_hostname()


def lab_file(host, *parts):
    return os.path.join(LAB_DIR, "hosts", host_name(host), *parts)


def query_rows(text):
    """NAME -> printed values, from the rows of an `-e query` table (markers '*' and 'RO' dropped)."""
    rows = {}
    for line in text.splitlines():
        tokens = line.split()
        while tokens and tokens[0] in ("*", "RO", "*RO"):
            tokens.pop(0)
        if len(tokens) == 4 and tokens[0].isupper():
            rows[tokens[0]] = tokens[1:]
    return rows


def test_running_firmware_values_are_the_wanted_ones(host):
    tool = "mlxconfig" if host.exists("mlxconfig") else "mstconfig"
    for pci in ADAPTERS[host_name(host)]:
        out = host.check_output(" ".join(["%s"] * (5 + len(WANTED))), tool, "-d", pci, "-e", "query", *sorted(WANTED))
        rows = query_rows(out)
        assert set(WANTED) <= set(rows), out
        for name, value in WANTED.items():
            default, current, next_boot = rows[name]
            assert (current, next_boot) == (value, value), "%s %s: %s" % (pci, name, rows[name])


def test_each_host_rebooted_exactly_once(host):
    with open(lab_file(host, "reboots")) as handle:
        assert int(handle.read()) == 1
    # The boot id the host reports is the one its last reboot wrote.
    with open(lab_file(host, "boot_id")) as handle:
        assert host.file("/proc/sys/kernel/random/boot_id").content_string.strip() == handle.read().strip()


def test_one_set_per_adapter_and_nothing_mutating_in_check_or_second_run(host):
    with open(lab_file(host, "fw", "calls.jsonl")) as handle:
        calls = [json.loads(line) for line in handle if line.strip()]
    mutating = [c for c in calls if c["mutating"]]
    assert sorted(c["device"] for c in mutating) == ADAPTERS[host_name(host)]
    # Only values that differed were written (NUM_OF_VFS is 8 by default on these adapters).
    for call in mutating:
        written = set(a.split("=")[0] for a in call["argv"] if "=" in a)
        assert written == {"ATS_ENABLED", "SRIOV_EN"}, call
