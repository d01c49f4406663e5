# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: the report as JUnit XML, for CI systems (Jenkins, GitLab, GitHub's test reporters). Pure.

PRIVATE to the roce.fabric collection: may change without notice.

One ``testsuite`` for the pair tests (a ``testcase`` per test, named by its id), one per host or switch (a
``testcase`` per check) and one for the fault location's findings (a ``testcase`` per part); a failed test or check
carries a ``failure`` with its cause and message, a skipped or not-run one a ``skipped``. The same report gives
the same bytes (hosts in name order, no time stamps beyond the report's own ``generated`` time).
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr


def _case(classname, name, status, msg, cause=None, command=None):
    head = "    <testcase classname=%s name=%s" % (quoteattr(classname), quoteattr(str(name)))
    body = []
    if status == "failed" or status not in ("passed", "skipped", "not_run"):
        body.append("      <failure message=%s type=%s>%s</failure>" % (
            quoteattr(str(msg or "failed")), quoteattr(str(cause or status or "failed")), escape(str(msg or ""))))
    elif status in ("skipped", "not_run"):
        body.append("      <skipped message=%s/>" % quoteattr(str(msg or status)))
    if command:
        body.append("      <system-out>%s</system-out>" % escape(str(command)))
    if not body:
        return [head + "/>"]
    return [head + ">"] + body + ["    </testcase>"]


def _suite(name, cases, timestamp=None):
    failures = sum(1 for status, _lines in cases if status not in ("passed", "skipped", "not_run"))
    skipped = sum(1 for status, _lines in cases if status in ("skipped", "not_run"))
    attrs = 'name=%s tests="%d" failures="%d" errors="0" skipped="%d"' % (quoteattr(name), len(cases), failures, skipped)
    if timestamp:
        attrs += " timestamp=%s" % quoteattr(str(timestamp))
    lines = ["  <testsuite %s>" % attrs]
    for _status, case in cases:
        lines.extend(case)
    lines.append("  </testsuite>")
    return lines, len(cases), failures, skipped


def render_junit(report):
    """The report (plan.build_report's) as JUnit XML text."""
    generated = report.get("generated") if isinstance(report.get("generated"), dict) else {}
    timestamp = generated.get("time")
    suites = []
    pair_cases = [(test.get("status"), _case("pairs", test.get("id"), test.get("status"), test.get("msg"),
                                             test.get("cause"), test.get("client_command")))
                  for test in report.get("tests") or []]
    if pair_cases:
        suites.append(_suite("pairs", pair_cases, timestamp))
    for host in sorted(report.get("hosts") or {}):
        entry = report["hosts"][host] or {}
        cases = [(check.get("status"), _case("hosts.%s" % host, check.get("name"), check.get("status"), check.get("msg"),
                                             None, check.get("command")))
                 for check in entry.get("checks") or []]
        if cases:
            suites.append(_suite(host, cases, timestamp))
    # The part to replace: a finding that asks for a replacement is a failure, one of low confidence is reported
    # as skipped (to inspect, not to act on).
    finding_cases = []
    for finding in report.get("findings") or []:
        status = "failed" if finding.get("replace") else "skipped"
        text = "%s (%s confidence): %s; %s" % (finding.get("part"), finding.get("confidence"), finding.get("action"),
                                               "; ".join(e.get("text", "") for e in finding.get("evidence") or []))
        finding_cases.append((status, _case("findings", "%s %s" % (finding.get("part"), finding.get("id")), status,
                                            text, finding.get("part"))))
    if finding_cases:
        suites.append(_suite("findings", finding_cases, timestamp))
    tests = sum(suite[1] for suite in suites)
    failures = sum(suite[2] for suite in suites)
    skipped = sum(suite[3] for suite in suites)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             "<testsuites name=%s tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\">"
             % (quoteattr(str(report.get("title") or "RoCE fabric validation")), tests, failures, skipped)]
    for suite in suites:
        lines.extend(suite[0])
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"
