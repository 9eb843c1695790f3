#!/usr/bin/env python3
"""A Chrome trace in Kineto's form covering the middle of a capture, for
test_merge.sh: from kxprof's own Chrome export of the capture (OWN.json),
two edges in the middle of wide gaps between calls (100 µs from any call,
so the clock syncs' interpolation cannot move a call across), base time
and µs offsets as torch writes them. Writes the trace to OUT.json and the
calls expected inside, before and after its span to EXPECT.json.

usage: merge_window.py OWN.json OUT.json EXPECT.json
"""
import json
import sys


def main():
    own = json.load(open(sys.argv[1]))
    base = own["baseTimeNanoseconds"]
    calls = sorted((base + round(e["ts"] * 1000), round(e["dur"] * 1000))
                   for e in own["traceEvents"]
                   if e.get("ph") == "X" and str(e.get("cat", "")).startswith("ioctl/"))
    n = len(calls)

    def edge(lo, hi):
        # The widest gap between consecutive calls in [lo, hi): its middle.
        best = max(range(lo, hi), key=lambda i: calls[i + 1][0] - (calls[i][0] + calls[i][1]))
        a, b = calls[best][0] + calls[best][1], calls[best + 1][0]
        if b - a < 200000:
            sys.exit("no gap of 200 µs between calls in %d..%d" % (lo, hi))
        return (a + b) // 2

    t0, t1 = edge(n // 8, n // 3), edge(2 * n // 3, 7 * n // 8)
    kbase = t0 - t0 % 1000000000 - 1000000000  # torch's base: well before its events
    ev = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "ts": (t0 - kbase) / 1000,
           "args": {"name": "python"}},
          {"ph": "X", "name": "aten::mm", "pid": 7, "tid": 7, "ts": (t0 - kbase) / 1000,
           "dur": (t1 - t0) / 1000, "args": {"External id": 1}}]
    trace = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": ev,
             "displayTimeUnit": "ms", "baseTimeNanoseconds": kbase, "traceName": "w.json"}
    with open(sys.argv[2], "w") as f:
        json.dump(trace, f)
    exp = {"merged": sum(1 for s, d in calls if s >= t0 and s + d <= t1),
           "left_out_before": sum(1 for s, _ in calls if s < t0),
           "left_out_after": sum(1 for s, d in calls if s >= t0 and s + d > t1)}
    with open(sys.argv[3], "w") as f:
        json.dump(exp, f)


if __name__ == "__main__":
    main()
