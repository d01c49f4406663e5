# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Count the RoCE v2 packets (UDP port 4791) on one interface by their IP ToS byte (the traffic window's wire check).

    python3 roce_dscp_capture.py IFACE SECONDS OUT.json [STOP_FILE]

Captures with an AF_PACKET socket (what tcpdump uses, so no tcpdump is needed) every frame the interface
sends or receives until SECONDS have passed or STOP_FILE exists, then writes
{"packets": N, "tos": {"106": N, ...}, "dscp": {"26": N, ...}, "sent": {the same for the frames this host
sent}} to OUT.json. IPv4 and IPv6 (traffic class).
Only software RDMA (Soft-RoCE, siw) sends through the netdev where this sees it; a hardware RoCE NIC's
packets bypass the kernel, and its per-priority counters are the evidence instead. Needs root (CAP_NET_RAW).

PRIVATE to the roce.fabric collection: may change without notice. roce.fabric.traffic_window writes this file's
own source into its private work directory and runs it there in a session of its own (the capture outlives the
module); the functions are unit-tested by import.
"""

import json
import os
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ROCE_V2_PORT = 4791
PACKET_OUTGOING = 4  # sll_pkttype of a frame this host sent (linux/if_packet.h)
SOL_PACKET = 263
PACKET_STATISTICS = 6  # struct tpacket_stats {unsigned int tp_packets, tp_drops}: read and reset by the kernel


def roce_tos(frame):
    """The ToS / traffic class byte of a RoCE v2 frame, or None for any other frame."""
    found = roce_header(frame)
    return None if found is None else found[0]


def roce_header(frame):
    """(ToS, BTH opcode, destination QP) of a RoCE v2 frame, or None for any other frame. Opcode and QP are None
    when the frame is cut short before the base transport header."""
    if len(frame) < 14:
        return None
    ethertype = struct.unpack("!H", frame[12:14])[0]
    offset = 14
    if ethertype == 0x8100 and len(frame) >= 18:  # one VLAN tag
        ethertype = struct.unpack("!H", frame[16:18])[0]
        offset = 18
    if ethertype == 0x0800 and len(frame) >= offset + 20:
        ihl = (frame[offset] & 0x0F) * 4
        tos, proto = frame[offset + 1], frame[offset + 9]
        udp = offset + ihl
    elif ethertype == 0x86DD and len(frame) >= offset + 40:
        first = struct.unpack("!I", frame[offset:offset + 4])[0]
        tos, proto = (first >> 20) & 0xFF, frame[offset + 6]
        udp = offset + 40
    else:
        return None
    if proto != 17 or len(frame) < udp + 4:
        return None
    sport, dport = struct.unpack("!HH", frame[udp:udp + 4])
    if ROCE_V2_PORT not in (sport, dport):
        return None
    bth = udp + 8
    if len(frame) < bth + 8:
        return tos, None, None
    return tos, frame[bth], struct.unpack("!I", frame[bth + 4:bth + 8])[0] & 0xFFFFFF


def socket_drops(sock):
    try:
        return struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
    except OSError:
        return 0


def summary(counts):
    """{"packets": N, "tos": {"106": N}, "dscp": {"26": N}} of {tos: count}."""
    dscp = {}
    for tos, count in counts.items():
        dscp[str(tos >> 2)] = dscp.get(str(tos >> 2), 0) + count
    return dict(packets=sum(counts.values()), tos=dict((str(k), v) for k, v in sorted(counts.items())), dscp=dscp)


def note_packet(details, tos, opcode, qpn, direction, offset):
    """Per ToS: which BTH opcodes and destination QPs carried it, in which direction, first and last second seen.
    Enough to tell a connection's data from its CM handshake (UD to QP 1) when a ToS is not the expected one."""
    entry = details.setdefault(str(tos), dict(opcodes={}, qps={}, first_s=round(offset, 3)))
    key = "%s %s" % (direction, "?" if opcode is None else "0x%02x" % opcode)
    entry["opcodes"][key] = entry["opcodes"].get(key, 0) + 1
    if qpn is not None and (str(qpn) in entry["qps"] or len(entry["qps"]) < 16):
        entry["qps"][str(qpn)] = entry["qps"].get(str(qpn), 0) + 1
    entry["last_s"] = round(offset, 3)


def replace_earlier(pid_file):
    """Stop a capture that an earlier, interrupted run left behind on the same file, then take its place."""
    try:
        with open(pid_file) as handle:
            pid = int(handle.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            if b"roce_dscp_capture" in handle.read() and pid != os.getpid():
                os.kill(pid, signal.SIGTERM)
                for _attempt in range(50):
                    if not os.path.exists("/proc/%d" % pid):
                        break
                    time.sleep(0.1)
    except (OSError, ValueError):
        pass
    with open(pid_file, "w") as handle:
        handle.write("%d\n" % os.getpid())


def main(iface, seconds, out, stop_file=None):
    replace_earlier(out + ".pid")
    stopping = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # A large buffer: at line rate the socket falls behind, and a frame it drops is a frame not counted.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    sock.bind((iface, 0))
    sock.settimeout(0.5)
    counts, sent, details = {}, {}, {}
    started = time.time()
    deadline = started + float(seconds)
    next_look = 0.0
    while True:
        now = time.time()
        if now >= next_look:  # the stop file is looked for twice a second, not once a frame
            if now >= deadline or stopping or (stop_file and os.path.exists(stop_file)):
                break
            next_look = now + 0.5
        try:
            frame, address = sock.recvfrom(65535)
        except socket.timeout:
            continue
        found = roce_header(frame)
        if found is not None:
            tos, outgoing = found[0], address[2] == PACKET_OUTGOING
            counts[tos] = counts.get(tos, 0) + 1
            if outgoing:
                sent[tos] = sent.get(tos, 0) + 1
            note_packet(details, tos, found[1], found[2], "sent" if outgoing else "received", time.time() - started)
    if stopping:  # replaced by a newer capture: its run owns OUT.json now
        return
    dropped = socket_drops(sock)
    result = summary(counts)
    result["sent"] = summary(sent)
    # Frames of any kind the socket could not keep: the counts are a sample then, still fit for a share.
    result["dropped"] = dropped
    result["detail"] = details
    with open(out + ".tmp", "w") as handle:
        json.dump(result, handle)
    os.rename(out + ".tmp", out)
    try:
        os.unlink(out + ".pid")
    except OSError:
        pass


if __name__ == "__main__":
    main(*sys.argv[1:])
