#!/usr/bin/env python3
"""same_report.py STREAMED.json EXACT.json: the streamed report's JSON equals
the in-memory one's, except p50/p90/p99 (and the device rings' p50_ms,
p90_ms, p99_ms), which may lie within 1/256 of the exact values
(util/llhist.h's bound, plus rounding to the printed ms).
Prints the first differences and exits 1 when they differ."""
import json
import sys

PCTL = ("p50", "p90", "p99", "p50_ms", "p90_ms", "p99_ms")


def walk(a, b, path, bad):
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            bad.append("%s: keys %s != %s" % (path, sorted(a), sorted(b)))
        for k in a.keys() & b.keys():
            if k in PCTL and isinstance(a[k], (int, float)) and b[k] is not None:
                if abs(a[k] - b[k]) > b[k] / 256 + 1.5e-6:
                    bad.append("%s/%s: %s not within 1/256 of %s" % (path, k, a[k], b[k]))
            else:
                walk(a[k], b[k], path + "/" + k, bad)
    elif a != b:
        bad.append("%s: %r != %r" % (path, a, b))


def main():
    s, m = (json.load(open(p)) for p in sys.argv[1:3])
    bad = []
    walk(s, m, "", bad)
    if bad:
        print("\n".join(bad[:10]))
    sys.exit(1 if bad else 0)


main()
