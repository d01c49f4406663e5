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
import sys
import threading
import time

# Pin the locale so parsing never depends on the target's language settings.
LOCALE_ENV = {"LC_ALL": "C", "LANGUAGE": "C", "LANG": "C"}

# Seconds one command on the target may run before it is stopped (module option ``command_timeout``).
DEFAULT_COMMAND_TIMEOUT = 300
MAX_COMMAND_TIMEOUT = 86400
# Seconds between the polite stop (SIGTERM) and SIGKILL.
KILL_AFTER = 5
# prctl(2) option that makes orphaned descendants re-parent to the caller.
PR_SET_CHILD_SUBREAPER = 36


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

    def run(self, argv, mutating=False, data=None, env=None):
        """Run ``argv``; one still running after ``timeout`` seconds is stopped and raises ``FabricError``
        (``failure: timeout``), so a hung tool or device never hangs the play."""
        argv = [str(arg) for arg in argv]
        line = render(argv)
        tool = self.timeout_tool()
        fired = []
        timer = []
        started_at = []
        become_subreaper()

        def arm(proc):
            # The command's start, to tell the processes it left behind (re-parented to this one, see
            # become_subreaper) from anything else this module started.
            since = start_time(proc.pid)

            def stop():
                # Without coreutils (ESXi's busybox may lack it): stop the process and what it started from here. Its
                # children are found before it is stopped (they would be re-parented after).
                fired.append(True)
                family = command_family(proc.pid, since)
                proc.terminate()
                signal_all(family, signal.SIGTERM)
                try:
                    proc.wait(KILL_AFTER)
                except Exception:  # pylint: disable=broad-except
                    proc.kill()
                signal_all(command_family(proc.pid, since) + family, signal.SIGKILL)

            def backstop():
                fired.append(True)
                # With coreutils: timeout(1) stops the command's process group, but not a child that left it
                # (setsid, a double fork) and still holds its output open, which would keep run_command waiting.
                signal_all([proc.pid] + command_family(proc.pid, since), signal.SIGKILL)
            timer.append(threading.Timer(self.timeout + (KILL_AFTER + 2 if tool else 0), backstop if tool else stop))
            timer[0].daemon = True
            timer[0].start()
            started_at.append(since)

        started = time.monotonic()
        try:
            rc, out, err = self.module.run_command(
                ([tool, "-k", str(KILL_AFTER), str(self.timeout)] if tool else []) + argv,
                environ_update=dict(env or {}, **LOCALE_ENV),
                expand_user_and_vars=False,
                data=data,
                before_communicate_callback=arm,
            )
        finally:
            for item in timer:
                item.cancel()
        self.executed.append(line)
        if mutating:
            self.mutating.append(line)
        # timeout(1) exits 124 when it stopped the command, 137 when it had to kill it.
        if fired or (tool and rc in (124, 137) and time.monotonic() - started >= self.timeout - 0.5):
            # What the stopped command left running, re-parented to this process, goes too.
            signal_all(command_family(None, started_at[0] if started_at else None), signal.SIGKILL)
            raise FabricError(
                "%s did not finish within %d seconds and was stopped (raise command_timeout if the device is just slow)%s"
                % (line, self.timeout, "; it may have changed part of what it was asked to" if mutating else ""),
                failure="timeout", failed_command=line, rc=rc, stdout=out, stderr=err)
        return rc, out, err

    render = staticmethod(render)


def process_table(proc_root="/proc"):
    """``{pid: (ppid, start time in clock ticks since boot)}`` of every process, read from ``/proc/<pid>/stat``;
    ``{}`` where there is no such ``/proc``."""
    table = {}
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, entry, "stat")) as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        fields = _stat_fields(stat)
        if len(fields) > 1 and fields[1].isdigit():
            start = fields[19] if len(fields) > 19 and fields[19].isdigit() else "0"
            table[int(entry)] = (int(fields[1]), int(start))
    return table


def _stat_fields(stat):
    # "pid (comm) state ppid ... starttime(22nd) ...": comm may hold spaces and parentheses, so read after the last
    # ")"; field N is then at index N - 3.
    return stat[stat.rfind(")") + 2:].split()


def start_time(pid, proc_root="/proc"):
    """When ``pid`` started (clock ticks since boot), 0 where unknown."""
    try:
        with open(os.path.join(proc_root, str(pid), "stat")) as handle:
            fields = _stat_fields(handle.read())
    except (IOError, OSError):
        return 0
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else 0


def descendants(pid, proc_root="/proc", table=None):
    """The pids of every process below ``pid`` (children, their children, ...)."""
    table = process_table(proc_root) if table is None else table
    children = {}
    for child, (parent, _start) in table.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def command_family(pid, since, me=None, proc_root="/proc"):
    """What a command started: the processes below ``pid`` (None once it has ended), and those that left it (a
    double fork, setsid) and were re-parented to this process (``me``) because it is their subreaper, started at
    or after ``since`` (the command's start time, clock ticks since boot) and not ``pid`` itself."""
    if since is None:
        return []
    table = process_table(proc_root)
    me = os.getpid() if me is None else me
    roots = [] if pid is None else [pid]
    roots += [child for child, (parent, start) in table.items() if parent == me and child != pid and start >= since]
    found = [root for root in roots if root != pid]
    for root in roots:
        found += [child for child in descendants(root, table=table) if child not in found]
    return found


_SUBREAPER = []


def become_subreaper():
    """Make this process the subreaper of what it starts (Linux): a process that detaches from a command (double
    fork, daemon) is then re-parented here instead of to init, where ``command_family`` finds it. Once per
    process; a no-op elsewhere."""
    if _SUBREAPER:
        return _SUBREAPER[0]
    done = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            done = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (ImportError, OSError, AttributeError):
            done = False
    _SUBREAPER.append(done)
    return done


def signal_all(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass


def run_change(run, cmd, argv, what=None, env=None):
    """Run ``argv``, a command that changes the target, through ``run.mutate`` (recorded; not run in check mode) with
    ``cmd`` (a ``CommandRunner``); a non-zero exit raises ``FabricError`` naming ``what`` (default: the command line).
    ``env`` adds to the command's environment (never recorded). Returns the command's output (None in check mode)."""
    line = CommandRunner.render(argv)

    def action():
        rc, out, err = cmd.run(argv, mutating=True, env=env)
        if rc != 0:
            raise FabricError("%s failed (rc=%d): %s" % (what or line, rc, (err or out).strip()[-2000:]),
                              kind="command", rc=rc, failed_command=line, stdout=out[-4000:], stderr=err[-4000:])
        return out
    return run.mutate(line, action)


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
        self.text_diffs = []

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

    def text_diff(self, header, before, after):
        """A file's content in the ``--diff`` output, shown by Ansible as a unified diff under ``header``."""
        if before != after:
            self.text_diffs.append(dict(before_header=header, after_header=header, before=before or "",
                                        after=after or ""))

    def update(self, **values):
        self.result.update(values)

    def finish(self, **values):
        self.result.update(values)
        if self.module._diff:
            self.result["diff"] = dict(before=self.before, after=self.after)
            if self.text_diffs:
                self.result["diff"] = self.text_diffs + ([self.result["diff"]] if self.before or self.after else [])
        self.module.exit_json(**self.result)

    def fail(self, msg, **details):
        result = dict(self.result)
        result.update(details)
        result.pop("msg", None)
        self.module.fail_json(msg=msg, **result)

    def execute(self, body):
        """Call ``body(self)``; a ``FabricError`` ends the run as a failure carrying its details, and so does an
        ``OSError`` (a device gone, a full disk), with the commands that ran before it: never a traceback that
        hides what was already changed."""
        try:
            body(self)
        except FabricError as exc:
            self.fail(str(exc), **exc.details)
        except OSError as exc:
            done = self.result.get("commands") or []
            self.fail("%s: %s%s" % (exc.__class__.__name__, exc,
                                    "; after these commands ran: %s" % "; ".join(done) if done else
                                    "; nothing was changed before it"))
        self.finish()
