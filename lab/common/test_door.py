"""The door's exec: OpenSSH's notices that it fell back from the shared connection are not the command's output.

The first line is what ssh 9.2 printed in a validate run when the kept master ended as a command came (the command
ran and exited 0 over a connection of its own); the others are the two other pre-session notices of OpenSSH's mux
client (mux.c, ``muxclient`` and ``mux_client_request_session``)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from door import without_mux_fallback  # noqa: E402  pylint: disable=wrong-import-position


def test_the_fallback_notices_go_and_the_commands_own_stderr_stays():
    assert without_mux_fallback("muxclient: master hello exchange failed\n") == ""
    assert without_mux_fallback("mux_client_request_session: master alive request failed\r\nboom\n") == "boom\n"
    assert without_mux_fallback("Control socket connect(/l/cp/exec-ab12): Connection refused\n") == ""
    assert without_mux_fallback("muxclient: master hello exchange failed") == ""


def test_a_command_that_prints_the_same_words_inside_a_line_keeps_them():
    text = "grep: muxclient: master hello exchange failed\nssh: connect to host 127.0.0.1 port 22211: refused\n"
    assert without_mux_fallback(text) == text
    assert without_mux_fallback(None) is None and without_mux_fallback(b"x") == b"x"
