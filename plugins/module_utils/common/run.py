# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run skeleton every roce.fabric module shares.

PRIVATE to the roce.fabric collection: may change without notice.

- ``FabricError``: the one error type; its ``details`` go into the failed result.
- ``CommandRunner``: argv lists through ``module.run_command`` with ``LC_ALL=C``, recorded.
- ``ModuleRun``: check mode, the ``commands`` record, the result and the ``--diff`` before/after,
  and turning a ``FabricError`` into ``fail_json`` with what was already done.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
import time

# Pin the locale so parsing never depends on the target's language settings.
LOCALE_ENV = {"LC_ALL": "C", "LANGUAGE": "C", "LANG": "C"}

# Seconds one command on the target may run before it is stopped (module option ``command_timeout``).
DEFAULT_COMMAND_TIMEOUT = 300
MAX_COMMAND_TIMEOUT = 86400
# Seconds between the polite stop (SIGTERM) and SIGKILL.
KILL_AFTER = 5


def command_timeout_spec():
    """The ``command_timeout`` option (doc fragment ``roce.fabric.command_timeout``) of modules that run tools."""
    return dict(command_timeout=dict(type="int", default=DEFAULT_COMMAND_TIMEOUT))


class FabricError(Exception):
    """An error to report with ``fail_json``; ``details`` go into the result beside ``msg``."""

    def __init__(self, msg, **details):
        super(FabricError, self).__init__(msg)
        self.details = details


def render(argv):
    """An argv list as one shell-quoted line, for the ``commands`` record (never run through a shell)."""
    return " ".join(shlex.quote(str(arg)) for arg in argv)


class CommandRunner(object):
    """Runs argv lists through ``module.run_command`` with a fixed locale and records them.

    ``executed`` keeps every command line run and ``mutating`` the subset that changed something.
    User values are never expanded (``expand_user_and_vars=False``) and no shell is involved.
    """

    def __init__(self, module, timeout=None):
        self.module = module
        self.executed = []
        self.mutating = []
        if timeout is None:
            timeout = (getattr(module, "params", None) or {}).get("command_timeout")
        if timeout is None:
            timeout = DEFAULT_COMMAND_TIMEOUT
        if not 1 <= int(timeout) <= MAX_COMMAND_TIMEOUT:
            module.fail_json(msg="command_timeout must be 1 to %d seconds, not %s" % (MAX_COMMAND_TIMEOUT, timeout))
        self.timeout = int(timeout)
        self._timeout_tool = False

    def timeout_tool(self):
        """coreutils ``timeout``, which stops the command's whole process group, where the target has it.

        BusyBox's applet (ESXi, Alpine) is not used: older ones take ``-t SECS`` and no ``-k``."""
        if self._timeout_tool is False:
            path = self.module.get_bin_path("timeout")
            if path and os.path.basename(os.path.realpath(path)) not in ("timeout", "coreutils"):
                path = None
            self._timeout_tool = path
        return self._timeout_tool

    def run(self, argv, mutating=False, data=None):
        """Run ``argv``; one still running after ``timeout`` seconds is stopped and raises ``FabricError``
        (``failure: timeout``), so a hung tool or device never hangs the play."""
        argv = [str(arg) for arg in argv]
        line = render(argv)
        tool = self.timeout_tool()
        fired = []
        timer = []

        def arm(proc):
            # Without coreutils (ESXi's busybox may lack it): stop the process and what it started from here. Its
            # children are found before it is stopped (they would be re-parented after).
            def stop():
                fired.append(True)
                family = descendants(proc.pid)
                proc.terminate()
                signal_all(family, signal.SIGTERM)
                try:
                    proc.wait(KILL_AFTER)
                except Exception:  # pylint: disable=broad-except
                    proc.kill()
                signal_all(family, signal.SIGKILL)
            timer.append(threading.Timer(self.timeout, stop))
            timer[0].daemon = True
            timer[0].start()

        started = time.monotonic()
        try:
            rc, out, err = self.module.run_command(
                ([tool, "-k", str(KILL_AFTER), str(self.timeout)] if tool else []) + argv,
                environ_update=dict(LOCALE_ENV),
                expand_user_and_vars=False,
                data=data,
                before_communicate_callback=None if tool else arm,
            )
        finally:
            for item in timer:
                item.cancel()
        self.executed.append(line)
        if mutating:
            self.mutating.append(line)
        # timeout(1) exits 124 when it stopped the command, 137 when it had to kill it.
        if fired or (tool and rc in (124, 137) and time.monotonic() - started >= self.timeout - 0.5):
            raise FabricError(
                "%s did not finish within %d seconds and was stopped (raise command_timeout if the device is just slow)%s"
                % (line, self.timeout, "; it may have changed part of what it was asked to" if mutating else ""),
                failure="timeout", failed_command=line, rc=rc, stdout=out, stderr=err)
        return rc, out, err

    render = staticmethod(render)


def descendants(pid, proc_root="/proc"):
    """The pids of every process below ``pid`` (children, their children, ...), read from ``/proc/<pid>/stat``;
    ``[]`` where there is no such ``/proc``."""
    children = {}
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, entry, "stat")) as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def signal_all(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass


class ModuleRun(object):
    """What one module invocation reports: ``changed``, ``commands``, the diff and extra keys.

    ``mutate(command, action)`` is the only way a module changes its peer: in check mode the
    command is recorded and ``action`` is not called; otherwise ``action()`` runs first and the
    command is recorded only when it returned without raising.
    """

    def __init__(self, module, **defaults):
        self.module = module
        self.check_mode = module.check_mode
        self.result = dict(changed=False, commands=[])
        self.result.update(defaults)
        self.before = {}
        self.after = {}

    def mutate(self, command, action=None):
        if self.check_mode or action is None:
            value = None
        else:
            value = action()
        self.result["commands"].append(command)
        self.result["changed"] = True
        return value

    def changed(self, flag=True):
        self.result["changed"] = bool(self.result["changed"] or flag)

    def diff(self, key, before, after):
        """One item of the ``--diff`` output; equal sides are left out."""
        if before != after:
            self.before[key] = before
            self.after[key] = after

    def set_diff(self, before, after):
        self.before, self.after = before, after

    def update(self, **values):
        self.result.update(values)

    def finish(self, **values):
        self.result.update(values)
        if self.module._diff:
            self.result["diff"] = dict(before=self.before, after=self.after)
        self.module.exit_json(**self.result)

    def fail(self, msg, **details):
        result = dict(self.result)
        result.update(details)
        result.pop("msg", None)
        self.module.fail_json(msg=msg, **result)

    def execute(self, body):
        """Call ``body(self)``; a ``FabricError`` ends the run as a failure carrying its details."""
        try:
            body(self)
        except FabricError as exc:
            self.fail(str(exc), **exc.details)
        self.finish()
