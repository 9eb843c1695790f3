#!/usr/bin/env python3
"""Protocol-level clients of the kxprof daemon, for tests/integration/test_daemon.sh.

usage: daemon_client.py SOCKET MODE ARGS...
  kill N CONC          N sessions, CONC at a time, each client killed (SIGKILL) at
                       a point drawn from: connected, request sent, opened,
                       started, streaming (with its own process or a child that
                       outlives it as the target). Prints a tally by point.
  fuzz N               N connections sending malformed, truncated, oversized,
                       out-of-order or hostile messages; each must get an ERROR
                       or a close. Also stalls a few mid-message: the daemon must
                       close them within its idle limit. Prints a tally.
  noread SECONDS       a session whose client floods ioctls and never reads;
                       prints "closed" when the daemon closed it within SECONDS.
  open PID             asks for PID and prints the daemon's answer (ERROR text
                       or OPENED).
Traced device: /dev/null (every user may open it; its ioctls fail with ENOTTY
and are recorded all the same). Exit status 1 when a check fails.
"""
import errno
import fcntl
import os
import random
import select
import signal
import socket
import struct
import sys
import termios
import time

OPEN, START, STOP = 1, 2, 3
OPENED, STARTED, DATA, STATUS, END, ERROR = 16, 17, 18, 19, 20, 21
DEVICE = b"/dev/null"


def frame(t, payload=b"", length=None, magic=b"KD", version=1):
    n = len(payload) if length is None else length
    return magic + bytes([version, t]) + struct.pack("<I", n) + payload


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def request(pids, device=DEVICE, ringbuf=256 * 1024, extra=b""):
    r = b"".join(varint(1 << 3) + varint(p) for p in pids)
    r += varint(3 << 3 | 2) + varint(len(device)) + device
    r += varint(5 << 3) + varint(ringbuf) + varint(6 << 3) + varint(1)  # no jobs
    return r + extra


def connect(path, timeout=20.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_msg(s):
    """(type, payload), or None when the daemon closed the connection."""
    try:
        h = recv_exact(s, 8)
        if h is None:
            return None
        n = struct.unpack("<I", h[4:])[0]
        p = recv_exact(s, n)
        return None if p is None else (h[3], p)
    except (ConnectionResetError, BrokenPipeError):
        return None


def recv_until(s, want):
    """Skips DATA and STATUS; the first other message, or None."""
    while True:
        m = recv_msg(s)
        if m is None or m[0] not in (DATA, STATUS) or m[0] == want:
            return m


def ioctls(fd, n):
    for _ in range(n):
        try:
            fcntl.ioctl(fd, termios.TCGETS, bytes(64))
        except OSError:
            pass


# ---- kill: clients that die mid-way ---------------------------------------

POINTS = ["connected", "requested", "opened", "started", "streaming", "streaming-orphan"]


def killed_client(path, point):
    """Runs in a child: goes as far as point, then kills itself."""
    target = os.getpid()
    if point == "streaming-orphan":
        kid = os.fork()
        if kid == 0:
            fd = os.open("/dev/null", os.O_RDWR)
            ioctls(fd, 2000)
            time.sleep(1.5)
            os._exit(0)
        target = kid
    s = connect(path)
    if point != "connected":
        s.sendall(frame(OPEN, request([target])))
    if point in ("opened", "started", "streaming", "streaming-orphan"):
        m = recv_msg(s)
        if m is None or m[0] != OPENED:
            os._exit(3)
    if point in ("started", "streaming", "streaming-orphan"):
        s.sendall(frame(START))
        if recv_until(s, STARTED) is None:
            os._exit(4)
    if point == "streaming":
        fd = os.open("/dev/null", os.O_RDWR)
        ioctls(fd, random.randint(0, 5000))
    os.kill(os.getpid(), signal.SIGKILL)


def run_kill(path, n, conc):
    random.seed(int(os.environ.get("KX_SEED", "13")))
    tally = {p: 0 for p in POINTS}
    live = set()
    bad = 0
    for i in range(n):
        while len(live) >= conc:
            pid, st = os.wait()
            live.discard(pid)
            if not (os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL):
                bad += 1
        point = POINTS[i % len(POINTS)] if i < len(POINTS) else random.choice(POINTS)
        tally[point] += 1
        pid = os.fork()
        if pid == 0:
            try:
                killed_client(path, point)
            finally:
                os._exit(5)
        live.add(pid)
    while live:
        pid, st = os.wait()
        live.discard(pid)
        if not (os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGKILL):
            bad += 1
    print("killed at: " + ", ".join(f"{p} {tally[p]}" for p in POINTS))
    if bad:
        print(f"{bad} clients did not get as far as their kill point")
    return 1 if bad else 0


# ---- fuzz: malformed and hostile messages -----------------------------------

def good_request():
    return request([os.getpid()])


def mutate(b):
    b = bytearray(b)
    for _ in range(random.randint(1, 4)):
        b[random.randrange(len(b))] ^= 1 << random.randrange(8)
    if random.random() < 0.3:
        b = b[: random.randrange(len(b) + 1)]
    return bytes(b)


def fuzz_case(i):
    """(what to send, whether to close our side right after)."""
    kind = i % 12
    if kind == 0:
        if random.random() < 0.5:
            return bytes(random.getrandbits(8) for _ in range(random.randint(1, 100))), True
        return frame(OPEN, bytes(random.getrandbits(8) for _ in range(64))), False
    if kind == 1:
        return frame(OPEN, length=0xFFFFFFFF), False
    if kind == 2:
        return frame(OPEN, b"x", magic=b"GE"), False
    if kind == 3:
        return frame(OPEN, b"", version=7), False
    if kind == 4:
        return frame(START), False
    if kind == 5:
        return frame(OPEN, mutate(good_request())), False
    if kind == 6:
        return frame(OPEN, length=100) + b"0123456789", True
    if kind == 7:
        return frame(OPEN, request([1])), False
    if kind == 8:
        return frame(DATA, b"abc"), False
    if kind == 9:
        return frame(OPEN, good_request() + varint(99 << 3) + varint(1)), False
    if kind == 10:
        return frame(STOP, b"payload"), False
    return frame(OPEN, good_request()), False  # a valid session, then garbage in it


def fuzz_one(path, i):
    data, close_after = fuzz_case(i)
    s = connect(path)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        return "closed"
    if close_after:
        s.close()
        return "sent-and-closed"
    m = recv_msg(s)
    if m is not None and m[0] == OPENED:
        # A mutation that still asks for something valid: the session is opened,
        # then garbage during it must close it.
        s.sendall(frame(START))
        recv_until(s, STARTED)
        s.sendall(frame(OPEN, good_request()))
        m = recv_until(s, ERROR)
        s.close()
        return "opened-then-error" if m and m[0] == ERROR else "opened-then-closed"
    s.close()
    if m is None:
        return "closed"
    return "error" if m[0] == ERROR else f"unexpected reply {m[0]}"


def stalled(path, k):
    """k connections that send half a message and wait: the daemon must close them."""
    socks = []
    for _ in range(k):
        s = connect(path, timeout=60)
        s.sendall(frame(OPEN, length=50) + b"half")
        socks.append(s)
    t0 = time.monotonic()
    closed = 0
    for s in socks:
        m = recv_msg(s)
        closed += m is None or m[0] == ERROR
        s.close()
    return closed, time.monotonic() - t0


def run_fuzz(path, n):
    random.seed(int(os.environ.get("KX_SEED", "13")))
    tally = {}
    for i in range(n):
        r = fuzz_one(path, i)
        tally[r] = tally.get(r, 0) + 1
    closed, took = stalled(path, 3)
    print("fuzz: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    print(f"stalled mid-message: {closed} of 3 closed after {took:.1f} s")
    bad = sum(v for k, v in tally.items() if k.startswith("unexpected"))
    return 1 if bad or closed != 3 else 0


# ---- noread: a client that never reads ---------------------------------------

def run_noread(path, seconds):
    s = connect(path)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(frame(OPEN, request([os.getpid()])))
    m = recv_msg(s)
    if m is None or m[0] != OPENED:
        print("not opened:", m)
        return 1
    s.sendall(frame(START))
    if recv_until(s, STARTED) is None:
        print("not started")
        return 1
    fd = os.open("/dev/null", os.O_RDWR)
    t0 = time.monotonic()
    closed = False
    while time.monotonic() - t0 < seconds:
        ioctls(fd, 20000)
        # Peek without reading: a closed connection has its end-of-file (or
        # reset) behind whatever is still queued; only look once it stalls.
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                closed = True
        except BlockingIOError:
            pass
        except ConnectionResetError:
            closed = True
        if closed:
            break
    took = time.monotonic() - t0
    if not closed:
        # Drain: the daemon's end-of-file comes after what it had sent.
        s.settimeout(5)
        try:
            while s.recv(65536):
                pass
            closed = True
        except (ConnectionResetError, socket.timeout):
            closed = not isinstance(sys.exc_info()[1], socket.timeout)
    print(f"{'closed' if closed else 'still open'} after {took:.1f} s of not reading")
    return 0 if closed else 1


def run_open(path, pid):
    s = connect(path)
    s.sendall(frame(OPEN, request([pid])))
    m = recv_msg(s)
    if m is None:
        print("closed")
    elif m[0] == ERROR:
        print("ERROR " + m[1].decode(errors="replace"))
    else:
        print(f"type {m[0]}")
    return 0


def main():
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "kill":
        return run_kill(path, int(sys.argv[3]), int(sys.argv[4]))
    if mode == "fuzz":
        return run_fuzz(path, int(sys.argv[3]))
    if mode == "noread":
        return run_noread(path, float(sys.argv[3]))
    if mode == "open":
        return run_open(path, int(sys.argv[3]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
