"""Real JAX's own profiler (jax.profiler.start_trace/stop_trace, CPU) around
driver jobs, for test_jax_real.sh under `kxprof record`: jobs on the main
thread before the profiler's window, inside it (in a kxprof range, around a
jitted function) and after it; inside it also a thread that runs the jitted
function and jobs (JAX gives it a line of its own) and a thread that only
issues jobs (JAX gives it a line through its Python tracer; with ARGV[3]
"notracer", python_tracer_level=0, it has none). ARGV[1] is the log
directory; what was issued goes to ARGV[2] as JSON:

  {"pid", "main": tid, "jax_worker": tid, "plain_worker": tid,
   "idents": {tid: pthread_t}, "window": [t0_ns, t1_ns],
   "before"/"inside"/"after": {tid: {name: n}},
   "spans": {tid: [[t0_ns, t1_ns], ...]}   (CLOCK_REALTIME around each batch),
   "ranges": {tid: [name, ...]}}
"""

import collections
import json
import os
import sys
import threading
import time

import jax
import jax.numpy as jnp

import accel_jobs
import kxprof_annotate as kx


class Phases:
    def __init__(self):
        self.jobs = accel_jobs.Jobs()
        self.seen = collections.Counter()
        self.spans = collections.defaultdict(list)
        self.ranges = collections.defaultdict(list)
        self.lock = threading.Lock()

    def batch(self, n, rng=None):
        """n jobs on this thread; returns {(tid, name): count} they added."""
        t0 = time.time_ns()
        if rng:
            with kx.range(rng):
                self.jobs.run(n)
        else:
            self.jobs.run(n)
        t1 = time.time_ns()
        with self.lock:
            self.spans[threading.get_native_id()].append([t0, t1])
            if rng:
                self.ranges[threading.get_native_id()].append(rng)

    def take(self):
        """The ioctls issued since the last take, {tid: {name: n}}."""
        with self.lock:
            now = collections.Counter(self.jobs.counts)
            new = now - self.seen
            self.seen = now
        out = collections.defaultdict(dict)
        for (tid, name), c in new.items():
            out[str(tid)][name] = c
        return out


def main():
    logdir, issued = sys.argv[1], sys.argv[2]
    ph = Phases()
    f = jax.jit(lambda x: jnp.tanh(x @ x) + 1.0)
    x = jnp.ones((32, 32))
    f(x).block_until_ready()  # compiled before the window
    ph.batch(3)
    before = ph.take()
    tids = {}

    def jax_worker():
        tids["jax_worker"] = threading.get_native_id()
        f(x).block_until_ready()
        ph.batch(4, "jax_worker_jobs")
        f(x).block_until_ready()

    def plain_worker():
        tids["plain_worker"] = threading.get_native_id()
        ph.batch(5, "plain_jobs")

    w0 = time.time_ns()
    opts = None
    if len(sys.argv) > 3 and sys.argv[3] == "notracer":
        opts = jax.profiler.ProfileOptions()
        opts.python_tracer_level = 0
    jax.profiler.start_trace(logdir, profiler_options=opts)
    f(x).block_until_ready()
    ph.batch(6, "main_jobs")
    threads = [threading.Thread(target=jax_worker, name="jax_worker"),
               threading.Thread(target=plain_worker, name="plain_worker")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    f(x).block_until_ready()
    jax.profiler.stop_trace()
    w1 = time.time_ns()
    inside = ph.take()
    ph.batch(4)
    after = ph.take()
    out = {"pid": os.getpid(), "main": threading.get_native_id(), **tids,
           "idents": {str(k): v for k, v in ph.jobs.idents.items()},
           "window": [w0, w1], "before": before, "inside": inside, "after": after,
           "spans": {str(k): v for k, v in ph.spans.items()},
           "ranges": {str(k): v for k, v in ph.ranges.items()},
           "versions": {"jax": jax.__version__, "jaxlib": jax.lib.__version__}}
    with open(issued, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
