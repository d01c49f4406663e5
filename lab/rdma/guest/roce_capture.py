"""Count the RoCE v2 packets (UDP port 4791) on one interface by their IP ToS byte; runs inside a lab VM.

    python3 roce_capture.py IFACE SECONDS OUT.json [STOP_FILE]

Captures with an AF_PACKET socket (what tcpdump uses; the VM image has no tcpdump) every frame the
interface sends or receives until SECONDS have passed or STOP_FILE exists, then writes
{"packets": N, "tos": {"106": N, ...}, "dscp": {"26": N, ...}} to OUT.json. IPv4 and IPv6 (traffic class).
"""

import json
import os
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ROCE_V2_PORT = 4791


def roce_tos(frame):
    """The ToS / traffic class byte of a RoCE v2 frame, or None for any other frame."""
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
    return tos if ROCE_V2_PORT in (sport, dport) else None


def main(iface, seconds, out, stop_file=None):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((iface, 0))
    sock.settimeout(0.5)
    counts = {}
    deadline = time.time() + float(seconds)
    while time.time() < deadline and not (stop_file and os.path.exists(stop_file)):
        try:
            frame = sock.recv(65535)
        except socket.timeout:
            continue
        tos = roce_tos(frame)
        if tos is not None:
            counts[tos] = counts.get(tos, 0) + 1
    result = dict(packets=sum(counts.values()), tos=dict((str(k), v) for k, v in sorted(counts.items())))
    dscp = {}
    for tos, count in counts.items():
        dscp[str(tos >> 2)] = dscp.get(str(tos >> 2), 0) + count
    result["dscp"] = dscp
    with open(out + ".tmp", "w") as handle:
        json.dump(result, handle)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main(*sys.argv[1:])
