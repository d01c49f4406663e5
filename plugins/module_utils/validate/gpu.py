# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers for ``nvidia-smi topo -m`` and ``nvidia-smi --query-gpu`` CSV, GPU-NIC-NUMA affinity.

PRIVATE to the roce.fabric collection: may change without notice.

``nvidia-smi topo -m`` prints a tab-separated matrix whose header may carry ANSI underline
escapes; its last columns are ``CPU Affinity``, ``NUMA Affinity`` and (newer drivers)
``GPU NUMA ID``; NIC rows leave them empty; a ``NIC Legend`` maps ``NIC0`` to ``mlx5_0``.
"""

from __future__ import annotations

import json
import re

from ansible_collections.roce.fabric.plugins.module_utils.validate import dcgm


class GpuParseError(ValueError):
    """Raised when nvidia-smi output does not have the expected shape."""


_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
# Closest first: a NIC behind the same PCIe switch as the GPU is the one to use.
LINK_RANK = {"X": 0, "NV": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6}
TAIL_COLUMNS = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity", "GPU NUMA ID": "gpu_numa_id"}


def parse_cpulist(text):
    """Parse a Linux CPU list (``0-3,8,10-11``) into a sorted list of ints; '' or None gives []."""
    cpus = set()
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        match = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not match:
            raise GpuParseError("'%s' is not a CPU list" % text)
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        cpus.update(range(low, high + 1))
    return sorted(cpus)


def link_rank(link):
    """Rank a topo link (``NV18`` ranks as ``NV``); unknown links rank last."""
    if link and link.startswith("NV") and link[2:].isdigit():
        return LINK_RANK["NV"]
    return LINK_RANK.get(link, 99)


def parse_topo(text):
    """Parse ``nvidia-smi topo -m``.

    Returns ``gpus`` and ``nics``: name (``GPU0``, ``NIC0``) -> ``links`` (other device ->
    link, e.g. ``NV18``, ``PIX``, ``SYS``), ``cpu_affinity`` (CPU list text or None),
    ``cpus`` (ints), ``numa_affinity`` (int or None), ``gpu_numa_id`` (int or None); NICs
    carry ``device`` (``mlx5_0``) from the legend.
    """
    lines = [_ANSI_RE.sub("", line) for line in (text or "").splitlines()]
    header = None
    rows = []
    legend = {}
    tabs = True
    for line in lines:
        if header is None:
            # nvidia-smi separates cells with tabs; a copy from a terminal or a web page has spaces instead
            # (two or more between header cells, whose names hold single spaces: "CPU Affinity").
            if re.match(r"^\s*GPU0\b", line) and not re.match(r"^GPU0\s+X\b", line):
                tabs = "\t" in line
                header = [cell.strip() for cell in (line.split("\t") if tabs else re.split(r"\s{2,}", line))]
                if header and header[0] == "":
                    header = header[1:]
            continue
        legend_match = re.match(r"^\s*(NIC\d+):\s*(\S+)\s*$", line)
        if legend_match:
            legend[legend_match.group(1)] = legend_match.group(2)
            continue
        if re.match(r"^(GPU|NIC)\d+\s", line):
            rows.append([cell.strip() for cell in (line.split("\t") if tabs else line.split())])
    if header is None:
        raise GpuParseError("no 'nvidia-smi topo -m' matrix header (GPU0 ...) in output")
    devices = [h for h in header if re.match(r"^(GPU|NIC)\d+$", h)]
    tail = [TAIL_COLUMNS.get(h) for h in header[len(devices):]]
    if not rows:
        raise GpuParseError("topology matrix has a header but no rows")
    gpus, nics = {}, {}
    for cells in rows:
        name, values = cells[0], cells[1:]
        if len(values) < len(devices):
            raise GpuParseError("topology row %s has %d cells for %d devices" % (name, len(values), len(devices)))
        links = {}
        for other, link in zip(devices, values[:len(devices)]):
            if other != name:
                links[other] = link
        entry = dict(links=links, cpu_affinity=None, cpus=[], numa_affinity=None, gpu_numa_id=None)
        # Rows print an empty cell more than the header between NUMA Affinity and GPU NUMA ID;
        # NIC rows leave the tail empty. Empty cells carry nothing, so align the non-empty ones.
        extra = [value for value in values[len(devices):] if value != ""]
        for key, value in zip(tail, extra):
            if key is None or value in ("", "N/A"):
                continue
            if key == "cpu_affinity":
                entry["cpu_affinity"] = value
                entry["cpus"] = parse_cpulist(value)
            elif re.match(r"^\d+$", value):
                entry[key] = int(value)
            elif key == "numa_affinity" and re.match(r"^\d+(?:[-,]\d+)*$", value):
                entry[key] = parse_cpulist(value)[0]
        if name.startswith("GPU"):
            gpus[name] = entry
        else:
            entry["device"] = legend.get(name)
            nics[name] = entry
    return dict(gpus=gpus, nics=nics)


def gpu_nic_affinity(topo):
    """For each GPU pick the closest NIC(s) from a parsed topology.

    Returns GPU name -> ``nic`` (RDMA device name of the closest NIC or None), ``nic_link``,
    ``nics`` (all NICs at that distance), ``numa_node`` and ``cpus``. A GPU whose closest NIC
    is only reachable across the SMP interconnect (``SYS``) gets ``warning`` set: GPUDirect
    RDMA across sockets is slow and NCCL's default GDR level refuses it.
    """
    result = {}
    for gpu, entry in sorted(topo["gpus"].items(), key=lambda kv: int(kv[0][3:])):
        candidates = [(link_rank(link), other, link) for other, link in entry["links"].items() if other.startswith("NIC")]
        candidates.sort(key=lambda c: (c[0], int(c[1][3:])))
        best = [c for c in candidates if candidates and c[0] == candidates[0][0]]
        nics = [topo["nics"].get(c[1], {}).get("device") or c[1] for c in best]
        link = best[0][2] if best else None
        warning = None
        if link in ("SYS",):
            warning = "closest NIC of %s is across the SMP interconnect (SYS): GPUDirect RDMA will be slow or off" % gpu
        result[gpu] = dict(nic=nics[0] if nics else None, nic_link=link, nics=nics,
                           numa_node=entry["numa_affinity"], cpus=entry["cpus"], warning=warning)
    return result


def parse_query_csv(text):
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` (with header, with or without ``nounits``).

    Returns a list of dicts keyed by the query names (``clocks.max.graphics``), values as
    text with units stripped; ``[N/A]``, ``N/A`` and ``[Not Supported]`` become None.
    """
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise GpuParseError("empty nvidia-smi query output")
    keys = [re.sub(r"\s*\[.*\]$", "", cell.strip()) for cell in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(keys):
            raise GpuParseError("nvidia-smi row has %d fields for %d columns: %s" % (len(cells), len(keys), line))
        row = {}
        for key, value in zip(keys, cells):
            if value in ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]"):
                row[key] = None
            else:
                row[key] = re.sub(r"\s+(MHz|MiB|W|%|C)$", "", value)
        rows.append(row)
    return rows


def ecc_findings(rows):
    """Return problems in query rows carrying ``ecc.errors.uncorrected.*`` or ``retired_pages.pending``."""
    problems = []
    for row in rows:
        gpu = row.get("index", "?")
        for key, value in sorted(row.items()):
            if value is None:
                continue
            if key.startswith("ecc.errors.uncorrected") and value.isdigit() and int(value) > 0:
                problems.append("GPU %s: %s = %s" % (gpu, key, value))
            if key in ("retired_pages.pending", "remapped_rows.pending") and value.lower() in ("yes", "1"):
                problems.append("GPU %s: %s (reset the GPU to retire them)" % (gpu, key))
            if key == "remapped_rows.failure" and value.lower() in ("yes", "1"):
                problems.append("GPU %s: row remapping failed: replace the GPU" % gpu)
    return problems


def health_rows(gpus):
    """The ECC fields of ``gpu_health.py``'s GPUs as the query rows ``ecc_findings`` reads (its own names)."""
    rows = []
    for gpu in gpus:
        ecc = gpu.get("ecc") or {}
        row = {"index": str(gpu.get("index", "?")), "ecc.errors.uncorrected.volatile.total": ecc.get("uncorrected"),
               "retired_pages.pending": ecc.get("retired_pages_pending"),
               "remapped_rows.pending": ecc.get("remapped_rows_pending"),
               "remapped_rows.failure": ecc.get("remapped_rows_failure")}
        rows.append(dict((key, None if value is None else str(value)) for key, value in row.items()))
    return rows


def dcgm_reading(run):
    """``(record, problems, note)`` of the DCGM diagnostics gpu_health.py ran (its ``dcgm``: ``level``, ``found``,
    ``rc``, ``output``, ``timed_out``): the check's ``dcgm`` (``level``, ``ran``, ``version``, ``failed_gpus``,
    ``tests``: which of the level's tests ran, were skipped or were not run, ``dcgm.coverage``), the
    failures (module_utils/validate/dcgm.py verdict) and a note for a passed check; ``(None, [], "")`` when it was not
    asked for."""
    if not isinstance(run, dict) or not run.get("level"):
        return None, [], ""
    level = run["level"]
    if not run.get("found"):
        return dict(level=level, ran=False), [], "dcgmi is not installed: DCGM diagnostics (level %s) not run" % level
    if run.get("timed_out"):
        return dict(level=level, ran=False), ["DCGM diagnostics level %s did not end within %s s" % (
            level, dcgm.TIMEOUTS.get(level, "?"))], ""
    try:
        parsed = dcgm.parse_diag(run.get("output"))
    except dcgm.DcgmError as exc:
        return dict(level=level, ran=False), ["DCGM diagnostics level %s did not run (rc %s; is nv-hostengine, the "
                                              "nvidia-dcgm service, running?): %s" % (level, run.get("rc"), exc)], ""
    failed, problems = dcgm.verdict(parsed)
    tests = dcgm.coverage(parsed, level)
    record = dict(level=level, ran=True, version=parsed["version"], failed_gpus=failed, tests=tests)
    note = "DCGM %s level %s: %s ran" % (parsed["version"], level, ", ".join(tests["ran"]) or "no test")
    missing = [("%s skipped" % ", ".join(tests["skipped"])) if tests["skipped"] else "",
               ("%s not run (no result)" % ", ".join(tests["not_run"])) if tests["not_run"] else ""]
    if any(missing):
        note += "; %s" % "; ".join(part for part in missing if part)
    return record, problems, note


def health_check(run, h2d_min_gbps, command=""):
    """The ``gpu_health`` check record of one run of ``gpu_health.py`` (``run``: its ``rc``, ``stdout`` and
    ``stderr``): failed when the script failed or printed no result, when a GPU's pinned host-to-device copy is below
    ``h2d_min_gbps`` GB/s, or when ``ecc_findings`` finds uncorrected ECC errors, pages or rows waiting for a reset,
    or a failed row remapping; else passed, with each GPU's copy bandwidth, NUMA node and ECC count."""
    record = dict(name="gpu_health", command=command, gpus=[])
    rc = run.get("rc")
    if rc != 0:
        detail = " ".join(str(run.get("stderr") or run.get("msg") or "").split())[:300]
        return dict(record, status="failed", msg="gpu_health.py failed (rc %s): %s" % (rc, detail))
    try:
        data = json.loads(run.get("stdout") or "")
        gpus = list(data["gpus"])
    except (ValueError, KeyError, TypeError):
        return dict(record, status="failed", msg="gpu_health.py printed no result: %s"
                    % " ".join(str(run.get("stdout") or "").split())[:300])
    problems = []
    for gpu in gpus:
        h2d = ((gpu.get("copy") or {}).get("pinned") or {}).get("h2d")
        if h2d is not None and float(h2d) < float(h2d_min_gbps):
            problems.append("GPU %s host-to-device %.1f GB/s < %s" % (gpu.get("index", "?"), float(h2d), h2d_min_gbps))
    problems += ecc_findings(health_rows(gpus))
    reading, dcgm_problems, note = dcgm_reading(data.get("dcgm"))
    problems += dcgm_problems
    if reading is not None:
        record["dcgm"] = reading
    if problems:
        return dict(record, status="failed", msg="; ".join(problems + ([note] if note else [])), gpus=gpus)
    summary = []
    for gpu in gpus:
        pinned = (gpu.get("copy") or {}).get("pinned") or {}
        summary.append("GPU%s h2d %s d2h %s GB/s (NUMA %s), ECC uncorrected %s" % (
            gpu.get("index", "?"), pinned.get("h2d", "?"), pinned.get("d2h", "?"), gpu.get("numa_node"),
            (gpu.get("ecc") or {}).get("uncorrected")))
    # A level asked for whose tests did not all run is not passed: those tests are not run (the check says which).
    tests = (reading or {}).get("tests") or {}
    status = "not_run" if tests.get("skipped") or tests.get("not_run") else "passed"
    return dict(record, status=status, msg="; ".join(summary + ([note] if note else [])), gpus=gpus)
