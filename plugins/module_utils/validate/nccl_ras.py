# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NCCL's RAS (reliability, availability, serviceability): what a running NCCL job says of its ranks.

PRIVATE to the roce.fabric collection: may change without notice.

Every NCCL process of 2.24 and later runs a RAS thread; one per node serves clients on ``localhost:28028``
(``NCCL_RAS_ADDR``) with a line protocol (``CLIENT PROTOCOL 2`` answered by ``SERVER PROTOCOL <n>``; ``SET FORMAT
json``, 2.28.7 and later, answered ``OK``; ``VERBOSE STATUS`` answered by the status, then the close). The JSON status
lists each communicator's ranks that answered and the ranks that did not (``missing_ranks``: ``unresponsive``, or
``considered_dead``), with their host, process and GPU: the rank a hung collective waits for.
``parse_status`` and ``findings`` are pure; ``query`` is the client, bounded in time and bytes, and
``not_this_run`` says why a RAS port is not asked (another process than this run's NCCL holds it).
"""

from __future__ import annotations

import json
import socket
import time

from ansible_collections.roce.fabric.plugins.module_utils.validate import process as _process

PROTOCOL = 2
DEFAULT_ADDR = ("127.0.0.1", 28028)
# init_state: ncclSuccess (0) or ncclInProgress (7); anything else is an error (NCCL's RAS documentation).
INIT_OK = (0, 7)


class RasError(ValueError):
    """A RAS answer that is not a status, or a RAS that cannot be reached."""


def parse_status(text):
    """``{version, communicators: [{hash, size, ranks: [...], missing: [...]}], timeouts}`` of RAS's JSON status.

    Each rank: ``rank``, ``host``, ``pid``, ``gpu`` (its NVML index: unique on the node), ``init_state``,
    ``async_error``, ``abort``; each missing rank: ``rank``, ``host``, ``pid``, ``gpu``, ``unresponsive``,
    ``dead``. Raises RasError for text that is not one.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RasError("the RAS answer is not JSON (NCCL before 2.28.7 answers text only): %s" % exc)
    if not isinstance(data, dict) or not isinstance(data.get("communicators"), list):
        raise RasError("the RAS answer has no communicators")

    def gpu(entry):
        return entry.get("nvml_dev", entry.get("cuda_dev"))

    communicators = []
    for comm in data["communicators"]:
        ranks = [dict(rank=r.get("rank"), host=r.get("host"), pid=r.get("pid"), gpu=gpu(r),
                      init_state=(r.get("status") or {}).get("init_state"),
                      async_error=(r.get("status") or {}).get("async_error"),
                      abort=bool((r.get("status") or {}).get("abort_flag"))) for r in comm.get("ranks") or []]
        missing = [dict(rank=r.get("rank"), host=r.get("host"), pid=r.get("pid"), gpu=gpu(r),
                        unresponsive=bool((r.get("status") or {}).get("unresponsive")),
                        dead=bool((r.get("status") or {}).get("considered_dead"))) for r in comm.get("missing_ranks") or []]
        communicators.append(dict(hash=comm.get("hash"), size=comm.get("size"), ranks=ranks, missing=missing))
    return dict(version=data.get("nccl_version"), communicators=communicators,
                timeouts=(data.get("ras") or {}).get("timeouts_count", 0))


def findings(status):
    """What a RAS status says is wrong, as log-check findings (``severity``, ``code``, ``message``, and the
    ``host``, ``gpu`` and ``rank`` concerned): a rank missing from its communicator, a rank in error."""
    out = []
    for comm in status["communicators"]:
        where = "communicator %s of %s ranks" % (comm["hash"], comm["size"])
        for rank in comm["missing"]:
            why = "considered dead" if rank["dead"] else ("unresponsive" if rank["unresponsive"] else "not a member")
            out.append(dict(severity="error", code="ras_rank_missing", host=rank["host"], gpu=rank["gpu"],
                            rank=rank["rank"],
                            message="RAS: rank %s (process %s on %s, GPU %s) is missing from %s: %s; the collective "
                                    "waits for it" % (rank["rank"], rank["pid"], rank["host"], rank["gpu"], where, why)))
        for rank in comm["ranks"]:
            bad = []
            if rank["init_state"] not in INIT_OK and rank["init_state"] is not None:
                bad.append("initialisation failed (%s)" % rank["init_state"])
            if rank["async_error"]:
                bad.append("asynchronous error %s" % rank["async_error"])
            if rank["abort"]:
                bad.append("aborted")
            if bad:
                out.append(dict(severity="error", code="ras_rank_error", host=rank["host"], gpu=rank["gpu"],
                                rank=rank["rank"], message="RAS: rank %s (process %s on %s, GPU %s) in %s: %s"
                                % (rank["rank"], rank["pid"], rank["host"], rank["gpu"], where, ", ".join(bad))))
    return out


def missing_ranks(status):
    """The ranks a status finds missing, for the report's fault location: each with its ``rank``, ``host``, ``pid``,
    ``gpu``, ``unresponsive``, ``dead`` and ``whole_host`` (True when no rank on that host answered in any
    communicator: the host or its network, not one GPU's process, is what the others wait for)."""
    answering = set(rank["host"] for comm in status["communicators"] for rank in comm["ranks"])
    out, seen = [], set()
    for comm in status["communicators"]:
        for rank in comm["missing"]:
            key = (rank["host"], rank["pid"], rank["gpu"])
            if key in seen:
                continue
            seen.add(key)
            out.append(dict(rank=rank["rank"], host=rank["host"], pid=rank["pid"], gpu=rank["gpu"],
                            unresponsive=rank["unresponsive"], dead=rank["dead"], whole_host=rank["host"] not in answering))
    return out


def ras_addr(env):
    """The RAS client address of a job's environment (``NCCL_RAS_ADDR``, ``host:port``), or the default."""
    value = str((env or {}).get("NCCL_RAS_ADDR") or "")
    host, _sep, port = value.rpartition(":")
    if host and port.isdigit() and 0 < int(port) < 65536:
        return (host.strip("[]"), int(port))
    return DEFAULT_ADDR


# The longest line of the protocol's greeting and answers, and the largest status read: a server that sends more (or
# no newline) is not NCCL's, and its bytes are not kept.
MAX_LINE = 4096
MAX_STATUS = 1 << 22


def _line(sock, buf, deadline, addr):
    """The next line from ``sock`` (``buf``: bytes read after the last one), read within ``deadline`` and at most
    MAX_LINE bytes long: ``(line, rest)``."""
    while b"\n" not in buf:
        if len(buf) > MAX_LINE:
            raise RasError("not a RAS server at %s:%d: a line longer than %d bytes" % (addr[0], addr[1], MAX_LINE))
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = sock.recv(MAX_LINE + 1 - len(buf))
        if not chunk:
            break
        buf += chunk
    line, _sep, rest = buf.partition(b"\n")
    if len(line) > MAX_LINE:
        raise RasError("not a RAS server at %s:%d: a line longer than %d bytes" % (addr[0], addr[1], MAX_LINE))
    return line.decode("utf-8", "replace").strip(), rest


def query(addr=DEFAULT_ADDR, timeout=15.0, fmt="json"):
    """The ``VERBOSE STATUS`` of the NCCL job serving RAS at ``addr`` (its text), in ``fmt`` (``json``; None: RAS's
    default, text); RasError where none answers or it does not speak the protocol. The whole exchange is bounded by
    ``timeout`` seconds and every read by its size (MAX_LINE a line, MAX_STATUS the status): a server that sends
    without end holds neither the module nor its memory."""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection(addr, timeout=timeout) as sock:
            sock.sendall(b"CLIENT PROTOCOL %d\n" % PROTOCOL)
            hello, rest = _line(sock, b"", deadline, addr)
            if not hello.upper().startswith("SERVER PROTOCOL "):
                raise RasError("not a RAS server at %s:%d: %r" % (addr[0], addr[1], hello[:80]))
            if fmt:
                sock.sendall(b"SET FORMAT %s\n" % fmt.encode())
                answer, rest = _line(sock, rest, deadline, addr)
                if answer.upper() != "OK":
                    raise RasError("RAS at %s:%d has no %s format (NCCL before 2.28.7): %r"
                                   % (addr[0], addr[1], fmt, answer[:80]))
            sock.sendall(b"VERBOSE STATUS\n")
            sock.shutdown(socket.SHUT_WR)
            status = bytearray(rest)
            while len(status) <= MAX_STATUS:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = sock.recv(min(1 << 16, MAX_STATUS + 1 - len(status)))
                if not chunk:
                    break
                status += chunk
            if len(status) > MAX_STATUS:
                raise RasError("RAS at %s:%d sent more than %d bytes: not a status" % (addr[0], addr[1], MAX_STATUS))
            return bytes(status).decode("utf-8", "replace")
    except (OSError, socket.timeout) as exc:
        raise RasError("no RAS answer at %s:%d: %s" % (addr[0], addr[1], exc))


def not_this_run(addr, family):
    """Why RAS at ``addr`` is not asked, or None: the address must be this host's loopback, and the socket listening
    on its port must be held by a process of this run (``family``: the pids below the module, the benchmark and the
    NCCL processes it started). A local user who bound the port first, before NCCL could, is not believed."""
    host = addr[0]
    if host not in ("localhost",) and not (host.startswith("127.") or host == "::1"):
        return "RAS at %s:%d is not on this host's loopback: not asked (its owner cannot be told)" % addr
    inodes = _process.listening_on(addr[1])
    if not inodes:
        return "no RAS answer at %s:%d: nothing listens on port %d" % (addr[0], addr[1], addr[1])
    if inodes & _process.socket_inodes(family):
        return None
    holders = _process.socket_holders(inodes)
    return ("RAS port %d is held by %s, not by this run's NCCL processes: not asked" % (
        addr[1], ", ".join("process %d" % pid for pid in sorted(holders)) or "a process whose files cannot be read"))
