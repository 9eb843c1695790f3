#!/usr/bin/env python3
"""bloat_notes.py IN OUT_NOTES N: the .note.stapsdt section of the ELF file
IN, followed by N well-formed notes of another provider ("pad"), written to
OUT_NOTES for `objcopy --update-section .note.stapsdt=OUT_NOTES`. A copy of
the library so bloated takes every reader of its notes longer to parse: the
window a path swap needs between two opens of it becomes wide."""
import struct
import sys


def section(path, want):
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
            for i in range(shnum)]
    stroff = secs[shstrndx][4]
    for s in secs:
        if elf[stroff + s[0]:elf.index(b"\0", stroff + s[0])] == want:
            return elf[s[4]:s[4] + s[5]]
    raise SystemExit("bloat_notes: no %s in %s" % (want.decode(), path))


notes = section(sys.argv[1], b".note.stapsdt")
desc = struct.pack("<QQQ", 0, 0, 0) + b"pad\0p\0\0"
desc += b"\0" * (-len(desc) % 4)
pad = struct.pack("<III", 8, len(desc), 3) + b"stapsdt\0" + desc
with open(sys.argv[2], "wb") as f:
    f.write(notes + pad * int(sys.argv[3]))
