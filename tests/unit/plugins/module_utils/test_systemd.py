# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd family (boot units): the parser on systemctl show output captured on the lab's VM (fixtures/systemd),
the input checks and the decisions the module reads its changes from."""

from __future__ import annotations

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.systemd import parsers, state
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def read(name):
    return corpus.read("systemd", name)


def params(**overrides):
    base = dict(directories=[], files=[], units=[], remove_units=[], remove_files=[], unit_dir="/etc/systemd/system")
    base.update(overrides)
    return base


def unit(name="roce-fabric-sriov-enp2s0.service", **extra):
    item = dict(name=name, content="[Service]\n", enabled=True, started=False, restart_on_change=False)
    item.update(extra)
    return item


def test_show_of_two_known_units_and_one_systemd_does_not_know():
    units = parsers.parse_show(read("show_enabled_active_missing.txt"))
    assert sorted(units) == ["roce-fabric-none.service", "roce-fabric-softroce-rxe0.service",
                             "roce-fabric-sriov-enp2s0.service"]
    sriov = units["roce-fabric-sriov-enp2s0.service"]
    assert parsers.enabled(sriov) and parsers.active(sriov) and not parsers.needs_reload(sriov)
    missing = units["roce-fabric-none.service"]
    assert missing["LoadState"] == "not-found" and missing["UnitFileState"] == ""
    assert not parsers.enabled(missing) and not parsers.active(missing)


def test_show_of_a_new_unit_and_of_a_disabled_one():
    new = parsers.parse_show(read("show_written_not_reloaded.txt"))["roce-fabric-t.service"]
    assert new["LoadState"] == "loaded" and not parsers.enabled(new) and not parsers.active(new)
    disabled = parsers.parse_show(read("show_disabled_inactive.txt"))["roce-fabric-t.service"]
    assert disabled["UnitFileState"] == "disabled" and not parsers.enabled(disabled)


def test_show_ignores_what_is_not_a_property_and_empty_output():
    assert parsers.parse_show("") == {}
    assert parsers.parse_show("garbage\n\nId=a.service\nActiveState=active\n") == {
        "a.service": {"Id": "a.service", "ActiveState": "active"}}


def test_input_is_normalised_and_defaults_filled():
    want = state.check_input(params(
        directories=[dict(path="/etc/roce-fabric/qos")],
        files=[dict(path="/usr/local/sbin/roce-fabric-qos-apply", content="x\n", mode="0755")],
        units=[unit(started=True)]))
    assert want["directories"] == [dict(path="/etc/roce-fabric/qos", mode=0o755)]
    assert want["files"] == [dict(path="/usr/local/sbin/roce-fabric-qos-apply", content=b"x\n", mode=0o755)]
    (item,) = want["units"]
    assert item["path"] == "/etc/systemd/system/roce-fabric-sriov-enp2s0.service" and item["mode"] == 0o644
    assert item["enabled"] and item["started"] and not item["restart_on_change"]


@pytest.mark.parametrize("overrides, message", [
    (dict(files=[dict(path="relative/file", content="")]), "absolute, normalised path"),
    (dict(files=[dict(path="/etc/../root/.ssh/authorized_keys", content="")]), "absolute, normalised path"),
    (dict(files=[dict(path="/etc/x y", content="")]), "absolute, normalised path"),
    (dict(files=[dict(path="/etc/x\nExecStart=/bin/sh", content="")]), "absolute, normalised path"),
    (dict(files=[dict(path="/etc//x", content="")]), "absolute, normalised path"),
    (dict(files=[dict(path="/sys/class/net/x/device/sriov_numvfs", content="1")]), "under /sys"),
    (dict(files=[dict(path="/proc/sys/kernel/x", content="1")]), "under /proc"),
    (dict(files=[dict(path="/usr/local/sbin/x", content="", mode="0777")]), "lets every user write"),
    (dict(files=[dict(path="/usr/local/sbin/x", content="", mode="rwx")]), "octal digits"),
    (dict(files=[dict(path="/usr/local/sbin/x", content=None)]), "has no content"),
    (dict(files=[dict(path="/a/x", content=""), dict(path="/a/x", content="")]), "is also given as"),
    (dict(units=[unit(name="x;touch /tmp/p.service")]), "unit name"),
    (dict(units=[unit(name="../../etc/passwd.service")]), "unit name"),
    (dict(units=[unit(name="roce.conf")]), "unit name"),
    (dict(remove_units=["-x.service"]), "unit name"),
    (dict(remove_files=["/dev/sda"]), "under /dev"),
    (dict(unit_dir="etc/systemd/system"), "absolute, normalised path"),
    (dict(units=[unit()], remove_units=["roce-fabric-sriov-enp2s0.service"]), "is also given as"),
    (dict(directories=[dict(path="/etc/x", mode="0755")], files=[dict(path="/etc/x", content="")]), "is also given as"),
])
def test_bad_input_is_refused(overrides, message):
    with pytest.raises(state.BootUnitsInputError, match=message.replace("(", r"\(")):
        state.check_input(params(**overrides))


def have(kind="file", mode=0o644, uid=0, gid=0, content=b"x\n"):
    return dict(kind=kind, mode=mode, uid=uid, gid=gid, content=content)


def test_file_plan():
    want = dict(path="/usr/local/sbin/h", content=b"x\n", mode=0o755)
    assert state.file_plan(want, None) == ["write"]
    assert state.file_plan(want, have(mode=0o755)) == []
    assert state.file_plan(want, have(mode=0o755, content=b"y\n")) == ["write"]
    assert state.file_plan(want, have(mode=0o644)) == ["chmod"]
    assert state.file_plan(want, have(mode=0o755, uid=1000)) == ["chown"]
    assert state.file_plan(want, have(mode=0o700, gid=5)) == ["chmod", "chown"]
    for kind in ("directory", "symbolic link", "special file"):
        with pytest.raises(state.BootUnitsInputError, match="not a regular file; nothing was changed"):
            state.file_plan(want, have(kind=kind))


def test_directory_plan():
    want = dict(path="/etc/roce-fabric/qos", mode=0o755)
    assert state.directory_plan(want, None) == ["mkdir"]
    assert state.directory_plan(want, have(kind="directory", mode=0o755)) == []
    assert state.directory_plan(want, have(kind="directory", mode=0o700, uid=3)) == ["chmod", "chown"]
    with pytest.raises(state.BootUnitsInputError, match="not a directory"):
        state.directory_plan(want, have(kind="symbolic link"))


def show(name, text):
    """The captured show output of one unit under another name."""
    props = dict(parsers.parse_show(read(text)).popitem()[1])
    props["Id"] = name
    return {name: props}


def test_unit_plan_enables_what_is_not_enabled_and_reloads_only_after_a_write():
    units = state.check_input(params(units=[unit("roce-fabric-t.service")]))["units"]
    disabled = show("roce-fabric-t.service", "show_disabled_inactive.txt")
    assert state.unit_plan(units, [], disabled, []) == dict(
        daemon_reload=False, stop=[], disable=[], enable=["roce-fabric-t.service"])
    assert state.unit_plan(units, [], disabled, ["roce-fabric-t.service"])["daemon_reload"] is True
    enabled = parsers.parse_show(read("show_enabled_active_missing.txt"))
    units = state.check_input(params(units=[unit()]))["units"]
    assert state.unit_plan(units, [], enabled, []) == dict(daemon_reload=False, stop=[], disable=[], enable=[])


def test_unit_plan_reloads_when_systemd_says_so():
    units = state.check_input(params(units=[unit("roce-fabric-t.service")]))["units"]
    stale = show("roce-fabric-t.service", "show_disabled_inactive.txt")
    stale["roce-fabric-t.service"]["NeedDaemonReload"] = "yes"
    assert state.unit_plan(units, [], stale, [])["daemon_reload"] is True


def test_units_to_remove_are_stopped_and_disabled_first():
    remove = state.check_input(params(remove_units=["roce-fabric-sriov-enp2s0.service", "roce-fabric-none.service"]))
    shown = parsers.parse_show(read("show_enabled_active_missing.txt"))
    plan = state.unit_plan([], remove["remove_units"], shown, ["roce-fabric-sriov-enp2s0.service"])
    assert plan == dict(daemon_reload=True, stop=["roce-fabric-sriov-enp2s0.service"],
                        disable=["roce-fabric-sriov-enp2s0.service"], enable=[])


def test_start_plan():
    shown = parsers.parse_show(read("show_enabled_active_missing.txt"))
    running = unit(started=True, restart_on_change=True)
    stopped = unit("roce-fabric-none.service", started=True)
    left = unit("roce-fabric-softroce-rxe0.service")
    assert state.start_plan([running, stopped, left], shown, False) == dict(
        start=["roce-fabric-none.service"], restart=[])
    assert state.start_plan([running, stopped, left], shown, True) == dict(
        start=["roce-fabric-none.service"], restart=["roce-fabric-sriov-enp2s0.service"])


def test_text_for_the_diff():
    assert state.text(None) is None and state.text(b"a\n") == "a\n"
    assert state.text(b"\xff\xfe") == "<2 bytes, not UTF-8>"


def escape_samples():
    """(mode, name, what systemd-escape printed), from the captured sample."""
    rows = []
    for line in corpus.read("systemd", "systemd_escape_252.txt").splitlines():
        if line.strip():
            mode, name, printed = line.split("\t")
            rows.append((mode, name, printed))
    return rows


def test_systemd_escape_is_what_systemd_escape_prints():
    """The nic_qos unit waited for a device that never appears for a NIC named roce-p0 (its name unescaped in
    BindsTo): the escaping now follows systemd's, checked against systemd-escape 252's own output."""
    from ansible_collections.roce.fabric.plugins.module_utils.systemd.escape import escape, netdev_device_unit
    rows = escape_samples()
    assert len(rows) == 22 and ("path", "roce-p0", "sys-subsystem-net-devices-roce\\x2dp0") in rows
    for mode, name, printed in rows:
        if mode == "path":
            assert escape("/sys/subsystem/net/devices/" + name, path=True) == printed, name
            assert netdev_device_unit(name) == printed + ".device"
        else:
            assert escape(name) == printed, name
    assert escape("//a//b/", path=True) == "a-b" and escape("/", path=True) == "-"
    with pytest.raises(ValueError):
        escape("/sys/../etc", path=True)


def test_an_exec_argument_is_quoted_for_a_unit_command_line():
    """systemd.service(5), "Command lines": quotes keep an argument whole, backslash escapes, %% and $$ for a literal
    % and $. The telemetry peer tier reads what the VM's systemd passed (/proc/<pid>/cmdline) for the same kind of
    expression."""
    from ansible_collections.roce.fabric.plugins.module_utils.systemd.escape import exec_argument
    assert exec_argument("^mlx5_[0-9]+$") == '"^mlx5_[0-9]+$$"'
    assert exec_argument('a b"c\\d%e') == '"a b\\"c\\\\d%%e"'
    assert exec_argument("") == '""'
    for bad in ("a\nExecStartPre=/bin/sh", "tab\there", "\x7f"):
        with pytest.raises(ValueError):
            exec_argument(bad)
