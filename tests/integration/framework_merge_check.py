"""Checks `kxprof convert --merge PROFILE.xplane.pb --xplane OUT` on a JAX
or TensorFlow profile framework_merge.py wrote (test_jax_real.sh,
test_tf_merge.sh). PASS/FAIL lines.

    framework_merge_check.py TAG IN.xplane.pb OUT.xplane.pb ISSUED.json RUN_DIR PLAIN_LINE

PLAIN_LINE: "own" when the framework gives the thread that only issues jobs
a line of its own (JAX's Python tracer), "new" when it has none and the
merge adds one by tid.

- OUT keeps IN: every plane but /host:CPU equal, and in /host:CPU every
  line of IN with its events first, its metadata unchanged;
- kxprof's ioctls (and ranges) sit on the framework's own line of the thread that
  issued them (id = std::hash of its pthread_t), or on a new line with
  id = tid when the framework has none, exact per thread and name;
- each call lies inside the profile's span, inside the thread's own
  timing of the batch it belonged to, and inside the thread's range;
- kxprof's device plane is added, its events inside the span;
- XProf's converter (trace_viewer, trace_viewer@) shows the calls on those
  rows of the host process, beside the framework's own events on the same row, and
  the device as a process of its own.
"""

import collections
import json
import os
import shutil
import sys

import xplane_read
import xprof_check
from xprof_check import check

M64 = (1 << 64) - 1
HASH_MUL = (0xc6a4a793 << 32) + 0x5bd1e995
SLACK_NS = 20000  # the thread's own time.time_ns() reads around a batch, and clock conversion


def line_id(ident):
    """std::hash<std::thread::id> of a pthread_t (libstdc++), as int64."""
    def mix(v):
        return v ^ (v >> 47)
    h = 0xc70f6907 ^ ((8 * HASH_MUL) & M64)
    h ^= (mix((ident * HASH_MUL) & M64) * HASH_MUL) & M64
    h = (h * HASH_MUL) & M64
    h = mix((mix(h) * HASH_MUL) & M64)
    return h - (1 << 64) if h >> 63 else h


def plane(space, name):
    return next((p for p in space.planes if p.name == name), None)


def stat(space, name):
    env = plane(space, "Task Environment")
    ids = {k: m.name for k, m in env.stat_metadata.items()}
    return next(s.int64_value or s.uint64_value for s in env.stats
                if ids[s.metadata_id] == name)


def main():
    tag, src, dst, issued_path, run, plain = sys.argv[1:7]
    a, b = xplane_read.load(src), xplane_read.load(dst)
    iss = json.load(open(issued_path))
    ha, hb = plane(a, "/host:CPU"), plane(b, "/host:CPU")

    # The input kept.
    same = all(pa == pb for pa, pb in zip(a.planes, b.planes) if pa.name != "/host:CPU")
    check(tag + "_other_planes_intact", same and len(b.planes) > len(a.planes),
          "%d planes in, %d out" % (len(a.planes), len(b.planes)))
    bl = {l.id: l for l in hb.lines}
    kept = all(l.id in bl and bl[l.id].name == l.name and bl[l.id].timestamp_ns == l.timestamp_ns
               and list(bl[l.id].events)[:len(l.events)] == list(l.events) for l in ha.lines)
    meta = all(hb.event_metadata[k] == v for k, v in ha.event_metadata.items()) and \
        all(hb.stat_metadata[k] == v for k, v in ha.stat_metadata.items())
    check(tag + "_host_lines_intact", kept and meta and list(hb.stats) == list(ha.stats),
          "lines kept %s, metadata kept %s" % (kept, meta))

    # Which row each thread's calls belong on.
    own = {l.id for l in ha.lines}
    rows = {}
    for tid, ident in iss["idents"].items():
        h = line_id(ident)
        rows[int(tid)] = h if h in own else int(tid)
    new_rows = {t for t, r in rows.items() if r == t}
    if plain == "new":
        check(tag + "_plain_worker_new_line", new_rows == {iss["plain_worker"]},
              "threads on new lines: %s" % new_rows)
    else:
        check(tag + "_all_threads_own_lines", not new_rows, "threads on new lines: %s" % new_rows)

    # kxprof's events: those whose metadata the input did not have.
    start = stat(b, "profile_start_time")
    stop = stat(b, "profile_stop_time")
    names = {k: m.name for k, m in hb.event_metadata.items() if k not in ha.event_metadata}
    got = collections.Counter()
    calls = collections.defaultdict(list)
    ranges = collections.defaultdict(list)
    range_names = {n for v in iss["ranges"].values() for n in v}
    for l in hb.lines:
        for e in l.events:
            if e.metadata_id not in names:
                continue
            t0 = start + l.timestamp_ns + e.offset_ps / 1000
            span = (t0, t0 + e.duration_ps / 1000)
            got[(l.id, names[e.metadata_id])] += 1
            (ranges if names[e.metadata_id] in range_names else calls)[l.id].append(span)
    want = collections.Counter()
    for tid, per in iss["inside"].items():
        for name, n in per.items():
            want[(rows[int(tid)], name)] += n
    for tid, rs in iss["ranges"].items():
        for name in rs:
            want[(rows[int(tid)], name)] += 1
    check(tag + "_rows_exact", got == want, "merged %s; issued %s" % (dict(got), dict(want)))

    # Times: inside the profile, the thread's own batch and its range.
    bad = []
    for tid, row in rows.items():
        spans = iss["spans"].get(str(tid), [])
        for c0, c1 in calls[row]:
            if not (start <= c0 and c1 <= stop):
                bad.append(("outside the profile", tid, c0, c1))
            if not any(s0 - SLACK_NS <= c0 and c1 <= s1 + SLACK_NS for s0, s1 in spans):
                bad.append(("outside the thread's batch", tid, c0, c1))
            if not any(r0 <= c0 and c1 <= r1 for r0, r1 in ranges[row]):
                bad.append(("outside the thread's range", tid, c0, c1))
    ncalls = sum(len(v) for v in calls.values())
    check(tag + "_times_in_span_and_batch", ncalls > 0 and not bad,
          "%d calls; %d misplaced, first %s" % (ncalls, len(bad), bad[:3]))

    dev = [p for p in b.planes if p.name.startswith("/device:CUSTOM:")]
    dev_ok = dev and all(start <= start + l.timestamp_ns + e.offset_ps / 1000 <= stop
                         for p in dev for l in p.lines for e in l.events)
    check(tag + "_device_plane", bool(dev_ok), "device planes %s" % [p.name for p in dev])

    # XProf's converter, in a fresh run directory (its tools cache beside the file).
    os.makedirs(run, exist_ok=True)
    path = os.path.join(run, os.path.basename(src))
    shutil.copy(dst, path)
    host = os.path.basename(path)[:-len(".xplane.pb")]
    job = "KVM_RUN" if "KVM_RUN" in {n for (_, n) in want} else "BLKZEROOUT"
    vwant = {(r & 0xFFFFFFFF, n): c for (r, n), c in want.items() if n not in range_names}
    ev = xprof_check.trace(path, "trace_viewer")
    xprof_check.check_viewer(tag + "_xprof_trace_viewer", ev, "/host:CPU", vwant, job)
    xprof_check.check_viewer(tag + "_xprof_trace_viewer_at", xprof_check.trace(path, "trace_viewer@"),
                             host + " /host:CPU", vwant, job)
    # On the framework's own rows, its events too (the main thread's row at least).
    host_pid = [p for p, n in xprof_check.procs(ev).items() if n == "/host:CPU"]
    main_row = rows[iss["main"]] & 0xFFFFFFFF
    theirs = [e for e in ev if e.get("ph") == "X" and host_pid and e["pid"] == host_pid[0]
              and e["tid"] == main_row and e["name"] not in {n for (_, n) in want}]
    check(tag + "_xprof_main_row_shared", len(theirs) > 0,
          "no events of the framework on the main thread's row %d" % main_row)
    return 1 if xprof_check.fails else 0


if __name__ == "__main__":
    sys.exit(main())
