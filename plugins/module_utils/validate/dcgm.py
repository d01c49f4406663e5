# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation: NVIDIA DCGM's GPU diagnostics, ``dcgmi diag -r <level> -j``. Pure.

PRIVATE to the roce.fabric collection: may change without notice.

DCGM 3.x prints ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
[{"gpu_ids", "status", "warnings"}]}]}], "version"}}``: a Deployment (software) test has one result for all GPUs,
``gpu_ids`` a comma-separated string; a per-GPU test one result per GPU, ``gpu_ids`` an integer; ``null`` may stand
between tests. DCGM 4.x renames the top key ``DCGM Diagnostic`` and names each result's entity
(``entity_group``, ``entity_id``; warnings as ``{"warning", "error_id"}``) - its published schema
(testing/python3/dcgm_diag_schema.json). What precedes the first brace (a warning line) is skipped, as DCGM's own
reader does.
"""

from __future__ import annotations

import json

TOP_KEYS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")
# Seconds a level may take before the caller gives up on it (DCGM's guide: level 1 seconds, 2 about two minutes,
# 3 about fifteen, 4 longer).
TIMEOUTS = {1: 300, 2: 1200, 3: 3600, 4: 7200}


# What each level adds to the one below it (DCGM's nvvs/src/NvidiaValidationSuite.cpp FillTestVectors: medium adds the
# memory and pcie plugins, long the diagnostic, memory_bandwidth, targeted_stress and targeted_power ones, xlong
# memtest and pulse_test); every level runs the software (Deployment) tests. Names as the plugins are named in the
# JSON (DCGM 1.7 to 4.x); older releases printed titles ("GPU Memory", "Targeted Stress"), read by ``test_key``.
LEVEL_TESTS = {1: ("software",), 2: ("memory", "pcie"),
               3: ("diagnostic", "memory_bandwidth", "targeted_stress", "targeted_power"), 4: ("memtest", "pulse_test")}
TITLES = {"gpu_memory": "memory", "pci_express": "pcie", "pcie_gpu_bandwidth": "pcie", "sm_diagnostic": "diagnostic"}
RAN_STATUSES = ("PASS", "FAIL", "WARN")


class DcgmError(ValueError):
    """Output that is not dcgmi diag's JSON."""


def _gpus(result):
    ids = result.get("gpu_ids")
    if ids is None and str(result.get("entity_group", "")).upper() == "GPU":
        ids = result.get("entity_id")
    if isinstance(ids, int) and not isinstance(ids, bool):
        return [ids]
    return [int(part) for part in str(ids or "").split(",") if part.strip().isdigit()]


def _warnings(result):
    out = []
    for warning in result.get("warnings") or []:
        if isinstance(warning, dict):
            warning = warning.get("warning") or warning.get("message")
        if warning:
            out.append(" ".join(str(warning).split()))
    return out


def parse_diag(text):
    """``{version, runtime_error, results: [{category, test, gpus, status, warnings}]}`` of one run; DcgmError for
    output without its JSON."""
    text = text or ""
    try:
        data = json.loads(text[text.index("{"):])
    except ValueError as exc:
        raise DcgmError("not dcgmi diag JSON: %s" % (" ".join(text.split())[:200] or exc))
    root = next((data[key] for key in TOP_KEYS if isinstance(data, dict) and isinstance(data.get(key), dict)), None)
    if root is None:
        raise DcgmError("no '%s' object: not dcgmi diag JSON" % TOP_KEYS[0])
    results = []
    for category in root.get("test_categories") or []:
        if not isinstance(category, dict):
            continue
        for test in category.get("tests") or []:
            if not isinstance(test, dict):
                continue
            for result in test.get("results") or []:
                if isinstance(result, dict):
                    results.append(dict(category=category.get("category"), test=test.get("name"), gpus=_gpus(result),
                                        status=str(result.get("status", "")).upper(), warnings=_warnings(result)))
    return dict(version=root.get("version"), runtime_error=root.get("runtime_error") or data.get("runtime_error"),
                results=results)


def verdict(parsed):
    """``(failed_gpus, problems)``: the GPUs a per-GPU test failed on (a Deployment test's failure covers every GPU and
    is the host's software, not a GPU), and one line per failed result with DCGM's warnings."""
    failed_gpus, problems = set(), []
    if parsed.get("runtime_error"):
        problems.append("DCGM could not run its diagnostics: %s" % parsed["runtime_error"])
    for result in parsed.get("results") or []:
        if result["status"] != "FAIL":
            continue
        if len(result["gpus"]) == 1:
            failed_gpus.add(result["gpus"][0])
        where = ("GPU %s" % result["gpus"][0]) if len(result["gpus"]) == 1 else "the host's GPUs %s" % (
            ",".join(str(g) for g in result["gpus"]) or "?")
        problems.append("DCGM %s/%s failed on %s%s" % (result["category"], result["test"], where,
                                                       (": " + "; ".join(result["warnings"])) if result["warnings"] else ""))
    return sorted(failed_gpus), problems


def test_key(result):
    """The plugin name of a result's test (``software`` for the Deployment category's tests)."""
    if str(result.get("category") or "").lower() in ("deployment", "software") or result.get("test") == "software":
        return "software"
    key = "_".join(str(result.get("test") or "").lower().replace("-", " ").split())
    return TITLES.get(key, key)


def coverage(parsed, level):
    """Which of the tests a level-``level`` run asks for ran: ``{"ran", "skipped", "not_run"}``, each a list of
    plugin names. A test ran where one of its results passed, failed or warned; one whose results were all skipped
    (a GPU or an environment it does not support) did not, nor did one DCGM printed no result for: neither is
    passed."""
    try:
        level = int(level)
    except (TypeError, ValueError):
        level = 1
    asked = [name for lvl in sorted(LEVEL_TESTS) if lvl <= level for name in LEVEL_TESTS[lvl]]
    statuses = {}
    for result in parsed.get("results") or []:
        statuses.setdefault(test_key(result), []).append(result["status"])
    out = dict(ran=[], skipped=[], not_run=[])
    for name in asked:
        seen = statuses.get(name)
        if not seen:
            out["not_run"].append(name)
        elif [status for status in seen if status in RAN_STATUSES]:
            out["ran"].append(name)
        else:
            out["skipped"].append(name)
    return out
