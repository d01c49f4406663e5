# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-tests of lab/firmware/flintsim.py, the flint/mstflint simulator: what it prints is read back by the
collection's own parsers (module_utils/firmware/image.py) and compared with the corpus's real transcripts.
Run: python3 -m pytest lab -q
"""

import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FWSIM = os.path.join(HERE, "fwsim.py")
FLINTSIM = os.path.join(HERE, "flintsim.py")
CORPUS = os.path.join(HERE, "..", "..", "tests", "unit", "plugins", "module_utils", "fixtures", "fwimage")
PCI = "0000:3b:00.0"


def run(state, *argv):
    return subprocess.run([sys.executable] + list(argv), capture_output=True, text=True, check=False, timeout=30,
                          env=dict(os.environ, FWSIM_STATE_DIR=str(state)))


def host(tmp_path, fw="22.43.1020"):
    state = tmp_path / "fw"
    assert run(state, FWSIM, "admin", "--state-dir", str(state), "init", "--model", "ConnectX6DX", "--pci", PCI).returncode == 0
    assert run(state, FLINTSIM, "admin", "--state-dir", str(state), "image", "--pci", PCI, "--psid", "MT_0000000436",
               "--fw", fw).returncode == 0
    return state


def collection_image_parsers():
    """The collection's module_utils/firmware/image.py (pure: no Ansible import), loaded from its file."""
    path = os.path.join(HERE, "..", "..", "plugins", "module_utils", "firmware", "image.py")
    spec = importlib.util.spec_from_file_location("roce_fabric_firmware_image", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus(name):
    with open(os.path.join(CORPUS, name)) as handle:
        return [line.rstrip("\n") for line in handle if not line.startswith("%%")]


def test_a_query_is_the_real_fs4_report_with_the_adapter_s_values(tmp_path):
    state = host(tmp_path)
    out = run(state, FLINTSIM, "-d", PCI, "query").stdout.splitlines()
    real = corpus("flint_query_cx5_fs4.txt")
    assert len(out) == len(real) and [line[:23] for line in out] == [line[:23] for line in real]
    assert out[1] == "FW Version:            22.43.1020" and out[-2] == "PSID:                  MT_0000000436"


def test_a_burn_writes_the_flash_and_a_reboot_makes_it_run(tmp_path):
    state = host(tmp_path)
    image = str(tmp_path / "new.bin")
    assert run(state, FLINTSIM, "make-image", image, "--psid", "MT_0000000436", "--fw", "22.45.3608").returncode == 0
    burn = run(state, FLINTSIM, "--as", "mstflint", "-d", PCI, "-i", image, "-y", "burn")
    assert burn.returncode == 0 and burn.stdout.splitlines()[1:3] == [
        "    Current FW version on flash:  22.43.1020", "    New FW version:               22.45.3608"]
    assert burn.stdout.splitlines()[-4:] == corpus("burn_cx4lx_fs3.txt")[-4:]
    pending = run(state, FLINTSIM, "-d", PCI, "q").stdout.splitlines()
    assert pending[1:3] == ["FW Version:            22.45.3608", "FW Version(Running):   22.43.1020"]
    assert run(state, FWSIM, "admin", "--state-dir", str(state), "reboot").returncode == 0
    assert "FW Version(Running)" not in run(state, FLINTSIM, "-d", PCI, "q").stdout


def test_another_psid_is_refused_with_the_real_words_and_nothing_is_written(tmp_path):
    state = host(tmp_path)
    image = str(tmp_path / "other.bin")
    run(state, FLINTSIM, "make-image", image, "--psid", "MT_0000000575", "--fw", "22.45.3608")
    burn = run(state, FLINTSIM, "-d", PCI, "-i", image, "-y", "burn")
    assert burn.returncode == 1
    assert ("-E- PSID mismatch. The PSID on flash (MT_0000000436) differs from the PSID in the given image "
            "(MT_0000000575).") in burn.stdout
    assert "FW Version:            22.43.1020" in run(state, FLINTSIM, "-d", PCI, "q").stdout
    missing = run(state, FLINTSIM, "-i", str(tmp_path / "absent.bin"), "q")
    assert missing.returncode == 1 and missing.stdout.startswith("-E- Cannot open Image: ")


def test_a_live_reset_makes_the_burnt_image_run_where_level_3_is_offered(tmp_path):
    state = host(tmp_path)
    image = str(tmp_path / "new.bin")
    run(state, FLINTSIM, "make-image", image, "--psid", "MT_0000000436", "--fw", "22.45.3608")
    run(state, FLINTSIM, "-d", PCI, "-i", image, "-y", "burn")
    levels = run(state, FLINTSIM, "--as", "mlxfwreset", "-d", PCI, "q").stdout.splitlines()
    assert levels == corpus("mlxfwreset_query_bf3.txt")
    reset = run(state, FLINTSIM, "--as", "mstfwreset", "-d", PCI, "--level", "3", "-y", "reset")
    assert reset.returncode == 0 and reset.stdout.splitlines()[1] == "Requested reset level for device, %s:" % PCI
    assert reset.stdout.splitlines()[-6:] == [line for line in corpus("mlxfwreset_reset_cx4.txt") if line.startswith("-I- ")]
    assert "FW Version(Running)" not in run(state, FLINTSIM, "-d", PCI, "q").stdout
    run(state, FLINTSIM, "admin", "--state-dir", str(state), "image", "--pci", PCI, "--psid", "MT_0000000436",
        "--fw", "22.45.3608", "--running", "22.43.1020", "--no-live-reset")
    assert "-Not Supported" in [line for line in run(state, FLINTSIM, "--as", "mlxfwreset", "-d", PCI, "q").stdout.splitlines()
                                if line.startswith("3:")][0]
    refused = run(state, FLINTSIM, "--as", "mlxfwreset", "-d", PCI, "-y", "reset")
    assert refused.returncode == 1 and "FW Version(Running):   22.43.1020" in run(state, FLINTSIM, "-d", PCI, "q").stdout


def test_the_firmware_manager_report_has_the_real_layout_and_the_adapter_s_part_number(tmp_path):
    """mlxfwmanager --query: the corpus report's labels, columns and rows, and the mlxconfig simulator's device type,
    part number and description of the adapter (ConnectX6DX: the model's real mlxconfig query)."""
    state = host(tmp_path)
    image = str(tmp_path / "new.bin")
    run(state, FLINTSIM, "make-image", image, "--psid", "MT_0000000436", "--fw", "22.45.3608")
    run(state, FLINTSIM, "-d", PCI, "-i", image, "-y", "burn")
    out = run(state, FLINTSIM, "--as", "mlxfwmanager", "-d", PCI, "--query").stdout.splitlines()
    real = corpus("mlxfwmanager_cx6dx_running_older.txt")
    # The heading and the adapter's block down to the Versions table, label for label and column for column.
    table = real.index("  Versions:         Current        Available")
    assert out.index("  Versions:         Current        Available") == table
    assert [line[:20] for line in out[:table]] == [line[:20] for line in real[:table]]
    # The FW rows as the real report prints a burnt image that waits (the sample's PXE and UEFI rows are not emulated).
    assert [line[:35] for line in real[table + 1:table + 3]] == ["     FW             22.45.3608     ",
                                                                 "     FW (Running)   22.43.1020     "]
    assert out[table + 1:] == ["     FW             22.45.3608     N/A", "     FW (Running)   22.43.1020     N/A",
                               "", "  Status:           No matching image found"]
    assert corpus("mlxup_query_cx5_no_image.txt")[-1] == "  Status:           No matching image found"
    parsed = collection_image_parsers().parse_fwmanager("\n".join(out))
    assert len(parsed) == 1 and parsed[0]["psid"] == "MT_0000000436" and parsed[0]["pci"] == "3b:00.0"
    assert (parsed[0]["fw"], parsed[0]["running"]) == ("22.45.3608", "22.43.1020")
    assert parsed[0]["part_number"] and parsed[0]["part_number"].startswith("MCX"), parsed[0]
    # Every adapter with an image, without -d; reset, the report has no FW (Running) row.
    run(state, FWSIM, "admin", "--state-dir", str(state), "reboot")
    every = run(state, FLINTSIM, "--as", "mstfwmanager").stdout
    assert every.count("Device #") == 1 and "FW (Running)" not in every
