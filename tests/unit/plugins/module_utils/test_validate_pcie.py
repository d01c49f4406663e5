# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The traffic window's PCIe evidence: the sampler (module_utils/validate/pcie_sampler.py) on a sysfs tree holding
the corpus's real link and AER files, the link at the busiest moment of the traffic, and the reading the fault
location engine takes (pcie.window_reading)."""

from __future__ import annotations

import os

from ansible_collections.roce.fabric.plugins.module_utils.validate import pcie, pcie_sampler
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus

PORT, BRIDGE = "0000:17:00.0", "0000:16:02.0"


def link_lines(name="link_h100x1_gen5_x16.txt"):
    return corpus.read("pcie", name).splitlines()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text + "\n")


def host(tmp_path, width=None):
    """A sysfs tree: ens1f0np0 on PCI function 0000:17:00.0 below the port 0000:16:02.0, each with the four link files
    (the H100's real Gen5 x16 values; ``width`` a narrower trained width of the function) and AER files."""
    root = str(tmp_path)
    bridge = os.path.join(root, "sys", "devices", "pci0000:16", BRIDGE)
    function = os.path.join(bridge, PORT)
    for folder in (function, bridge):
        for name, value in zip(pcie_sampler.LINK_FILES, link_lines()):
            write(os.path.join(folder, name), value)
        write(os.path.join(folder, "aer_dev_correctable"), corpus.read("pcie", "aer_dev_fatal_abi.txt").strip())
    if width:
        write(os.path.join(function, "current_link_width"), str(width))
    net = os.path.join(root, "sys", "class", "net", "ens1f0np0")
    os.makedirs(os.path.join(net, "statistics"))
    os.symlink(function, os.path.join(net, "device"))
    for name in ("tx_bytes", "rx_bytes"):
        write(os.path.join(net, "statistics", name), "0")
    os.makedirs(os.path.join(root, "sys", "class", "net", "lo"))
    return root


def test_the_function_and_the_port_above_it_are_read_from_sysfs(tmp_path):
    root = host(tmp_path, width=8)
    function, upstream = pcie_sampler.pci_dirs(root, "ens1f0np0")
    assert os.path.basename(function) == PORT and os.path.basename(upstream) == BRIDGE
    assert pcie_sampler.read_link(function) == dict(pci=PORT, speed=32.0, width=8, max_speed=32.0, max_width=16)
    assert pcie_sampler.read_link(upstream) == dict(pci=BRIDGE, speed=32.0, width=16, max_speed=32.0, max_width=16)
    assert pcie_sampler.pci_dirs(root, "lo") == (None, None) and pcie_sampler.read_aer(root, "lo") == {}
    aer = pcie_sampler.read_aer(root, "ens1f0np0")
    assert set(aer) == {"function", "upstream"} and list(aer["function"]) == ["aer_dev_correctable"]


def test_only_samples_with_traffic_count_and_the_busiest_one_is_the_link_reported():
    full = dict(pci=PORT, speed=32.0, width=16, max_speed=32.0, max_width=16)
    idle = dict(full, speed=2.5, width=16)  # an idle link trained down: not a fault
    narrow = dict(full, width=8)
    samples = [dict(moved=0, link=idle, upstream=full), dict(moved=10 ** 9, link=full, upstream=full),
               dict(moved=3 * 10 ** 9, link=narrow, upstream=full), dict(moved=0, link=idle, upstream=full)]
    found = pcie_sampler.summary(samples)
    assert (found["samples"], found["busy"], found["below"]) == (4, 2, 1)
    assert found["link"] == narrow and found["max_bytes_per_s"] == 6 * 10 ** 9
    assert pcie_sampler.summary([dict(moved=0, link=idle, upstream=None)]) == dict(
        samples=1, busy=0, max_bytes_per_s=0, link=None, upstream=None, below=0)


def test_the_sampler_reads_while_the_bytes_move_and_stops_at_its_stop_file(tmp_path):
    root = host(tmp_path, width=4)
    stop = str(tmp_path / "stop")
    clock = [0.0]
    stats = os.path.join(root, "sys", "class", "net", "ens1f0np0", "statistics", "tx_bytes")

    def sleep(seconds):
        clock[0] += seconds
        write(stats, str(int(clock[0] * 2 * 10 ** 9)))  # 2 GB a second while sampled
        if clock[0] >= 2:
            write(stop, "")

    found = pcie_sampler.sample(root, ["ens1f0np0", "lo"], 60, stop, clock=lambda: clock[0], sleep=sleep)
    port = found["ens1f0np0"]
    assert port["samples"] == 4 and port["busy"] == 4 and port["below"] == 4
    assert port["link"]["width"] == 4 and port["upstream"]["pci"] == BRIDGE and port["max_bytes_per_s"] == 2 * 10 ** 9
    assert found["lo"]["busy"] == 0 and found["lo"]["link"] is None


def test_the_window_reading_carries_the_link_under_traffic_and_the_aer_errors_of_the_window():
    before = dict(function=dict(aer_dev_correctable=corpus.read("pcie", "aer_dev_fatal_abi.txt")),
                  upstream=dict(aer_dev_correctable=corpus.read("pcie", "aer_dev_fatal_abi.txt")))
    after = dict(function=dict(aer_dev_correctable=corpus.read("pcie", "aer_dev_fatal_abi.txt")),
                 upstream=dict(aer_dev_correctable=corpus.read("pcie", "aer_dev_correctable_abi.txt")))
    sampled = dict(busy=3, below=3, link=dict(pci=PORT, speed=32.0, width=8, max_speed=32.0, max_width=16),
                   upstream=dict(pci=BRIDGE, speed=32.0, width=16, max_speed=32.0, max_width=16))
    reading = pcie.window_reading(sampled, before, after)
    expected_upstream = pcie.aer_delta(corpus.read("pcie", "aer_dev_fatal_abi.txt"),
                                       corpus.read("pcie", "aer_dev_correctable_abi.txt"))
    assert reading["width"] == 8 and reading["max_width"] == 16 and reading["upstream_pci"] == BRIDGE
    assert reading["aer_correctable"] == 0 and reading["upstream_aer_correctable"] == expected_upstream
    assert (reading["busy_samples"], reading["below_samples"]) == (3, 3)
    assert pcie.window_reading(None, {}, {}) is None


def test_a_port_whose_maximums_exceed_its_link_is_not_a_narrow_link():
    """QEMU's root port above the lab VMs' virtio NIC: x32 and 16 GT/s in its max files, the link x1 at 2.5 GT/s, which
    is all the NIC can (its own files say 2.5 GT/s x1 both ways). The link trains to what both ends can: whole."""
    port = pcie.link_files(corpus.read("pcie", "link_qemu_root_port_x1_of_x32.txt"))
    function = dict(pci="0000:01:00.0", speed=2.5, width=1, max_speed=2.5, max_width=1)
    assert (port["width"], port["max_width"]) == (1, 32)
    assert pcie_sampler.below(function, dict(port, pci="0000:00:04.0")) is False
    assert pcie_sampler.capability(function, port) == (2.5, 1)
    assert pcie_sampler.below(dict(function, max_speed=8.0, max_width=4), port) is True  # a x4 NIC trained to x1
