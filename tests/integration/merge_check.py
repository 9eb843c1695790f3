#!/usr/bin/env python3
"""Checks a Chrome trace merged by `kxprof convert --merge` against the
trace it was merged into and what the workload issued (torch_merge.py).

usage: merge_check.py KINETO.json MERGED.json ISSUED.json

The input's members and events are all kept, in order; kxprof's call
slices (args.source "kxprof") are the calls issued inside the profiler's
window, by name, on the workload's pid/tid row (a row the input has
operators on), inside the record_function scope they were issued in and
nested with the row's other slices (no partial overlap); kxprof's range
of that batch is on the same row around them; the traced device is a
process of its own holding one job per job call; the calls and ranges
before and after the window are counted in kxprofMerge. Prints what is
wrong and exits 1, or prints "ok".
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
    added = mev[len(oev):]
    kx = [e for e in added if str(e.get("cat", "")).startswith("ioctl/")]
    if any(e.get("args", {}).get("source") != "kxprof" for e in kx):
        err("kxprof's call slices do not all say args.source kxprof")
    ranges = [e for e in added if e.get("cat") == "annotation"]
    devpids = {e["pid"] for e in added if e.get("ph") == "M" and e.get("name") == "process_labels"
               and e.get("args", {}).get("labels") == "device"}
    if len(kx) + len(ranges) + sum(1 for e in added if e.get("pid") in devpids) != len(added):
        err("added events neither calls, ranges nor device tracks: %r" %
            [e for e in added if e not in kx and e not in ranges and e.get("pid") not in devpids][:3])
    names = collections.Counter(e["name"] for e in kx)
    if names != collections.Counter(issued["inside"]):
        err("merged calls %r != issued inside the window %r" % (dict(names), issued["inside"]))
    m = merged.get("kxprofMerge", {})
    want = (sum(issued["inside"].values()), sum(issued["before"].values()),
            sum(issued["after"].values()))
    got = (m.get("merged"), m.get("left_out_before"), m.get("left_out_after"))
    if got != want:
        err("kxprofMerge merged/before/after %r != issued %r" % (got, want))
    rg = m.get("ranges", {})
    if (rg.get("merged"), rg.get("left_out_before"), rg.get("left_out_after")) != (1, 1, 1):
        err("kxprofMerge ranges %r: want 1 merged, 1 before and 1 after" % rg)
    pid, tid = issued["pid"], issued["tid"]
    inside = issued["ranges"]["inside"]
    if [(e["name"], e["pid"], e["tid"]) for e in ranges] != [(inside, pid, tid)]:
        err("merged ranges %r: want one %s on %d/%d" %
            ([(e["name"], e["pid"], e["tid"]) for e in ranges], inside, pid, tid))
    for r in ranges:
        for e in kx:
            if not (r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"]):
                err("kxprof slice %r outside its range %r" % (e, r))
    job = "KVM_RUN" if "KVM_RUN" in issued["inside"] else "BLKZEROOUT"
    jobs = [e for e in added if e.get("pid") in devpids and e.get("ph") == "X" and e["name"] == job]
    if not devpids or len(jobs) != issued["inside"].get(job, 0):
        err("device processes %r hold %d %s jobs; %d issued inside" %
            (devpids, len(jobs), job, issued["inside"].get(job, 0)))
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
    print("ok: range %s and %d device jobs merged" % (issued["ranges"]["inside"], len(jobs)))


if __name__ == "__main__":
    main()
