# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.nic_firmware_image driven through main(): a stand-in mstflint answers with the corpus's real query and
burn transcripts (fixtures/fwimage/: a ConnectX-3 burnt from 2.35.5100 to 2.42.5000, a PSID the tool refused), the
adapters in a sysfs tree in a temp dir."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.modules import nic_firmware_image
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus
from ansible_collections.roce.fabric.tests.unit.plugins.modules.test_mlxconfig import sysfs  # noqa: F401 pylint: disable=unused-import
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

TOOL = "/usr/bin/mstflint"
RESET = "/usr/bin/mstfwreset"
IP = "/usr/sbin/ip"
PSID = "MT_1170110023"  # the ConnectX-3 of the transcripts
CX3 = "0000:19:00.0"
CX5 = "0000:af:00.0"  # PSID MT_0000000158: no entry in the tests' versions


def sample(name):
    return corpus.read("fwimage", name)


class FakeFlint(object):
    """mstflint: each adapter's query from the corpus, an image's query by its file, burns that change the query."""

    def __init__(self, images, burn="burn_cx3_fs2.txt", burn_rc=0, reset="mlxfwreset_reset_cx4.txt", live=True,
                 reset_loads=True):
        self.queries = {CX3: sample("flint_query_cx3_fs2_before_burn.txt"), CX5: sample("flint_query_cx5_fs4.txt")}
        self.images = images  # path -> the fixture of its query
        self.burn_text, self.burn_rc = sample(burn), burn_rc
        self.reset_text = sample(reset)
        # The BlueField-3's real levels; without a live reset, level 3 reads "Not Supported" (the query's own words).
        query = sample("mlxfwreset_query_bf3.txt")
        self.levels_text = query if live else query.replace(
            "3: Driver restart and PCI reset                                  -Supported",
            "3: Driver restart and PCI reset                                  -Not Supported")
        self.reset_loads = reset_loads  # False: the tool's reset ends as the real one does, the old image still runs
        # The host's route to the controller: eth0, which no adapter carries (a test moves it onto an adapter's port).
        self.route = sample("ip_route_get_via_gateway.txt")
        self.queried = []
        self.burnt_digests = []  # the SHA-256 of the file each burn read
        self.on_burn = None
        self.calls = []

    def __call__(self, argv, **kwargs):
        assert isinstance(argv, list) and kwargs["environ_update"]["LC_ALL"] == "C"
        assert kwargs["expand_user_and_vars"] is False
        self.calls.append(argv)
        if argv[0] == RESET:
            if argv[-1] == "query":
                return 0, self.levels_text, ""
            if self.reset_loads:
                self.queries[argv[2]] = self.queries[argv[2]].replace("FW Version(Running):   2.35.5100\n", "")
            return 0, self.reset_text, ""
        if argv[:3] == [IP, "-j", "route"]:
            return 0, self.route, ""
        if argv == [IP, "-j", "address", "show"]:
            return 0, sample("ip_address_show_netns_host.txt"), ""
        if argv[-1] == "query" and argv[1] == "-d":
            return 0, self.queries[argv[2]], ""
        if argv[-1] == "query" and argv[1] == "-i":
            # The module queries its private copy of the image (named <sha256 prefix>-<the image's name>).
            self.queried.append(argv[2])
            source = [path for path in self.images if argv[2] == path or argv[2].endswith("-" + os.path.basename(path))]
            return 0, sample(self.images[source[0]]), ""
        assert argv[-2:] == ["-y", "burn"], argv
        with open(argv[4], "rb") as handle:
            self.burnt_digests.append(hashlib.sha256(handle.read()).hexdigest())
        if self.on_burn:
            self.on_burn(argv)
        if self.burn_rc == 0:
            self.queries[argv[2]] = sample("flint_query_cx3_fs2_burnt_not_running.txt")
        return self.burn_rc, self.burn_text, ""

    @property
    def burns(self):
        return [c for c in self.calls if c[-1] == "burn"]


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "fw-ConnectX3-rel-2_42_5000-MCX311A-XCA_Ax-FlexBoot-3.4.752.bin"
    path.write_bytes(b"an image file's bytes, read only for their SHA-256")
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


# The inventory's address of the host, held by its eth0 (fixtures/fwimage/ip_address_show_netns_host.txt).
HOST_ADDRESS = "10.77.0.11"


@pytest.fixture(autouse=True)
def no_session(monkeypatch):
    """No SSH session unless a test gives one: not the environment of whoever runs the tests."""
    monkeypatch.delenv("SSH_CONNECTION", raising=False)


WORK = {}


@pytest.fixture(autouse=True)
def work_dir(tmp_path):
    """Each test's own private folder for the image copies (the default is the host's /var/lib/roce-fabric)."""
    WORK["path"] = str(tmp_path / "work" / "firmware-burn")
    return WORK["path"]


def run_image(args, **kwargs):
    args = dict(args)
    args.setdefault("work_dir", WORK["path"])
    return run_module(nic_firmware_image.main, args, **kwargs)


def install(monkeypatch, fake, tools=("mstflint", "mstfwreset", "ip")):
    paths = dict(mstflint=TOOL, mstfwreset=RESET, ip=IP)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **kw: paths[name] if name in tools else None)


def pin(path, digest, version="2.42.5000"):
    return {PSID: dict(version=version, image=path, sha256=digest)}


def test_an_old_image_is_burnt_once_and_waits_for_a_reset(monkeypatch, sysfs, image):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    first = run_image(dict(devices=[CX3], versions=pin(path, digest)), diff=True)
    assert first.get("failed") is not True, first.get("msg")
    copy = os.path.join(WORK["path"], "%s-%s" % (digest[:16], os.path.basename(path)))
    assert first["changed"] is True and fake.burns == [[TOOL, "-d", CX3, "-i", copy, "-y", "burn"]]
    # The copy was checked and burnt, and is gone after the run.
    assert fake.queried == [copy] and first["adapters"][0]["burnt_from"] == copy and not os.path.exists(copy)
    (adapter,) = first["adapters"]
    assert (adapter["action"], adapter["burnt"], adapter["running"], adapter["wanted"]) == (
        "burn", "2.42.5000", "2.35.5100", "2.42.5000")
    assert first["reboot_required"] is True and first["pending"] == [CX3]
    assert first["diff"] == dict(before={CX3: "2.35.5100"}, after={CX3: "2.42.5000"})
    # The image is burnt: the next run reads only, and the adapter still waits for its reset.
    fake.calls = []
    second = run_image(dict(devices=[CX3], versions=pin(path, digest)))
    assert second["changed"] is False and fake.burns == [] and second["adapters"][0]["action"] == "activate"
    assert second["reboot_required"] is True and second["commands"] == []


def test_check_mode_reads_and_checks_and_burns_nothing(monkeypatch, sysfs, image):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    result = run_image(dict(devices=[CX3], versions=pin(path, digest)), check_mode=True,
                       diff=True)
    assert result["changed"] is True and fake.burns == [] and len(result["commands"]) == 1
    assert result["diff"]["after"] == {CX3: "2.42.5000"} and result["pending"] == [CX3]
    assert [c[1:3] for c in fake.calls] == [["-d", CX3], ["-i", path]]


def test_an_adapter_without_an_entry_is_reported_and_left_alone(monkeypatch, sysfs, image):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    result = run_image(dict(versions=pin(path, digest)))  # devices: all
    assert result.get("failed") is not True, result.get("msg")
    assert result["unknown"] == [CX5] and [c[2] for c in fake.burns] == [CX3]
    cx5 = [a for a in result["adapters"] if a["pci"] == CX5][0]
    assert cx5["action"] == "unknown" and "no pinned version" in cx5["reason"] and cx5["burnt"] == "16.28.2006"


def test_the_bytes_burnt_are_the_bytes_hashed(monkeypatch, sysfs, image):  # noqa: F811
    """Two ConnectX-3 adapters pinned to one image: while the first burns (minutes on a real card), someone rewrites
    the image file. The second burn still writes the bytes that were checked against the pinned SHA-256: every burn
    reads the private copy made before the checks."""
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    fake.queries[CX5] = sample("flint_query_cx3_fs2_before_burn.txt")  # a second ConnectX-3 in slot af:00

    def rewrite(_argv):
        with open(path, "wb") as handle:
            handle.write(b"another image, after the checks")
    fake.on_burn = rewrite
    install(monkeypatch, fake)
    real = fake.__call__

    def burn_both(argv, **kw):
        if argv[-2:] == ["-y", "burn"]:
            rc, out, err = real(argv, **kw)
            fake.queries[argv[2]] = sample("flint_query_cx3_fs2_burnt_not_running.txt")
            return rc, out, err
        return real(argv, **kw)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: burn_both(argv, **kw))
    result = run_image(dict(devices=[CX3, CX5], versions=pin(path, digest)))
    assert result.get("failed") is not True, result.get("msg")
    assert [c[2] for c in fake.burns] == [CX3, CX5]
    assert fake.burnt_digests == [digest, digest]
    assert len(set(c[4] for c in fake.burns)) == 1 and fake.burns[0][4] != path


@pytest.mark.parametrize("layout, words", [
    ("shared", "may be written by group or others (mode 0777)"),
    ("link", "is a symbolic link"),
    ("other_owner", "is owned by uid 4242"),
])
def test_an_image_path_another_user_could_change_is_refused(monkeypatch, sysfs, image, tmp_path, layout, words):  # noqa: F811
    """The image in a folder everyone may write, reached through a link, or in a folder of another user: refused
    before anything is read or burnt; allow_shared_image_path takes the shared folder (its copy is still checked)."""
    path, digest = image
    folder = tmp_path / "images"
    folder.mkdir()
    shutil.copy(path, str(folder / os.path.basename(path)))
    given = str(folder / os.path.basename(path))
    if layout == "shared":
        folder.chmod(0o777)
    elif layout == "link":
        (tmp_path / "current").symlink_to(folder)
        given = str(tmp_path / "current" / os.path.basename(path))
    else:
        os.chown(str(folder), 4242, 4242)
    fake = FakeFlint({given: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    result = run_image(dict(devices=[CX3], versions=pin(given, digest)))
    assert result["failed"] and words in result["msg"] and "nothing was burnt" in result["msg"], result["msg"]
    assert fake.burns == [] and fake.queried == [] and result["changed"] is False
    if layout == "shared":
        taken = run_image(dict(devices=[CX3], versions=pin(given, digest), allow_shared_image_path=True))
        assert taken.get("failed") is not True and fake.burnt_digests == [digest], taken.get("msg")


@pytest.mark.parametrize("change, words", [
    (dict(sha256="0" * 64), "has SHA-256"),
    (dict(image_query="flint_query_cx5_fs4.txt"), "is for PSID MT_0000000158, the adapter's is MT_1170110023"),
    (dict(version="2.40.5000"), "holds 2.42.5000, not the pinned 2.40.5000"),
    (dict(version="2.30.3200"), "a downgrade"),
    (dict(sha256=None), "needs image and sha256"),
    (dict(link=True), "is a symbolic link"),
])
def test_an_image_that_does_not_fit_burns_nothing(monkeypatch, sysfs, image, tmp_path, change, words):  # noqa: F811
    path, digest = image
    if change.get("link"):
        link = str(tmp_path / "link.bin")
        (tmp_path / "link.bin").symlink_to(path)
        path = link
    fake = FakeFlint({path: change.get("image_query", "flint_image_query_cx3_fs2.txt")})
    install(monkeypatch, fake)
    versions = pin(path, change.get("sha256", digest), change.get("version", "2.42.5000"))
    result = run_image(dict(devices=[CX3], versions=versions))
    assert result["failed"] and words in result["msg"] and "nothing was burnt" in result["msg"], result["msg"]
    assert fake.burns == [] and result["changed"] is False


def test_a_downgrade_goes_on_only_when_allowed(monkeypatch, sysfs, image):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    fake.queries[CX3] = sample("flint_query_cx3_fs2_burnt_not_running.txt").replace("2.42.5000", "2.43.0100", 1)
    install(monkeypatch, fake)
    refused = run_image(dict(devices=[CX3], versions=pin(path, digest)))
    assert refused["failed"] and "allow_downgrade" in refused["msg"] and fake.burns == []
    minimum = run_image(dict(devices=[CX3], versions=pin(path, digest), policy="minimum"))
    assert minimum["changed"] is False and minimum["adapters"][0]["action"] == "activate" and fake.burns == []
    allowed = run_image(dict(devices=[CX3], versions=pin(path, digest), allow_downgrade=True),
                        check_mode=True)
    assert allowed["changed"] is True and allowed["adapters"][0]["action"] == "burn" and fake.burns == []


@pytest.mark.parametrize("burn, words", [
    ("burn_psid_mismatch.txt", "PSID mismatch. The PSID on flash (IBM1080111023)"),
    ("burn_cx4lx_fs3_flash_timeout.txt", "Burning FS3 image failed: Failed to invalidate old fw signature"),
])
def test_a_burn_the_tool_refuses_or_fails_ends_the_run_with_its_words(monkeypatch, sysfs, image, burn, words):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"}, burn=burn, burn_rc=1)
    install(monkeypatch, fake)
    result = run_image(dict(devices=[CX3], versions=pin(path, digest)))
    assert result["failed"] and words in result["msg"], result["msg"]
    assert len(fake.burns) == 1 and result["failed_command"].endswith("-y burn") and result["category"] == "burn_failed"


@pytest.mark.parametrize("versions, words", [
    ({"MT_1170110023; reboot": dict(version="2.42.5000")}, "is neither a PSID"),
    ({PSID: dict(version="2.42")}, "not a firmware version"),
    ({PSID: dict()}, "needs a version"),
    ({PSID: dict(version="2.42.5000", sha256="abc")}, "64 hexadecimal digits"),
    ({PSID: dict(version="2.42.5000", image="relative.bin")}, "absolute path"),
])
def test_bad_input_is_refused_before_anything_is_read(monkeypatch, sysfs, versions, words):  # noqa: F811
    fake = FakeFlint({})
    install(monkeypatch, fake)
    result = run_image(dict(devices=[CX3], versions=versions))
    assert result["failed"] and words in result["msg"] and "nothing was read or burnt" in result["msg"], result["msg"]
    assert fake.calls == []


def test_a_host_without_the_tool_and_an_adapter_that_does_not_answer_fail_clearly(monkeypatch, sysfs):  # noqa: F811
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **kw: None)
    missing = run_image(dict(devices=[CX3], versions={PSID: dict(version="2.42.5000")}))
    assert missing["failed"] and "Cannot find flint or mstflint" in missing["msg"] and missing["category"] == "tool_missing"
    fake = FakeFlint({})
    fake.queries[CX3] = sample("query_cannot_open_device.txt")  # rc 0 here: the -E- line alone fails the query
    install(monkeypatch, fake)
    silent = run_image(dict(devices=[CX3], versions={PSID: dict(version="2.42.5000")}))
    assert silent["failed"] and "mstflint query of 0000:19:00.0 failed: Cannot open Device: 41:00.0" in silent["msg"], silent["msg"]
    assert fake.burns == []


def test_a_live_reset_makes_the_burnt_image_run_without_a_reboot(monkeypatch, sysfs, image):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.2 22")  # the controller's route: eth0, no adapter
    result = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset"))
    assert result.get("failed") is not True, result.get("msg")
    assert result["activated"] == [CX3] and result["pending"] == [] and result["reboot_required"] is False
    assert result["commands"][-1] == "%s -d %s --level 3 -y reset" % (RESET, CX3)
    assert result["adapters"][0]["activation"] == "live reset" and result["adapters"][0]["running"] == "2.42.5000"
    assert [IP, "-j", "route", "get", "192.0.2.10"] in fake.calls


def test_a_live_reset_that_did_not_load_the_image_is_not_tried_again_in_this_boot(monkeypatch, sysfs, image, tmp_path):  # noqa: F811
    """The reset ends as the tool's does, but the old image still runs: the adapter waits for the reboot, and the
    record (the adapter, the version, this boot) keeps the next run in the same boot from a second reset; after a
    boot the record no longer holds."""
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"}, reset_loads=False)
    install(monkeypatch, fake)
    boot = os.path.join(sysfs, "proc", "sys", "kernel", "random")
    os.makedirs(boot)
    with open(os.path.join(boot, "boot_id"), "w") as handle:
        handle.write("9a2f0a4e-6c1d-4f55-8c53-4b1e2a7d0c11\n")
    record = str(tmp_path / "state" / "nic_firmware_live_reset.json")
    os.makedirs(os.path.dirname(record), mode=0o700)
    args = dict(devices=[CX3], versions=pin(path, digest), activate="live_reset", reset_record=record,
                host_address=HOST_ADDRESS)

    def resets():
        return [c for c in fake.calls if c[-1] == "reset"]
    first = run_image(args)
    assert first.get("failed") is not True, first.get("msg")
    assert first["adapters"][0]["activation"] == "reboot: the live reset did not load 2.42.5000 (2.35.5100 runs)"
    assert first["pending"] == [CX3] and first["reboot_required"] is True and len(resets()) == 1
    with open(record) as handle:
        assert json.load(handle) == {CX3: {"version": "2.42.5000", "boot_id": "9a2f0a4e-6c1d-4f55-8c53-4b1e2a7d0c11"}}
    assert oct(os.stat(record).st_mode & 0o777) == "0o600"
    for check_mode in (True, False):
        again = run_image(args, check_mode=check_mode)
        assert again["adapters"][0]["activation"] == (
            "reboot: a live reset in this boot already failed to load 2.42.5000 (%s); no second one" % record)
        assert again["changed"] is False and again["reboot_required"] is True and len(resets()) == 1
    # Another boot (the reboot did not load it either): the record is of an earlier boot, a reset may be tried.
    with open(os.path.join(boot, "boot_id"), "w") as handle:
        handle.write("5d0c7b8e-1f2a-4c3b-9e4d-6a7b8c9d0e1f\n")
    later = run_image(args)
    assert len(resets()) == 2 and later["adapters"][0]["activation"].startswith("reboot: the live reset did not load")


@pytest.mark.parametrize("case, why", [
    (dict(keep_netdevs=["ens1f0np0"]), "it carries ens1f0np0 (keep_netdevs)"),
    (dict(live=False), "the adapter does not offer level 3 (0, 4)"),
    (dict(tools=("mstflint", "ip")), "neither mlxfwreset nor mstfwreset is installed"),
])
def test_an_adapter_that_may_not_or_cannot_be_reset_live_waits_for_a_reboot(monkeypatch, sysfs, image, case, why):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"}, live=case.get("live", True))
    install(monkeypatch, fake, case.get("tools", ("mstflint", "mstfwreset", "ip")))
    result = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset",
                            keep_netdevs=case.get("keep_netdevs", []), host_address=HOST_ADDRESS))
    assert result.get("failed") is not True, result.get("msg")
    assert result["pending"] == [CX3] and result["reboot_required"] is True and result["activated"] == []
    assert result["adapters"][0]["activation"] == "reboot: no live reset, " + why, result["adapters"][0]
    assert not [c for c in fake.calls if c[-1] == "reset"] and len(fake.burns) == 1


def test_the_adapter_of_the_controller_s_session_is_never_reset_live(monkeypatch, sysfs, image):  # noqa: F811
    """The controller's SSH session reaches this host through ens1f0np0 (the route says so): its adapter waits for
    the reboot, whatever the reset levels offer."""
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.2 22")
    fake.route = fake.route.replace('"dev":"eth0"', '"dev":"ens1f0np0"')
    result = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset"),
                       check_mode=True)
    assert result["adapters"][0]["activation"] == (
        "reboot: no live reset, it carries the controller's session (ens1f0np0: the route to the controller's address "
        "192.0.2.10 (SSH_CONNECTION, the module's environment))")
    assert result["pending"] == [CX3] and not [c for c in fake.calls if c[-1] == "reset"]


def test_check_mode_names_the_live_reset_and_runs_none(monkeypatch, sysfs, image):  # noqa: F811
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    result = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset",
                            host_address=HOST_ADDRESS), check_mode=True)
    assert result["changed"] is True and result["activated"] == [CX3] and len(result["commands"]) == 2
    assert fake.burns == [] and not [c for c in fake.calls if c[-1] == "reset"]


def login_session_above(sysfs, session):
    """The module's process under sudo: its own environment has no SSH_CONNECTION (env_reset), the login shell above
    sudo has (a /proc of this process's ancestors under the test's root, laid out as proc(5) says)."""
    chain = [(os.getpid(), 70001, {"SUDO_USER": "ubuntu"}), (70001, 70002, {"SSH_CONNECTION": session}), (70002, 1, {})]
    for pid, ppid, environ in chain:
        folder = os.path.join(sysfs, "proc", str(pid))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "stat"), "w") as handle:
            handle.write("%d (sh) S %d %d %d 0 -1\n" % (pid, ppid, pid, pid))
        with open(os.path.join(folder, "environ"), "wb") as handle:
            handle.write(b"".join(("%s=%s" % item).encode() + b"\0" for item in environ.items()))


def test_the_live_reset_guard_holds_under_become(monkeypatch, sysfs, image):  # noqa: F811
    """become: sudo's env_reset leaves the module without SSH_CONNECTION. The session is found in the login shell's
    environment above sudo, the route to the controller goes through ens1f0np0: its adapter is not reset."""
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    fake.route = fake.route.replace('"dev":"eth0"', '"dev":"ens1f0np0"')
    install(monkeypatch, fake)
    login_session_above(sysfs, "192.0.2.10 50022 192.0.2.2 22")
    result = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset",
                            host_address=HOST_ADDRESS))
    assert result.get("failed") is not True, result.get("msg")
    assert result["adapters"][0]["activation"] == (
        "reboot: no live reset, it carries the controller's session (ens1f0np0: the route to the controller's address "
        "192.0.2.10 (SSH_CONNECTION, the login session's environment (process 70001)))")
    assert result["pending"] == [CX3] and result["reboot_required"] is True and result["activated"] == []
    assert not [c for c in fake.calls if c[-1] == "reset"] and len(fake.burns) == 1
    assert [i["name"] for i in result["controller_path"]["interfaces"]] == ["ens1f0np0", "eth0"]


@pytest.mark.parametrize("check_mode", [False, True])
def test_without_a_path_to_the_controller_no_adapter_is_reset_live(monkeypatch, sysfs, image, check_mode):  # noqa: F811
    """Fail closed: no session to be found (a local connection, a tunnel) and no inventory address of this host:
    nothing is reset live, the burnt image waits for the host's reboot, and the result says why."""
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake)
    result = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset"),
                       check_mode=check_mode)
    assert result.get("failed") is not True, result.get("msg")
    unknown = ("no SSH_CONNECTION in the module's environment or its login session's; no inventory address of the "
               "host was given")
    assert result["controller_path"] == dict(interfaces=[], unknown=unknown)
    assert result["adapters"][0]["activation"] == (
        "reboot: no live reset, the interfaces that carry the controller's session could not be found (%s)" % unknown)
    assert result["pending"] == [CX3] and result["reboot_required"] is True and result["activated"] == []
    assert not [c for c in fake.calls if c[-1] == "reset"]
    assert result["reboot_reason"] == "ConnectX firmware 2.42.5000 burnt on %s, 2.35.5100 runs" % CX3
    # No ip command to read the routes with: unknown too.
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    install(monkeypatch, fake, tools=("mstflint", "mstfwreset"))
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.2 22")
    bare = run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset",
                          host_address=HOST_ADDRESS), check_mode=check_mode)
    assert "no ip command" in bare["adapters"][0]["activation"] and bare["activated"] == []


def reset_with_route_through(monkeypatch, image, netdev):
    """A burn of the ConnectX-3 and a live reset, the controller's session (SSH_CONNECTION) routed through ``netdev``:
    the module's result and the stand-in tool (its calls)."""
    path, digest = image
    fake = FakeFlint({path: "flint_image_query_cx3_fs2.txt"})
    fake.route = fake.route.replace('"dev":"eth0"', '"dev":"%s"' % netdev)
    install(monkeypatch, fake)
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.10 50022 192.0.2.2 22")
    return run_image(dict(devices=[CX3], versions=pin(path, digest), activate="live_reset")), fake


def test_a_virtual_function_that_carries_the_session_protects_its_card(monkeypatch, sysfs, image):  # noqa: F811
    """The management network on a VF of the ConnectX-3 (another slot than its physical function: 19:01.3): the
    card behind the VF is its physical function's, and it is not reset."""
    from ansible_collections.roce.fabric.tests.unit.plugins.modules.test_mlxconfig import make_pci  # pylint: disable=import-outside-toplevel
    make_pci(sysfs, "0000:19:01.3", physfn="0000:19:00.0", netdev="ens1f0v3")
    result, fake = reset_with_route_through(monkeypatch, image, "ens1f0v3")
    assert result["adapters"][0]["activation"].startswith(
        "reboot: no live reset, it carries the controller's session (ens1f0v3: "), result["adapters"][0]
    assert result["activated"] == [] and not [c for c in fake.calls if c[-1] == "reset"]


def test_a_card_that_may_be_the_other_slot_of_the_session_s_socket_direct_card_is_not_reset(monkeypatch, sysfs, image):  # noqa: F811
    """The session runs through the ConnectX-5 in slot af:00 (its flint query prints its Base MAC); the ConnectX-3's
    FS2 query prints none, so whether the two are one Socket Direct card cannot be told: no live reset for it."""
    netdev = os.path.join(sysfs, "sys", "class", "net", "ens6")
    os.makedirs(netdev)
    os.symlink(os.path.join(sysfs, "sys", "bus", "pci", "devices", CX5), os.path.join(netdev, "device"))
    result, fake = reset_with_route_through(monkeypatch, image, "ens6")
    assert result.get("failed") is not True, result.get("msg")
    activation = result["adapters"][0]["activation"]
    assert activation.startswith("reboot: no live reset, its Base MAC or that of %s is not reported, so whether they are "
                                 "one card (Socket Direct) cannot be told" % CX5), activation
    # The protected card's own query was read for its Base MAC (devices named only the ConnectX-3).
    assert [TOOL, "-d", CX5, "query"] in fake.calls
    assert result["activated"] == [] and not [c for c in fake.calls if c[-1] == "reset"]


MANAGER = "/usr/bin/mstfwmanager"


class FakeManager(FakeFlint):
    """mstflint with its firmware manager: each adapter's report is a real one of the corpus (the ConnectX-6 Dx whose
    burnt 22.45.3608 waits while 22.43.1020 runs, and the Innova-2's ConnectX-5), whatever the address asked."""

    REPORTS = {CX3: "mlxfwmanager_cx6dx_running_older.txt", CX5: "mlxup_query_cx5_no_image.txt"}

    def __call__(self, argv, **kwargs):
        if argv[0] == MANAGER:
            assert argv[1] == "-d" and argv[3:] == ["--query"], argv
            self.calls.append(argv)
            return 0, sample(self.REPORTS[argv[2]]), ""
        return super(FakeManager, self).__call__(argv, **kwargs)


def install_manager(monkeypatch, fake, tools=("mstflint", "mstfwreset", "mstfwmanager", "ip")):
    paths = dict(mstflint=TOOL, mstfwreset=RESET, mstfwmanager=MANAGER, ip=IP)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kw: fake(argv, **kw))
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **kw: paths[name] if name in tools else None)


def test_the_firmware_manager_reads_the_part_number_and_a_part_number_entry_pins_the_adapter(monkeypatch, sysfs):  # noqa: F811
    fake = FakeManager({})
    install_manager(monkeypatch, fake)
    # Pinned by part number without the _Ax suffix the report prints; the ConnectX-5 by its own.
    versions = {"MCX623106AC-CDA": dict(version="22.45.3608"), "MNV303212A-ADL_Ax": dict(version="16.24.4020")}
    result = run_image(dict(versions=versions))
    assert result.get("failed") is not True, result.get("msg")
    assert result["tool"]["reader"] == MANAGER and [c[0] for c in fake.calls] == [MANAGER, MANAGER]
    plans = dict((a["pci"], a) for a in result["adapters"])
    assert (plans[CX3]["key"], plans[CX3]["part_number"], plans[CX3]["psid"]) == (
        "MCX623106AC-CDA", "MCX623106AC-CDA_Ax", "MT_0000000436")
    # The burnt image is the pinned one and another runs: nothing to burn, the adapter waits for its activation.
    assert plans[CX3]["action"] == "activate" and (plans[CX3]["burnt"], plans[CX3]["running"]) == ("22.45.3608", "22.43.1020")
    assert plans[CX5]["action"] == "none" and result["unknown"] == [] and fake.burns == []
    assert result["changed"] is False and result["pending"] == [CX3] and result["reboot_required"] is True
    # An entry for the PSID wins over one for the part number.
    versions.update({"MT_0000000436": dict(version="22.45.3608"), "MCX623106AC-CDA": dict(version="22.50.1000")})
    result = run_image(dict(devices=[CX3], versions=versions))
    assert result.get("failed") is not True, result.get("msg")
    assert [(a["key"], a["action"]) for a in result["adapters"]] == [("MT_0000000436", "activate")]


def test_without_the_manager_a_part_number_entry_matches_nothing_and_says_why(monkeypatch, sysfs):  # noqa: F811
    fake = FakeManager({})
    install_manager(monkeypatch, fake)
    versions = {"MCX311A-XCA": dict(version="2.42.5000")}  # the ConnectX-3's part, in its image file's name
    result = run_image(dict(devices=[CX3], versions=versions, reader="flint"))
    assert result.get("failed") is not True, result.get("msg")
    assert result["tool"]["reader"] == TOOL and result["unknown"] == [CX3] and MANAGER not in [c[0] for c in fake.calls]
    assert "its part number was not read (flint's query prints none" in result["adapters"][0]["reason"]
    install_manager(monkeypatch, fake, tools=("mstflint", "ip"))
    missing = run_image(dict(devices=[CX3], versions=versions, reader="manager"))
    assert missing["failed"] and "neither mlxfwmanager (NVIDIA MFT) nor mstfwmanager (mstflint) is installed" in missing["msg"]
    assert fake.burns == []
