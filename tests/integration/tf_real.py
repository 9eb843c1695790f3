"""Real TensorFlow with kxprof's profiler plugin (run by test_tf_real.sh in
the pinned venv). One process, several profiler sessions, PASS/FAIL lines:

  tf_real.py full LOGDIR      sessions: KXPROF_DISABLE=1 (set before import),
                              no device (KXPROF_SYSROOT empty), then two real
                              ones (repeated start/stop), each checked exactly
  tf_real.py once LOGDIR      one real session, checked exactly (both routes)
  tf_real.py inactive LOGDIR  one session that must not abort (no privilege)
  tf_real.py daemon LOGDIR    one real session through the kxprof daemon (an
                              ordinary user), checked exactly, rows by tid

The full run also leaves LOGDIR/session.json: its last .xplane.pb and the
jobs issued in that session, for XProf's converter (xprof_check.py).

A real session: a Keras fit on the main thread inside an annotation range,
two threads issuing driver jobs inside ranges of their own, the main thread
a few jobs too. The .xplane.pb TensorFlow writes must hold kxprof's ioctls,
counted exactly per thread and name, on TensorFlow's own line of each
thread in the merged /host:CPU plane (the main thread's line also holds
TensorFlow's events), each
range around its thread's ioctls, and the device plane under XProf's
/device:CUSTOM: prefix with one job line per job-issuing thread.
"""

import collections
import glob
import json
import os
import sys
import threading
import time

T0 = time.monotonic()
import tensorflow as tf  # noqa: E402  (import time is measured)
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

import accel_jobs  # noqa: E402
import kxprof_annotate as kx  # noqa: E402

IMPORT_S = time.monotonic() - T0
JOBS_PER_THREAD = 40
MAIN_JOBS = 7
fails = 0


M64 = (1 << 64) - 1
HASH_MUL = (0xc6a4a793 << 32) + 0x5bd1e995


def tf_line_id(ident):
    """TensorFlow's line id of a thread: libstdc++'s std::hash<std::thread::id>
    of its pthread_t (threading.get_ident()), as an int64."""
    def mix(v):
        return v ^ (v >> 47)
    h = 0xc70f6907 ^ ((8 * HASH_MUL) & M64)
    h ^= (mix((ident * HASH_MUL) & M64) * HASH_MUL) & M64
    h = (h * HASH_MUL) & M64
    h = mix((mix(h) * HASH_MUL) & M64)
    return h - (1 << 64) if h >> 63 else h


def check(name, ok, detail=""):
    global fails
    if ok:
        print("PASS %s" % name)
    else:
        fails += 1
        print("FAIL %s: %s" % (name, detail))


def plugin_copies():
    """Paths of the kxprof TensorFlow plugins mapped in this process."""
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "libkxprof_tf" in line})


def model():
    m = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m


def workload(m, jobs, with_jobs, done):
    """The profiled work; returns the ranges opened {tid: name} and the
    worker threads, which live on until done is set (threads that end
    before stop() keep their tid as line id: see docs/frameworks.md), once their
    ranges are closed."""
    x = tf.random.normal((256, 8))
    y = tf.random.normal((256, 1))
    ranges = {}
    closed = [threading.Event() for _ in range(2)]

    def worker(i):
        name = "jobs_%d" % i
        ranges[threading.get_native_id()] = name
        try:
            with kx.range(name, "test"):
                if with_jobs:
                    jobs.run(JOBS_PER_THREAD)
        finally:
            closed[i].set()
        done.wait()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    ranges[threading.get_native_id()] = "fit"
    with kx.range("fit", "test"):
        m.fit(x, y, epochs=2, batch_size=64, verbose=0)
        if with_jobs:
            jobs.run(MAIN_JOBS)
    for c in closed:
        c.wait(120)
    return ranges, ts


def session(logdir, m, with_jobs=True):
    """One profiler session around the workload; (XSpace, jobs, ranges)."""
    before = set(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")))
    jobs = accel_jobs.Jobs()
    done = threading.Event()
    tf.profiler.experimental.start(logdir)
    ranges, ts = workload(m, jobs, with_jobs, done)
    tf.profiler.experimental.stop()
    done.set()
    for t in ts:
        t.join()
    new = sorted(set(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb"))) - before)
    space = xplane_pb2.XSpace()
    if new:
        with open(new[-1], "rb") as f:
            space.ParseFromString(f.read())
    # The next session's run directory is named after the second it starts in.
    time.sleep(1.05)
    return space, jobs, ranges, new


def plane(space, name):
    return [p for p in space.planes if p.name == name]


def events(p, line):
    """[(name, start_ps, end_ps)] of a line, absolute in the plane's time base."""
    out = []
    for e in line.events:
        start = line.timestamp_ns * 1000 + e.offset_ps
        out.append((p.event_metadata[e.metadata_id].name, start, start + e.duration_ps))
    return out


def kxprof_planes(space):
    return [p for p in space.planes if p.name.startswith("/device:CUSTOM:")]


def check_real(tag, space, jobs, ranges, files, tf_rows=True):
    """tf_rows: kxprof's lines take TensorFlow's ids of the threads; else
    (through the daemon) their tids."""
    check(tag + "_xplane_written", len(files) == 1, "xplane files: %s" % files)
    host = plane(space, "/host:CPU")
    check(tag + "_one_host_plane", len(host) == 1,
          "planes: %s" % [p.name for p in space.planes])
    if len(host) != 1:
        return
    host = host[0]
    lines = {ln.id: ln for ln in host.lines}
    # Each thread's line is TensorFlow's own line of it.
    line_of = {tid: tf_line_id(ident) if tf_rows else tid for tid, ident in jobs.idents.items()}
    want = collections.Counter(jobs.counts)
    got = collections.Counter()
    names = {n for (_, n) in want}
    for tid in {t for (t, _) in want}:
        if line_of[tid] in lines:
            for (n, _, _) in events(host, lines[line_of[tid]]):
                if n in names:
                    got[(tid, n)] += 1
    check(tag + "_ioctls_exact_per_thread", got == want,
          "kxprof events %s, issued %s; lines %s" % (dict(got), dict(want),
                                                     [(ln.id, ln.name) for ln in host.lines]))
    # The main thread's row holds TensorFlow's own events and kxprof's.
    main = lines.get(line_of.get(threading.get_native_id()))
    tf_events = [n for (n, _, _) in events(host, main) if n not in names and n != "fit"] \
        if main else []
    if tf_rows:
        check(tag + "_tf_events_same_row", len(tf_events) > 0,
              "main thread's line: %s" % (main.name if main else "missing"))
    # Each thread's range holds every ioctl it issued.
    nested = True
    detail = ""
    for tid, rname in ranges.items():
        ln = lines.get(line_of.get(tid))
        evs = events(host, ln) if ln else []
        rs = [(s, e) for (n, s, e) in evs if n == rname]
        ios = [(s, e) for (n, s, e) in evs if n in names]
        if len(rs) != 1 or not ios or not all(rs[0][0] <= s and e <= rs[0][1] for s, e in ios):
            nested = False
            detail = "thread %d: ranges %s, %d ioctls" % (tid, rs, len(ios))
    check(tag + "_ranges_nest_ioctls", nested, detail)
    # Device planes: XProf's custom-device prefix, ids 0..199, a job line per thread.
    devs = kxprof_planes(space)
    check(tag + "_device_plane_named_for_xprof",
          devs and all(0 <= p.id < 200 for p in devs),
          "planes: %s" % [(p.id, p.name) for p in space.planes])
    job = accel_jobs.job_name()
    per_thread = jobs.per_thread(job)
    job_lines = collections.Counter()
    for p in devs:
        for ln in p.lines:
            job_lines[ln.name] += sum(1 for (n, _, _) in events(p, ln) if n == job)
    want_lines = collections.Counter({"vcpu %d" % t: c for t, c in per_thread.items()})
    if accel_jobs.driver() == "loop" and not tf_rows:
        # A user's session through the daemon has no block job timeline (it
        # would show other users' I/O): documented, and checked as such.
        check(tag + "_no_block_jobs_for_users", sum(job_lines.values()) == 0,
              "job events %s in a user's session" % dict(job_lines))
    elif accel_jobs.driver() == "kvm":
        check(tag + "_device_jobs_exact", job_lines == want_lines,
              "job lines %s, issued %s" % (dict(job_lines), dict(want_lines)))
    else:
        check(tag + "_device_jobs_exact", sum(job_lines.values()) == sum(per_thread.values()),
              "job events %s, issued %s" % (dict(job_lines), dict(per_thread)))


def check_empty(tag, space, files):
    """A session kxprof sat out: TensorFlow's own profile, no kxprof data."""
    check(tag + "_xplane_written", len(files) == 1, "xplane files: %s" % files)
    host = plane(space, "/host:CPU")
    kx_events = 0
    for p in host:
        for ln in p.lines:
            kx_events += sum(1 for (n, _, _) in events(p, ln) if n.startswith("KVM_")
                             or n.startswith("BLK"))
    check(tag + "_no_kxprof_events", kx_events == 0 and not kxprof_planes(space),
          "%d kxprof events, planes %s" % (kx_events, [p.name for p in space.planes]))


def main():
    mode, logdir = sys.argv[1], sys.argv[2]
    print("import tensorflow: %.1f s; plugin copies mapped: %s" % (IMPORT_S, plugin_copies()),
          file=sys.stderr)
    check("tf_plugin_loaded_at_import", len(plugin_copies()) >= 1, "no libkxprof_tf in maps")
    m = model()
    if mode == "full":
        space, _, _, files = session(logdir, m)  # KXPROF_DISABLE=1 from the start
        check_empty("tf_disabled", space, files)
        del os.environ["KXPROF_DISABLE"]
        os.environ["KXPROF_SYSROOT"] = os.environ["KX_EMPTY_ROOT"]
        space, _, _, files = session(logdir, m)
        check_empty("tf_no_device", space, files)
        del os.environ["KXPROF_SYSROOT"]
        for i in (1, 2):
            space, jobs, ranges, files = session(logdir, m)
            check_real("tf_session%d" % i, space, jobs, ranges, files)
        # For XProf's converter (xprof_check.py): the last file and its jobs.
        with open(os.path.join(logdir, "session.json"), "w") as f:
            json.dump({"xplane": files[-1] if files else None, "job": accel_jobs.job_name(),
                       "jobs": [[tf_line_id(jobs.idents[t]), n, c]
                                for (t, n), c in jobs.counts.items()]}, f)
    elif mode == "once":
        check("tf_plugin_both_routes", len(plugin_copies()) == 2,
              "copies mapped: %s" % plugin_copies())
        space, jobs, ranges, files = session(logdir, m)
        check_real("tf_both_routes", space, jobs, ranges, files)
    elif mode == "daemon":
        space, jobs, ranges, files = session(logdir, m)
        check_real("tf_daemon", space, jobs, ranges, files, tf_rows=False)
    else:
        space, _, _, files = session(logdir, m, with_jobs=False)
        check_empty("tf_inactive", space, files)
    print("tf_real %s: %.1f s in all" % (mode, time.monotonic() - T0), file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
