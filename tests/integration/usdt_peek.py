#!/usr/bin/env python3
"""usdt_peek.py PID FILE [NOTES]: what a process's memory holds at the
kxprof USDT probes of FILE (a copy of libkxprof_annotate.so, or any ELF file
with such notes) where PID maps it. Reads the .note.stapsdt notes (provider
kxprof) of NOTES (an identical copy; default FILE: then FILE is opened,
which an inotify watch on it sees), finds FILE's load base in
/proc/PID/maps (by device and inode, FILE is only stat'ed) and reads
/proc/PID/mem (root). Prints one JSON object:
{"mapped": bool, "probes": [{"name", "pc", "byte", "sema", "semaphore"}]}
with the byte at each probe site (0xcc: a uprobe's breakpoint) and the
16-bit semaphore (raised while a uprobe with a reference counter is there).
"""
import json
import os
import struct
import sys


def notes(path):
    with open(path, "rb") as f:
        elf = f.read()
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise SystemExit("usdt_peek: %s is not a 64-bit ELF file" % path)
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
            for i in range(shnum)]
    stroff = secs[shstrndx][4]
    out = []
    for s in secs:
        name = elf[stroff + s[0]:elf.index(b"\0", stroff + s[0])]
        if name != b".note.stapsdt":
            continue
        off, end = s[4], s[4] + s[5]
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, off)
            d = off + 12 + ((namesz + 3) & ~3)
            if ntype == 3 and descsz > 24:
                pc, _base, sema = struct.unpack_from("<QQQ", elf, d)
                prov, pname = elf[d + 24:d + descsz].split(b"\0")[:2]
                if prov == b"kxprof":
                    out.append((pname.decode(), pc, sema))
            off = d + ((descsz + 3) & ~3)
    return out


def load_base(pid, path):
    st = os.stat(path)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6:
                continue
            maj, mnr = (int(x, 16) for x in parts[3].split(":"))
            if (int(parts[4]) == st.st_ino and os.makedev(maj, mnr) == st.st_dev
                    and int(parts[2], 16) == 0):
                return int(parts[0].split("-")[0], 16)
    return None


def main():
    pid, path = int(sys.argv[1]), sys.argv[2]
    src = sys.argv[3] if len(sys.argv) > 3 else path
    base = load_base(pid, path)
    probes = []
    if base is not None:
        fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
        try:
            for name, pc, sema in notes(src):
                b = os.pread(fd, 1, base + pc)[0]
                sv = struct.unpack("<H", os.pread(fd, 2, base + sema))[0] if sema else None
                probes.append({"name": name, "pc": pc, "byte": b, "sema": sema,
                               "semaphore": sv})
        finally:
            os.close(fd)
    print(json.dumps({"mapped": base is not None, "probes": probes}))


main()
