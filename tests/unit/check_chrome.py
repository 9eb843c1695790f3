#!/usr/bin/env python3
# Checker for the Chrome trace JSON exporter (user/export/chrome.c), run by
# tests/unit/test_chrome.c: validates a trace against an expectation file the
# test writes from its synthetic store. Prints what is wrong and exits 1, or
# prints "ok" and exits 0.
#
# usage: check_chrome.py EXPECT.json TRACE.json [TRACE.json.gz]
#
# EXPECT: {"counts": {name: n}, "events": [[pid, tid, ts_realtime_ns, dur_ns, name], ...],
#          "process_names": {pid: name}, "thread_names": {tid: name},
#          "devices": [name, ...], "warnings": [substring, ...],
#          "args": [[tid, ts_realtime_ns, key, value], ...],
#          optional device timelines: "jobs": [[pid, tid, ts_realtime_ns, dur_ns, name], ...],
#          "flows": n, "flow_points": [[start_realtime_ns, finish_realtime_ns], ...],
#          "counters": {name: n}}
# Every flow runs forward: it starts at the submit point (its ioctl slice's
# start, or the job's queue time: the job's start minus its queue_delay_us)
# and finishes at its job slice's start, not earlier.
import gzip
import json
import sys
from decimal import Decimal

DEV_PID_BASE = 1000000000
errors = []


def err(msg):
    errors.append(msg)


def load(path):
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    # Strict: the bytes must be UTF-8 and the JSON must be standard (no NaN,
    # no raw control characters in strings); Decimal keeps ts/dur exact.
    text = raw.decode("utf-8")

    def no_const(c):
        raise ValueError("non-standard JSON constant " + c)

    return raw, json.loads(text, parse_float=Decimal, parse_constant=no_const)


def ns(us):
    return int(Decimal(us) * 1000)


def check_flow_points(s, f, xs, js):
    """A flow starts at its submit point and finishes at its job's start, not before."""
    t0, t1 = Decimal(s["ts"]), Decimal(f["ts"])
    if t0 > t1:
        err("flow %r runs backwards: starts at %s, finishes at %s" % (f["id"], t0, t1))
    job = [j for j in js if j["pid"] == f["pid"] and j["tid"] == f["tid"] and
           Decimal(j["ts"]) == t1]
    if not job:
        err("flow %r does not finish at a job's start: %r" % (f["id"], f))
        return
    queued = [Decimal(j["ts"]) - Decimal(j["args"]["queue_delay_us"]) for j in job
              if "queue_delay_us" in j["args"]]
    enter = [Decimal(x["ts"]) for x in xs if x["pid"] == s["pid"] and x["tid"] == s["tid"]]
    if t0 not in enter and t0 not in queued:
        err("flow %r starts at %s: neither an ioctl's enter nor its job's queue time" %
            (f["id"], t0))


def check_jobs(exp, ev, xs, js, base):
    got = sorted((e["pid"], e["tid"], base + ns(e["ts"]), ns(e["dur"]), e["name"]) for e in js)
    want = sorted(tuple(x) for x in exp.get("jobs", []))
    if got != want:
        err("job slices %r != expected %r" % (got, want))
    for e in js:
        if not e.get("cat", "").startswith("job/") or "ring" not in e.get("args", {}):
            err("job slice without job/<source> category or ring: %r" % e)
            break
    # every flow: start inside an ioctl slice of its thread, end on a job slice
    starts = {e["id"]: e for e in ev if e.get("ph") == "s"}
    ends = [e for e in ev if e.get("ph") == "f"]

    def inside(e, slices):
        t = Decimal(e["ts"])
        return any(x["pid"] == e["pid"] and x["tid"] == e["tid"] and
                   Decimal(x["ts"]) <= t <= Decimal(x["ts"]) + Decimal(x["dur"]) for x in slices)

    for f in ends:
        s = starts.get(f["id"])
        if s is None or f.get("bp") != "e":
            err("flow end without start or bp=e: %r" % f)
        elif not inside(s, xs) or not inside(f, js):
            err("flow %r does not bind: start %r end %r" % (f["id"], s, f))
        else:
            check_flow_points(s, f, xs, js)
    if "flow_points" in exp:
        got = sorted([base + ns(starts[f["id"]]["ts"]), base + ns(f["ts"])]
                     for f in ends if f["id"] in starts)
        if got != sorted(exp["flow_points"]):
            err("flow points %r != expected %r" % (got, sorted(exp["flow_points"])))
    if len(ends) != exp.get("flows", 0) or len(starts) != len(ends):
        err("%d flow ends, %d starts, expected %d" % (len(ends), len(starts),
                                                     exp.get("flows", 0)))
    counters = {}
    for e in ev:
        if e.get("ph") == "C":
            counters[e["name"]] = counters.get(e["name"], 0) + 1
            if e["pid"] < DEV_PID_BASE or len(e.get("args", {})) != 1:
                err("counter not on a device or without one series: %r" % e)
    if counters != exp.get("counters", {}):
        err("counters %r != expected %r" % (counters, exp.get("counters", {})))


def check(exp, d):
    for key in ("traceEvents", "displayTimeUnit", "schemaVersion", "baseTimeNanoseconds",
                "otherData"):
        if key not in d:
            err("top level: no " + key)
            return
    if d["displayTimeUnit"] != "ms" or d["schemaVersion"] != 1:
        err("displayTimeUnit/schemaVersion wrong")
    base = d["baseTimeNanoseconds"]
    if not isinstance(base, int) or base % 1000:
        err("baseTimeNanoseconds not an integer number of us: %r" % base)
    od = d["otherData"]
    for key in ("host", "kernel", "dropped_events", "warnings"):
        if key not in od:
            err("otherData: no " + key)
    ev = d["traceEvents"]
    # ioctl slices on real pids; job slices on device pseudo-processes
    allx = [e for e in ev if e.get("ph") == "X"]
    xs = [e for e in allx if e["pid"] < DEV_PID_BASE]
    js = [e for e in allx if e["pid"] >= DEV_PID_BASE]
    check_jobs(exp, ev, xs, js, base)

    # counts per name
    counts = {}
    for e in xs:
        counts[e["name"]] = counts.get(e["name"], 0) + 1
    if counts != exp["counts"]:
        err("X counts %r != expected %r" % (counts, exp["counts"]))

    # each expected event, exactly (pid, tid, ts, dur to the nanosecond = 0.001 us)
    got = sorted((e["pid"], e["tid"], base + ns(e["ts"]), ns(e["dur"]), e["name"]) for e in xs)
    want = sorted(tuple(x) for x in exp["events"])
    if got != want:
        for g, w in zip(got, want):
            if g != w:
                err("event %r != expected %r" % (g, w))
                break
        if len(got) != len(want):
            err("%d X events, expected %d" % (len(got), len(want)))
    for e in xs:
        if not (0 < e["pid"] < DEV_PID_BASE and 0 < e["tid"] < DEV_PID_BASE):
            err("X event on a fake pid/tid: %r" % e)
            break
        if not e.get("cat", "").startswith("ioctl/"):
            err("X event without an ioctl/<driver> category: %r" % e)
            break
        a = e.get("args", {})
        for key in ("device", "fd", "cmd", "ret"):
            if key not in a:
                err("X event args without %s: %r" % (key, e))
                return
        if a["ret"] < 0 and "errno" not in a:
            err("failed X event without errno: %r" % e)
            return

    # decoded arguments
    by_key = {(e["tid"], base + ns(e["ts"])): e for e in xs}
    for tid, ts, key, value in exp.get("args", []):
        e = by_key.get((tid, ts))
        if e is None:
            err("no event at tid %d ts %d for args" % (tid, ts))
        elif e["args"].get(key) != value:
            err("args[%s] = %r, expected %r" % (key, e["args"].get(key), value))

    # slices nest on every thread (no partial overlap)
    per = {}
    for e in allx:
        per.setdefault((e["pid"], e["tid"]), []).append((Decimal(e["ts"]), Decimal(e["dur"])))
    for key, sl in per.items():
        sl.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for ts, dur in sl:
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack and ts + dur > stack[-1]:
                err("partial overlap on %r at ts %s" % (key, ts))
                break
            stack.append(ts + dur)

    # metadata
    meta = [e for e in ev if e.get("ph") == "M"]
    pnames = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    tnames = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    labels = {e["pid"]: e["args"]["labels"] for e in meta if e["name"] == "process_labels"}
    sorts = {e["pid"] for e in meta if e["name"] == "process_sort_index"}
    for pid, name in exp["process_names"].items():
        if pnames.get(int(pid)) != name:
            err("process_name of %s: %r, expected %r" % (pid, pnames.get(int(pid)), name))
    for tid, name in exp["thread_names"].items():
        if tnames.get(int(tid)) != name:
            err("thread_name of %s: %r, expected %r" % (tid, tnames.get(int(tid)), name))
    for e in xs:
        if e["pid"] not in pnames or e["pid"] not in sorts:
            err("pid %d has no process_name/sort_index" % e["pid"])
            break
    devs = sorted(name for pid, name in pnames.items() if pid >= DEV_PID_BASE)
    if devs != sorted(exp["devices"]):
        err("device pseudo-processes %r, expected %r" % (devs, exp["devices"]))
    for pid in pnames:
        if pid >= DEV_PID_BASE and (labels.get(pid) != "device" or pid not in sorts):
            err("device pseudo-process %d without labels/sort_index" % pid)

    # warnings: in otherData and as global instants at the start
    inst = [e for e in ev if e.get("ph") == "i"]
    msgs = [e["args"]["message"] for e in inst]
    if msgs != od["warnings"]:
        err("instant warnings %r != otherData warnings %r" % (msgs, od["warnings"]))
    for e in inst:
        if e.get("s") != "g" or Decimal(e["ts"]) != 0:
            err("warning instant not global at the start: %r" % e)
    for sub in exp["warnings"]:
        if not any(sub in m for m in od["warnings"]):
            err("no warning containing %r in %r" % (sub, od["warnings"]))
    if len(od["warnings"]) != len(exp["warnings"]):
        err("%d warnings, expected %d: %r" % (len(od["warnings"]), len(exp["warnings"]),
                                             od["warnings"]))


def main():
    exp = json.load(open(sys.argv[1]))
    raw, d = load(sys.argv[2])
    check(exp, d)
    if len(sys.argv) > 3:
        zraw, zd = load(sys.argv[3])
        if zraw != raw:
            err("gzip variant differs from the plain file")
    if errors:
        for e in errors[:20]:
            print(e)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
