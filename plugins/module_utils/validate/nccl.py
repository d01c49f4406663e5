# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers for nccl-tests result tables and NCCL_DEBUG=INFO logs, and the NCCL environment.

PRIVATE to the roce.fabric collection: may change without notice.

Pure functions. nccl-tests prints a header naming its columns twice (out-of-place, then
in-place), rows of numbers, then ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus
bandwidth : X``. Current builds have ``redop root ... #wrong``; older builds have no ``root``
column and a float ``error`` column instead of ``#wrong``. Columns are read from the header.
"""

from __future__ import annotations

import re


class NcclParseError(ValueError):
    """Raised when a results table is missing, truncated or malformed."""


_HEADER_RE = re.compile(r"^#\s+size\s+count\s+type\b")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)\s*(\w*)")
_VERSION_RE = re.compile(r"^#\s*nccl-tests version (\S+)")
_COLLECTIVE_RE = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
# Open MPI's mpirun --tag-output: "[<job>,<rank>]<stdout>:" (or <stderr>:) before every line a rank printed.
_TAG_RE = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:")
# Slurm's srun -l (--label): the task id right-aligned to the widest one, then ": ".
_SRUN_LABEL_RE = re.compile(r"^ *\d+: ")
# "#  Rank  1 Group  0 Pid  4242 on    node2 device  0 [0x1b] NVIDIA H200": the ranks and where they ran.
_RANK_RE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s*(.*)$")
# Lines mpirun or the benchmark may interleave; ranks prefix nothing in nccl-tests' own table.
_DATA_RE = re.compile(r"^\s*\d+\s+\d+\s+\S+")

PER_SIDE = ("time", "algbw", "busbw")


def _float(token, line):
    if token == "N/A":
        return None
    try:
        return float(token)
    except ValueError:
        raise NcclParseError("not a number '%s' in results row: %s" % (token, line.strip()))


def untag(text):
    """The ranks' output without the prefix their launcher put before each line: ``[job,rank]<stdout>:`` of
    ``mpirun --tag-output``, or the task label of ``srun -l`` (`` 0: ``), taken off only where every line but srun's
    own (``srun: ...``) carries one, so that no line of unlabelled output loses a number; other lines as they are."""
    lines = [_TAG_RE.sub("", line) for line in (text or "").splitlines()]
    body = [line for line in lines if line.strip() and not line.startswith("srun: ")]
    if body and all(_SRUN_LABEL_RE.match(line) for line in body):
        lines = [_SRUN_LABEL_RE.sub("", line, count=1) for line in lines]
    return "\n".join(lines)


def parse_results(text):
    """Parse nccl-tests (or roce.fabric's nccl_bench) output, also as ``mpirun --tag-output`` or ``srun -l`` print it
    (``untag``).

    Returns ``version``, ``collective``, ``layout`` (``'wrong'`` for current builds,
    ``'error'`` for older ones), ``rows`` (``size``, ``count``, ``type``, ``redop``, ``root``
    (None in the older layout), ``out_of_place`` and ``in_place`` dicts with ``time_us``,
    ``algbw``, ``busbw`` (GB/s) and ``wrong`` (int) or ``error`` (float)), ``oob_values``,
    ``oob_ok``, ``avg_busbw`` (GB/s), ``avg_status`` (``OK``/``FAILED``/''), ``wrong_total``,
    ``max_busbw`` and ``ranks`` (``rank``, ``group``, ``pid``, ``host``, ``device``, ``detail``
    from the ``# Using devices`` lines: which hosts and GPUs took part).

    Raises NcclParseError for output without a header, without rows, cut off before the
    ``Avg bus bandwidth`` line (truncated) or with a row that does not fit the header.
    """
    lines = [_ANSI_RE.sub("", line) for line in untag(text).splitlines()]
    result = dict(version=None, collective=None, layout=None, rows=[], oob_values=None, oob_ok=None,
                  avg_busbw=None, avg_status=None, wrong_total=0, max_busbw=None, ranks=[])
    columns = None
    for number, line in enumerate(lines, 1):
        match = _VERSION_RE.match(line)
        if match:
            result["version"] = match.group(1)
            continue
        match = _COLLECTIVE_RE.match(line)
        if match:
            result["collective"] = match.group(1)
            continue
        match = _RANK_RE.match(line)
        if match:
            result["ranks"].append(dict(rank=int(match.group(1)), group=int(match.group(2) or 0), pid=int(match.group(3)),
                                        host=match.group(4), device=int(match.group(5)),
                                        detail=match.group(6).strip()))
            continue
        if _HEADER_RE.match(line):
            columns = _header_columns(line)
            result["layout"] = "wrong" if "#wrong" in [name for _side, name in columns] else "error"
            continue
        match = _OOB_RE.match(line)
        if match:
            result["oob_values"] = int(match.group(1))
            result["oob_ok"] = match.group(2) != "FAILED" and int(match.group(1)) == 0
            continue
        match = _AVG_RE.match(line)
        if match:
            result["avg_busbw"] = float(match.group(1))
            result["avg_status"] = match.group(2)
            continue
        if columns is None or line.lstrip().startswith("#") or not line.strip():
            continue
        if not _DATA_RE.match(line):
            continue
        result["rows"].append(_row(columns, line, number))
    if columns is None:
        raise NcclParseError("no nccl-tests results header ('#  size  count  type ...') in output")
    if not result["rows"]:
        raise NcclParseError("results header found but no result rows: the benchmark did not run any size")
    if result["avg_busbw"] is None:
        raise NcclParseError("output truncated: no '# Avg bus bandwidth' line after %d rows (last size %d)"
                             % (len(result["rows"]), result["rows"][-1]["size"]))
    wrong = 0
    for row in result["rows"]:
        for side in ("out_of_place", "in_place"):
            if row[side] and row[side].get("wrong"):
                wrong += row[side]["wrong"]
    result["wrong_total"] = wrong
    busbws = [row[side]["busbw"] for row in result["rows"] for side in ("out_of_place", "in_place")
              if row[side] and row[side]["busbw"] is not None]
    result["max_busbw"] = max(busbws) if busbws else None
    return result


def parse_all_results(text):
    """Parse output holding several collectives (one ``# Collective test starting:`` block each).

    Returns a list of parse_results() dicts in print order; output without such markers is
    parsed as one table.
    """
    blocks = []
    current = []
    for line in untag(text).splitlines():
        if _COLLECTIVE_RE.match(_ANSI_RE.sub("", line)) and any(_HEADER_RE.match(x) for x in current):
            blocks.append(current)
            current = []
        current.append(line)
    blocks.append(current)
    return [parse_results("\n".join(block)) for block in blocks]


def _header_columns(line):
    tokens = line.lstrip("#").split()
    # The second half repeats time/algbw/busbw/<check>; name them by side.
    columns = []
    side = None
    for token in tokens:
        if token == "time":
            side = "out_of_place" if side is None else "in_place"
        columns.append((side, token) if side else (None, token))
    names = [t for _s, t in columns]
    if names.count("time") != 2 or names.count("busbw") != 2:
        raise NcclParseError("unknown nccl-tests header layout: %s" % line.strip())
    return columns


def _row(columns, line, number):
    tokens = line.split()
    names = [name for _side, name in columns]
    # Collectives without a reduction (alltoall, all_gather) print a blank redop cell in nccl-tests before 2.13:
    # one field short, the time where the redop would be.
    if (len(tokens) == len(columns) - 1 and "redop" in names and names.index("redop") < len(tokens)
            and re.match(r"^[\d.]+$", tokens[names.index("redop")])):
        tokens.insert(names.index("redop"), None)
    if len(tokens) != len(columns):
        raise NcclParseError("line %d: results row has %d fields, the header has %d: %s"
                             % (number, len(tokens), len(columns), line.strip()))
    row = dict(root=None, out_of_place={}, in_place={})
    for (side, name), token in zip(columns, tokens):
        if side is None:
            if name in ("size", "count"):
                if not token.isdigit():
                    raise NcclParseError("line %d: %s '%s' is not an integer: %s" % (number, name, token, line.strip()))
                row[name] = int(token)
            elif name == "root":
                row["root"] = int(token) if re.match(r"^-?\d+$", token) else None
            else:
                row[name] = token  # None for a blank redop cell
            continue
        key = {"time": "time_us"}.get(name, name)
        if name == "#wrong":
            row[side]["wrong"] = None if token == "N/A" else int(_float(token, line))
        elif name == "error":
            row[side]["error"] = _float(token, line)
        else:
            row[side][key] = _float(token, line)
    return row


def results_verdict(parsed, min_busbw=None):
    """Judge parsed results: wrong values, out-of-bounds values, nccl-tests' own FAILED, threshold.

    Returns ``(ok, reasons)``; ``min_busbw`` is in GB/s and compared with ``avg_busbw``.
    """
    reasons = []
    if parsed["wrong_total"]:
        reasons.append("%d wrong values in the results (#wrong column): data corruption or a broken transport"
                       % parsed["wrong_total"])
    if parsed["oob_ok"] is False:
        reasons.append("nccl-tests reports %s out-of-bounds values" % parsed["oob_values"])
    if parsed["avg_status"] == "FAILED":
        reasons.append("nccl-tests marks the average bus bandwidth FAILED (below NCCL_TESTS_MIN_BW)")
    if min_busbw is not None and parsed["avg_busbw"] < float(min_busbw):
        reasons.append("average bus bandwidth %.3f GB/s is below the threshold %.3f GB/s"
                       % (parsed["avg_busbw"], float(min_busbw)))
    return not reasons, reasons


def bus_factor(collective, nranks):
    """nccl-tests' bus bandwidth factor: busbw = algbw * factor.

    all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, reduce,
    sendrecv 1 (see nccl-tests doc/PERFORMANCE.md).
    """
    name = collective.replace("_perf", "").replace("_mpi", "").replace("_", "")
    n = int(nranks)
    if n < 1:
        raise ValueError("nranks must be at least 1")
    if name == "allreduce":
        return 2.0 * (n - 1) / n
    if name in ("allgather", "reducescatter", "alltoall"):
        return float(n - 1) / n
    if name in ("broadcast", "reduce", "sendrecv", "hypercube"):
        return 1.0
    raise ValueError("unknown collective '%s'" % collective)


# --- NCCL_DEBUG=INFO log check ------------------------------------------------------------------

# "[0]mlx5_0:1/RoCE [1]mlx5_1:1/IB/SHARP" and, with merged NICs (2.19+), "[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}".
_NET_IB_USING_RE = re.compile(r"NET/IB\s*:\s*Using\s+([^;\n]*)")
_NET_IB_DEV_RE = re.compile(r"\[(\d+)\]\s?([\w.-]+):(\d+)/(RoCE|IB)")
_NET_SOCKET_USING_RE = re.compile(r"NET/Socket\s*:\s*Using\s+(\[\d+\]\S+)")
# The network NCCL chose: its own "IB" or "Socket", or the name a net plugin gives itself (HPC-X's
# "IBext", "IBext_v8"; cloud plugins have names of their own).
_USING_NETWORK_RE = re.compile(r"Using network ([^\n]+?)\s*$", re.M)
# "Channel 00/0 : 1[0] -> 2[0] [receive] via NET/IB/0/GDRDMA"; NCCL before 2.12 prints "Channel 01 : ...".
_CHANNEL_RE = re.compile(r"Channel \d+(?:/\d+)? : \d+\[\w+\] -> \d+\[\w+\](?: \[(?:send|receive)\])? via (\S+)")
_NCCL_VERSION_RE = re.compile(r"NCCL version (\S+)")

UCX_SRQ_FIX = (
    "the RDMA driver (irdma and other non-mlx5 providers) does not support shared receive queues, which UCX's "
    "rc/dc transports create: restrict UCX to transports without SRQ (for example UCX_TLS=ud_verbs,sm,self or "
    "UCX_TLS=tcp,sm,self for the MPI bootstrap, since NCCL carries the GPU traffic itself), or use a UCX release "
    "that checks SRQ support before using it")


def network_is_rdma(network, ib_devices, net_channels):
    """True when NCCL moves inter-node data over RDMA, False when over sockets, None when a plugin does not say.

    NCCL's own ``IB`` transport and plugins named after it (``IBext``, ``IBext_v8``: HPC-X's plugin in NGC
    containers) are RDMA; any network whose log lists ``NET/IB : Using`` devices or opens channels through
    ``NET/IB...`` is RDMA, whatever the plugin calls itself.
    """
    if ib_devices or any(t.startswith("NET/IB") for t in net_channels):
        return True
    if network is None:
        return None if net_channels else False
    if network.startswith("IB"):
        return True
    if network == "Socket":
        return False
    return None


def check_log(text, require_net=None, require_gdr=False):
    """Check an NCCL_DEBUG=INFO log for the transports NCCL really used.

    ``require_net``: ``'IB'`` when the fabric must carry inter-node traffic over RDMA (IB or
    RoCE); None when the run may be single-node. A channel that goes ``via NET/Socket`` is
    always a socket fallback (error). ``require_gdr``: RDMA channels must be ``/GDRDMA``.

    Returns ``passed``, ``network`` (as NCCL names it: ``IB``, ``Socket``, a plugin's name such as ``IBext_v8``,
    or None), ``rdma`` (see ``network_is_rdma``), ``ib_devices``
    (``{name, port, link}`` from ``NET/IB : Using``), ``socket_interfaces``, ``transports``
    (channel transport -> count, e.g. ``P2P/CUMEM``, ``NET/IB/0/GDRDMA``, ``NET/Socket/0``),
    ``gdr`` (True/False/None), ``version`` and ``findings`` (``severity``, ``code``, ``message``,
    ``fix``), one per problem found.
    """
    text = untag(text)
    findings = []
    networks = []
    for name in _USING_NETWORK_RE.findall(text):
        if name not in networks:
            networks.append(name)
    ib_devices = []
    for match in _NET_IB_USING_RE.finditer(text):
        for dev in _NET_IB_DEV_RE.finditer(match.group(1)):
            entry = dict(name=dev.group(2), port=int(dev.group(3)), link=dev.group(4))
            if entry not in ib_devices:
                ib_devices.append(entry)
    socket_ifs = sorted(set(m.group(1) for m in _NET_SOCKET_USING_RE.finditer(text)))
    transports = {}
    for match in _CHANNEL_RE.finditer(text):
        transports[match.group(1)] = transports.get(match.group(1), 0) + 1
    version = _NCCL_VERSION_RE.search(text)
    network = networks[0] if networks else None
    socket_channels = sum(n for t, n in transports.items() if t.startswith("NET/Socket"))
    # Channels over a network that is not sockets: NCCL's IB transport or a net plugin (NET/IBext_v8/1).
    net_channels = dict((t, n) for t, n in transports.items() if t.startswith("NET/") and not t.startswith("NET/Socket"))
    rdma = network_is_rdma(network, ib_devices, net_channels)

    def add(severity, code, message, fix=None):
        findings.append(dict(severity=severity, code=code, message=message, fix=fix))

    if not text.strip() or ("NCCL INFO" not in text and "NCCL WARN" not in text):
        add("error", "no_nccl_log", "no NCCL INFO lines in the log: run with NCCL_DEBUG=INFO",
            "export NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET for a shorter log)")
    if socket_channels:
        add("error", "socket_fallback",
            "%d channels use NET/Socket: collective traffic goes over TCP sockets instead of RDMA, P2P or SHM"
            % socket_channels,
            "check NCCL_P2P_DISABLE/NCCL_SHM_DISABLE/NCCL_IB_DISABLE in the environment, NCCL_IB_HCA and the RDMA devices")
    if "NET/IB : No device found" in text:
        add("error" if require_net == "IB" else "info", "no_ib_device",
            "NET/IB found no RDMA device: inter-node traffic can only use sockets",
            "check that the RDMA driver is loaded (rdma link show), NCCL_IB_HCA matches a device and the container sees /dev/infiniband")
    if rdma is None and network:
        add("warning", "net_plugin_unknown",
            "NCCL uses the network plugin '%s' and its log shows no RDMA device: this check cannot tell whether it is RDMA"
            % network, "look at the plugin's own log lines, or run with NCCL_NET=IB to use NCCL's IB/RoCE transport")
    elif require_net == "IB" and not rdma:
        add("error", "network_not_ib", "NCCL chose network %s instead of IB/RoCE" % (network or "none"),
            "set NCCL_IB_HCA to the RDMA devices (e.g. =mlx5_0:1) and NCCL_IB_GID_INDEX to the RoCE v2 GID")
    if net_channels:
        gdr = all("GDRDMA" in t for t in net_channels)
        if not gdr:
            add("error" if require_gdr else "warning", "gdr_missing",
                "RDMA channels without GPUDirect RDMA (no /GDRDMA): data is staged through host memory",
                "load nvidia-peermem (or use DMA-BUF), check NCCL_NET_GDR_LEVEL and the GPU-NIC PCIe distance (nvidia-smi topo -m)")
    else:
        gdr = None
        if require_gdr and require_net == "IB":
            add("error", "gdr_missing", "no RDMA channel was opened, so GPUDirect RDMA could not be used", None)
    if re.search(r"GPU Direct RDMA Disabled|GDR.*disabled", text) and not any(f["code"] == "gdr_missing" for f in findings):
        add("error" if require_gdr else "warning", "gdr_missing", "NCCL reports GPUDirect RDMA disabled for an HCA",
            "load nvidia-peermem (or use DMA-BUF) and check NCCL_NET_GDR_LEVEL")
    if "ibv_create_srq() failed: Operation not supported" in text:
        add("error", "ucx_srq_unsupported", "UCX could not create a shared receive queue: ibv_create_srq() failed: "
            "Operation not supported", UCX_SRQ_FIX)
    for line in text.splitlines():
        if "NCCL WARN" in line:
            add("error", "nccl_warn", line.split("NCCL WARN", 1)[1].strip(), None)
    return dict(passed=not any(f["severity"] == "error" for f in findings), network=network, rdma=rdma,
                ib_devices=ib_devices, socket_interfaces=socket_ifs, transports=transports, gdr=gdr,
                version=version.group(1) if version else None, findings=findings)


# --- NCCL environment from discovery --------------------------------------------------------------

def nccl_env(rdma_devices, gid_index=None, socket_ifname=None, gdr_level=None, disable_hcoll=True, extra=None):
    """Build the environment a NCCL job needs from discovered devices.

    ``rdma_devices``: list of ``{name, port}`` (ports active, RoCE or IB). Returns a dict of
    strings: ``NCCL_IB_HCA`` (``=dev:port,...``, exact names so ``mlx5_1`` never matches
    ``mlx5_10``), ``NCCL_IB_GID_INDEX``, ``NCCL_SOCKET_IFNAME`` (``=ifname``, exact),
    ``NCCL_NET_GDR_LEVEL`` and, with ``disable_hcoll``, ``OMPI_MCA_coll_hcoll_enable=0`` and
    ``HCOLL_ENABLE_MCAST_ALL=0``.
    """
    env = {}
    if rdma_devices:
        env["NCCL_IB_HCA"] = "=" + ",".join("%s:%d" % (d["name"], int(d.get("port", 1))) for d in rdma_devices)
    else:
        env["NCCL_IB_DISABLE"] = "1"
    if gid_index is not None:
        env["NCCL_IB_GID_INDEX"] = str(int(gid_index))
    if socket_ifname:
        env["NCCL_SOCKET_IFNAME"] = "=" + socket_ifname
    if gdr_level:
        env["NCCL_NET_GDR_LEVEL"] = str(gdr_level)
    if disable_hcoll:
        env["OMPI_MCA_coll_hcoll_enable"] = "0"
        env["HCOLL_ENABLE_MCAST_ALL"] = "0"
    for key, value in (extra or {}).items():
        env[key] = str(value)
    return env


# --- the MPI run of the validate role ------------------------------------------------------------------------

def first_address(facts):
    """The RoCE address a host is reached on: the first IPv4 address of its active RDMA ports (rdma_facts), or ''."""
    return (rdma_addresses(facts, gids=False) or [""])[0]


def rdma_addresses(facts, gids=True):
    """A host's IPv4 addresses on its RDMA ports (rdma_facts): its active ports' and, with ``gids``, every IPv4-mapped
    GID of its devices, each once, in that order."""
    found = [port.get("ipv4") for port in (facts or {}).get("ports") or [] if isinstance(port, dict)]
    for device in (facts or {}).get("devices") or [] if gids else []:
        for port in (device or {}).get("ports") or [] if isinstance(device, dict) else []:
            found += [gid.get("ipv4") for gid in (port or {}).get("gids") or [] if isinstance(gid, dict)]
    out = []
    for address in found:
        if address and str(address) not in out:
            out.append(str(address))
    return out


def host_addresses(facts_by_host, extra=None):
    """``{host: [address, ...]}``: each host's ``rdma_addresses``, then the ``extra`` ones (``{host: [address]}``, e.g.
    its ``ansible_host``), each once. The report names the host of a rank NCCL's RAS gives by address with it."""
    out = {}
    for host, facts in sorted((facts_by_host or {}).items()):
        out[host] = rdma_addresses(facts)
        out[host] += [str(a) for a in (extra or {}).get(host) or [] if a and str(a) not in out[host]]
    return out


def _netdev_name(netdev):
    return (netdev.get("name") or "") if isinstance(netdev, dict) else (netdev or "")


def mpi_run(play_hosts, facts, wanted=None, mpi_ssh=True, gpus_per_host=None, numa_nodes=None, benchmark="nccl_tests",
            user="root"):
    """The validate role's NCCL run across hosts through mpirun: ``hosts`` (``wanted``, else the play's hosts whose
    discovery found GPUs), ``first`` (where mpirun runs), each host's RoCE ``addresses`` (the first IPv4 address of its
    active RDMA ports), the ranks per host (``gpus``: ``gpus_per_host``, else the first host's GPUs), the ranks' NUMA
    nodes (``numa_nodes``, else the first host's GPUs'), the interface mpirun's own traffic takes (``ifname``) and
    the ``problems`` that stop the run before anything is started. ``facts``: host -> its rdma_facts."""
    play_hosts = list(play_hosts or [])
    facts = facts or {}
    hosts = list(wanted or []) or [host for host in play_hosts if (facts.get(host) or {}).get("gpus")]
    addresses = [first_address(facts.get(host)) for host in hosts]
    problems = []
    if not hosts:
        problems.append("no host to run on: no host of this play has GPUs that discovery found, and "
                        "validate_nccl_mpi_hosts names none")
    outside = [host for host in hosts if host not in play_hosts]
    if outside:
        problems.append("validate_nccl_mpi_hosts names hosts that are not in this play (%s): MPI runs on hosts whose "
                        "discovery it has" % ", ".join(outside))
    missing = [host for host, address in zip(hosts, addresses) if not address and host not in outside]
    if missing:
        problems.append("no active RDMA port with an IPv4 address on %s" % ", ".join(missing))
    if not mpi_ssh:
        problems.append("validate_mpi_ssh=true is needed for the SSH trust between the hosts")
    bare = [host for host in hosts if host in play_hosts and not (facts.get(host) or {}).get("gpus")]
    if bare and benchmark != "nccl_tests":
        # Its script is copied to the hosts with GPUs (the validate role's gpu.yml), and a rank needs a GPU.
        problems.append("validate_nccl_benchmark %s (the PyTorch benchmark where nccl-tests is missing) needs GPUs on "
                        "every host of the MPI run: discovery found none on %s" % (benchmark, ", ".join(bare)))
    if user != "root" and benchmark != "nccl_tests":
        problems.append("validate_mpi_ssh_user %s runs mpirun, which works with validate_nccl_benchmark nccl_tests only "
                        "(got %s)" % (user, benchmark))
    first = hosts[0] if hosts else ""
    first_facts = facts.get(first) or {}
    gpus = first_facts.get("gpus") or []
    ports = first_facts.get("ports") or []
    return {
        "hosts": hosts, "first": first, "addresses": addresses, "problems": problems,
        "gpus": int(gpus_per_host) if gpus_per_host else len(gpus),
        "numa_nodes": list(numa_nodes or []) or [gpu.get("numa_node") for gpu in gpus],
        "ifname": _netdev_name(ports[0].get("netdev")) if ports else "",
    }


def mpi_run_checks(result, name="nccl (mpi)"):
    """The records of a launcher=mpi nccl_test run (its ``checks``); one failed record, with the module's message,
    when it returned none (it failed before running: no mpirun, a malformed host)."""
    checks = (result or {}).get("checks")
    if checks:
        return list(checks)
    return [dict(name=name, status="failed", msg=(result or {}).get("msg") or "not run", command="")]


# --- MPI launch across hosts -----------------------------------------------------------------------

_MPI_HOST_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Open MPI splits plm_rsh_args on white space: a key path must be one word of safe characters, or it adds SSH
# options (a ProxyCommand runs a command on the launching host).
_SSH_KEY_RE = re.compile(r"^/[A-Za-z0-9_.@+/-]{1,4095}$")


def check_ssh_key(path):
    """Raise ValueError unless ``path`` is an absolute path fit for mpirun's ``plm_rsh_args``."""
    if not _SSH_KEY_RE.match(str(path)):
        raise ValueError("ssh_key must be an absolute path of letters, digits and _ . @ + / - (got %r)" % (path,))


def mpirun_argv(mpirun, hosts, ranks_per_host, program, env=None, ifname=None, ssh_key=None, numa_nodes=None,
                numactl="numactl", as_root=False, extra_args=None):
    """Build an Open MPI ``mpirun`` command line that starts ``program`` on every host.

    ``hosts``: addresses mpirun reaches over SSH (the first one is rank 0's host);
    ``ranks_per_host``: one rank per GPU. ``env`` is exported to every rank with ``-x NAME=value``.
    HCOLL is always off (``coll_hcoll_enable 0``). ``ifname`` keeps MPI's own TCP traffic
    (out-of-band and the TCP byte transfer layer) on that interface, so a management network that
    every host numbers alike (NAT) is never chosen. ``ssh_key``: the key mpirun's SSH uses, in batch
    mode: host keys are still checked. ``numa_nodes``: the NUMA node of each local rank's GPU; then
    every rank is its own application context (``-np 1 -H host:ranks -x ... numactl --cpunodebind=N
    --membind=N program``, Open MPI's MPMD syntax, where ``-x`` holds for its own context only) so
    each process runs on its GPU's NUMA node; a
    node below 0 (no NUMA information) leaves that rank unpinned. Without it ranks are bound to a
    NUMA domain by Open MPI.

    Raises ValueError for an empty host list, a malformed host, environment name or rank count.
    """
    hosts = list(hosts or [])
    if not hosts:
        raise ValueError("no hosts for mpirun")
    for host in hosts:
        if not _MPI_HOST_RE.match(str(host)):
            raise ValueError("malformed MPI host '%s'" % host)
    ranks_per_host = int(ranks_per_host)
    if ranks_per_host < 1:
        raise ValueError("ranks per host must be at least 1, got %d" % ranks_per_host)
    if numa_nodes is not None and len(numa_nodes) != ranks_per_host:
        raise ValueError("numa_nodes names %d NUMA nodes for %d ranks per host" % (len(numa_nodes), ranks_per_host))
    argv = [mpirun]
    if as_root:
        argv.append("--allow-run-as-root")
    argv += ["--mca", "coll_hcoll_enable", "0"]
    if ifname:
        argv += ["--mca", "oob_tcp_if_include", ifname, "--mca", "btl_tcp_if_include", ifname]
    if ssh_key:
        check_ssh_key(ssh_key)
        argv += ["--mca", "plm_rsh_args", "-i %s -o BatchMode=yes -o IdentitiesOnly=yes" % ssh_key]
    argv += [str(arg) for arg in (extra_args or [])]
    exports = []
    for name, value in sorted((env or {}).items()):
        if not _ENV_NAME_RE.match(str(name)):
            raise ValueError("malformed environment variable name '%s'" % name)
        exports += ["-x", "%s=%s" % (name, value)]
    host_list = ",".join("%s:%d" % (host, ranks_per_host) for host in hosts)
    if numa_nodes is None:
        return argv + exports + ["-np", str(len(hosts) * ranks_per_host), "-H", host_list,
                                 "--map-by", "ppr:%d:node" % ranks_per_host, "--bind-to", "numa"] + list(program)
    contexts = ["--bind-to", "none"]
    for host in hosts:
        for node in numa_nodes:
            pin = [numactl, "--cpunodebind=%d" % int(node), "--membind=%d" % int(node)] if int(node) >= 0 else []
            if len(contexts) > 2:
                contexts.append(":")
            # -x belongs to an application context: every context carries the environment.
            contexts += ["-np", "1", "-H", "%s:%d" % (host, ranks_per_host)] + exports + pin + list(program)
    return argv + contexts


# What mpirun prints when it cannot start the ranks, and what that means for the operator.
_MPI_FAILURES = (
    ("Host key verification failed", "SSH refused a host whose key is not in known_hosts (host-key checking stays on: "
     "pin the key with validate_mpi_ssh or ssh-keyscan, do not turn checking off)"),
    ("Permission denied (publickey", "SSH key login was refused: the MPI key is not in the host's authorized_keys "
     "(validate_mpi_ssh)"),
    ("No route to host", "a host cannot be reached over the network mpirun uses"),
    ("Connection timed out", "a host did not answer over SSH"),
    ("Connection refused", "a host refused the SSH connection (is sshd running?)"),
    ("Could not resolve hostname", "a host name does not resolve: use addresses"),
    ("There are not enough slots available", "more ranks than slots: fewer GPUs per host than asked for"),
    ("orted: command not found", "Open MPI is not installed on a remote host (orted missing)"),
    ("ORTE was unable to reliably start one or more daemons", "mpirun could not start its daemon on every host"),
    ("ORTE does not know how to route a message", "mpirun's daemons cannot reach each other: check mpi_ifname"),
    ("mpirun noticed that process rank", "a rank died"),
    ("MPI_ABORT was invoked", "a rank aborted"),
)


def mpi_failure(text):
    """Name why an mpirun run failed from its output; None when no known cause appears."""
    text = text or ""
    causes = []
    for marker, meaning in _MPI_FAILURES:
        if marker in text:
            line = next(l.strip() for l in text.splitlines() if marker in l)
            causes.append("%s ('%s')" % (meaning, line[:200]))
    return "; ".join(causes) or None


def run_checks(runs, launcher):
    """The report's check records of one nccl_test call: one per collective run.

    Local: ``nccl <collective>``, its average bus bandwidth, the transports NCCL used and why it failed. MPI:
    ``nccl <collective> (mpi, <N> hosts)``, its bandwidth, the ranks and the hosts they ran on (from the rank
    table, else the hosts given) and why it failed.
    """
    launcher = launcher or {}
    mpi = launcher.get("kind") == "mpi"
    hosts = list(launcher.get("hosts") or [])
    checks = []
    for run in runs or []:
        name = "nccl %s" % run.get("collective")
        busbw = run.get("avg_busbw")
        parts = [("avg busbw %.3f GB/s" if mpi else "avg busbw %.2f GB/s") % busbw if busbw is not None else "no result"]
        if mpi:
            name += " (mpi, %d hosts)" % len(hosts)
            ran_on = []
            for rank in (run.get("table") or {}).get("ranks") or []:
                if rank.get("host") not in ran_on:
                    ran_on.append(rank.get("host"))
            parts.append("%s ranks on %s" % (launcher.get("ranks"), ",".join(str(h) for h in (ran_on or hosts))))
        else:
            parts.append("transports %s" % ",".join(((run.get("log_check") or {}).get("transports") or {}).keys()))
        if not run.get("passed"):
            parts.extend(run.get("reasons") or [])
        check = {"name": name, "status": "passed" if run.get("passed") else "failed", "msg": "; ".join(parts),
                 "command": run.get("command"), "tables": [run["table"]] if run.get("table") else []}
        # The ranks RAS found missing from a hung collective: the report's fault location names their GPU or host.
        if (run.get("ras") or {}).get("missing"):
            check["ras_missing"] = [dict(rank) for rank in run["ras"]["missing"]]
        checks.append(check)
    return checks
