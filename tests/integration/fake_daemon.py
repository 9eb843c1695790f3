#!/usr/bin/env python3
"""A fake kxprof daemon, for tests/integration/test_daemon_socket.sh.

usage: fake_daemon.py SOCKET LOG
Listens on SOCKET (made 0666), writes "ready" to LOG once listening, then for
each connection reads what the client sends (appending repr() of the bytes to
LOG: a client that trusted it would have sent its request) and answers an
ERROR whose text carries terminal escape sequences (clear screen, red), as an
attacker's would. Runs until killed.
"""
import os
import socket
import struct
import sys

ERROR = 21
TEXT = b"\x1b[2J\x1b[31mkxprof daemon: fake error from the attacker\x1b[0m"


def main():
    path, log = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o666)
    s.listen(8)
    with open(log, "a") as f:
        f.write("ready\n")
    while True:
        c, _ = s.accept()
        c.settimeout(2)
        got = b""
        try:
            got = c.recv(65536)
        except OSError:
            pass
        with open(log, "a") as f:
            f.write("received %r\n" % got)
        try:
            c.sendall(b"KD" + bytes([1, ERROR]) + struct.pack("<I", len(TEXT)) + TEXT)
        except OSError:
            pass
        c.close()


if __name__ == "__main__":
    main()
