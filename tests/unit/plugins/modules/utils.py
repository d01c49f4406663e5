# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers to run a module's main() in-process and capture exit_json/fail_json."""

from __future__ import annotations

import contextlib
import json
from unittest import mock

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


@contextlib.contextmanager
def set_module_args(args):
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:
        # ansible-core before 2.19
        serialized = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        with mock.patch.object(basic, "_ANSIBLE_ARGS", serialized):
            yield
    else:
        with patch_module_args(args):
            yield


class ModuleExit(Exception):
    def __init__(self, result, failed):
        super(ModuleExit, self).__init__(result.get("msg", ""))
        self.result = result
        self.result["failed"] = failed


def _exit_json(self, **kwargs):
    kwargs.setdefault("changed", False)
    raise ModuleExit(kwargs, failed=False)


def _fail_json(self, msg, **kwargs):
    kwargs["msg"] = msg
    raise ModuleExit(kwargs, failed=True)


def run_module(main, args, check_mode=False, diff=False):
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    with set_module_args(args):
        with mock.patch.object(basic.AnsibleModule, "exit_json", _exit_json):
            with mock.patch.object(basic.AnsibleModule, "fail_json", _fail_json):
                try:
                    main()
                except ModuleExit as exc:
                    return exc.result
    raise AssertionError("module returned without exit_json or fail_json")


def untimed(argv):
    """``argv`` without the ``timeout -k N SECONDS`` the command runner puts in front where coreutils is found."""
    if len(argv) > 4 and argv[0].rsplit("/", 1)[-1] == "timeout" and argv[1] == "-k":
        return argv[4:]
    return argv
