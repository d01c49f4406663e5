# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.esxi_kernel_setting (transport ssh) driven through main() with esxcli output in the real layout."""

from __future__ import annotations

import pytest

from ansible.module_utils import basic

from ansible_collections.roce.fabric.plugins.modules import esxi_kernel_setting
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module, untimed

TABLE = (
    "Name        Type    Configured  Runtime  Default  Description\n"
    "----------  ------  ----------  -------  -------  ---------------------------\n"
    "atsSupport  Bool    %s       %s    FALSE    Enable Support for PCIe ATS\n"
    "maxPCPUS    uint32  4096        4096     4096     Number of PCPUs vmkernel should bring up.\n"
)


class FakeEsxcli(object):
    def __init__(self, configured="FALSE", runtime="FALSE", set_rc=0):
        self.table = TABLE % (configured.ljust(5), runtime.ljust(5))
        self.set_rc = set_rc
        self.calls = []

    def __call__(self, argv, **kwargs):
        argv = untimed(argv)
        assert isinstance(argv, list) and kwargs["environ_update"]["LC_ALL"] == "C"
        assert kwargs["expand_user_and_vars"] is False
        self.calls.append(argv)
        if argv[1:5] == ["system", "settings", "kernel", "list"]:
            return 0, self.table, ""
        if argv[1:5] == ["system", "settings", "kernel", "set"]:
            return self.set_rc, "" if self.set_rc == 0 else "Unable to set option\n", ""
        raise AssertionError("unexpected command %s" % argv)

    @property
    def mutating(self):
        return [c for c in self.calls if "set" in c]


def run(monkeypatch, fake, settings, **kw):
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kwargs: fake(argv, **kwargs))
    return run_module(esxi_kernel_setting.main, dict(transport="ssh", settings=settings), **kw)


def test_change_sets_configured_and_needs_reboot(monkeypatch):
    fake = FakeEsxcli()
    result = run(monkeypatch, fake, {"atsSupport": True}, diff=True)
    assert result["changed"] and result["reboot_required"]
    assert fake.mutating == [["esxcli", "system", "settings", "kernel", "set", "-s", "atsSupport", "-v", "TRUE"]]
    assert result["commands"] == ["esxcli system settings kernel set -s atsSupport -v TRUE"]
    host = list(result["diff"]["after"].values())[0]
    assert host == {"atsSupport": "TRUE"}


def test_configured_but_not_running_is_no_change_with_reboot_required(monkeypatch):
    fake = FakeEsxcli(configured="TRUE", runtime="FALSE")
    result = run(monkeypatch, fake, {"VMkernel.Boot.atsSupport": "yes"})
    assert not result["changed"] and result["reboot_required"] and fake.mutating == []


def test_active_setting_is_no_change_no_reboot(monkeypatch):
    fake = FakeEsxcli(configured="TRUE", runtime="TRUE")
    result = run(monkeypatch, fake, {"atsSupport": True, "maxPCPUS": "4096"})
    assert not result["changed"] and not result["reboot_required"] and fake.mutating == []


def test_check_mode_reports_without_setting(monkeypatch):
    fake = FakeEsxcli()
    result = run(monkeypatch, fake, {"atsSupport": True}, check_mode=True)
    assert result["changed"] and result["commands"] == ["esxcli system settings kernel set -s atsSupport -v TRUE"]
    assert fake.mutating == []


@pytest.mark.parametrize("settings, message", [
    ({"atsSuport": True}, "no kernel setting 'atsSuport'"),
    ({"atsSupport": "perhaps"}, "is not a boolean"),
    ({"maxPCPUS": "-1"}, "is negative"),
    ({"atsSupport": None}, "needs a scalar value"),
    ({}, "settings is empty"),
])
def test_bad_input_fails_before_any_set(monkeypatch, settings, message):
    fake = FakeEsxcli()
    result = run(monkeypatch, fake, settings)
    assert result["failed"] and message in result["msg"] and fake.mutating == []


def test_refused_set_is_reported(monkeypatch):
    fake = FakeEsxcli(set_rc=1)
    result = run(monkeypatch, fake, {"atsSupport": True})
    assert result["failed"] and "Unable to set option" in result["msg"]
