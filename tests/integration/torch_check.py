"""Checks a torch_itt.py capture (test_torch_itt.sh): the operator ranges
kxprof's report, Chrome file and XSpace hold against the counts torch's own
profiler took of the same step, and the driver ioctls inside the scope that
issued them. PASS/FAIL lines.

    torch_check.py WORKLOAD.json REPORT.json CHROME.json.gz XSPACE_LOGDIR
"""

import collections
import gzip
import json
import sys

import xplane_read

fails = 0


def check(name, ok, detail=""):
    global fails
    if ok:
        print("PASS %s" % name)
    else:
        fails += 1
        print("FAIL %s: %s" % (name, detail))


def main():
    wl = json.load(open(sys.argv[1]))
    want = collections.Counter(wl["ops"])
    tid = wl["tid"]
    issued = sum(c for (t, _, c) in wl["jobs"] if t == tid)
    # report: category annotation/PyTorch, one range per operator call.
    rows = json.load(open(sys.argv[2]))["Time"].get("annotation/PyTorch", {})
    got = collections.Counter({k: v["Total Count"] for k, v in rows.items()})
    check("torch_report_one_range_per_op", got == want and sum(want.values()) > 50,
          "differ: %s" % {k: (got[k], want[k]) for k in set(got) | set(want) if got[k] != want[k]})
    check("torch_report_scope_holds_ioctls", rows.get("submit", {}).get("Ioctls") == issued,
          "submit row %s, %d ioctls issued" % (rows.get("submit"), issued))
    # Chrome: the same slices on the thread, the ioctls inside the scope.
    ev = json.load(gzip.open(sys.argv[3]))["traceEvents"]
    sl = [e for e in ev if e.get("cat") == "annotation" and e["ph"] == "X"
          and e.get("args", {}).get("category") == "PyTorch"]
    check("torch_chrome_slices", collections.Counter(e["name"] for e in sl) == want
          and all(e["tid"] == tid for e in sl), "%d slices" % len(sl))
    sub = [e for e in sl if e["name"] == "submit"]
    inside = [e for e in ev if e.get("cat", "").startswith("ioctl/") and e["ph"] == "X"
              and sub and e["tid"] == tid and sub[0]["ts"] <= e["ts"]
              and e["ts"] + e["dur"] <= sub[0]["ts"] + sub[0]["dur"]]
    check("torch_chrome_ioctls_nested", len(sub) == 1 and len(inside) == issued,
          "%d submit slices, %d ioctls inside, %d issued" % (len(sub), len(inside), issued))
    # XSpace: the thread's line of /host:CPU, ranges and ioctls nested.
    space = xplane_read.load(sys.argv[4])
    host = [p for p in space.planes if p.name == "/host:CPU"]
    lines = [ln for p in host for ln in p.lines if ln.id == tid]
    evs = xplane_read.line_events(host[0], lines[0]) if lines else []
    names = collections.Counter(n for (n, _, _) in evs)
    check("torch_xspace_ranges", all(names[k] == c for k, c in want.items()),
          "line %d: %s" % (tid, dict(names)))
    subs = [(s, e) for (n, s, e) in evs if n == "submit"]
    ios = [(s, e) for (n, s, e) in evs if n.startswith("KVM_") or n.startswith("BLK")]
    nested = [1 for (s, e) in ios if subs and subs[0][0] <= s and e <= subs[0][1]]
    check("torch_xspace_ioctls_nested", len(subs) == 1 and len(nested) == issued,
          "%d submit ranges, %d ioctls inside, %d issued" % (len(subs), len(nested), issued))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
