"""roce.fabric.nic_firmware_image over SSH on lab host gpu1, whose flint is the firmware simulator's
(lab/firmware/flintsim.py: the corpus's real query and burn transcripts, the adapters' images in the simulator's
state, a burnt image running from the host's next reboot). Every case reads the simulator's state from outside."""

import hashlib
import json
import os
import subprocess
import sys

from conftest import INVENTORY, LAB, REPO

MODULE = "roce.fabric.nic_firmware_image"
FLINTSIM = os.path.join(REPO, "lab", "firmware", "flintsim.py")
CX6DX, CX7 = "0000:3b:00.0", "0000:86:00.0"
PSID_CX6DX, PSID_CX7 = "MT_0000000436", "MT_0000000834"
IMAGES = "/var/lib/roce-fabric/firmware"


def make_image(host, name, psid, fw):
    """An image file on the host (the simulator's own format); its path and SHA-256."""
    path = "%s/%s" % (IMAGES, name)
    made = LAB.exec(host, ["sh", "-c", 'mkdir -p "$1" && python3 "$2" make-image "$3" --psid "$4" --fw "$5" && sha256sum "$3"',
                           "-", IMAGES, FLINTSIM, path, psid, fw])
    assert made.returncode == 0, made.stdout + made.stderr
    return path, made.stdout.split()[-2]


def images(host):
    return dict((pci, record["image"]) for pci, record in host.firmware().items())


def burns(host):
    return [c for c in host.mutating_calls() if "burn" in c["argv"]]


def burnt_copy(path, digest):
    """Where the module burns ``path`` from: its private copy, named by the pinned SHA-256."""
    return "/var/lib/roce-fabric/firmware-burn/%s-%s" % (digest[:16], os.path.basename(path))


def test_an_old_image_is_burnt_once_and_runs_after_one_reboot(gpu1):
    path, digest = make_image("gpu1", "cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    versions = {PSID_CX6DX: dict(version="22.45.3608", image=path, sha256=digest), PSID_CX7: dict(version="28.40.1000")}
    before = images(gpu1)
    check = gpu1.module(MODULE, dict(versions=versions), check=True, diff=True)
    assert check.get("failed") is not True, check
    assert check["changed"] is True and check["diff"]["after"] == {CX6DX: "22.45.3608", CX7: "28.40.1000"}
    assert burns(gpu1) == [] and images(gpu1) == before

    first = gpu1.module(MODULE, dict(versions=versions))
    assert first["changed"] is True and first["commands"] == [
        "/usr/sbin/flint -d %s -i %s -y burn" % (CX6DX, burnt_copy(path, digest))], first
    assert first["reboot_required"] is True and first["pending"] == [CX6DX]
    actions = dict((a["pci"], a["action"]) for a in first["adapters"])
    assert actions == {CX6DX: "burn", CX7: "none"}
    assert images(gpu1)[CX6DX]["fw"] == "22.45.3608" and images(gpu1)[CX6DX]["running"] == "22.43.1020"
    assert images(gpu1)[CX7] == before[CX7] and len(burns(gpu1)) == 1

    # Burnt: the next run only reads, and still says the adapter waits for its activation.
    again = gpu1.module(MODULE, dict(versions=versions))
    assert again["changed"] is False and again["commands"] == [] and again["reboot_required"] is True
    assert len(burns(gpu1)) == 1

    reboot = gpu1.module("ansible.builtin.reboot", dict(reboot_timeout=120))
    assert reboot.get("rebooted") is True, reboot
    after = gpu1.module(MODULE, dict(versions=versions))
    assert after["changed"] is False and after["reboot_required"] is False and after["pending"] == []
    assert images(gpu1)[CX6DX]["running"] == "22.45.3608" and len(burns(gpu1)) == 1


def test_a_live_reset_activates_where_allowed_and_one_reboot_the_rest(gpu1):
    """Both adapters get a newer image: the ConnectX-6 Dx runs it after a live reset (mlxfwreset level 3, no reboot),
    the ConnectX-7, whose reset levels offer no live reset, waits for the host's one reboot. The controller's SSH
    session reaches gpu1 through its namespace's eth0 (no adapter of its own), so nothing is protected."""
    cx6dx, cx6dx_digest = make_image("gpu1", "cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    cx7, cx7_digest = make_image("gpu1", "cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX6DX: dict(version="22.45.3608", image=cx6dx, sha256=cx6dx_digest),
                PSID_CX7: dict(version="28.43.1014", image=cx7, sha256=cx7_digest)}
    first = gpu1.module(MODULE, dict(versions=versions, activate="live_reset"))
    assert first.get("failed") is not True, first
    assert first["activated"] == [CX6DX] and first["pending"] == [CX7] and first["reboot_required"] is True
    activation = dict((a["pci"], a["activation"]) for a in first["adapters"])
    assert activation == {CX6DX: "live reset", CX7: "reboot: no live reset, the adapter does not offer level 3 (0, 4)"}
    assert first["commands"][-1] == "/usr/sbin/mlxfwreset -d %s --level 3 -y reset" % CX6DX
    assert images(gpu1)[CX6DX]["running"] == "22.45.3608" and images(gpu1)[CX7]["running"] == "28.40.1000"
    assert gpu1.reboots() == 0
    # Nothing to burn or reset again: the ConnectX-7 still waits, and no second reset is tried on it.
    again = gpu1.module(MODULE, dict(versions=versions, activate="live_reset"))
    assert again["changed"] is False and again["pending"] == [CX7] and again["commands"] == []
    gpu1.module("ansible.builtin.reboot", dict(reboot_timeout=120))
    done = gpu1.module(MODULE, dict(versions=versions, activate="live_reset"))
    assert done["changed"] is False and done["reboot_required"] is False and gpu1.reboots() == 1
    assert len([c for c in gpu1.mutating_calls() if "reset" in c["argv"]]) == 1 and len(burns(gpu1)) == 2


def test_an_image_for_another_psid_or_with_another_checksum_burns_nothing(gpu1):
    other, other_digest = make_image("gpu1", "cx6lx.bin", "MT_0000000575", "22.45.3608")
    good, good_digest = make_image("gpu1", "cx6dx.bin", PSID_CX6DX, "22.45.3608")
    before = images(gpu1)
    cases = [
        (dict(version="22.45.3608", image=other, sha256=other_digest), "is for PSID MT_0000000575, the adapter's is %s" % PSID_CX6DX),
        (dict(version="22.45.3608", image=good, sha256=hashlib.sha256(b"another file").hexdigest()), "has SHA-256 %s" % good_digest),
        (dict(version="22.45.3608", image=IMAGES + "/missing.bin", sha256=good_digest), "No such file or directory"),
    ]
    for entry, words in cases:
        result = gpu1.module(MODULE, dict(devices=["ens1f0np0"], versions={PSID_CX6DX: entry}))
        assert result.get("failed") and words in result["msg"] and "nothing was burnt" in result["msg"], result
    # A downgrade is refused before anything is read of the image.
    older = gpu1.module(MODULE, dict(devices=["ens1f0np0"], versions={PSID_CX6DX: dict(version="22.39.1002")}))
    assert older.get("failed") and "a downgrade" in older["msg"], older
    assert burns(gpu1) == [] and images(gpu1) == before


def test_the_tool_s_own_psid_check_holds_when_ours_is_passed_by(gpu1):
    """flint refuses an image of another PSID by itself (the corpus's real refusal), as the module would: a burn
    that reaches the tool with a wrong image fails with the tool's words and writes nothing."""
    other, _digest = make_image("gpu1", "cx6lx.bin", "MT_0000000575", "22.45.3608")
    refused = LAB.exec("gpu1", ["flint", "-d", CX6DX, "-i", other, "-y", "burn"])
    assert refused.returncode == 1 and ("-E- PSID mismatch. The PSID on flash (%s) differs from the PSID in the given "
                                        "image (MT_0000000575)." % PSID_CX6DX) in refused.stdout, refused.stdout
    assert images(gpu1)[CX6DX]["fw"] == "22.43.1020"


def test_a_part_number_pins_the_adapter_through_the_firmware_manager(gpu1):
    """gpu1 has MFT's firmware manager (the simulator's mlxfwmanager report): its part numbers pin the adapters, the
    _Ax suffix it prints or not. Read by flint's query alone, the same entries match nothing: reported, left alone."""
    path, digest = make_image("gpu1", "cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    versions = {"MCX623106AC-CDA": dict(version="22.45.3608", image=path, sha256=digest),
                "MCX755106AS-HEA_Ax": dict(version="28.40.1000")}
    by_flint = gpu1.module(MODULE, dict(versions=versions, reader="flint"))
    assert by_flint.get("failed") is not True, by_flint
    assert by_flint["changed"] is False and sorted(by_flint["unknown"]) == [CX6DX, CX7] and burns(gpu1) == []
    assert all("its part number was not read" in a["reason"] for a in by_flint["adapters"])
    first = gpu1.module(MODULE, dict(versions=versions))
    assert first.get("failed") is not True, first
    assert first["tool"]["reader"] == "/usr/sbin/mlxfwmanager" and first["unknown"] == []
    plans = dict((a["pci"], a) for a in first["adapters"])
    assert (plans[CX6DX]["key"], plans[CX6DX]["part_number"], plans[CX6DX]["action"]) == (
        "MCX623106AC-CDA", "MCX623106AC-CDA_Ax", "burn")
    assert (plans[CX7]["key"], plans[CX7]["action"]) == ("MCX755106AS-HEA_Ax", "none")
    assert first["commands"] == ["/usr/sbin/flint -d %s -i %s -y burn" % (CX6DX, burnt_copy(path, digest))]
    assert len(burns(gpu1)) == 1
    assert images(gpu1)[CX6DX]["fw"] == "22.45.3608" and first["pending"] == [CX6DX]
    again = gpu1.module(MODULE, dict(versions=versions))
    assert again["changed"] is False and again["commands"] == [] and len(burns(gpu1)) == 1


def test_an_adapter_without_a_pinned_version_is_reported_and_left_alone(gpu1):
    result = gpu1.module(MODULE, dict(versions={PSID_CX7: dict(version="28.40.1000")}))
    assert result.get("failed") is not True, result
    assert result["changed"] is False and result["unknown"] == [CX6DX]
    cx6dx = [a for a in result["adapters"] if a["pci"] == CX6DX][0]
    assert cx6dx["action"] == "unknown" and cx6dx["burnt"] == "22.43.1020" and burns(gpu1) == []


def controller_image(tmp_path, name, psid, fw):
    """An image file on the controller (the role copies it to the host); its path and SHA-256."""
    path = str(tmp_path / name)
    subprocess.run([sys.executable, FLINTSIM, "make-image", path, "--psid", psid, "--fw", fw], check=True,
                   capture_output=True)
    with open(path, "rb") as handle:
        return path, hashlib.sha256(handle.read()).hexdigest()


def firmware_playbook(versions, **extra):
    argv = ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "playbooks", "nic_firmware.yml"),
            "-e", "roce_firmware_hosts=gpu1", "-e", json.dumps(dict(extra, nic_firmware_versions=versions))]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)


def test_the_rolling_play_burns_on_every_host_then_activates_live_or_by_one_reboot(gpu1, tmp_path):
    """playbooks/nic_firmware.yml with images the site keeps on the controller: copied to gpu1 and burnt in the
    first play (no reset there), the ConnectX-6 Dx reset live in the rolling play, the ConnectX-7 (no live reset
    on it) loaded by the host's one reboot, then checked; the second run changes nothing and does not reboot."""
    cx6dx, cx6dx_digest = controller_image(tmp_path, "fw-cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    cx7, cx7_digest = controller_image(tmp_path, "fw-cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX6DX: dict(version="22.45.3608", src=cx6dx, sha256=cx6dx_digest),
                PSID_CX7: dict(version="28.43.1014", src=cx7, sha256=cx7_digest)}
    first = firmware_playbook(versions)
    assert first.returncode == 0, first.stdout[-4000:]
    assert "The pinned ConnectX firmware images run." in first.stdout
    assert gpu1.reboots() == 1 and len(burns(gpu1)) == 2
    assert len([c for c in gpu1.mutating_calls() if "reset" in c["argv"]]) == 1
    assert dict((pci, (i["fw"], i["running"])) for pci, i in images(gpu1).items()) == {
        CX6DX: ("22.45.3608", "22.45.3608"), CX7: ("28.43.1014", "28.43.1014")}
    again = firmware_playbook(versions)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-4000:]
    assert gpu1.reboots() == 1 and len(burns(gpu1)) == 2


def test_an_image_a_reboot_did_not_load_gets_no_second_reboot(gpu1, tmp_path):
    """The ConnectX-7's new image loads only at a power cycle (the simulator's image_activation flag; no live reset on
    that adapter): the first run burns it and reboots once, and its check names the image that still does not run;
    the next run burns nothing and does not reboot again for the same image (host_reboot's record of what its last
    reboot was for), and says to power-cycle the host. After the power cycle a run changes nothing."""
    gpu1.fw_admin("flag", "--pci", CX7, "image_activation=power_cycle")
    cx7, cx7_digest = controller_image(tmp_path, "fw-cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX7: dict(version="28.43.1014", src=cx7, sha256=cx7_digest)}
    first = firmware_playbook(versions)
    assert first.returncode != 0 and gpu1.reboots() == 1 and len(burns(gpu1)) == 1, first.stdout[-4000:]
    reason = "ConnectX firmware 28.43.1014 burnt on %s, 28.40.1000 runs" % CX7
    assert "Pinned ConnectX firmware does not run: %s" % reason in first.stdout, first.stdout[-4000:]
    assert images(gpu1)[CX7] == dict(images(gpu1)[CX7], fw="28.43.1014", running="28.40.1000")
    again = firmware_playbook(versions)
    assert again.returncode != 0 and gpu1.reboots() == 1 and len(burns(gpu1)) == 1, again.stdout[-4000:]
    assert "Not rebooting again for what the reboot at" in again.stdout, again.stdout[-4000:]
    assert "A reboot already failed to load it" in again.stdout and "power-cycle the host" in again.stdout
    # The operator power-cycles the host through its BMC: the image runs, and nothing burns or reboots.
    gpu1.fw_admin("power-cycle")
    done = firmware_playbook(versions)
    assert done.returncode == 0 and "The pinned ConnectX firmware images run." in done.stdout, done.stdout[-4000:]
    assert gpu1.reboots() == 1 and len(burns(gpu1)) == 1


def hook(log, word, status=0):
    """A site's drain or undrain hook: it appends what it was told to ``log`` and exits with ``status``."""
    return ["sh", "-c", 'echo "%s $ROCE_DRAIN_NODE $ROCE_DRAIN_REASON" >> "$1"; exit %d' % (word, status), "hook", log]


def test_the_host_is_drained_before_its_reset_and_reboot_and_returned_after_its_checks(gpu1, tmp_path):
    """The site's drain hook runs before the live reset and the reboot, told why, and the undrain hook after the
    check; a hook that fails (the node's jobs would not leave) keeps the host from any reset or reboot."""
    cx6dx, cx6dx_digest = controller_image(tmp_path, "fw-cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    cx7, cx7_digest = controller_image(tmp_path, "fw-cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX6DX: dict(version="22.45.3608", src=cx6dx, sha256=cx6dx_digest),
                PSID_CX7: dict(version="28.43.1014", src=cx7, sha256=cx7_digest)}
    log = str(tmp_path / "drain.log")
    refused = firmware_playbook(versions, roce_drain_command=hook(log, "drain", 1), roce_undrain_command=hook(log, "undrain"))
    assert refused.returncode != 0 and "Drain through the site's hook" in refused.stdout, refused.stdout[-3000:]
    # Burnt in the first play (no disruption there); neither reset nor rebooted, and not returned (never drained).
    assert len(burns(gpu1)) == 2 and gpu1.reboots() == 0
    assert not [c for c in gpu1.mutating_calls() if "reset" in c["argv"]]
    with open(log) as handle:
        assert [line.split()[:2] for line in handle] == [["drain", "gpu1"]]

    os.unlink(log)
    done = firmware_playbook(versions, roce_drain_command=hook(log, "drain"), roce_undrain_command=hook(log, "undrain"))
    assert done.returncode == 0, done.stdout[-3000:]
    with open(log) as handle:
        lines = handle.read().splitlines()
    assert [line.split()[:2] for line in lines] == [["drain", "gpu1"], ["undrain", "gpu1"]]
    assert "roce.fabric: firmware image waiting on 0000:3b:00.0 (live reset or reboot); firmware image waiting on " \
           "0000:86:00.0" in lines[0], lines
    assert gpu1.reboots() == 1 and images(gpu1)[CX7]["running"] == "28.43.1014"
    # Nothing left to disrupt: no drain on the next run.
    os.unlink(log)
    assert firmware_playbook(versions, roce_drain_command=hook(log, "drain")).returncode == 0
    assert not os.path.exists(log) and gpu1.reboots() == 1


def test_an_image_pinned_by_url_is_downloaded_on_the_controller_checked_and_burnt(gpu1, tmp_path):
    """nic_firmware_versions with a url (the site's mirror; here a web server on the controller's loopback): with the
    wrong SHA-256 the download is refused and kept nowhere, nothing is copied or burnt; with the right one the image
    is downloaded once into nic_firmware_download_dir, copied, burnt and reset live (the ConnectX-6 Dx)."""
    import functools  # pylint: disable=import-outside-toplevel
    import http.server  # pylint: disable=import-outside-toplevel
    import threading  # pylint: disable=import-outside-toplevel
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _path, digest = controller_image(mirror, "fw-cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/fw-cx6dx-22.45.3608.bin" % server.server_address[1]
    downloads = tmp_path / "downloads"
    try:
        wrong = firmware_playbook({PSID_CX6DX: dict(version="22.45.3608", url=url, sha256="0" * 64)},
                                  nic_firmware_download_dir=str(downloads))
        assert wrong.returncode != 0 and "checksum" in wrong.stdout.lower(), wrong.stdout[-3000:]
        assert not (downloads / "fw-cx6dx-22.45.3608.bin").exists() and burns(gpu1) == []
        right = firmware_playbook({PSID_CX6DX: dict(version="22.45.3608", url=url, sha256=digest)},
                                  nic_firmware_download_dir=str(downloads))
        assert right.returncode == 0, right.stdout[-3000:]
        assert (downloads / "fw-cx6dx-22.45.3608.bin").exists() and len(burns(gpu1)) == 1
        # Activated by a live reset (the lab inventory's firmware settings may still reboot the host for themselves).
        assert len([c for c in gpu1.mutating_calls() if "reset" in c["argv"]]) == 1
        assert images(gpu1)[CX6DX]["running"] == "22.45.3608"
    finally:
        server.shutdown()


def as_login_user(options=None):
    """The CLI options of a site that logs in as its own user and becomes root with sudo (ansible_user + become; as
    extra variables, which win over the lab inventory's ansible_user: root)."""
    return ["-e", json.dumps(dict(ansible_user=LAB.login_user("gpu1"), ansible_become=True))] + list(options or [])


def test_the_live_reset_guard_holds_under_become_with_sudo_s_env_reset(gpu1):
    """The controller logs in as the site's user and becomes root through the host's real sudo, whose env_reset
    leaves the module without SSH_CONNECTION; gpu1's management interface eth0, where that session arrives, is the
    second port of the ConnectX-6 Dx. Its burnt image is not reset live: it waits for the host's reboot. With eth0
    on no adapter the same become run resets it."""
    probe = gpu1.module("ansible.builtin.command", dict(argv=["env"]), options=as_login_user())
    assert probe.get("rc") == 0, probe
    assert "SUDO_USER=%s" % LAB.login_user("gpu1") in probe["stdout"] and "SSH_CONNECTION" not in probe["stdout"]
    path, digest = make_image("gpu1", "cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    args = dict(devices=["ens1f0np0"], versions={PSID_CX6DX: dict(version="22.45.3608", image=path, sha256=digest)},
                activate="live_reset")
    LAB.management_on("gpu1", "0000:3b:00.1")
    try:
        held = gpu1.module(MODULE, args, options=as_login_user())
    finally:
        LAB.management_on("gpu1", None)
    assert held.get("failed") is not True, held
    activation = held["adapters"][0]["activation"]
    assert activation.startswith("reboot: no live reset, it carries the controller's session (eth0: the route to the "
                                 "controller's address 10.77.0.1 (SSH_CONNECTION, the login session's environment "
                                 "(process "), activation
    assert held["pending"] == [CX6DX] and held["activated"] == [] and held["reboot_required"] is True
    assert not [c for c in gpu1.mutating_calls() if "reset" in c["argv"]]
    assert images(gpu1)[CX6DX]["fw"] == "22.45.3608" and images(gpu1)[CX6DX]["running"] == "22.43.1020"
    # eth0 a virtual interface again: the same run under sudo resets the card live.
    free = gpu1.module(MODULE, args, options=as_login_user())
    assert free["activated"] == [CX6DX] and images(gpu1)[CX6DX]["running"] == "22.45.3608", free
    assert len([c for c in gpu1.mutating_calls() if "reset" in c["argv"]]) == 1 and gpu1.reboots() == 0


def test_the_other_slot_of_a_socket_direct_card_that_carries_the_session_is_not_reset(gpu1):
    """A Socket Direct card: one flash on two PCIe slots, whose PCI devices print one query (the same PSID, versions
    and Base MAC). gpu1's 86:00.0 is made the other slot of the ConnectX-6 Dx's card, with its burnt image waiting,
    and the management interface eth0 is its port: neither slot is reset live (a reset takes the whole card down)."""
    base_mac = images(gpu1)[CX6DX]["base_mac"]
    for pci in (CX6DX, CX7):
        LAB.flint_admin("gpu1", "image", "--pci", pci, "--psid", PSID_CX6DX, "--fw", "22.45.3608", "--running",
                        "22.43.1020", "--base-mac", base_mac)
    LAB.management_on("gpu1", "0000:86:00.0")
    try:
        result = gpu1.module(MODULE, dict(versions={PSID_CX6DX: dict(version="22.45.3608")}, activate="live_reset"),
                             options=as_login_user())
    finally:
        LAB.management_on("gpu1", None)
    assert result.get("failed") is not True, result
    activation = dict((a["pci"], a["activation"]) for a in result["adapters"])
    assert activation[CX7].startswith("reboot: no live reset, it carries the controller's session (eth0: "), activation
    assert activation[CX6DX].startswith("reboot: no live reset, it is one card with %s (Socket Direct, Base MAC %s)"
                                        % (CX7, base_mac)), activation
    assert sorted(result["pending"]) == [CX6DX, CX7] and result["activated"] == []
    assert not [c for c in gpu1.mutating_calls() if "reset" in c["argv"]] and burns(gpu1) == []


def test_the_bytes_burnt_are_the_pinned_image_even_when_the_file_changes_after_its_check(gpu1):
    """Both adapters get an image; while the first burns, the second's image file is rewritten on the host (the
    simulator's on-burn fault: another valid image of the same PSID and version, other bytes). The second adapter
    still gets the bytes of the pinned SHA-256: each burn reads the module's private copy, made before the checks.
    An image in a folder everyone may write, reached through a link, is refused before anything is burnt."""
    cx6dx, cx6dx_digest = make_image("gpu1", "cx6dx-22.45.3608.bin", PSID_CX6DX, "22.45.3608")
    cx7, cx7_digest = make_image("gpu1", "cx7-28.43.1014.bin", PSID_CX7, "28.43.1014")
    versions = {PSID_CX6DX: dict(version="22.45.3608", image=cx6dx, sha256=cx6dx_digest),
                PSID_CX7: dict(version="28.43.1014", image=cx7, sha256=cx7_digest)}
    # A shared drop folder (mode 0777) reached through a link: refused, nothing read or burnt.
    script = ('mkdir -p /var/lib/roce-fabric/drop && chmod 0777 /var/lib/roce-fabric/drop && cp "$1" '
              '/var/lib/roce-fabric/drop/ && ln -sfn drop /var/lib/roce-fabric/current')
    shared = LAB.exec("gpu1", ["sh", "-c", script, "-", cx6dx])
    assert shared.returncode == 0, shared.stderr
    linked = dict(versions, **{PSID_CX6DX: dict(versions[PSID_CX6DX], image="/var/lib/roce-fabric/current/cx6dx-22.45.3608.bin")})
    refused = gpu1.module(MODULE, dict(versions=linked))
    assert refused.get("failed") and "is a symbolic link" in refused["msg"] and "nothing was burnt" in refused["msg"], refused
    direct = dict(versions, **{PSID_CX6DX: dict(versions[PSID_CX6DX], image="/var/lib/roce-fabric/drop/cx6dx-22.45.3608.bin")})
    refused = gpu1.module(MODULE, dict(versions=direct))
    assert refused.get("failed") and "may be written by group or others (mode 0777)" in refused["msg"], refused
    assert burns(gpu1) == []

    other = LAB.exec("gpu1", ["python3", FLINTSIM, "make-image", "/dev/stdout", "--psid", PSID_CX7, "--fw", "28.43.1014",
                              "--release-date", "1.1.2026"])
    LAB.flint_admin("gpu1", "on-burn", "--write", cx7, "--content", other.stdout.splitlines()[0])
    done = gpu1.module(MODULE, dict(versions=versions))
    assert done.get("failed") is not True, done
    assert [c["device"] for c in burns(gpu1)] == [CX6DX, CX7]
    # The file changed under the run; the flash holds the pinned bytes.
    changed = LAB.exec("gpu1", ["sha256sum", cx7]).stdout.split()[0]
    assert changed != cx7_digest
    assert images(gpu1)[CX7]["sha256"] == cx7_digest and images(gpu1)[CX6DX]["sha256"] == cx6dx_digest
    # Burnt from the private copies, which are gone afterwards.
    assert [c["argv"][3] for c in burns(gpu1)] == [burnt_copy(cx6dx, cx6dx_digest), burnt_copy(cx7, cx7_digest)]
    assert LAB.exec("gpu1", ["sh", "-c", "ls -A /var/lib/roce-fabric/firmware-burn | wc -l"]).stdout.strip() == "0"
    assert LAB.exec("gpu1", ["stat", "-c", "%a %U", "/var/lib/roce-fabric/firmware-burn"]).stdout.strip() == "700 root"
