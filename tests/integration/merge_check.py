#!/usr/bin/env python3
"""Checks a Chrome trace merged by `kxprof convert --merge` against the
trace it was merged into and what the workload issued (torch_merge.py).

usage: merge_check.py KINETO.json MERGED.json ISSUED.json

The input's members and events are all kept, in order; kxprof's slices
(args.source "kxprof") are the calls issued inside the profiler's window,
by name, on the workload's pid/tid row (a row the input has operators on),
inside the record_function scope they were issued in and nested with the
row's other slices (no partial overlap); the calls before and after the
window are counted in kxprofMerge. Prints what is wrong and exits 1, or
prints "ok".
"""
import collections
import json
import sys

errors = []


def err(msg):
    errors.append(msg)


def main():
    orig = json.load(open(sys.argv[1]))
    merged = json.load(open(sys.argv[2]))
    issued = json.load(open(sys.argv[3]))
    for k, v in orig.items():
        if k != "traceEvents" and merged.get(k) != v:
            err("member %s changed: %r -> %r" % (k, v, merged.get(k)))
    oev, mev = orig["traceEvents"], merged["traceEvents"]
    if mev[:len(oev)] != oev:
        err("the input's events are not kept as they were, in order")
    kx = [e for e in mev[len(oev):]]
    if any(e.get("args", {}).get("source") != "kxprof" for e in kx):
        err("events after the input's are not all kxprof's")
    names = collections.Counter(e["name"] for e in kx)
    if names != collections.Counter(issued["inside"]):
        err("merged calls %r != issued inside the window %r" % (dict(names), issued["inside"]))
    m = merged.get("kxprofMerge", {})
    want = (sum(issued["inside"].values()), sum(issued["before"].values()),
            sum(issued["after"].values()))
    got = (m.get("merged"), m.get("left_out_before"), m.get("left_out_after"))
    if got != want:
        err("kxprofMerge merged/before/after %r != issued %r" % (got, want))
    pid, tid = issued["pid"], issued["tid"]
    rows = [e for e in oev if e.get("ph") == "X" and e.get("pid") == pid and e.get("tid") == tid]
    scope = [e for e in rows if e.get("name") == issued["scope"]]
    if len(scope) != 1:
        err("torch's trace has %d %s slices on %d/%d" % (len(scope), issued["scope"], pid, tid))
        scope = [{"ts": 0, "dur": float("inf")}]
    s = scope[0]
    for e in kx:
        if (e["pid"], e["tid"]) != (pid, tid):
            err("kxprof slice on %r/%r, not torch's row %d/%d" % (e["pid"], e["tid"], pid, tid))
        if not (s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]):
            err("kxprof slice %r outside the scope it was issued in %r" % (e, s))
        for r in rows:
            a0, a1, b0, b1 = e["ts"], e["ts"] + e["dur"], r["ts"], r["ts"] + r["dur"]
            if a0 < b1 and b0 < a1 and not (b0 <= a0 and a1 <= b1) and not (a0 <= b0 and b1 <= a1):
                err("kxprof slice %r partly overlaps torch's %r" % (e, r["name"]))
    for e in errors[:20]:
        print(e)
    if errors:
        sys.exit(1)
    print("ok: %d calls merged, %d before and %d after the window left out" % want)


if __name__ == "__main__":
    main()
