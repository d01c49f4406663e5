# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage family (NVMe scratch array): parsers on lsblk, mdadm, blkid and /proc output captured on the lab's VM
(fixtures/storage), and the decisions the module reads its commands from."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.storage import parsers, state
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def read(name):
    return corpus.read("storage", name)


def local():
    """The controllers of the four PCIe drives of the lab VM (/sys as captured there)."""
    return parsers.parse_nvme_sysfs(read("nvme_sysfs_pcie.txt"))


def select(devices, want, controllers=None):
    chosen, left_out = state.select_drives(devices, want, local() if controllers is None else controllers)
    assert left_out == []
    return chosen


def params(**overrides):
    base = dict(name="scratch", state="present", drives=[{"model": "QEMU NVMe Ctrl"}], count=None, chunk=None,
                path="/mnt/scratch", fstype="xfs", mount_options="defaults,noatime,nofail", owner=None, group=None,
                mode="1777", force=False)
    base.update(overrides)
    return base


def test_lsblk_blank_drives_and_the_boot_disk():
    devices = parsers.parse_lsblk(read("lsblk_nvme_blank.json"))
    assert sorted(devices) == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "vda"]
    assert devices["vda"]["mountpoint"] == "/" and devices["vda"]["fstype"] == "ext4"
    drive = devices["nvme2n1"]
    assert (drive["path"], drive["type"], drive["size"], drive["model"], drive["serial"], drive["fstype"]) == \
        ("/dev/nvme2n1", "disk", 1073741824, "QEMU NVMe Ctrl", "RFN1D2", None)
    assert [d["name"] for d in state.nvme_namespaces(devices)] == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]


def test_lsblk_array_below_its_four_members_is_one_device():
    devices = parsers.parse_lsblk(read("lsblk_raid0_mounted.json"))
    (md,) = [d for d in devices.values() if d["type"] == "raid0"]
    assert md["parents"] == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    assert md["mountpoint"] == "/mnt/scratch" and md["fstype"] == "xfs"
    assert all(devices["nvme%dn1" % i]["children"] == [md["name"]] for i in range(4))
    assert all(devices["nvme%dn1" % i]["fstype"] == "linux_raid_member" for i in range(4))


def test_mdadm_detail_export_of_the_array():
    detail = parsers.parse_export(read("mdadm_detail_raid0.txt"))
    assert detail["MD_LEVEL"] == "raid0" and detail["MD_DEVICES"] == "4" and detail["MD_NAME"] == "scratch"
    assert parsers.md_members(detail) == ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"]
    assert state.find_array({"/dev/md127": detail}, "scratch") == ("/dev/md127", detail)
    assert state.find_array({"/dev/md127": detail}, "ckpt") == (None, None)


def test_mdstat_active_and_inactive():
    active = parsers.parse_mdstat(read("mdstat_raid0_active.txt"))
    name = list(active)[0]
    assert len(active) == 1
    assert active[name]["state"] == "active" and active[name]["level"] == "raid0"
    assert sorted(active[name]["members"]) == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    inactive = parsers.parse_mdstat(read("mdstat_inactive.txt"))
    assert list(inactive.values()) == [dict(state="inactive", level=None, members=["nvme0n1"])]
    # The inactive array's detail still names it; its one member is a spare without a role.
    detail = parsers.parse_export(read("mdadm_detail_inactive.txt"))
    assert parsers.md_name(detail["MD_NAME"]) == "scratch" and parsers.md_members(detail) == ["/dev/nvme0n1"]


def test_blkid_and_mounts():
    blkid = parsers.parse_export(read("blkid_md_xfs.txt"))
    assert blkid["TYPE"] == "xfs" and len(blkid["UUID"]) == 36
    mounts = parsers.parse_mounts(read("mounts_raid0.txt"))
    (entry,) = [m for m in mounts if m["file"] == "/mnt/scratch"]
    assert entry["spec"].startswith("/dev/md") and entry["vfstype"] == "xfs"


@pytest.mark.parametrize("value, expected", [
    (1073741824, 1073741824), ("1G", 1 << 30), ("894.3G", int(894.3 * (1 << 30))), ("512K", 512 * 1024),
    ("3.5T", int(3.5 * (1 << 40))), ("1GiB", 1 << 30), ("4096", 4096),
])
def test_sizes(value, expected):
    assert parsers.parse_size(value) == expected


@pytest.mark.parametrize("value", ["", "1X", "one", "-1G", True])
def test_bad_sizes(value):
    with pytest.raises(ValueError):
        parsers.parse_size(value)


@pytest.mark.parametrize("overrides, words", [
    (dict(name="scratch;rm"), "name"),
    (dict(name=""), "name"),
    (dict(path="/"), "path"),
    (dict(path="/var"), "system directory"),
    (dict(path="/mnt"), "system directory"),
    (dict(path="/mnt/a b"), "absolute path"),
    (dict(path="relative"), "absolute path"),
    (dict(path="/mnt/../etc"), "'..' part"),
    # Issue 37, 4: a trailing newline passed "^...$" checks and wrote a broken fstab or mdadm.conf line.
    (dict(name="scratch\n"), "name"),
    (dict(path="/mnt/scratch\n"), "absolute path"),
    (dict(mount_options="defaults\n"), "mount_options"),
    (dict(owner="slurm\n"), "owner"),
    (dict(mode="1777\n"), "mode"),
    # System paths however they are spelt, and the trees under them.
    (dict(path="/./var"), "system directory"),
    (dict(path="//var/"), "system directory"),
    (dict(path="/etc/scratch"), "system directory"),
    (dict(path="/var/lib/x"), "system directory"),
    (dict(path="/run/scratch"), "system directory"),
    (dict(transports=["pcie", "iscsi"]), "transports iscsi"),
    (dict(mount_options="defaults,x-systemd.requires=$(reboot)"), "mount_options"),
    (dict(mount_options="defaults noatime"), "mount_options"),
    (dict(owner="root;id"), "owner"),
    (dict(mode="rwx"), "mode"),
    (dict(chunk="3K"), "chunk"),
    (dict(chunk="big"), "chunk"),
    (dict(count=0), "count"),
    (dict(drives=[]), "selector"),
    (dict(drives=[{"model": "("}]), "regular expression"),
    (dict(drives=[{"min_size": "lots"}]), "min_size"),
    (dict(fstype="btrfs"), "fstype"),
])
def test_input_that_cannot_be_right(overrides, words):
    with pytest.raises(state.ScratchInputError) as err:
        state.check_input(params(**overrides))
    assert words in str(err.value)


def test_selection_by_model_serial_name_and_size():
    devices = parsers.parse_lsblk(read("lsblk_nvme_blank.json"))

    def names(**overrides):
        return [d["name"] for d in select(devices, state.check_input(params(**overrides)))]
    assert names() == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    assert names(drives=[{}]) == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    assert names(drives=[{"serial": "RFN1D[02]"}]) == ["nvme0n1", "nvme2n1"]
    assert names(drives=[{"name": "nvme1n1"}, {"serial": "RFN1D3"}]) == ["nvme1n1", "nvme3n1"]
    assert names(drives=[{"min_size": "1G", "max_size": "1G"}]) == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    # The whole value must match: a model prefix alone selects nothing, and the boot disk (vda) is never an NVMe namespace.
    with pytest.raises(state.ScratchInputError) as err:
        names(drives=[{"model": "QEMU"}])
    assert "no local NVMe namespace matches" in str(err.value) and "nvme0n1 QEMU NVMe Ctrl RFN1D0" in str(err.value)
    with pytest.raises(state.ScratchInputError) as err:
        names(drives=[{"min_size": "2G"}])
    with pytest.raises(state.ScratchInputError) as err:
        names(count=8)
    assert "match 4 NVMe namespaces" in str(err.value) and "count asks for 8" in str(err.value)


def test_blank_drives_are_created():
    devices = parsers.parse_lsblk(read("lsblk_nvme_blank.json"))
    want = state.check_input(params(chunk="256K"))
    chosen = select(devices, want)
    assert state.array_action(want, devices, chosen, (None, None), {}) == ("create", [])
    argv = state.create_argv("/sbin/mdadm", want, [d["path"] for d in chosen])
    assert argv == ["/sbin/mdadm", "--create", "/dev/md/scratch", "--run", "--metadata=1.2", "--level=0",
                    "--raid-devices=4", "--name=scratch", "--homehost=<none>", "--chunk=256",
                    "/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"]


def test_the_same_active_array_is_kept_and_another_refused():
    devices = parsers.parse_lsblk(read("lsblk_raid0_mounted.json"))
    detail = parsers.parse_export(read("mdadm_detail_raid0.txt"))
    want = state.check_input(params())
    chosen = select(devices, want)
    assert state.array_action(want, devices, chosen, ("/dev/md127", detail), {}) == ("ok", [])
    fewer = state.check_input(params(drives=[{"serial": "RFN1D[012]"}]))
    with pytest.raises(state.ScratchInputError) as err:
        state.array_action(fewer, devices, select(devices, fewer), ("/dev/md127", detail), {})
    assert "not rebuilt over its data" in str(err.value) and "/dev/nvme3n1" in str(err.value)


def test_drives_of_the_stopped_array_are_assembled():
    devices = parsers.parse_lsblk(read("lsblk_raid0_mounted.json"))
    examined = parsers.parse_export(read("mdadm_examine_member.txt"))
    want = state.check_input(params())
    chosen = select(devices, want)
    all_four = dict((d["path"], examined) for d in chosen)
    # The captured member's superblock says 4 devices, raid0, name scratch: the four are assembled, not made again.
    assert state.array_action(want, devices, chosen, (None, None), all_four) == ("assemble", [])
    other = state.check_input(params(name="ckpt"))
    with pytest.raises(state.ScratchInputError):
        state.array_action(other, devices, chosen, (None, None), all_four)


def test_drives_in_use_are_refused_unless_forced_and_mounted_ones_always():
    devices = parsers.parse_lsblk(read("lsblk_nvme_in_use.json"))
    want = state.check_input(params())
    chosen = select(devices, want)
    with pytest.raises(state.ScratchInputError) as err:
        state.array_action(want, devices, chosen, (None, None), {})
    text = str(err.value)
    assert "nothing was changed" in text
    assert "/dev/nvme2n1: holds ext4" in text and "/dev/nvme3n1: has partition nvme3n1p1" in text
    assert "/dev/nvme0n1: holds linux_raid_member" in text
    forced = state.check_input(params(force=True))
    action, wipe = state.array_action(forced, devices, chosen, (None, None), {})
    assert action == "create" and wipe == ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"]
    # The mounted array's members: its file system is mounted, so even force leaves them.
    mounted = parsers.parse_lsblk(read("lsblk_raid0_mounted.json"))
    other = state.check_input(params(name="ckpt", force=True))
    with pytest.raises(state.ScratchInputError) as err:
        state.array_action(other, mounted, select(mounted, other), (None, None), {})
    assert "mounted at /mnt/scratch (never used)" in str(err.value)


def test_a_drive_of_an_inactive_array_is_in_use():
    devices = parsers.parse_lsblk(read("lsblk_inactive_member.json"))
    hard, soft = state.in_use(devices, devices["nvme0n1"])
    assert hard == [] and any(reason.startswith("is used by md127") for reason in soft)


def test_file_system_decision():
    want = state.check_input(params())
    assert state.filesystem_action(want, parsers.parse_export(read("blkid_md_xfs.txt"))) == "ok"
    assert state.filesystem_action(want, {}) == "mkfs"
    ext4 = state.check_input(params(fstype="ext4"))
    with pytest.raises(state.ScratchInputError):
        state.filesystem_action(ext4, parsers.parse_export(read("blkid_md_xfs.txt")))
    assert state.filesystem_action(state.check_input(params(fstype="ext4", force=True)),
                                   parsers.parse_export(read("blkid_md_xfs.txt"))) == "mkfs"
    assert state.mkfs_argv(want, "/dev/md/scratch") == ["mkfs.xfs", "-q", "-L", "scratch", "/dev/md/scratch"]
    assert state.mkfs_argv(ext4, "/dev/md/scratch", force=True)[:3] == ["mkfs.ext4", "-q", "-F"]


def test_fstab_and_mdadm_conf_hold_one_line_each():
    want = state.check_input(params())
    fstab = "# /etc/fstab\n/dev/vda / ext4 rw 0 1\nUUID=old /mnt/scratch ext4 defaults 0 0\n/dev/sdb1 /data ext4 defaults 0 2\n"
    line = state.fstab_line(want, "b40e0315-e799-45d5-8cd2-9fdeede87fba")
    edited = state.fstab_edit(fstab, "/mnt/scratch", line)
    assert edited.splitlines() == ["# /etc/fstab", "/dev/vda / ext4 rw 0 1", line, "/dev/sdb1 /data ext4 defaults 0 2"]
    assert state.fstab_edit(edited, "/mnt/scratch", line) == edited
    assert "/mnt/scratch" not in state.fstab_edit(edited, "/mnt/scratch", None)
    assert state.fstab_edit("", "/mnt/scratch", line) == line + "\n"
    uuid = parsers.parse_export(read("mdadm_detail_raid0.txt"))["MD_UUID"]
    conf = "HOMEHOST <system>\nMAILADDR root\n"
    conf_line = state.mdadm_conf_line(want, uuid)
    once = state.mdadm_conf_edit(conf, want, conf_line, uuid)
    assert once == conf + conf_line + "\n" and state.mdadm_conf_edit(once, want, conf_line, uuid) == once
    # A line left by hand for the same array under another device name is replaced, not doubled.
    by_hand = conf + "ARRAY /dev/md127 metadata=1.2 UUID=%s name=scratch\n" % uuid
    assert state.mdadm_conf_edit(by_hand, want, conf_line, uuid) == once
    assert parsers.parse_mdadm_conf(once) == [dict(index=2, device="/dev/md/scratch", uuid=uuid, name="scratch")]


def test_mount_decision():
    want = state.check_input(params())
    mounts = parsers.parse_mounts(read("mounts_raid0.txt"))
    (entry,) = [m for m in mounts if m["file"] == "/mnt/scratch"]
    assert state.mount_action(want, mounts, lambda source: source == entry["spec"]) == "ok"
    with pytest.raises(state.ScratchInputError) as err:
        state.mount_action(want, mounts, lambda source: False)
    assert "not the array scratch" in str(err.value)
    assert state.mount_action(state.check_input(params(path="/scratch")), mounts, lambda source: True) == "mount"


def test_uuid_spellings():
    assert state.md_uuid_colons("89882537-94bf-5269-cf15-27637ae0996f") == "89882537:94bf5269:cf152763:7ae0996f"
    assert state.md_uuid_colons("89882537:94bf5269:cf152763:7ae0996f") == "89882537:94bf5269:cf152763:7ae0996f"


def test_the_controllers_behind_each_namespace_and_their_transports():
    """/sys of the lab VM: four PCIe controllers (QEMU's NVMe, each namespace a native multipath head of its own
    subsystem), and with the kernel's NVMe target connected over TCP, a fifth namespace."""
    pcie = local()
    assert sorted(pcie) == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    assert all([c["transport"] for c in pcie[name]] == ["pcie"] for name in pcie)
    fabric = parsers.parse_nvme_sysfs(read("nvme_sysfs_tcp_target.txt"))
    (other,) = [name for name in fabric if name not in pcie]
    assert [c["transport"] for c in fabric[other]] == ["tcp"]
    assert fabric[other][0]["address"].startswith("traddr=127.0.0.1,trsvcid=4420")
    assert fabric[other][0]["nqn"] == corpus.meta("storage", "nvme_sysfs_tcp_target.txt")["nqn"]
    assert parsers.parse_nvme_sysfs("") == {}


def test_fabric_namespaces_are_never_taken_by_default():
    """Issue 37, 1: drives [{}] ("every local NVMe namespace") took NVMe-oF namespaces too (another host's storage,
    attached with nvme connect), and would have striped them. Only namespaces whose every controller is PCIe are
    taken unless transports says otherwise; the others are named."""
    devices = parsers.parse_lsblk(read("lsblk_nvme_fabric.json"))
    controllers = parsers.parse_nvme_sysfs(read("nvme_sysfs_tcp_target.txt"))
    (other,) = [name for name in controllers if name not in local()]
    everything = state.check_input(params(drives=[{}]))
    chosen, left_out = state.select_drives(devices, everything, controllers)
    assert [d["name"] for d in chosen] == ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
    assert len(left_out) == 1 and left_out[0].startswith("%s: nvme" % other) and " over tcp (nqn." in left_out[0]
    # Named on its own, it is refused with the reason; with count it does not count.
    with pytest.raises(state.ScratchInputError) as err:
        state.select_drives(devices, state.check_input(params(drives=[{"name": other}])), controllers)
    assert "no local NVMe namespace matches" in str(err.value) and "left out as not local (transports pcie)" in str(err.value)
    with pytest.raises(state.ScratchInputError) as err:
        state.select_drives(devices, state.check_input(params(drives=[{}], count=5)), controllers)
    assert "count asks for 5" in str(err.value) and other in str(err.value)
    # A site that asks for it takes it.
    chosen, left_out = state.select_drives(devices, state.check_input(params(drives=[{}], transports=["pcie", "tcp"])),
                                           controllers)
    assert len(chosen) == 5 and left_out == []
    # A namespace without any controller found in /sys has an unknown transport: left out too.
    chosen, left_out = state.select_drives(devices, everything, dict((k, v) for k, v in controllers.items() if k != other))
    assert len(chosen) == 4 and "transport is unknown" in left_out[0]


def test_wipefs_lists_every_signature():
    assert parsers.parse_wipefs("") == [] and parsers.parse_wipefs(read("wipefs_blank.json")) == []
    gpt = parsers.parse_wipefs(read("wipefs_gpt.json"))
    assert [s["type"] for s in gpt] == ["gpt", "gpt", "PMBR"]
    assert gpt[0]["offset"] == 512 and gpt[1]["offset"] > 1 << 29
    (xfs,) = parsers.parse_wipefs(read("wipefs_xfs.json"))
    assert xfs["type"] == "xfs" and xfs["offset"] == 0 and len(xfs["uuid"]) == 36


def test_the_drives_themselves_are_probed_before_a_create():
    """Issue 37, 3: a drive whose signature udev had not recorded, or that held data without a signature, was taken
    as blank (lsblk's cached FSTYPE), and mdadm --run silenced mdadm's own guard."""
    devices = parsers.parse_lsblk(read("lsblk_nvme_blank.json"))
    want = state.check_input(params())
    chosen = select(devices, want)
    blank = dict((d["path"], dict(holders=[], signatures=[], busy=False, nonzero=[])) for d in chosen)
    assert state.array_action(want, devices, chosen, (None, None), {}, blank) == ("create", [])
    probes = dict(blank)
    probes["/dev/nvme1n1"] = dict(blank["/dev/nvme1n1"], signatures=parsers.parse_wipefs(read("wipefs_xfs.json")))
    probes["/dev/nvme2n1"] = dict(blank["/dev/nvme2n1"], nonzero=[1 << 20])
    probes["/dev/nvme3n1"] = dict(blank["/dev/nvme3n1"], busy=True)
    with pytest.raises(state.ScratchInputError) as err:
        state.array_action(want, devices, chosen, (None, None), {}, probes)
    text = str(err.value)
    assert "/dev/nvme1n1: holds xfs at offset 0 (found on the drive; udev had not recorded it)" in text
    assert "/dev/nvme2n1: holds data without a signature (non-zero bytes at offset 1048576)" in text
    assert "/dev/nvme3n1: is open exclusively elsewhere" in text and "(never used)" in text
    # force takes the first two, never the one something holds.
    forced = state.check_input(params(force=True))
    with pytest.raises(state.ScratchInputError) as err:
        state.array_action(forced, devices, chosen, (None, None), {}, probes)
    assert "nvme1n1" not in str(err.value) and "/dev/nvme3n1: is open exclusively elsewhere" in str(err.value)
    del probes["/dev/nvme3n1"]
    action, wipe = state.array_action(forced, devices, [d for d in chosen if d["name"] != "nvme3n1"], (None, None), {}, probes)
    assert action == "create" and wipe == ["/dev/nvme1n1", "/dev/nvme2n1"]


def test_holders_other_than_an_inactive_array_are_never_used():
    devices = parsers.parse_lsblk(read("lsblk_inactive_member.json"))
    drive = devices["nvme0n1"]
    assert state.probe_reasons(drive, dict(holders=["md127"]), {"md127"}) == ([], [])  # lsblk already names it
    hard, soft = state.probe_reasons(drive, dict(holders=["dm-0"]), {"md127"})
    assert hard == ["is held by dm-0 (stop or remove it first)"] and soft == []


def test_sample_offsets_cover_the_drive():
    offsets = state.sample_offsets(1 << 30)
    assert len(offsets) == 16 and offsets[0] == 0 and offsets[-1] == (1 << 30) - state.SAMPLE_BYTES
    assert all(o % 4096 == 0 for o in offsets) and offsets == sorted(set(offsets))
    assert state.sample_offsets(4096) == [0]


def chain(*entries):
    out = []
    for path, kind, mode, uid in entries:
        out.append(dict(path=path, link=kind == "link", dir=kind == "dir", mode=mode, uid=uid, target=False))
    out[-1]["target"] = True
    return out


def test_a_mount_point_through_a_link_or_under_a_writable_directory_is_refused():
    """Issue 37, 4: under a world-writable directory a local user made the mount point a link to /etc; the array
    was mounted over /etc and its root set to 1777."""
    assert state.mount_point_problems(chain(("/", "dir", 0o755, 0), ("/mnt", "dir", 0o755, 0),
                                            ("/mnt/scratch", "dir", 0o1777, 0))) == []
    assert state.mount_point_problems(chain(("/", "dir", 0o755, 0), ("/scratch", "link", 0o777, 1000))) == \
        ["/scratch is a symbolic link"]
    assert state.mount_point_problems(chain(("/", "dir", 0o755, 0), ("/data", "dir", 0o1777, 0),
                                            ("/data/nvme", "dir", 0o755, 1000))) == ["/data can be written by any user"]
    assert state.mount_point_problems(chain(("/", "dir", 0o755, 0), ("/home/u", "dir", 0o755, 1000),
                                            ("/home/u/s", "dir", 0o755, 1000))) == ["/home/u is owned by uid 1000, not root"]
    assert state.mount_point_problems(chain(("/", "dir", 0o755, 0), ("/srv/x", "file", 0o644, 0))) == ["/srv/x is not a directory"]


def test_absent_takes_out_only_this_arrays_fstab_entry():
    fstab = "/dev/vda / ext4 rw 0 1\nUUID=ours /mnt/scratch xfs defaults 0 0\nUUID=theirs /mnt/scratch ext4 defaults 0 0\n"
    assert state.fstab_edit(fstab, "/mnt/scratch", None, {"UUID=ours", "/dev/md/scratch"}).splitlines() == \
        ["/dev/vda / ext4 rw 0 1", "UUID=theirs /mnt/scratch ext4 defaults 0 0"]
    assert state.fstab_edit(fstab, "/mnt/scratch", None, {"/dev/md/scratch"}) == fstab


def test_a_partitioned_drive_is_named_once():
    """The GPT of a drive lsblk already shows partitioned is not named a second time as a signature udev missed."""
    devices = parsers.parse_lsblk(read("lsblk_nvme_in_use.json"))
    drive = devices["nvme3n1"]
    assert drive["children"]
    hard, soft = state.probe_reasons(drive, dict(holders=[], signatures=parsers.parse_wipefs(read("wipefs_gpt.json"))), set())
    assert hard == [] and soft == []
