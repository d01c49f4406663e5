"""labctl's reading of /proc/net/tcp, with which `down NAME` ends only the SSH connection masters that reach the peers
it stops (tiers running at the same time keep theirs): checked on this kernel's own table, with a connection made here."""

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from labctl import tcp_connections  # noqa: E402  pylint: disable=wrong-import-position


def test_a_connection_is_found_by_its_socket_inode_with_its_remote_end():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    accepted, _peer = server.accept()
    try:
        with open("/proc/self/net/tcp") as handle:
            rows = tcp_connections(handle.read())
        inode = str(os.fstat(client.fileno()).st_ino)
        [mine] = [row for row in rows if row["inode"] == inode]
        assert mine["remote"] == server.getsockname()
        assert mine["local"] == client.getsockname()
        assert mine["state"] == "01"  # ESTABLISHED
        # The listening socket's row has no remote end.
        listening = [row for row in rows if row["inode"] == str(os.fstat(server.fileno()).st_ino)]
        assert listening and listening[0]["remote"] == ("0.0.0.0", 0)
    finally:
        for sock in (accepted, client, server):
            sock.close()
