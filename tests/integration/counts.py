#!/usr/bin/env python3
"""Compares what a workload says it issued with what kxprof reported.

usage: counts.py WORKLOAD.json REPORT.json CATEGORY [--subset]
Sums the workload's "ioctls" (and its children's, recursively) and checks
that every name has exactly that "Total Count" in REPORT's Time[CATEGORY];
without --subset the report may not hold names the workload did not issue.
Commands the workload calls "unknown:0xNNNN" (an _IO number no table knows)
are named as kxprof names them: _IO('L',0xff,0), or _IO(0xae,0xff,0) when
the type is not a printable character.
Prints one line per mismatch; exits 1 when there is any.
"""
import json
import sys


def report_name(name):
    """The report's name for a workload's ioctl name."""
    if not name.startswith("unknown:0x"):
        return name
    cmd = int(name.split(":")[1], 16)
    t, nr = cmd >> 8 & 0xFF, cmd & 0xFF
    if 0x20 < t < 0x7F and chr(t) not in "'\\":
        return "_IO('%c',0x%02x,0)" % (t, nr)
    return "_IO(0x%02x,0x%02x,0)" % (t, nr)


def issued(w, acc):
    for name, n in w.get("ioctls", {}).items():
        name = report_name(name)
        acc[name] = acc.get(name, 0) + n
    for c in w.get("children", []):
        issued(c, acc)
    return acc


def main():
    wl = json.load(open(sys.argv[1]))
    rep = json.load(open(sys.argv[2]))
    cat = sys.argv[3]
    subset = "--subset" in sys.argv[4:]
    want = issued(wl, {})
    got = {k: v["Total Count"] for k, v in rep["Time"].get(cat, {}).items()}
    bad = 0
    for name, n in sorted(want.items()):
        if got.get(name) != n:
            print(f"{name}: workload issued {n}, report has {got.get(name)}")
            bad += 1
    if not subset:
        for name in sorted(set(got) - set(want)):
            print(f"{name}: in the report ({got[name]}) but not issued by the workload")
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
